"""The analysis of a noise or params sweep, computed once per command on the one core pipeline
(`otod.core.analysis`) and read by the text report, the figures and ``otod fit``.

Per method (and per d, where a batch sweep has several): one (lr, β) per point, chosen by the median over seeds
(Shallue et al. 2019); the medians there; for a batch sweep the critical batch, S(B) = S_min (1 + B_crit/B)
fitted by `otod.noise.theory.mccandlish_fit` (McCandlish et al. 2018, eq. 2.11; non-negative least squares on the
relative misfit), with a seed bootstrap that re-chooses every point's setting inside each resample (the choice is
part of the estimator: keeping the all-seed choice made the interval too narrow) and the RMS relative misfit
beside it; the perfect-scaling region (`theory.perfect_scaling_limit`) and the chosen lr's log-log slope over it;
for a params sweep the exponent of the steps in d. Every line fit is `otod.core.analysis.fit_line`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from otod.core import analysis as core
from otod.noise import records as noise_records
from otod.noise import theory

#: Seed resamples of the critical-batch bootstrap: each re-chooses every setting and refits.
N_BOOT = 500


def critical_batch_fit(batches: np.ndarray, medians: np.ndarray) -> np.ndarray:
    """The `otod.core.analysis.bootstrap` statistic of the critical batch: per row of ``medians`` [replicate,
    point] (NaN: left out), (S_min, B_crit, residual) of `theory.mccandlish_fit`, the residual being the RMS of
    the relative misfit S_fit/S − 1 over the points fitted (NaN where B_crit is not finite: S_min = 0 has no
    curve to compare)."""
    out = np.full((len(medians), 3), math.nan)
    for i, steps in enumerate(np.asarray(medians, float)):
        s_min, b_crit = theory.mccandlish_fit(batches, steps)
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


@dataclass(frozen=True)
class NoiseAnalysis:
    """A noise or params sweep's analysis: ``records``, the chosen ones (one setting per point and method, with
    ``lr_on_edge`` and ``beta_on_edge``); ``series``, per method (and d); ``axis``, "batch" or "dim"."""

    meta: dict
    axis: str
    records: pd.DataFrame
    series: tuple[Series, ...]
    n_boot: int

    @property
    def config(self) -> dict:
        return self.meta["config"]

    @property
    def mode(self) -> str:
        return self.records["mode"].iloc[0] if len(self.records) else self.meta.get("mode", "simulate")

    @property
    def dims(self) -> list[float | None]:
        return list(dict.fromkeys(s.dim for s in self.series))

    def at(self, dim: float | None) -> list[Series]:
        """The series of one d (every series on a params sweep)."""
        return [s for s in self.series if s.dim == dim]

    def on_edge(self, flag: str) -> list[tuple[float | None, str, float]]:
        """The (d, method, x) points whose chosen setting has ``flag`` (lr_on_edge or beta_on_edge)."""
        return [(s.dim, s.method, x) for s in self.series for x, on in zip(s.x, s.summary[flag]) if on]


def _learning_rates(part: pd.DataFrame, choice: core.Choice) -> np.ndarray:
    """The chosen absolute step per point: the median over seeds of the lanes' learning rates at the chosen
    setting (equal across seeds on the quadratics; a regression's reference step is each seed's own)."""
    lr = part["learning_rate"].to_numpy(float)
    row = choice.at_choice(choice.cube.row)
    return core.nan_median(np.where(row >= 0, lr[np.maximum(row, 0)], np.nan))


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


def _series(part: pd.DataFrame, cube: core.Cube, axis: str, dim: float | None, n_boot: int, seed: int,
            fit: bool) -> Series:
    """One method's `Series` from its cube (``part``: the frame the cube indexes)."""
    boot = core.bootstrap(cube, axis, critical_batch_fit, n_boot=n_boot, seed=seed) if fit and axis == "batch" \
        else None
    choice = core.chosen(cube) if boot is None else boot.choice
    summary = core.summary(choice, axis).assign(learning_rate=_learning_rates(part, choice))
    if not fit:
        return Series(cube.series, dim, choice, summary)
    x, median = summary["value"].to_numpy(float), core.fit_medians(choice.median, choice.bound)
    fitted = np.isfinite(median)
    if boot is None:
        exponent, points = _line_slope(x, median, fitted)
        return Series(cube.series, dim, choice, summary, exponent=exponent, exponent_points=points)
    limit = theory.perfect_scaling_limit(x[fitted], median[fitted])
    slope, n = (math.nan, 0) if limit is None else _line_slope(x, summary["learning_rate"].to_numpy(float),
                                                                fitted & (x <= limit))
    return Series(cube.series, dim, choice, summary, _critical(boot), limit, slope, n)


def analyse(results, *, n_boot: int = N_BOOT, seed: int = 0, fit: bool = True) -> NoiseAnalysis:
    """The analysis of a noise or params `Results`: the frame (`otod.noise.records.frame`), the chosen records,
    and per method (per d on a batch sweep of several d) its `Series`; the critical-batch bootstrap draws
    ``n_boot`` seed resamples from ``seed``. ``fit`` False: the choice and medians only (a figure's exact curve)."""
    frame = noise_records.frame(results)
    axis = "dim" if results.meta["sweep"] == "params" else "batch"
    chosen = core.select(frame, noise_records.POINT_FIELDS)
    panels = [(None, frame)] if axis == "dim" else [(float(d), frame[frame["dim"] == d])
                                                    for d in sorted(frame["dim"].unique())]
    series = tuple(_series(part, cube, axis, dim, n_boot, seed, fit) for dim, part in panels
                   for cube in core.cubes(part, noise_records.POINT_FIELDS))
    return NoiseAnalysis(results.meta, axis, chosen, series, n_boot)
