"""The critical batch, as statistics of any S(B): McCandlish et al.'s curve S(B) = S_min (1 + B_crit/B) fitted to
the steps to target against the batch, its perfect-scaling region, and the analysis of a batch sweep built on the
core's one selection (`otod.core.analysis.analyse`). The noise obstacle reads it off its simulator and exact
recursions; the nets read it off real nets: both through this module, neither through the other.

Per series (a method; per d where a batch sweep has several, one group each): one (lr, β) per point chosen by the
median over seeds (Shallue et al. 2019), the medians there, S(B) fitted by `mccandlish_fit` (McCandlish et al.
2018, eq. 2.11; non-negative least squares on the relative misfit) with a seed bootstrap that re-chooses every
point's setting inside each resample (the choice is part of the estimator), the RMS relative misfit, the
perfect-scaling region (`perfect_scaling_limit`) and the chosen lr's log-log slope over it. On a sweep whose axis
is the dimension d instead (the noise obstacle's params sweep), the exponent of the steps in d.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from otod.core import analysis as core

#: Seed resamples of the critical-batch bootstrap: each re-chooses every setting and refits.
N_BOOT = 500

def mccandlish_fit(batches, steps) -> tuple[float, float]:
    """(S_min, B_crit) of S(B) = S_min (1 + B_crit/B) (McCandlish et al. 2018, eq. 2.11), with S_min ≥ 0 and
    B_crit ≥ 0: S is linear in 1/B, S = S_min + c/B with c = S_min·B_crit, so the fit is a non-negative least
    squares in (S_min, c), each point weighted by 1/S (its relative misfit counts). Exact, with no start to
    choose; an unconstrained fit printed S_min −3.2 and B_crit nan beside a finite CI.

    S_min = 0 (steps ∝ 1/B over the whole grid: perfect scaling everywhere) gives B_crit = inf, beyond the
    grid; c = 0 (no gain from batch anywhere) gives B_crit = 0. `describe_critical_batch` words both."""
    from scipy.optimize import nnls

    b, s = np.asarray(batches, float), np.asarray(steps, float)
    ok = np.isfinite(s) & (s > 0) & np.isfinite(b) & (b > 0)
    b, s = b[ok], s[ok]
    if len(b) < 2:
        return math.nan, math.nan
    A = np.stack([np.ones_like(b), 1.0 / b], -1) / s[:, None]
    (s_min, c), _ = nnls(A, np.ones_like(s))
    if s_min <= 0:
        return 0.0, math.inf
    return float(s_min), float(c / s_min)


def describe_critical_batch(b_crit: float, batches) -> str:
    """B_crit in words against the batches measured: the number where the grid brackets it, else which side of
    the grid it lies on (a fitted value beyond the data is not a measurement)."""
    b = np.asarray(batches, float)
    if not np.isfinite(b_crit) and not math.isinf(b_crit):
        return "—"
    if b_crit > b.max():
        return f"> {b.max():g} (beyond the largest B)"
    if b_crit < b.min():
        return f"< {b.min():g} (below the smallest B)"
    return f"{b_crit:.4g}"


def perfect_scaling_limit(batches, steps, slack: float = 1.1) -> float | None:
    """The largest B of a pair of consecutive grid points (B < B') over which the steps fall at least as fast as
    1/B within ``slack``: S(B')/S(B) ≤ slack·B/B'. For a grid that doubles this is S(2B)/S(B) ≤ 0.55; it holds
    for any spacing (a ×4 grid asks ≤ 0.275). None: no such pair."""
    b, s = np.asarray(batches, float), np.asarray(steps, float)
    best = None
    for i in range(len(b) - 1):
        if b[i + 1] > b[i] > 0 and s[i] > 0 and s[i + 1] > 0 and s[i + 1] / s[i] <= slack * b[i] / b[i + 1]:
            best = float(b[i])
    return best


def critical_batch_fit(batches: np.ndarray, medians: np.ndarray) -> np.ndarray:
    """The `otod.core.analysis.bootstrap` statistic of the critical batch: per row of ``medians`` [replicate,
    point] (NaN: left out), (S_min, B_crit, residual) of `mccandlish_fit`, the residual being the RMS of
    the relative misfit S_fit/S − 1 over the points fitted (NaN where B_crit is not finite: S_min = 0 has no
    curve to compare)."""
    out = np.full((len(medians), 3), math.nan)
    for i, steps in enumerate(np.asarray(medians, float)):
        s_min, b_crit = mccandlish_fit(batches, steps)
        out[i] = s_min, b_crit, relative_misfit(batches, steps, s_min, b_crit)
    return out


def relative_misfit(batches: np.ndarray, steps: np.ndarray, s_min: float, b_crit: float) -> float:
    """RMS over the finite, positive ``steps`` of S_min (1 + B_crit/B)/S − 1: the misfit `mccandlish_fit`
    minimises (each point weighted by 1/S); NaN without a finite fit."""
    ok = np.isfinite(steps) & (steps > 0)
    if not (ok.any() and math.isfinite(s_min) and math.isfinite(b_crit)):
        return math.nan
    fitted = s_min * (1.0 + b_crit / np.asarray(batches, float)[ok])
    return float(np.sqrt(np.mean((fitted / steps[ok] - 1.0) ** 2)))


@dataclass(frozen=True)
class CriticalBatch:
    """S(B) = S_min (1 + B_crit/B) on one method's medians: the estimate from every seed, its 95% seed-bootstrap
    CIs (the estimate itself where ``deterministic``), the RMS relative misfit, the points fitted and those left
    out (a median only a lower bound: censored; none: every lane diverged), and the bootstrap's ``replicates``
    [resample, (S_min, B_crit, residual)] (none where deterministic); ``no_ci``: why the CIs are NaN where the
    seeds are too few for one (`otod.core.analysis.no_ci_reason`)."""

    s_min: float
    b_crit: float
    residual: float
    s_min_ci: tuple[float, float]
    b_crit_ci: tuple[float, float]
    points: int
    censored: int
    diverged: int
    deterministic: bool
    replicates: np.ndarray
    no_ci: str | None = None

    def curve(self, batches) -> np.ndarray:
        return self.s_min * (1.0 + self.b_crit / np.asarray(batches, float))


@dataclass(frozen=True)
class Series:
    """One method's analysis (at one d of a batch sweep; ``dim`` None on a params sweep, whose axis is d).

    ``choice``: the all-seed choice (cube [point, setting, seed], chosen index, medians, edge flags);
    ``summary``: per point (`otod.core.analysis.summary`) with ``learning_rate``, the chosen absolute step (median
    over seeds); ``critical`` (batch sweeps), ``perfect_scaling`` (the largest B of perfect scaling, None: none),
    ``lr_slope`` over that region on ``lr_points`` points; ``exponent`` of steps ∝ d^exponent (params sweeps)
    on ``exponent_points`` points."""

    method: str
    dim: float | None
    choice: core.Choice
    summary: pd.DataFrame
    critical: CriticalBatch | None = None
    perfect_scaling: float | None = None
    lr_slope: float = math.nan
    lr_points: int = 0
    exponent: float = math.nan
    exponent_points: int = 0

    @property
    def x(self) -> np.ndarray:
        return self.summary["value"].to_numpy(float)

    @property
    def median(self) -> np.ndarray:
        return self.summary["median"].to_numpy(float)

    @property
    def bound(self) -> np.ndarray:
        return self.summary["lower_bound"].to_numpy(bool)

    @property
    def fitted(self) -> np.ndarray:
        """Points whose median enters fits: finite, positive, not only a lower bound."""
        return np.isfinite(core.fit_medians(self.median, self.bound))

    def at_choice(self, name: str) -> np.ndarray:
        """The cube's ``count``, ``lower`` or ``status`` at each point's chosen setting: [point, seed]."""
        return self.choice.at_choice(getattr(self.choice.cube, name))


@dataclass(frozen=True, eq=False)
class BatchAnalysis(core.Analysis):
    """A batch (or params) sweep's `otod.core.analysis.Analysis`, with the results' ``meta`` and the bootstrap's
    ``n_boot``; ``config`` is the config as stored (a dict). Its groups are the d of a batch sweep (one group on a params sweep, whose axis is d), and each
    series' ``fit`` is its `Series` (the critical-batch reading). ``series`` lists those readings; ``records``
    are the records at the chosen settings (one per point, method and seed, with ``lr_on_edge`` and
    ``beta_on_edge``)."""

    meta: dict = None
    n_boot: int = N_BOOT

    @property
    def series(self) -> tuple[Series, ...]:  # the readings, not the core's `SeriesAnalysis` (their ``fit``)
        return tuple(s.fit for g in self.groups for s in g.series)

    @property
    def records(self) -> pd.DataFrame:
        return self.chosen

    @property
    def mode(self) -> str:
        records = self.records
        return records["mode"].iloc[0] if len(records) and "mode" in records else self.meta.get("mode", "simulate")

    @property
    def dims(self) -> list[float | None]:
        return list(dict.fromkeys(s.dim for s in self.series))

    def at(self, dim: float | None) -> list[Series]:
        """The series of one d (every series on a params sweep)."""
        return [s for s in self.series if s.dim == dim]

    def on_edge(self, flag: str) -> list[tuple[float | None, str, float]]:
        """The (d, method, x) points whose chosen setting has ``flag`` (lr_on_edge or beta_on_edge)."""
        return [(s.dim, s.method, x) for s in self.series for x, on in zip(s.x, s.summary[flag]) if on]



def _line_slope(x: np.ndarray, y: np.ndarray, keep: np.ndarray) -> tuple[float, int]:
    """The log-log slope of y on x over ``keep`` (`otod.core.analysis.fit_line`) and its points."""
    keep = keep & np.isfinite(y) & (y > 0) & (x > 0)
    slope, _, _ = core.fit_line(np.log(x[keep]), np.log(y[keep]))
    return float(slope), int(keep.sum())


def _critical(boot: core.Bootstrap) -> CriticalBatch:
    choice = boot.choice
    fitted = np.isfinite(core.fit_medians(choice.median, choice.bound))
    return CriticalBatch(float(boot.estimate[0]), float(boot.estimate[1]), float(boot.estimate[2]), boot.ci(0),
                         boot.ci(1), int(fitted.sum()), int(choice.bound.sum()),
                         int((~np.isfinite(choice.median)).sum()), boot.deterministic, boot.replicates, boot.no_ci)


def reading(axis: str, fit: bool):
    """The ``fit`` of `otod.core.analysis.analyse` on a batch sweep (``axis`` "batch") or a params sweep ("dim"):
    each series' `Series`, with the critical-batch fit, the perfect-scaling region and the lr slope over it (batch),
    or the exponent of the steps in d (dim); ``fit`` False: the choice and medians only."""

    def read(name: str, boot: core.Bootstrap, statistic: Any, summary: pd.DataFrame) -> Series:
        choice = boot.choice
        dim = float(choice.cube.points["dim"].iloc[0]) if axis == "batch" and "dim" in choice.cube.points else None
        if not fit:
            return Series(name, dim, choice, summary)
        x, median = summary["value"].to_numpy(float), core.fit_medians(choice.median, choice.bound)
        fitted = np.isfinite(median)
        if axis != "batch":
            exponent, points = _line_slope(x, median, fitted)
            return Series(name, dim, choice, summary, exponent=exponent, exponent_points=points)
        limit = perfect_scaling_limit(x[fitted], median[fitted])
        slope, n = (math.nan, 0) if limit is None else _line_slope(x, summary["learning_rate"].to_numpy(float),
                                                                    fitted & (x <= limit))
        return Series(name, dim, choice, summary, _critical(boot), limit, slope, n)

    return read


def no_statistic(x: np.ndarray, medians: np.ndarray) -> np.ndarray:
    """The statistic of a series read without a fit (a params sweep's exponent is read off the medians): none."""
    return np.zeros((len(medians), 0))


def analyse_batches(frame: pd.DataFrame, meta: dict, *, axis: str, point: tuple[str, ...], n_boot: int = N_BOOT,
                    seed: int = 0, fit: bool = True) -> BatchAnalysis:
    """The analysis of a batch sweep's records (``axis`` "batch": one group per d, the critical batch bootstrapped
    over ``n_boot`` seed resamples drawn from ``seed``) or of a params sweep's ("dim": one group, the exponent in
    d), on the core's one selection; ``fit`` False: the choice and medians only (a curve to draw)."""
    batch = axis == "batch"
    found = core.analyse(frame, point=point, axis=axis, by=("dim",) if batch else (),
                         statistic=lambda x: critical_batch_fit if batch and fit else no_statistic,
                         fit=reading(axis, fit), n_boot=n_boot if batch and fit else 0, seed=seed)
    return BatchAnalysis(found.axis, found.tol, found.groups, None, meta["config"], meta=meta, n_boot=n_boot)
