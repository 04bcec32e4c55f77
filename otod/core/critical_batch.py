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

import dataclasses
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
    b, s = np.asarray(batches, float), np.asarray(steps, float)
    ok = np.isfinite(s) & (s > 0) & np.isfinite(b) & (b > 0)
    b, s = b[ok], s[ok]
    if len(b) < 2:
        return math.nan, math.nan
    A = np.stack([np.ones_like(b), 1.0 / b], -1) / s[:, None]
    s_min, c = nonnegative_least_squares_2(A, np.ones_like(s))
    if s_min <= 0:
        return 0.0, math.inf
    return float(s_min), float(c / s_min)


def nonnegative_least_squares_2(A: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """argmin ‖A x − y‖ over x ≥ 0 for two columns, exactly: the problem is convex, so its minimiser is the
    unconstrained least squares where that is ≥ 0, else the better of the two one-column fits clamped at 0 (a
    minimiser with one coordinate 0 is the other's one-dimensional fit), else 0. What SciPy's ``nnls`` returns
    (tested against it), without importing ``scipy.optimize`` (about 1 s of every command's start)."""
    def residual(x) -> float:
        return float(np.sum((A @ x - y) ** 2))

    candidates = [np.zeros(2)]
    gram = A.T @ A
    if abs(np.linalg.det(gram)) > 1e-300:
        full = np.linalg.solve(gram, A.T @ y)
        if np.all(full >= 0):
            candidates.append(full)
    for j in range(2):
        norm = float(A[:, j] @ A[:, j])
        if norm > 0:
            x = np.zeros(2)
            x[j] = max(float(A[:, j] @ y) / norm, 0.0)
            candidates.append(x)
    best = min(candidates, key=residual)
    return float(best[0]), float(best[1])


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
    point] (NaN: left out), (S_min, B_crit, residual) of `mccandlish_fit` (all rows at once, `mccandlish_fits`),
    the residual being the RMS of the relative misfit S_fit/S − 1 over the points fitted (NaN where B_crit is not
    finite: S_min = 0 has no curve to compare)."""
    medians = np.asarray(medians, float)
    out = np.full((len(medians), 3), math.nan)
    out[:, :2] = mccandlish_fits(batches, medians)
    b = np.asarray(batches, float)
    ok = np.isfinite(medians) & (medians > 0)
    fitted = ok.any(axis=1) & np.isfinite(out[:, 0]) & np.isfinite(out[:, 1])
    for mask in np.unique(ok[fitted], axis=0):  # rows of one fitted set of points at a time, as `relative_misfit`
        rows = np.flatnonzero(fitted & np.all(ok == mask, axis=1))
        s_min, b_crit = out[rows, :1], out[rows, 1:2]
        misfit = s_min * (1.0 + b_crit / b[mask]) / medians[rows][:, mask] - 1.0
        out[rows, 2] = np.sqrt(np.mean(misfit ** 2, axis=1))
    return out


def mccandlish_fits(batches, steps) -> np.ndarray:
    """`mccandlish_fit` of every row of ``steps`` [row, point] at once: [row, (S_min, B_crit)], equal to it row by
    row bit for bit (tested). The rows are grouped by the points they fit (finite, positive), each group one stack
    of the same-sized problems solved by `nonnegative_least_squares_rows`. Why: a batch sweep's bootstrap fits
    every replicate of every panel (500 × panels); one fit at a time was 55,116 Python-level fits, 4.2 s of the
    claims check's 30 s, against 0.43 s stacked."""
    b_all, rows = np.asarray(batches, float), np.asarray(steps, float)
    out = np.full((len(rows), 2), math.nan)
    ok = np.isfinite(rows) & (rows > 0) & np.isfinite(b_all) & (b_all > 0)
    for mask in np.unique(ok, axis=0):
        if mask.sum() < 2:
            continue
        group = np.flatnonzero(np.all(ok == mask, axis=1))
        b, s = b_all[mask], rows[group][:, mask]
        A = np.stack([np.ones_like(s), np.broadcast_to(1.0 / b, s.shape)], -1) / s[..., None]
        x = nonnegative_least_squares_rows(A, np.ones(int(mask.sum())))
        s_min, c = x[:, 0], x[:, 1]
        positive = s_min > 0
        out[group[~positive]] = 0.0, math.inf
        out[group[positive], 0] = s_min[positive]
        out[group[positive], 1] = c[positive] / s_min[positive]
    return out


def nonnegative_least_squares_rows(A: np.ndarray, y: np.ndarray) -> np.ndarray:
    """`nonnegative_least_squares_2` of a stack of problems, ``A`` [row, n, 2] against one ``y`` [n]: [row, 2],
    by the same operations on each row (the same candidates, the first of the least residual winning as
    ``min`` chooses), so each row equals the one-problem function bit for bit (tested)."""
    rows = A.shape[0]
    At = np.swapaxes(A, -1, -2)
    gram = np.matmul(At, A)
    candidates, valid = [np.zeros((rows, 2))], [np.ones(rows, bool)]
    solvable = np.abs(np.linalg.det(gram)) > 1e-300
    full = np.full((rows, 2), np.nan)
    if solvable.any():
        full[solvable] = np.linalg.solve(gram[solvable], np.matmul(At[solvable], y)[..., None])[..., 0]
    candidates.append(full)
    valid.append(solvable & np.all(full >= 0, axis=-1))
    for j in range(2):
        column = A[..., j]
        norm = np.vecdot(column, column)
        x = np.zeros((rows, 2))
        with np.errstate(divide="ignore", invalid="ignore"):
            x[:, j] = np.maximum(np.vecdot(column, y) / norm, 0.0)
        candidates.append(x)
        valid.append(norm > 0)
    X = np.stack(candidates, 1)  # [row, candidate, 2]
    residual = np.sum((np.matmul(A[:, None], X[..., None])[..., 0] - y) ** 2, axis=-1)
    residual = np.where(np.stack(valid, 1) & ~np.isnan(residual), residual, np.inf)
    return X[np.arange(rows), np.argmin(residual, axis=1)]


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
    #: The seed columns each replicate drew [replicate, seed] (`otod.core.analysis.Bootstrap.draws`; None where
    #: none), so a statistic of per-seed values beside the sweep pairs with these replicates.
    draws: np.ndarray | None = None

    def curve(self, batches) -> np.ndarray:
        return self.s_min * (1.0 + self.b_crit / np.asarray(batches, float))

    def band(self, batches, level: float = 0.95) -> tuple[np.ndarray, np.ndarray] | None:
        """The pointwise ``level`` band of the fitted S(B) at ``batches``: the percentiles over the bootstrap's
        replicate curves S_min_r (1 + B_crit_r/B) (each resample's (lr, β) re-chosen, so the band covers the
        selection), or None where there is no CI (deterministic, or too few seeds, or no finite replicate)."""
        reps = np.asarray(self.replicates, float)
        if self.deterministic or self.no_ci or reps.ndim != 2 or not len(reps):
            return None
        b = np.asarray(batches, float)
        with np.errstate(all="ignore"):
            return core.pointwise_band(reps[:, :1] * (1.0 + reps[:, 1:2] / b[None, :]), level)


@dataclass(frozen=True)
class Series:
    """One method's analysis (at one d of a batch sweep; ``dim`` None on a params sweep, whose axis is d; ``panel``
    the values of every field that panels the sweep, d among them).

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
    #: The panel's (field, value) pairs, e.g. (("dim", 2410.0), ("examples", 256.0)) (`analyse_batches`'s ``by``).
    panel: tuple = ()

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
    ``n_boot``; ``config`` is the sweep's typed config (`otod.core.config.SweepConfig`, None where the caller gave
    none). Its groups are the d of a batch sweep (one group on a params sweep, whose axis is d), and each
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

    @property
    def panels(self) -> list[tuple]:
        """Each panel's (field, value) pairs, in order (one per d where d alone panels the sweep)."""
        return list(dict.fromkeys(s.panel for s in self.series))

    def in_panel(self, panel: tuple) -> list[Series]:
        """The series of one panel (`panels`)."""
        return [s for s in self.series if s.panel == panel]

    def on_edge(self, flag: str) -> list[tuple[float | None, str, float]]:
        """The (d, method, x) points whose chosen setting has ``flag`` (lr_on_edge or beta_on_edge)."""
        return [(s.dim, s.method, x) for s in self.series for x, on in zip(s.x, s.summary[flag]) if on]



def _line_slope(x: np.ndarray, y: np.ndarray, keep: np.ndarray) -> tuple[float, int]:
    """The log-log slope of y on x over ``keep`` (`otod.core.line_fit.fit_line`) and its points."""
    keep = keep & np.isfinite(y) & (y > 0) & (x > 0)
    slope, _, _ = core.fit_line(np.log(x[keep]), np.log(y[keep]))
    return float(slope), int(keep.sum())


def _critical(boot: core.Bootstrap) -> CriticalBatch:
    choice = boot.choice
    fitted = np.isfinite(core.fit_medians(choice.median, choice.bound))
    return CriticalBatch(float(boot.estimate[0]), float(boot.estimate[1]), float(boot.estimate[2]), boot.ci(0),
                         boot.ci(1), int(fitted.sum()), int(choice.bound.sum()),
                         int((~np.isfinite(choice.median)).sum()), boot.deterministic, boot.replicates, boot.no_ci,
                         boot.draws)


def reading(axis: str, fit: bool, by: tuple[str, ...] = ("dim",)):
    """The ``fit`` of `otod.core.analysis.analyse` on a batch sweep (``axis`` "batch") or a params sweep ("dim"):
    each series' `Series`, with the critical-batch fit, the perfect-scaling region and the lr slope over it (batch),
    or the exponent of the steps in d (dim); ``fit`` False: the choice and medians only. ``by``: the fields that
    panel a batch sweep (each series' ``panel``)."""

    def read(name: str, boot: core.Bootstrap, statistic: Any, summary: pd.DataFrame) -> Series:
        choice = boot.choice
        points = choice.cube.points
        dim = float(points["dim"].iloc[0]) if axis == "batch" and "dim" in points else None
        panel = tuple((f, float(points[f].iloc[0])) for f in by if f in points) if axis == "batch" else ()
        if not fit:
            return Series(name, dim, choice, summary, panel=panel)
        x, median = summary["value"].to_numpy(float), core.fit_medians(choice.median, choice.bound)
        fitted = np.isfinite(median)
        if axis != "batch":
            exponent, points = _line_slope(x, median, fitted)
            return Series(name, dim, choice, summary, exponent=exponent, exponent_points=points)
        limit = perfect_scaling_limit(x[fitted], median[fitted])
        slope, n = (math.nan, 0) if limit is None else _line_slope(x, summary["learning_rate"].to_numpy(float),
                                                                    fitted & (x <= limit))
        return Series(name, dim, choice, summary, _critical(boot), limit, slope, n, panel=panel)

    return read


def no_statistic(x: np.ndarray, medians: np.ndarray) -> np.ndarray:
    """The statistic of a series read without a fit (a params sweep's exponent is read off the medians): none."""
    return np.zeros((len(medians), 0))


def analyse_batches(frame: pd.DataFrame, meta: dict, *, axis: str, point: tuple[str, ...], n_boot: int = N_BOOT,
                    seed: int = 0, fit: bool = True, by: tuple[str, ...] = ("dim",), config: Any = None
                    ) -> BatchAnalysis:
    """The analysis of a batch sweep's records (``axis`` "batch": one group per panel, a value of each ``by`` field
    the records hold (d; the nets add the training set's size), the critical batch bootstrapped over ``n_boot``
    seed resamples drawn from ``seed``) or of a params sweep's ("dim": one group, the exponent in d), on the core's
    one selection; ``fit`` False: the choice and medians only (a curve to draw). ``config``: the sweep's typed config
    (`otod.core.config.read_config` of ``meta``), kept as the analysis's ``config`` for its report and figure."""
    batch = axis == "batch"
    point, by = batch_fields(frame, axis=axis, point=point, by=by)
    found = core.analyse(frame, point=point, axis=axis, by=by,
                         statistic=lambda x: critical_batch_fit if batch and fit else no_statistic,
                         fit=reading(axis, fit, by), n_boot=n_boot if batch and fit else 0, seed=seed)
    return BatchAnalysis(found.axis, found.tol, found.groups, None, config, meta=meta, n_boot=n_boot)


def batch_fields(frame: pd.DataFrame, *, axis: str, point: tuple[str, ...], by: tuple[str, ...] = ("dim",)
                 ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(point fields, group fields) of a batch sweep's analysis (`analyse_batches`) or its bracket's read
    (`place_batches`): the ``by`` fields the records hold panel a batch sweep, and join its point; a params
    sweep is one group."""
    by = tuple(f for f in by if f in frame) if axis == "batch" else ()
    return tuple(dict.fromkeys(by + tuple(point))), by


def place_batches(frame: pd.DataFrame, *, axis: str, point: tuple[str, ...], by: tuple[str, ...] = ("dim",)
                  ) -> tuple[core.Placed, ...]:
    """The choices `analyse_batches` makes on these records, on the point estimates alone
    (`otod.core.analysis.placements`: no bootstrap, no fit): what the bracket's rounds read."""
    point, by = batch_fields(frame, axis=axis, point=point, by=by)
    return core.placements(frame, point=point, by=by)


def inside(b_crit: float, batches) -> bool:
    """Whether a fitted B_crit lies within the batches it was fitted on (beyond them it is an extrapolation, not a
    measurement: `describe_critical_batch` says so, and no rule or ratio uses it)."""
    b = np.asarray(batches, float)
    return bool(b.size and math.isfinite(b_crit) and b.min() <= b_crit <= b.max())


@dataclass(frozen=True)
class ScalingRule:
    """B_crit ∝ x^slope over the panels of one method at fixed values of the other panel fields (``fixed``):
    the least-squares line of log B_crit on log x (``intercept`` its value at log x = 0), its 95% CI from the
    panels' bootstrap replicates (NaN, with ``no_ci`` saying why, where the seeds are too few), the ``points``
    fitted and the ``span`` (smallest, largest x); ``replicates`` [replicate, (slope, intercept)]: the line refitted
    to each bootstrap row the CI reads (none where there is no CI)."""

    method: str
    field: str
    fixed: tuple
    slope: float
    intercept: float
    ci: tuple[float, float]
    points: int
    span: tuple[float, float]
    no_ci: str | None = None
    replicates: np.ndarray = dataclasses.field(default_factory=lambda: np.empty((0, 2)), compare=False)

    def line(self, x) -> np.ndarray:
        return np.exp(self.intercept) * np.asarray(x, float) ** self.slope

    def band(self, x, level: float = 0.95) -> tuple[np.ndarray, np.ndarray] | None:
        """The pointwise ``level`` band of the line at ``x``: the percentiles over the replicate lines
        e^(intercept_r)·x^(slope_r) (`otod.core.analysis.pointwise_band`), or None where there is no CI."""
        reps = np.asarray(self.replicates, float)
        if self.no_ci or reps.ndim != 2 or not len(reps):
            return None
        with np.errstate(all="ignore"):
            return core.pointwise_band(np.exp(reps[:, 1:2]) * np.asarray(x, float)[None, :] ** reps[:, :1], level)


#: Bootstrap rows a rule's CI needs (fewer: NaN).
MIN_RULE_REPLICATES = 20


def scaling_rules(analysis: BatchAnalysis, field: str) -> list[ScalingRule]:
    """How B_crit scales with one panel field (the parameter count d, or the nets' training-set size D): per method
    and per value of the other panel fields, over the panels whose B_crit is finite and inside its batches (at
    least 3), the least-squares slope of log B_crit on log x. Its 95% CI is the percentile interval of the slopes
    refitted to the panels' bootstrap replicates taken row by row (each replicate resamples a panel's seeds and
    re-chooses every point's (lr, β) before fitting S(B), so the selection is inside the interval); rows where
    any panel's replicate B_crit is not finite are left out."""
    groups: dict[tuple, list] = {}
    for panel in analysis.panels:
        values = dict(panel)
        if field not in values:
            continue
        fixed = tuple((f, v) for f, v in panel if f != field)
        for s in analysis.in_panel(panel):
            if s.critical is not None and inside(s.critical.b_crit, s.x[s.fitted]):
                groups.setdefault((s.method, fixed), []).append((values[field], s))
    rules = []
    for (method, fixed), rows in groups.items():
        if len(rows) < 3:
            continue
        x = np.log(np.array([v for v, _ in rows], float))
        b = np.log(np.array([s.critical.b_crit for _, s in rows], float))
        slope, intercept, _ = (float(v) for v in core.fit_line(x, b))
        no_ci = next((s.critical.no_ci for _, s in rows if s.critical.no_ci), None)
        ci, lines = _rule_ci(x, [s for _, s in rows], no_ci)
        rules.append(ScalingRule(method, field, fixed, slope, intercept, ci, len(rows),
                                 (float(np.exp(x.min())), float(np.exp(x.max()))), no_ci, lines))
    return rules


def _rule_ci(x: np.ndarray, series: list[Series], no_ci: str | None) -> tuple[tuple[float, float], np.ndarray]:
    """The 95% percentile interval of the slope refitted to each bootstrap row (`scaling_rules`), and the refitted
    lines [row, (slope, intercept)] it reads (none, and a NaN interval, where there is no CI)."""
    none = np.empty((0, 2))
    reps = [s.critical.replicates[:, 1] if s.critical.replicates.ndim == 2 else np.zeros(0) for s in series]
    k = min(len(r) for r in reps)
    if no_ci is not None or not k:
        return (math.nan, math.nan), none
    with np.errstate(divide="ignore", invalid="ignore"):
        stacked = np.log(np.stack([r[:k] for r in reps], axis=1))
    ok = np.all(np.isfinite(stacked), axis=1)
    draws, intercepts, _ = core.fit_line(x, stacked[ok])
    if len(draws) <= MIN_RULE_REPLICATES:
        return (math.nan, math.nan), none
    return ((float(np.percentile(draws, 2.5)), float(np.percentile(draws, 97.5))),
            np.stack([draws, intercepts], axis=1))
