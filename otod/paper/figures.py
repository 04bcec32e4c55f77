"""Figures that draw one obstacle beside another, each maker a function ``maker(spec, out_dir) -> [paths]`` named
by the ``maker`` of a table in ``experiments/*.toml`` (`otod.core.figures`).

``nets-depth`` (``experiments/nets.toml [steps_vs_depth]``): a net's steps to target against depth, plain vs
residual, with the deep-linear obstacle's law in depth for one of its series drawn through a net series' median
at the first depth (`otod.nets.figures.sweep.draw_deep_linear`): growth per layer compared, not counts.
"""

from __future__ import annotations

from pathlib import Path

from otod.core.api import OtodError, read_config
from otod.depth import figures as depth_figures
from otod.nets.figures import sweep as nets_figures


def deep_linear_comparison(spec: dict) -> dict | None:
    """The deep-linear series a nets figure draws beside its own (``spec["deep_linear"]``: ``figure``, a table of
    ``experiments/depth.toml``; ``series``, one of its series; ``from``, the net series to draw it through), read
    from that depth figure's sweep (`otod.depth.figures.deep_linear_series`: run, or read back), with its source
    for the caption; None without one. A series the depth figure lacks is one `OtodError` naming those it has."""
    comparison = spec.get("deep_linear")
    if not comparison:
        return None
    deep_results, series = depth_figures.deep_linear_series(comparison["figure"])
    found = [s for s in series if s.name == comparison["series"]]
    if not found:
        raise OtodError(f"experiments/nets.toml [{spec['name']}]: deep_linear series {comparison['series']!r} "
                        f"is not one of depth/{comparison['figure']}'s: {', '.join(s.name for s in series)}")
    return {"series": found[0], "from": comparison["from"],
            "source": f"experiments/depth.toml [{comparison['figure']}], {read_config(deep_results.meta).seeds} "
                      "seeds"}


def make_nets_depth(spec: dict, out_dir: Path) -> list[Path]:
    """The nets' steps against depth (`otod.nets.figures.sweep.make_depth`) with the deep-linear law its spec
    names beside them (`deep_linear_comparison`): the net sweep first, then the depth figure's."""
    results = nets_figures.depth_results(spec)
    deep = deep_linear_comparison(spec)
    return nets_figures.sweep_figure(results, out_dir / f"nets_{spec['name']}", pdf=True, deep_linear=deep)


MAKERS = {"nets-depth": make_nets_depth}
