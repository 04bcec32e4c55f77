"""Scaling laws fitted to sweep results: iterations ≈ a·x^b along a sweep's main axis, with a bootstrap 95%
confidence interval.

Only converged lanes enter a fit. Censored lanes (stopped at the cap) and diverged lanes are excluded and
counted, never averaged in: a censored count is a lower bound, and mixing it in would bend the slope down. With
``--lr tuned`` each point keeps the rate chosen by the median over seeds first (`otod.core.tuning.selected`).

The fit is least squares of log(median iterations over seeds) on log x. The confidence interval resamples seeds
(the problem instances) and sweep points with replacement and refits (a pairs bootstrap, Efron & Tibshirani 1993,
§9.5), so it reflects both seed-to-seed spread and how well a single power law describes the curve.
"""

from __future__ import annotations

import math
import warnings
from typing import Callable, NamedTuple

import numpy as np


class PowerLawFit(NamedTuple):
    """iterations ≈ prefactor · x^exponent over ``points`` sweep values, with the bootstrap 95% CI of the exponent.

    excluded_censored / excluded_diverged count the lanes left out; theory_grid is the slope of the closed form
    fitted over the same sweep values, theory_asymptotic its x → ∞ exponent (None without a closed form).
    """

    method: str
    exponent: float
    ci_low: float
    ci_high: float
    prefactor: float
    points: int
    excluded_censored: int
    excluded_diverged: int
    theory_grid: float | None
    theory_asymptotic: float | None


def at_rung(records: list[dict], rung: int) -> list[dict]:
    """The records as if the target were ladder rung ``rung``: iterations and status of its first hit."""
    out = []
    for r in records:
        hit = r["hits"][rung]
        status = "converged" if hit is not None else ("censored" if r["status"] == "converged" else r["status"])
        out.append({**r, "iterations": hit if hit is not None else r["iterations"], "status": status})
    return out


def iteration_matrix(records: list[dict], method: str, axis: str):
    """(x values, matrix [value, seed] of iterations with NaN for lanes that did not converge, statuses)."""
    rows = [r for r in records if r["method"] == method]
    xs = sorted({r[axis] for r in rows})
    seeds = sorted({r["seed"] for r in rows})
    xi, si = {x: i for i, x in enumerate(xs)}, {s: j for j, s in enumerate(seeds)}
    y = np.full((len(xs), len(seeds)), np.nan)
    status = np.full((len(xs), len(seeds)), "", dtype=object)
    for r in rows:
        i, j = xi[r[axis]], si[r["seed"]]
        status[i, j] = r["status"]
        if r["status"] == "converged":
            y[i, j] = r["iterations"]
    return np.asarray(xs, float), y, status


def summarize(records: list[dict], axis: str, theory: Callable[[str, float], float | None] | None = None
              ) -> list[dict]:
    """Per (method, axis value): median and quartiles of converged iterations, counts by status, and the theory's
    prediction where ``theory(method, x)`` gives one."""
    out = []
    for method in dict.fromkeys(r["method"] for r in records):
        xs, y, status = iteration_matrix(records, method, axis)
        for i, x in enumerate(xs):
            conv = y[i][np.isfinite(y[i])]
            out.append({
                "method": method, "value": float(x),
                "median": float(np.median(conv)) if conv.size else None,
                "q25": float(np.percentile(conv, 25)) if conv.size else None,
                "q75": float(np.percentile(conv, 75)) if conv.size else None,
                "converged": int(conv.size), "censored": int(np.sum(status[i] == "censored")),
                "diverged": int(np.sum(status[i] == "diverged")),
                "theory": theory(method, float(x)) if theory is not None else None,
            })
    return out


def _slopes(logx: np.ndarray, logy: np.ndarray) -> np.ndarray:
    """Least-squares slopes along the last axis, ignoring NaN entries of logy; NaN where < 2 distinct x remain."""
    w = np.isfinite(logy)
    n = w.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        xm = np.where(w, logx, 0).sum(-1) / n
        ym = np.where(w, logy, 0).sum(-1) / n
        dx = np.where(w, logx - xm[..., None], 0)
        sxx = (dx * dx).sum(-1)
        slope = (dx * np.where(w, logy - ym[..., None], 0)).sum(-1) / sxx
    return np.where((n >= 2) & (sxx > 1e-12), slope, np.nan)


def fit_power_law(x, y, *, n_boot: int = 1000, seed: int = 0) -> tuple[float, float, float, float, int]:
    """Fit log(median_s y[:, s]) = log a + b log x; return (b, ci_low, ci_high, a, points).

    ``y`` is [value, seed] with NaN for excluded lanes. The CI is the 2.5–97.5 percentile range of b over
    ``n_boot`` pairs-bootstrap replicates (seeds and values resampled). NaNs come back where fewer than two values
    have a converged lane.
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        med = np.nanmedian(y, axis=1) if y.size else np.array([])
        logx, logy = np.log(x), np.log(med)
        b = float(_slopes(logx, logy))
        if not math.isfinite(b):
            return math.nan, math.nan, math.nan, math.nan, int(np.isfinite(logy).sum())
        w = np.isfinite(logy)
        a = float(np.exp(np.mean(logy[w]) - b * np.mean(logx[w])))
        rng = np.random.default_rng(seed)
        rows = rng.integers(0, len(x), (n_boot, len(x)))
        cols = rng.integers(0, y.shape[1], (n_boot, y.shape[1]))
        boot_med = np.nanmedian(y[rows[:, :, None], cols[:, None, :]], axis=2)
        slopes = _slopes(logx[rows], np.log(boot_med))
    slopes = slopes[np.isfinite(slopes)]
    low, high = (np.percentile(slopes, [2.5, 97.5]) if slopes.size else (math.nan, math.nan))
    return b, float(low), float(high), a, int(w.sum())


def fit_sweep(records: list[dict], axis: str, *, exponent: Callable[[str], float | None] | None = None,
              exponent_on_grid: Callable[[str, np.ndarray], float | None] | None = None, n_boot: int = 1000,
              seed: int = 0) -> list[PowerLawFit]:
    """One `PowerLawFit` per method of a sweep's records (one record per seed and point: select rates first),
    along ``axis``; ``exponent`` and ``exponent_on_grid`` give the theory's slopes where it has them."""
    fits = []
    for method in dict.fromkeys(r["method"] for r in records):
        xs, y, status = iteration_matrix(records, method, axis)
        b, lo, hi, a, points = fit_power_law(xs, y, n_boot=n_boot, seed=seed)
        fits.append(PowerLawFit(method, b, lo, hi, a, points, int(np.sum(status == "censored")),
                                int(np.sum(status == "diverged")),
                                exponent_on_grid(method, xs) if exponent_on_grid else None,
                                exponent(method) if exponent else None))
    return fits
