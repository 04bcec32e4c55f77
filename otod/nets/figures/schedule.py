"""Steps to the final target of batch schedules against constant batches (``otod figures nets/batch_schedule``, issue
37 item 4's third figure).

One panel per workload: serial steps to the final target (y) against the examples used to reach it (x), both log.
The constant batches form a curve (one point per B, labelled, 95% CI bars from the seed bootstrap that re-chooses
(lr, β), `otod.nets.schedule.stats`); each schedule is one point with its CIs. A schedule below the curve takes
fewer serial steps than a constant batch using as many examples; left of it, fewer examples for as many steps.
The numbers are those of ``otod sweep net --batch-schedule`` (`otod.nets.schedule.batch_schedule.batch_schedule`), read back
from results/ where its sweeps are stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from otod.core.api import FigureSpec, TypedMaker
from otod.nets.figures.tables import parse_table
from otod.nets.sweep.options import net_config


@dataclass(frozen=True, kw_only=True)
class Workload:
    """One panel of the schedule figure (a ``[[….workloads]]`` table): its ``label``, the batch ``schedules``
    (``"B@r,…"`` or ``"doubling:B₀..B₁@r"``, `otod.nets.schedule.batch_schedule.parse_schedule`) and ``options``,
    the net's (`otod.nets.sweep.options.net_config`'s keys: batch, data, seeds, …; no target: each schedule's last
    milestone is it)."""

    label: str
    schedules: tuple[str, ...]
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class ScheduleSpec(FigureSpec):
    """`make_schedule`'s table: its ``workloads``, one panel each (`Workload`, each parsed from its table with
    `otod.nets.figures.tables.parse_table`: an unknown key refused in one line)."""

    workloads: tuple[Workload, ...]

    def __post_init__(self):
        object.__setattr__(self, "workloads", tuple(parse_table(Workload, w, f"workloads, table {i + 1}", net_config)
                                                    for i, w in enumerate(self.workloads)))


def measured(workload: Workload) -> list:
    """Each of the workload's schedules' `ScheduleResult` (read back where stored)."""
    from otod.nets.schedule.batch_schedule import batch_schedule

    return [batch_schedule(s, **workload.options) for s in workload.schedules]


def _bars(y, lo, hi) -> np.ndarray:
    """Asymmetric error bars (below, above); none where an end is not finite."""
    y, lo, hi = (np.asarray(a, float) for a in (y, lo, hi))
    below = np.where(np.isfinite(lo), y - lo, 0.0)
    above = np.where(np.isfinite(hi), hi - y, 0.0)
    return np.clip(np.vstack([below, above]), 0, None)


def draw(ax, label: str, results, first_style: int = 1) -> None:
    """One workload's panel: the constant batches' curve (from the first result; every result of a workload shares
    its constant sweep) and each schedule's point, with their CIs; the schedules take the styles from
    ``first_style`` on (so that no two schedules of one figure share one)."""
    from matplotlib.ticker import NullFormatter

    from otod.core.api import series_style

    rows = results[0].rows()
    const = [r for r in rows if r["run"] == "constant" and np.isfinite(r["steps"])]
    b = np.array([r["batch"] for r in const])
    s, lo, hi = (np.array([r[k] for r in const], float) for k in ("steps", "steps_lo", "steps_hi"))
    st = series_style(0)
    ax.errorbar(b * s, s, yerr=_bars(s, lo, hi), xerr=_bars(b * s, b * lo, b * hi), marker=st["marker"],
                ls=st["ls"], color=st["color"], capsize=2, label="constant batch B")
    for x, y, batch in zip(b * s, s, b):  # below-left of a falling curve: off it; over every marker, on white
        ax.annotate(f"{batch:g}", (x, y), textcoords="offset points", xytext=(-2, -3), ha="right", va="top",
                    fontsize="x-small", color=st["color"], zorder=6,
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5, "alpha": 0.8})
    for i, result in enumerate(results, start=first_style):
        row = next(r for r in result.rows() if r["run"] == "schedule")
        front = next(r for r in result.rows() if r["run"].startswith("constant frontier"))
        st = series_style(i)
        ratio = (f"{front['ratio']:.2f} [{front['ratio_lo']:.2f}, {front['ratio_hi']:.2f}]× the constant "
                 "frontier's steps" if np.isfinite(front["ratio"]) else "fewer examples than any constant B")
        ax.errorbar([row["examples"]], [row["steps"]], yerr=_bars([row["steps"]], [row["steps_lo"]],
                    [row["steps_hi"]]), xerr=_bars([row["examples"]], [row["examples_lo"]], [row["examples_hi"]]),
                    marker=st["marker"], ls="none", color=st["color"], capsize=2, ms=7,
                    label=f"{label}: schedule {result.schedule.text} ({ratio})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.xaxis.set_minor_formatter(NullFormatter())  # the minor labels of a short decade overlap
    ax.grid(alpha=0.25, which="major")
    spec_loss = results[0].milestones[-1]
    ax.set(xlabel="examples to the final target", ylabel="serial steps to the final target",
           title=f"{label}: to training loss {spec_loss:.3g}")


def make_schedule(spec: ScheduleSpec, out_dir: Path) -> list[Path]:
    """The figure (module docstring) for the spec's ``workloads`` (each: ``label``, ``schedules`` and the net's
    options)."""
    from otod.core.api import caption_text, figure, legend_below, save

    workloads = spec.workloads
    measured_all = [(w.label, measured(w)) for w in workloads]
    fig, axes = figure(columns=2, cols=len(workloads), height=2.8)
    axes = axes if isinstance(axes, list) else [axes]
    first = 1
    for ax, (label, results) in zip(axes, measured_all):
        draw(ax, label, results, first)
        first += len(results)
    legend_below(fig, axes=axes, ncol=1)
    return save(fig, out_dir / f"nets_{spec.name}", caption=caption_text(
        "Each schedule: phases (B_k, r_k), phase k trains at B_k until the training loss is r_k × the mean loss at "
        "the start, from where phase k−1 left every seed; the last milestone is the final target. (lr, β) chosen "
        "per phase and per constant batch by the median over seeds (the core's rule); steps add over phases, "
        "examples are Σ B_k × steps_k (otod.nets.schedule.batch_schedule)",
        "Steps to the final target against the examples used, log–log; constant batches labelled by B; bars: "
        "95% CIs from the seed bootstrap that re-chooses (lr, β) in every phase and batch. In the legend, the "
        "schedule's steps over the constant batches' frontier at the schedule's examples (the fewest steps of "
        "any constant batch, interpolated in logs between grid points), with its 95% CI"))


MAKERS = {"nets-schedule": TypedMaker(ScheduleSpec, make_schedule)}
