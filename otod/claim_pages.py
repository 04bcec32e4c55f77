"""Readers of the claims table (`otod.claims`) for the numbers of docs/noise.md, docs/nets*.md, docs/models.md,
docs/depth.md, docs/running.md, docs/figures.md, the README and the captions that no other reader gives (issue 50,
"the remaining pages"): the doubling ratio S(2B)/S(B) of a batch sweep's small-batch regime and the expected-loss
path of ``otod nqm-schedule``'s best schedules (registered in `otod.claim_readers.READERS` beside the others).

Each recomputes its numbers from the committed results through the code the figures use (`otod.claim_records`'
batch series, `otod.noise.schedule.losses` for `otod.noise.schedule_figure`'s curves)."""

from __future__ import annotations

import math
from pathlib import Path
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


def rate_undercount(path: str, method: str, kappa: float, tol: float) -> dict[str, Any]:
    """How far the rate count ⌈ln(1/tol) / (2 ln(1/ρ))⌉ (`otod.condition.theory.rate_iterations`) falls short of
    the exact worst case over [1, κ] (`bound_iterations`, certified): rate, bound and ratio = bound/rate. Heavy
    ball's and Nesterov's double root adds a factor (1 + c·k) to ρᵏ (Lessard, Recht & Packard 2016), which the rate
    leaves out. ``path`` is the theory module itself (the claim's source)."""
    from otod.condition import theory

    if Path(path).resolve() != Path(theory.__file__).resolve():
        raise KeyError(f"{path}: the source is otod/condition/theory.py, the module computed")
    rate = theory.rate_iterations(method, float(kappa), float(tol))
    bound = theory.bound_iterations(method, float(kappa), float(tol))
    return {"rate": rate, "bound": bound, "ratio": bound / rate}


def censored_modes(path: str, init: str, depths: list = (), statuses: list = ("censored",),
                   modes: int = 0) -> dict[str, Any]:
    """The median final loss of a depth sweep's chosen lanes of ``init`` with a status in ``statuses`` (at
    ``depths``; all when empty), and what it is in theory: the relative loss of a deep linear net that has learned
    every singular mode of Φ but its k smallest is Σ_{i≤k} s_i²/Σ s² (s: `otod.depth.linear.singular_values`; k = 1
    gives 1/Σs², every mode unlearned, at the saddle W = 0, gives 1). Returns median, lanes, the k whose share
    matches the median within 0.1% (modes) and that share (share); no such k, or one other than ``modes`` (when
    given: the count the text states), is refused."""
    from otod.claim_records import analysis_of
    from otod.depth.linear import singular_values

    analysis = analysis_of(path)
    chosen = analysis.chosen
    at = chosen[(chosen["init"] == init) & chosen["status"].isin(list(statuses))]
    if depths:
        at = at[np.isclose(at["depth"].to_numpy(float)[:, None], np.asarray(depths, float)).any(axis=1)]
    if at.empty:
        raise KeyError(f"{path}: no {'/'.join(statuses)} {init} lanes")
    spec = analysis.config.problem
    s2 = np.sort(singular_values(spec.width, spec.target_kappa)) ** 2
    shares = np.cumsum(s2) / s2.sum()
    median = float(np.median(at["final_loss"].to_numpy(float)))
    close = np.flatnonzero(np.abs(shares / median - 1.0) < 1e-3)
    if not close.size:
        raise ValueError(f"{path}: {init}'s median final loss {median:.4g} is no share of unlearned modes")
    if modes and int(close[0]) + 1 != int(modes):
        raise ValueError(f"{path}: {init}'s median final loss {median:.4g} is {close[0] + 1} unlearned modes, "
                         f"not {modes}")
    return {"median": median, "lanes": len(at), "modes": int(close[0]) + 1, "share": float(shares[close[0]])}


def along_span(*paths: str, batches: list, method: str = "sgd") -> dict[str, Any]:
    """Over the checkpoints ``paths`` of one run along training (`otod.claim_along.along_checkpoint`): the least
    and largest median steps at ``batches`` (steps_lo, steps_hi), the largest S_min (s_hi) and the least integer
    above it (s_ceil), the first checkpoint's step and the low end of its B_crit CI (step0, lo0), the first and
    last S_min and their ratio (s_growth)."""
    from otod.claim_along import along_checkpoint

    rows = [along_checkpoint(p, method) for p in paths]
    steps = []
    for p in paths:
        table = batch_series(p, method, {}).summary
        at = np.isclose(table["value"].to_numpy(float)[:, None], np.asarray(batches, float)).any(axis=1)
        if at.sum() != len(batches):
            raise KeyError(f"{p}: not every batch of {batches} was swept")
        steps += [float(m) for m in table["median"][at]]
    s_hi = max(r["s_min"] for r in rows)
    return {"steps_lo": min(steps), "steps_hi": max(steps), "s_hi": s_hi, "s_ceil": math.floor(s_hi) + 1,
            "step0": rows[0]["step"], "lo0": rows[0]["lo"], "s_first": rows[0]["s_min"],
            "s_last": rows[-1]["s_min"], "s_growth": rows[-1]["s_min"] / rows[0]["s_min"]}


def sequence_floor(path: str, data_seed: int = 0) -> dict[str, Any]:
    """The generated sequence task's loss floor, its source's entropy rate in nats (`otod.nets.model.sequence`:
    the conditional entropy of the next token under the stationary distribution, Cover & Thomas 2006, eq. 4.27),
    at the default vocabulary V, with log V, a uniform prediction's loss (init). ``path`` is that module."""
    from otod.nets.model import sequence

    if Path(path).resolve() != Path(sequence.__file__).resolve():
        raise KeyError(f"{path}: the source is otod/nets/model/sequence.py, the module computed")
    source = sequence.source(data_seed=int(data_seed))
    return {"entropy": float(source.entropy_rate), "vocabulary": source.vocabulary,
            "log_v": math.log(source.vocabulary)}


def loss_floor(path: str) -> dict[str, Any]:
    """A net sweep's loss floor L_ref (`otod.nets.sweep.predict.reference_loss`: ½σ² per output for the squared
    loss on labels with noise σ, 0 for cross-entropy), its label noise σ and its target, read from the file's
    config."""
    from otod.core.config import read_config
    from otod.nets.sweep.predict import reference_loss

    config = read_config(results_of(path).meta)
    spec = config.problem
    return {"floor": reference_loss(spec), "noise": float(spec.label_noise), "target": float(config.target.tol)}


def loss_period(path: str, method: str, batch: float, multipliers: list, beta_index: int,
                window: int = 60) -> dict[str, Any]:
    """The oscillation of the exact expected loss of ``method`` at ``batch`` on the NQM an exact noise sweep ran,
    at each lr of ``multipliers`` (of the reference step 1/max h) and 1 − β = 10^(beta_index/64) (`otod.noise.
    search.beta_of`), stepped one step at a time (`otod.noise.theory.recursion`, the moments' own recursion): the
    least and largest spacing of its local maxima (lo, hi) over the ``window`` steps before it first reaches the
    target, and that first step per lr (first_hit0, first_hit1, …), which a count by binary lifting
    (`otod.noise.theory.hitting_steps`) can overshoot where the loss oscillates."""
    from otod.claim_theory import _quadratic
    from otod.noise import theory
    from otod.noise.search import beta_of

    q, tol, cap = _quadratic(path)
    out: dict[str, Any] = {}
    gaps: list[int] = []
    for i, multiplier in enumerate(multipliers):
        lr, beta = np.array([float(multiplier) / float(q.h.max())]), np.array([beta_of(int(beta_index))])
        rec = theory.recursion(method, q, lr, 0.0, beta)
        noise = theory.noise_variance(q, lr, np.array([float(batch)]), 0.0)
        moments, loss = np.array(rec.M0), []
        while not loss or (loss[-1] > tol and len(loss) <= min(cap, 10 ** 6)):
            loss.append(float(0.5 * np.sum(q.h * moments[..., rec.read])))
            moments = np.einsum("...ij,...j->...i", rec.T, moments) + noise[..., None] * rec.f
        if loss[-1] > tol:
            raise ValueError(f"{path}: {method} at {multiplier:g} does not reach {tol:g}")
        hit = len(loss) - 1
        peaks = [t for t in range(max(1, hit - window), hit) if loss[t - 1] < loss[t] >= loss[t + 1]]
        if len(peaks) < 3:
            raise ValueError(f"{path}: {method}'s loss at {multiplier:g} does not oscillate before step {hit}")
        gaps += [int(g) for g in np.diff(peaks)]
        out[f"first_hit{i}"] = hit
    return {**out, "lo": min(gaps), "hi": max(gaps)}
