"""Figure of the best schedules on the exact NQM (``otod figures noise/nqm_schedule``): the expected loss against
serial steps of the best constant batch, the best lr schedule at constant batch and the best batch schedule within
one examples budget (`otod.noise.schedule_search.best`), and the batch each takes at every step."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from otod.core.api import FigureSpec
from otod.noise.schedule import BatchSchedule, losses


def _series(schedule: BatchSchedule, steps: int, q, power: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t, loss after t steps, batch of step t) at about 400 steps spread over the run, every phase's end kept."""
    ends = np.cumsum([p.steps for p in schedule.phases[:-1]] or [0]).astype(int)
    t = np.unique(np.concatenate([np.linspace(0, steps, 400).round().astype(int), ends, ends + 1, [steps]]))
    t = t[t <= steps]
    batch = np.empty(t.shape)
    start = 0
    for k, p in enumerate(schedule.phases):
        end = np.inf if p.steps is None else start + p.steps
        batch[(t > start) & (t <= end)] = p.batch
        start = end
    batch[t == 0] = schedule.phases[0].batch
    return t, losses(q, schedule, t, power), batch


@dataclass(frozen=True)
class ScheduleNqmSpec(FigureSpec):
    """The figure's table: the exact NQM of ``dim`` (noise covariance ``noise_spectrum``) to ``target``, schedules of
    ``phases`` phases within ``budget`` × E_min examples."""

    dim: int = 10_000
    noise_spectrum: str = "hessian"
    target: float = 0.01
    budget: float = 2.0
    phases: int = 2


def make_schedule_nqm(spec: ScheduleNqmSpec, out_dir: Path) -> list[Path]:
    """The figure of the module docstring, from ``spec``'s dim, target, budget (× E_min) and phases."""
    from otod.core.api import caption_text, figure, legend_below, save, series_style
    from otod.noise.schedule_cli import FAMILY_LABELS
    from otod.noise.schedule_search import FAMILIES, Problem, best

    problem = Problem(int(spec.dim), str(spec.noise_spectrum), float(spec.target))
    comparison = best(problem, float(spec.budget), int(spec.phases))
    q = problem.quadratic()
    fig, (ax_loss, ax_batch) = figure(columns=2, cols=2, height=2.6)
    base = comparison.optima["constant"].steps
    for i, kind in enumerate(FAMILIES):
        o = comparison.optima[kind]
        t, loss, batch = _series(o.schedule, o.steps, q, problem.power)
        style = series_style(i)
        change = f", {100 * (o.steps - base) / base:+.0f}%" if kind != "constant" else ""
        label = f"{FAMILY_LABELS[kind]}: {o.steps} steps{change}, {o.examples:.3g} examples"
        ax_loss.plot(t, loss, color=style["color"], ls=style["ls"], lw=1.2, label=label)
        ax_loss.plot([t[-1]], [loss[-1]], marker=style["marker"], color=style["color"], ms=5)
        ax_batch.step(t, batch, where="pre", color=style["color"], ls=style["ls"], lw=1.2)
        ax_batch.plot([t[-1]], [batch[-1]], marker=style["marker"], color=style["color"], ms=5)
    ax_loss.axhline(problem.target, color="0.5", lw=0.8, ls=":", label=f"target {problem.target:g}")
    ax_loss.set(yscale="log", xlabel="serial step t", ylabel="expected loss",
                title="(a) Loss of each family's best schedule")
    ax_batch.set(yscale="log", xlabel="serial step t", ylabel="batch size B",
                 title="(b) The batch each takes")
    legend_below(fig, ncol=1)
    lrs = "; ".join(f"{kind}: " + comparison.optima[kind].schedule.describe() for kind in FAMILIES)
    places = {place for o in comparison.optima.values() for place in o.places.values()}
    where = ("every coordinate of each optimum interior" if places == {"interior"} else
             "where each coordinate lies: " + "; ".join(f"{k}: " + ", ".join(f"{n} {p}" for n, p in o.places.items())
                                                      for k, o in comparison.optima.items()))
    quench = []
    for kind in FAMILIES[1:]:
        o = comparison.optima[kind]
        if len(o.schedule.phases) > 1:
            quench.append(f"{kind} {o.steps - sum(p.steps for p in o.schedule.phases[:-1])}")
    return save(fig, out_dir / f"noise_{spec.name}", caption=caption_text(
        f"Exact NQM d = {problem.dim} (hᵢ = 1/i, C = H), SGD, target {problem.target:g}, each family's fewest serial "
        f"steps within {comparison.budget:.4g} examples = {comparison.budget / comparison.fewest.examples:g} × E_min "
        f"(E_min {comparison.fewest.examples:.4g}, the fewest examples of any constant batch)",
        f"Families of {int(spec.phases)} phases, found by otod.noise.schedule_search ({where}); the "
        f"schedules (lr a multiple of 1/max h): {lrs}",
        "Where a first phase's lr sits near the stability limit 2/max h the fastest directions barely contract and "
        "their noise accumulates, so the expected loss stops falling or rises; the last phase (steps: "
        + ", ".join(quench) + ") brings them to its own lower floor",
        "Markers: where each reaches the target"))
