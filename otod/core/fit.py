"""Scaling laws fitted to sweep results: iterations ≈ a·x^b along a sweep's main axis, with a 95% confidence
interval from the seeds.

What enters a fit, and why:

* the median over seeds at each point, with censored lanes counted as "at least their cap" (a censored count is
  a lower bound: leaving it out would bias the median low, averaging it in would bend the slope). Where more than
  half the seeds are censored, the median itself is only a lower bound ("≥ cap"): that point is shown, and left
  out of the fit. Diverged lanes are left out and counted;
* points at or above ``min_x`` only (the asymptotic range: the count at κ = 1 is 1 by construction, and the
  pre-asymptotic range bends the slope); excluded points are counted and drawn hollow;
* the confidence interval resamples the seeds (the problem instances, shared by every point: common random
  numbers) with replacement and refits, at fixed points (Efron & Tibshirani 1993, §6). Where every seed gives the
  same counts, the sweep is deterministic and there is no sampling error to report, so no interval is given;
* the residual, the RMS of the log-log misfit, shows a curved line for what it is.
"""

from __future__ import annotations

import math
import warnings
from typing import Callable, NamedTuple

import numpy as np

from otod.core.frame import Frame, first_seen


class PowerLawFit(NamedTuple):
    """iterations ≈ prefactor · x^exponent over ``points`` axis values, with the seed-bootstrap 95% CI.

    excluded_censored / excluded_diverged: lanes left out (censored ones count as ≥ cap in the medians; points
    whose median is only a lower bound are among ``excluded_points``); excluded_points: points below ``min_x`` or
    with a lower-bound median; residual: RMS of log(median) − fit; deterministic: every seed gave the same counts
    (the CI is then the estimate itself). theory_grid is the slope of the theory over the same points,
    theory_asymptotic its x → ∞ exponent (None without a closed form).
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
    residual: float = math.nan
    deterministic: bool = False
    excluded_points: int = 0
    min_x: float | None = None


def methods_of(records: list[dict] | Frame) -> list[str]:
    """The methods of the records, in order of first appearance."""
    if isinstance(records, Frame):
        return first_seen(records["method"])
    return list(dict.fromkeys(r["method"] for r in records))


def at_rung(records: list[dict] | Frame, rung: int) -> list[dict] | Frame:
    """The records as if the target were ladder rung ``rung``: iterations and status of its first hit."""
    if isinstance(records, Frame):
        hit = records["hits"][:, rung]
        reached = ~np.isnan(hit)
        status = records["status"]
        status = np.where(reached, "converged", np.where(status == "converged", "censored", status)).astype(object)
        return Frame({**records.data, "iterations": np.where(reached, hit, records["iterations"]),
                      "status": status})
    out = []
    for r in records:
        hit = r["hits"][rung]
        status = "converged" if hit is not None else ("censored" if r["status"] == "converged" else r["status"])
        out.append({**r, "iterations": hit if hit is not None else r["iterations"], "status": status})
    return out


def iteration_matrix(records: list[dict], method: str, axis: str):
    """(x values, matrix [value, seed] of counts, statuses): converged lanes hold their count, censored lanes their
    cap (a lower bound: see ``status``), diverged lanes NaN."""
    if isinstance(records, Frame):
        return _iteration_matrix(records, method, axis)
    rows = [r for r in records if r["method"] == method]
    xs = sorted({r[axis] for r in rows})
    seeds = sorted({r["seed"] for r in rows})
    xi, si = {x: i for i, x in enumerate(xs)}, {s: j for j, s in enumerate(seeds)}
    y = np.full((len(xs), len(seeds)), np.nan)
    status = np.full((len(xs), len(seeds)), "", dtype=object)
    for r in rows:
        i, j = xi[r[axis]], si[r["seed"]]
        status[i, j] = r["status"]
        if r["status"] in ("converged", "censored", "stalled"):
            y[i, j] = r["iterations"]
    return np.asarray(xs, float), y, status


def _iteration_matrix(frame: Frame, method: str, axis: str):
    """`iteration_matrix` of a `Frame`: the rows of the method scattered into [value, seed] by sorted index."""
    rows = frame.where(frame["method"] == method)
    xs, xi = np.unique(rows[axis], return_inverse=True)
    seeds, si = np.unique(rows["seed"], return_inverse=True)
    y = np.full((len(xs), len(seeds)), np.nan)
    status = np.full((len(xs), len(seeds)), "", dtype=object)
    status[xi, si] = rows["status"]
    counted = np.isin(rows["status"].astype(str), ("converged", "censored", "stalled"))
    y[xi[counted], si[counted]] = rows["iterations"][counted]
    return np.asarray(xs, float), y, status


def censored_medians(y: np.ndarray, lower: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Medians over the last axis with lanes in ``lower`` counted as +∞ (at least their value), NaN ignored;
    returns (median, whether it is only a lower bound). A lower-bound median is reported as the smallest
    censored value among those it rests on."""
    big = np.where(lower, np.inf, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        med = np.nanmedian(big, axis=-1)
        floor = np.nanmin(np.where(lower, y, np.nan), axis=-1) if lower.any() else np.full(med.shape, np.nan)
    bound = np.isinf(med)
    return np.where(bound, floor, med), bound


def summarize(records: list[dict] | Frame, axis: str) -> list[dict]:
    """Per (method, axis value): the median over seeds with censored lanes counted as ≥ their cap (``lower_bound``
    when the median itself is only that), quartiles of the converged counts, and counts by status."""
    out = []
    for method in methods_of(records):
        xs, y, status = iteration_matrix(records, method, axis)
        lower = np.isin(status, ("censored", "stalled"))
        med, bound = censored_medians(y, lower)
        converged = status == "converged"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a point with no converged lane: NaN, shown as None
            q25, q75 = np.nanpercentile(np.where(converged, y, np.nan), [25, 75], axis=1)
        n_converged = converged.sum(1)
        n_censored, n_stalled, n_diverged = ((status == s).sum(1) for s in ("censored", "stalled", "diverged"))
        for i, x in enumerate(xs):
            out.append({
                "method": method, "value": float(x),
                "median": float(med[i]) if np.isfinite(med[i]) else None, "lower_bound": bool(bound[i]),
                "q25": float(q25[i]) if n_converged[i] else None,
                "q75": float(q75[i]) if n_converged[i] else None,
                "converged": int(n_converged[i]), "censored": int(n_censored[i]), "stalled": int(n_stalled[i]),
                "diverged": int(n_diverged[i]),
            })
    return out


def nan_median(a: np.ndarray) -> np.ndarray:
    """Median along the last axis ignoring NaN (+∞ counts as a value), as ``np.nanmedian`` but by one sort: the
    bootstrap takes ~10⁵ such medians, where ``nanmedian``'s per-row handling of NaN dominated the report."""
    s = np.sort(a, axis=-1)  # NaN sort last
    n = (~np.isnan(a)).sum(-1)
    lo = np.take_along_axis(s, np.maximum((n - 1) // 2, 0)[..., None], -1)[..., 0]
    hi = np.take_along_axis(s, np.maximum(n // 2, 0)[..., None], -1)[..., 0]
    with np.errstate(invalid="ignore"):
        return np.where(n > 0, 0.5 * (lo + hi), np.nan)


def sorted_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(each row's sort order, the sorted rows, each row's count of non-NaN entries): what `resampled_medians`
    needs, computed once for all bootstrap replicates."""
    order = np.argsort(a, axis=1)  # NaN sort last
    return order, np.take_along_axis(a, order, 1), (~np.isnan(a)).sum(1)


def resampled_medians(rows: tuple[np.ndarray, np.ndarray, np.ndarray], cols: np.ndarray) -> np.ndarray:
    """``nan_median(a[:, cols].transpose(1, 0, 2))`` ([replicate, row]: each row's median over the columns that
    replicate drew, NaN ignored), bitwise, without gathering and sorting every resample.

    A replicate that draws column j c_j times holds, in row i, the row's sorted values each repeated c_j times, so
    its k-th order statistic is the first sorted value whose running count exceeds k. With the rows sorted once
    (`sorted_rows`), a pass over the sorted positions keeps every (row, replicate)'s running count and how many
    positions stay at or below the two middle ranks: O(rows × replicates) memory, and about 9× faster than the
    gather-and-sort on 1250 points × 200 seeds × 100 replicates."""
    order, ordered, valid = rows
    n_rows, n_cols = ordered.shape
    counts = np.zeros((n_cols, len(cols)), np.int32)  # [column, replicate]: how often each replicate drew it
    np.add.at(counts, (cols.ravel(), np.repeat(np.arange(len(cols)), cols.shape[1])), 1)
    not_nan = np.zeros((n_rows, n_cols))
    np.put_along_axis(not_nan, order, np.arange(n_cols)[None, :] < valid[:, None], 1)  # by column, not sorted
    n = (not_nan @ counts).astype(np.int32)  # [row, replicate]: values drawn that are not NaN (exact: small ints)
    below_low, below_high = np.maximum((n - 1) // 2, 0), n // 2
    running = np.zeros_like(n)
    low, high = np.zeros_like(n), np.zeros_like(n)
    for k in range(n_cols):
        running += counts[order[:, k]]
        low += running <= below_low
        high += running <= below_high
    low, high = np.minimum(low, n_cols - 1), np.minimum(high, n_cols - 1)
    index = np.arange(n_rows)[:, None]
    with np.errstate(invalid="ignore"):
        return np.ascontiguousarray(np.where(n > 0, 0.5 * (ordered[index, low] + ordered[index, high]), np.nan).T)


def slopes(logx: np.ndarray, logy: np.ndarray) -> np.ndarray:
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


class _Line(NamedTuple):
    exponent: float
    ci_low: float
    ci_high: float
    prefactor: float
    points: int
    residual: float
    deterministic: bool


def fit_power_law(x, y, lower=None, *, n_boot: int = 1000, seed: int = 0, batch: int = 100) -> _Line:
    """Fit log(median_s y[:, s]) = log a + b log x.

    ``y`` is [value, seed] with NaN for lanes left out; ``lower`` marks lanes whose count is only a lower bound
    (censored: +∞ in the median). Points whose median is a lower bound or not finite are left out. The CI is the
    2.5–97.5 percentile range of b over ``n_boot`` replicates that resample the seed columns (all points at once),
    computed ``batch`` replicates at a time by `resampled_medians` (memory O(batch · points)). NaNs come back where
    fewer than two points remain.
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    lower = np.zeros(y.shape, bool) if lower is None else np.asarray(lower, bool)
    med, bound = censored_medians(y, lower) if y.size else (np.array([]), np.array([], bool))
    use = np.isfinite(med) & ~bound & (med > 0)
    logx = np.log(x)
    logy = np.where(use, np.log(np.where(use, med, 1.0)), np.nan)
    b = float(slopes(logx, logy))
    if not math.isfinite(b):
        return _Line(math.nan, math.nan, math.nan, math.nan, int(use.sum()), math.nan, False)
    a = float(np.exp(np.mean(logy[use]) - b * np.mean(logx[use])))
    residual = float(np.sqrt(np.mean((logy[use] - np.log(a) - b * logx[use]) ** 2)))
    same = np.where(np.isnan(y), -1.0, np.where(lower, -2.0, y))
    deterministic = bool(np.all(same == same[:, :1]))
    if deterministic or y.shape[1] < 2:
        return _Line(b, b, b, a, int(use.sum()), residual, deterministic)
    rng = np.random.default_rng(seed)
    replicates = []
    rows = sorted_rows(np.where(lower, np.inf, y))
    for start in range(0, n_boot, batch):
        cols = rng.integers(0, y.shape[1], (min(batch, n_boot - start), y.shape[1]))
        boot = resampled_medians(rows, cols)  # [replicate, point]
        ok = np.isfinite(boot) & (boot > 0) & use[None, :]
        replicates.append(slopes(logx[None, :], np.where(ok, np.log(np.where(ok, boot, 1.0)), np.nan)))
    boot_b = np.concatenate(replicates)
    boot_b = boot_b[np.isfinite(boot_b)]
    low, high = (np.percentile(boot_b, [2.5, 97.5]) if boot_b.size else (math.nan, math.nan))
    return _Line(b, float(low), float(high), a, int(use.sum()), residual, False)


def fit_sweep(records: list[dict] | Frame, axis: str, *, min_x: float | None = None,
              exponent: Callable[[str], float | None] | None = None,
              exponent_on_grid: Callable[[str, np.ndarray], float | None] | None = None, n_boot: int = 1000,
              seed: int = 0) -> list[PowerLawFit]:
    """One `PowerLawFit` per method of a sweep's records (one record per seed and point: select rates first),
    along ``axis``, over the points ≥ ``min_x``; ``exponent`` and ``exponent_on_grid`` give the theory's slopes
    where it has them (the latter over the fitted points)."""
    fits = []
    for method in methods_of(records):
        xs, y, status = iteration_matrix(records, method, axis)
        keep = xs >= min_x if min_x is not None else np.ones(xs.shape, bool)
        lower = np.isin(status, ("censored", "stalled"))
        line = fit_power_law(xs[keep], y[keep], lower[keep], n_boot=n_boot, seed=seed)
        _, bound = censored_medians(y[keep], lower[keep]) if keep.any() else (None, np.array([], bool))
        fits.append(PowerLawFit(
            method, line.exponent, line.ci_low, line.ci_high, line.prefactor, line.points,
            int(np.sum(np.isin(status[keep], ("censored", "stalled")))), int(np.sum(status[keep] == "diverged")),
            exponent_on_grid(method, xs[keep]) if exponent_on_grid and keep.any() else None,
            exponent(method) if exponent else None, line.residual, line.deterministic,
            int((~keep).sum() + bound.sum()), min_x))
    return fits
