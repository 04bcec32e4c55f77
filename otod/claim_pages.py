"""Readers of the claims table (`otod.claims`) for the numbers of docs/noise.md, docs/nets*.md, docs/models.md,
docs/depth.md, docs/running.md, docs/figures.md, the README and the captions that no other reader gives (issue 50,
"the remaining pages"): the doubling ratio S(2B)/S(B) of a batch sweep's small-batch regime and the expected-loss
path of ``otod nqm-schedule``'s best schedules (registered in `otod.claim_readers.READERS` beside the others).

Each recomputes its numbers from the committed results through the code the figures use (`otod.claim_records`'
batch series, `otod.noise.schedule.losses` for `otod.noise.schedule_figure`'s curves)."""

from __future__ import annotations

from typing import Any

import numpy as np

from otod.claim_records import batch_series, results_of


def doubling_ratios(path: str, method: str = "sgd", up_to: float = 0, **panel) -> dict[str, Any]:
    """S(2B)/S(B), the median steps at a batch twice as large over those at B, for each B of the panel's grid with
    2B ≤ ``up_to`` (0: the panel's own perfect-scaling end, `otod.core.critical_batch`'s ≤ 1.1·B/B' rule, as
    up_to), as their least and largest (lo, hi); 0.5 is perfect scaling (Shallue et al. 2019, Zhang et al. 2019)."""
    s = batch_series(path, method, panel)
    up_to = float(up_to) or float(s.perfect_scaling)
    steps = {float(b): float(m) for b, m in zip(s.x, s.median)}
    ratios = [steps[2 * b] / steps[b] for b in steps if 2 * b in steps and 2 * b <= float(up_to)]
    if not ratios:
        raise KeyError(f"no doubling of B up to {up_to:g} in {path}")
    return {"lo": min(ratios), "hi": max(ratios), "pairs": len(ratios), "up_to": up_to}


def schedule_path(path: str, kinds: list, horizon: int = 2000) -> dict[str, Any]:
    """The expected loss along the best schedules of an ``otod nqm-schedule`` search (its record's families
    ``kinds``, e.g. "lr-decay", "batch"), as `otod.noise.schedule.losses` gives it exactly at every step (the curves
    of figures/noise_nqm_schedule): the initial loss (initial), per family i its least over the first ``horizon``
    steps (least{i}) and where (step{i}), its loss at the end of the first phase (switch{i}) and that phase's
    length (k{i}); with least_lo, least_hi over the families."""
    from otod.noise.schedule import BatchSchedule, Phase, losses
    from otod.noise.schedule_search import Problem

    record = results_of(path).records[0]
    problem = Problem(int(record["dim"]), str(record["noise"]), float(record["target"]), power=float(record["power"]))
    q = problem.quadratic()
    reference = problem.reference(q)  # the record's lrs are multiples of 1/max h (`describe`)
    out: dict[str, Any] = {}
    for i, kind in enumerate(kinds):
        phases = record[kind]["schedule"]
        schedule = BatchSchedule(tuple(Phase(float(p["batch"]), float(p["lr"]) * reference, p["steps"])
                                       for p in phases))
        first = int(phases[0]["steps"])
        t = np.arange(0, min(horizon, first) + 1)
        loss = losses(q, schedule, np.append(t, first), problem.power)
        out.update({"initial": float(loss[0]), f"least{i}": float(loss[:-1].min()),
                    f"step{i}": int(t[np.argmin(loss[:-1])]), f"switch{i}": float(loss[-1]), f"k{i}": first})
    least = [out[f"least{i}"] for i in range(len(kinds))]
    return {**out, "least_lo": min(least), "least_hi": max(least)}


def committed_figures(*paths: str) -> dict[str, Any]:
    """How many figures the experiment tables ``paths`` (every ``experiments/*.toml``, `otod.core.figures.
    load_specs`; a table of that folder left out of ``paths`` is refused, so a new one cannot go uncounted) define
    (figures), and how many of them read their committed results (committed: ``committed = true``,
    `otod.core.figure_sources.split_source`), so never sweep in ``otod figures``."""
    from pathlib import Path

    from otod.core.figure_sources import split_source
    from otod.core.figures import load_specs

    specs = load_specs(Path(paths[0]).parent)
    named = {Path(p).stem for p in paths}
    if named != set(specs):
        raise KeyError(f"the sources name {sorted(named)}, the folder holds {sorted(specs)}")
    tables = [(group, name, spec) for group, figures in specs.items() for name, spec in figures.items()
              if isinstance(spec, dict)]
    committed = sum(split_source(spec, f"{group}.toml [{name}]")[1] for group, name, spec in tables)
    return {"figures": len(tables), "committed": committed}
