"""Figures that draw one obstacle beside another, each maker a `TypedMaker` named by the ``maker`` of a table in
``experiments/*.toml`` (`otod.core.figures`): its table parsed once into its spec, then ``draw(spec, out_dir) ->
[paths]``.

``nets-depth`` (``experiments/nets.toml [steps_vs_depth]``): a net's steps to target against depth, plain vs
residual, with the deep-linear obstacle's law in depth for one of its series drawn through a net series' median
at the first depth (`otod.nets.figures.sweep.draw_deep_linear`): growth per layer compared, not counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from otod.core.api import OtodError, SweepFigureSpec, TypedMaker, read_config
from otod.depth import figures as depth_figures
from otod.nets.figures import sweep as nets_figures
from otod.nets.figures.tables import parse_table
from otod.nets.sweep.options import net_config


@dataclass(frozen=True)
class DeepLinear:
    """The deep-linear law a nets depth figure draws beside its nets: ``figure``, a table of
    ``experiments/depth.toml``; ``series``, one of that figure's series; ``through`` (the key ``from``), the net
    series whose median at its first depth the law is drawn through."""

    figure: str
    series: str
    through: str = field(metadata={"key": "from"})


@dataclass(frozen=True, kw_only=True)
class NetsDepthSpec(SweepFigureSpec):
    """`make_nets_depth`'s table: the net sweep's options (``otod sweep net``'s, `otod.nets.sweep.options.net_config`)
    and ``deep_linear`` (a `DeepLinear` table; None: the nets alone)."""

    deep_linear: DeepLinear | None = None

    def __post_init__(self):
        if self.deep_linear is not None:
            object.__setattr__(self, "deep_linear", parse_table(DeepLinear, self.deep_linear, "deep_linear"))


def deep_linear_comparison(spec: NetsDepthSpec) -> dict | None:
    """The deep-linear series a nets figure draws beside its own (``spec.deep_linear``, `DeepLinear`), read
    from that depth figure's sweep (`otod.depth.figures.deep_linear_series`: run, or read back), with its source
    for the caption; None without one. A series the depth figure lacks is one `OtodError` naming those it has."""
    comparison = spec.deep_linear
    if comparison is None:
        return None
    deep_results, series = depth_figures.deep_linear_series(comparison.figure)
    found = [s for s in series if s.name == comparison.series]
    if not found:
        raise OtodError(f"experiments/nets.toml [{spec.name}]: deep_linear series {comparison.series!r} "
                        f"is not one of depth/{comparison.figure}'s: {', '.join(s.name for s in series)}")
    return {"series": found[0], "from": comparison.through,
            "source": f"experiments/depth.toml [{comparison.figure}], {read_config(deep_results.meta).seeds} "
                      "seeds"}


def make_nets_depth(spec: NetsDepthSpec, out_dir: Path) -> list[Path]:
    """The nets' steps against depth (`otod.nets.figures.sweep.make_depth`) with the deep-linear law its spec
    names beside them (`deep_linear_comparison`): the net sweep first, then the depth figure's."""
    results = nets_figures.depth_results(spec)
    deep = deep_linear_comparison(spec)
    return nets_figures.sweep_figure(results, out_dir / f"nets_{spec.name}", pdf=True, deep_linear=deep)


MAKERS = {"nets-depth": TypedMaker(NetsDepthSpec, make_nets_depth, net_config)}
