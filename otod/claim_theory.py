"""Readers of the claims table (`otod.claims`) for docs/theory.md's numbers that no other reader gives: one batch's
chosen point of a noise method across several exact sweeps (the searched β against a β given by hand), exact NQM
counts recomputed at given lattice points on the problem a results file ran (the jagged counts the lattice can
miss) and the best count of the lattice around a choice, the lanes of a depth sweep that a count does not settle
(the pre-issue-18 window rule's plateau lanes, read from today's sweep), and the toy's local minima and its stopped
lanes by where they sit (registered in `otod.claim_readers.READERS` beside the others)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from otod.claim_records import analysis_of, results_of
from otod.core.config import read_config


def _chosen_row(path: str, method: str, batch: float):
    chosen = analysis_of(path).chosen
    at = chosen[(chosen["method"] == method) & np.isclose(chosen["batch"].to_numpy(float), float(batch))]
    if at.empty:
        raise KeyError(f"{path}: no chosen {method} lane at B = {batch:g}")
    return at


def batch_points(*paths: str, method: str, batch: float) -> dict[str, Any]:
    """``method``'s chosen point at ``batch`` in each of the exact sweeps ``paths`` (the analysis's ``chosen``
    records, as the report prints them): the median steps m{i}, the chosen lr lr{i}, β beta{i} and 1 − β
    one_minus_beta{i} of the i-th file, and the ratio of the second's steps to the first's (ratio): a searched β
    against one given by hand (``--beta 0.999``, ``--beta 0``) on the same NQM."""
    out: dict[str, Any] = {}
    for i, path in enumerate(paths):
        at = _chosen_row(path, method, batch)
        out[f"m{i}"] = float(np.median(at["iterations"].to_numpy(float)))
        out[f"lr{i}"] = float(at["learning_rate"].iloc[0])
        out[f"beta{i}"] = float(at["beta"].iloc[0])
        out[f"one_minus_beta{i}"] = 1.0 - out[f"beta{i}"]
    if len(paths) > 1:
        out["ratio"] = out["m1"] / out["m0"]
    return out


def _quadratic(path: str):
    """The NQM, target and cap of an exact noise sweep's results file (`otod.noise.theory.nqm`)."""
    from otod.noise import theory

    config = read_config(results_of(path).meta)
    return theory.nqm(int(config.problem.dim), config.problem.noise), float(config.target.tol), int(
        config.resolved_max_iters)


def lattice_counts(path: str, method: str, batch: float, multipliers: list, beta_index: int) -> dict[str, Any]:
    """The exact counts (`otod.noise.theory.lane_hitting`) of ``method`` at ``batch`` on the NQM the file ran, at
    the lr multipliers ``multipliers`` and β on the search's lattice, 1 − β = 10^(beta_index/64)
    (`otod.noise.search.beta_of`): c0, c1, … and their least (least); β (beta); the file's chosen steps there
    (chosen) and how far above the least they are (above, in %). Counts jagged in the lr show here as neighbours
    that differ by more than the lattice's resolution."""
    from otod.noise import theory
    from otod.noise.search import beta_of

    q, tol, cap = _quadratic(path)
    beta = beta_of(int(beta_index))
    lrs = np.asarray(multipliers, float)
    hit = theory.lane_hitting(method, q, lrs, np.full(len(lrs), float(batch)), np.full(len(lrs), beta), tol, cap)
    counts = [int(s) for s in hit.steps]
    chosen = float(np.median(_chosen_row(path, method, batch)["iterations"].to_numpy(float)))
    least = min(c for c in counts if c >= 0)
    return {**{f"c{i}": c for i, c in enumerate(counts)}, "least": least, "beta": beta, "chosen": chosen,
            "above": 100.0 * (chosen / least - 1.0)}


def lattice_neighbourhood(path: str, method: str, batch: float, radius: int) -> dict[str, Any]:
    """The fewest exact steps within ``radius`` units of the search's lattice (`otod.noise.search`: z = ln 2u or
    −ln 2(1 − u) for the lr's fraction u of its stability limit, ln(1 − β), one unit ln 10/64 each) around the
    file's choice of ``method`` at ``batch``, in lr alone for a method without β and in both for heavy-ball and
    ema (a (2r + 1)² grid): best, the chosen steps (chosen), and how far above the best the choice is (above, in
    %; 0 where the compass's answer is the best of its neighbourhood)."""
    from otod.noise import theory
    from otod.noise.search import LR_UNIT, beta_of, coordinate, fraction, stability_limit

    q, tol, cap = _quadratic(path)
    at = _chosen_row(path, method, batch)
    multiplier, beta = float(at["lr_multiplier"].iloc[0]), float(at["beta"].iloc[0])
    name = "precond" if method.startswith("precond") else method
    power = float(method.split(":")[1]) if ":" in method else 0.0
    il = int(round(float(coordinate(multiplier / stability_limit(name, beta))) / LR_UNIT))
    jb = 0 if beta == 0.0 else int(round(math.log(1.0 - beta) / LR_UNIT))
    with_beta = method in ("heavy-ball", "ema")
    points = [(il + i, jb + j) for i in range(-radius, radius + 1)
              for j in (range(-radius, radius + 1) if with_beta else (0,)) if jb + j <= 0]
    betas = np.array([beta_of(j) for _, j in points])
    lrs = np.array([float(fraction(i * LR_UNIT)) * stability_limit(name, b) for (i, _), b in zip(points, betas)])
    steps = np.empty(len(points), np.int64)
    for kind in dict.fromkeys(("sgd", name)):  # heavy-ball and ema at β = 0 are SGD (`otod.noise.search._Search.theory_method`)
        mask = (betas == 0.0) == (kind == "sgd") if with_beta else np.full(len(points), kind == name)
        if mask.any():
            steps[mask] = theory.lane_hitting("precond" if kind == "precond" else kind, q, lrs[mask],
                                              np.full(int(mask.sum()), float(batch)), betas[mask], tol, cap,
                                              power=power).steps
    best = int(min(s for s in steps if s >= 0))
    chosen = float(np.median(at["iterations"].to_numpy(float)))
    return {"best": best, "chosen": chosen, "above": 100.0 * (chosen / best - 1.0), "points": len(points)}


def late_lanes(path: str, after: float) -> dict[str, Any]:
    """The lanes of a depth sweep that have not converged by iteration ``after`` (a window of a tenth of the cap:
    the lanes the pre-issue-18 rule, no 0.1% decrease within that window, could stop as plateaus): how many
    (lanes), and of them how many converge later (converged; at lo to hi iterations, median), are censored at the
    cap (censored, cap) and stalled (stalled)."""
    results = results_of(path)
    late = [r for r in results.records if not (r["status"] == "converged" and r["iterations"] <= after)]
    later = np.array([r["iterations"] for r in late if r["status"] == "converged"], float)
    return {"lanes": len(late), "converged": len(later), "lo": float(later.min()) if len(later) else math.nan,
            "hi": float(later.max()) if len(later) else math.nan,
            "median": float(np.median(later)) if len(later) else math.nan,
            "censored": sum(r["status"] == "censored" for r in late),
            "stalled": sum(r["status"] == "stalled" for r in late),
            "cap": read_config(results.meta).resolved_max_iters}


def toy_minima(path: str) -> dict[str, Any]:
    """The toy sweep's problems (every k and seed of the file, each seed's matrices drawn as the sweep drew them)
    and their local minima (`otod.depth.toy.local_minima`): how many have more than one (several, of n), the most
    on one problem (most) and the largest k where that many occur (most_k)."""
    from otod.depth.toy import local_minima
    from otod.obstacles import load_all

    load_all()
    results = results_of(path)
    config = read_config(results.meta)
    counts = []
    for layers in sorted({int(r["layers"]) for r in results.records}):
        spec = config.spec_at({"layers": float(layers)})
        for seed in sorted({int(r["seed"]) for r in results.records}):
            m = spec.draws(np.random.default_rng([config.seed, seed]))["m"]
            counts.append((layers, len(local_minima(m, spec.reading).values)))
    most = max(c for _, c in counts)
    return {"several": sum(c > 1 for _, c in counts), "n": len(counts), "most": most,
            "most_k": max(k for k, c in counts if c == most)}


def toy_stops(path: str) -> dict[str, Any]:
    """The toy sweep's chosen lanes (what the figure draws) that did not converge, by where they sit (the records'
    ``minimum``, `otod.depth.toy.annotate`): in another local minimum (local; local_stalled, local_censored), at
    f*'s point above tol only by float32 rounding (global), still moving at the cap (moving) and diverged; of N."""
    import pandas as pd

    chosen = pd.concat([g.chosen for g in analysis_of(path).groups])
    where = chosen["minimum"].fillna("") if "minimum" in chosen else pd.Series("", index=chosen.index)
    status = chosen["status"]
    local = where == "local"
    return {"N": len(chosen), "local": int(local.sum()), "local_stalled": int((local & (status == "stalled")).sum()),
            "local_censored": int((local & (status == "censored")).sum()), "global": int((where == "global").sum()),
            "moving": int(((where == "") & (status == "censored")).sum()),
            "diverged": int((status == "diverged").sum())}


def flow_error(path: str, depths: list, multiplier: float) -> dict[str, Any]:
    """How far the gradient-flow estimate (`otod.depth.theory.flow_iterations`: Saxe et al.'s learning-time
    integral over η) is from the exact factor recursion's count on the problem the file ran (its target's singular
    values and tolerance; identity init) at ``multiplier`` times the reference step, over ``depths``: the largest
    |flow − factor| / factor (percent) and the depth where it is largest (depth, flow, factor)."""
    from otod.depth import theory
    from otod.depth.linear import reference_step, singular_values

    config = read_config(results_of(path).meta)
    s = singular_values(int(config.problem.width), float(config.problem.target_kappa))
    tol = float(config.target.tol)
    depths = [int(depth) for depth in depths]
    etas = [multiplier * reference_step(depth, float(s.max())) for depth in depths]
    factors = theory.factor_iterations_many(depths, s, etas, tol, max_iters=10 ** 8)
    worst = None
    for depth, eta, factor in zip(depths, etas, factors):
        flow = theory.flow_iterations(depth, s, eta, tol)
        error = abs(flow - factor) / factor
        if worst is None or error > worst[0]:
            worst = (error, depth, flow, factor)
    error, depth, flow, factor = worst
    return {"percent": 100 * error, "depth": depth, "flow": flow, "factor": factor}
