"""Readers of the claims table (`otod.claims`) for docs/depth.md's numbers that no other reader gives: several
values of a results file's metadata at once, two medians and their ratio, a sweep's lanes by status, where a
depth series' medians become lower bounds, a depth series' law refitted over a subset of its depths (the
Gaussian chain's 2..20 against 10..20), and how far the per-mode recursion is from the exact factor recursion
on the problem a results file ran (registered in `otod.claim_readers.READERS` beside the others)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from otod.claim_records import meta_value, results_of
from otod.core.config import read_config


def meta_values(path: str, **keys: str) -> dict[str, Any]:
    """Several values of a results file's metadata, each ``name = "dotted.key"`` (`meta_value`): e.g. lanes =
    "record_count", compiles = "compile_count", ratio = "lane_iterations.ratio", as the run recorded them."""
    return {name: meta_value(path, key)["value"] for name, key in keys.items()}


def depth_law_over(path: str, series: str, xs: list, tol: float | None = None) -> dict[str, Any]:
    """A depth series' law chosen by AIC (`otod.claim_readers.depth_law`'s values) fitted to the file's records at
    the depths ``xs`` only, through the sweep's own analysis (`otod.core.pipeline.analyse` on those records): the
    fit a sweep over just those depths would print, read from one wider sweep."""
    from otod.claim_records import _series
    from otod.core.pipeline import analyse
    from otod.core.results import Results
    from otod.obstacles import load_all

    load_all()
    results = results_of(path)
    wanted = np.asarray(xs, float)
    records = [r for r in results.records if np.isclose(float(r["depth"]), wanted).any()]
    fit = _series(analyse(Results(results.meta, records), tol), series).fit
    return {"law": fit.law, "c": fit.exp_c, "c_lo": fit.exp_ci[0], "c_hi": fit.exp_ci[1], "b": fit.power_b,
            "b_lo": fit.power_ci[0], "b_hi": fit.power_ci[1], "daic": fit.delta_aic, "points": fit.points}


def median_ratio(path: str, series: str, x0: float, x1: float, tol: float | None = None) -> dict[str, Any]:
    """A series' medians at two axis values (m0 at ``x0``, m1 at ``x1``, `otod.claim_readers.medians`) and their
    ratio m1 / m0 (ratio): how many times the count grows from one depth to the other."""
    from otod.claim_records import medians

    m = medians(path, series, [x0, x1], tol)
    return {**m, "ratio": m["m1"] / m["m0"]}


def lane_totals(path: str, **where) -> dict[str, Any]:
    """How many of a sweep's lanes (records whose fields equal ``where``) end in each status (converged,
    censored, stalled, diverged), every lane counted once, and the iteration cap the run resolved (cap): the
    counts over a whole sweep that its prose quotes."""
    results = results_of(path)
    statuses = [r["status"] for r in results.records if all(r.get(k) == v for k, v in where.items())]
    cap = read_config(results.meta).resolved_max_iters
    return {s: statuses.count(s) for s in ("converged", "censored", "stalled", "diverged")} | {
        "lanes": len(statuses), "cap": cap}


@functools.lru_cache(maxsize=None)
def _mode_and_factor_counts(width: int, kappa: float, tol: float, depths: tuple[int, ...], multiplier: float
                            ) -> list[tuple[int, int]]:
    """The per-mode and the exact factor recursion's iterations to ``tol`` at ``multiplier`` times the reference
    step (`mode_error`) at each depth, the depths stepped side by side (`otod.depth.theory.factor_iterations_many`),
    once per problem, depths and step."""
    from otod.depth import theory
    from otod.depth.linear import reference_step, singular_values

    s = singular_values(width, kappa)
    etas = [multiplier * reference_step(depth, float(s.max())) for depth in depths]
    return list(zip(theory.mode_iterations_many(depths, s, etas, tol),
                    theory.factor_iterations_many(depths, s, etas, tol)))


def mode_error(path: str, depths: list, multiplier: float) -> dict[str, Any]:
    """How far the per-mode recursion u ← u + ηL·u^{2−2/L}(s − u) (first order in η) is from the exact factor
    recursion w ← w + η w^{L−1}(s − w^L) on the problem the file ran (its target's singular values s and its
    tolerance), identity init, at ``multiplier`` times the reference step η = 1/(L·s_max^{2(L−1)/L})
    (`otod.depth.theory`): the largest |modes − factor| / factor over ``depths`` (error, in %: percent), the depth
    where it is largest and both counts there (depth, modes, factor)."""
    config = read_config(results_of(path).meta)
    problem = (int(config.problem.width), float(config.problem.target_kappa), float(config.target.tol))
    depths = tuple(int(depth) for depth in depths)
    worst = None
    for depth, (modes, factor) in zip(depths, _mode_and_factor_counts(*problem, depths, float(multiplier))):
        error = abs(modes - factor) / factor
        if worst is None or error > worst[0]:
            worst = (error, depth, modes, factor)
    error, depth, modes, factor = worst
    return {"error": error, "percent": 100 * error, "depth": depth, "modes": modes, "factor": factor}


def depth_marks(path: str, series: str, tol: float | None = None) -> dict[str, Any]:
    """Where a depth series' medians stop being counts (the analysis's summary, `point_summary`'s rows): the
    least depth from which every median is only a lower bound, resting on censored or stalled lanes (bound_from),
    and the depths with stalled lanes (stalled: "a–b" by `otod.claim_readers.span`, or "none")."""
    from otod.claim_records import _series, analysis_of, span

    summary = _series(analysis_of(path, tol), series).summary.sort_values("value")
    depths = summary["value"].to_numpy(float)
    bound = summary["lower_bound"].to_numpy(bool)
    free = np.flatnonzero(~bound)
    start = int(free[-1]) + 1 if len(free) else 0
    stalled = depths[summary["stalled"].to_numpy(int) > 0]
    return {"bound_from": float(depths[start]) if start < len(depths) else float("nan"),
            "stalled": span(stalled.tolist()) if len(stalled) else "none"}
