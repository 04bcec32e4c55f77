"""Scaling laws fitted to sweep results: iterations ≈ a·x^b along a sweep's main axis, with a 95% confidence
interval from the seeds, read off `otod.core.analysis`'s bootstrap of the `otod.core.analysis.PowerLaw`
statistic.

What enters a fit, and why (the rules are `otod.core.analysis`'s):

* the median over seeds at each point's chosen setting, with censored lanes counted as "at least their cap" (a
  censored count is a lower bound: leaving it out would bias the median low, averaging it in would bend the
  slope). Where more than half the seeds are censored, the median itself is only a lower bound ("≥ cap"): that
  point is shown, and left out of the fit. Diverged lanes are left out and counted;
* points at or above ``min_x`` only (the asymptotic range: the count at κ = 1 is 1 by construction, and the
  pre-asymptotic range bends the slope); excluded points are counted and drawn hollow;
* the confidence interval resamples the seeds (the problem instances, shared by every point: common random
  numbers) with replacement, re-chooses every point's setting on the resample, and refits (Efron & Tibshirani
  1993, §6): the selection of lr and β is part of the estimator. Where every seed gives the same counts, the
  sweep is deterministic and there is no sampling error to report, so no interval is given;
* the residual, the RMS of the log-log misfit, shows a curved line for what it is.
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple

import numpy as np

from otod.core.analysis import Bootstrap, PowerLaw


class PowerLawFit(NamedTuple):
    """iterations ≈ prefactor · x^exponent over ``points`` axis values, with the seed-bootstrap 95% CI.

    excluded_censored / excluded_diverged: lanes left out at the chosen settings (censored ones count as ≥ cap
    in the medians; points whose median is only a lower bound are among ``excluded_points``); excluded_points:
    points below ``min_x`` or with a lower-bound median; residual: RMS of log(median) − fit; deterministic:
    every seed gave the same counts (the CI is then the estimate itself). theory_grid is the slope of the theory
    over the same points, theory_asymptotic its x → ∞ exponent (None without a closed form).
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
    no_ci: str | None = None  # why the CI is NaN: too few seeds (`otod.core.analysis.no_ci_reason`)


def power_law_fit(name: str, boot: Bootstrap, statistic: PowerLaw, axis: str,
                  exponent: Callable[[str], float | None] | None = None,
                  exponent_on_grid: Callable[[str, np.ndarray], float | None] | None = None) -> PowerLawFit:
    """The `PowerLawFit` of one series from its bootstrap of ``statistic``; ``exponent`` and ``exponent_on_grid``
    give the theory's slopes where it has them (the latter over the points in the fit's range)."""
    choice = boot.choice
    x = choice.cube.x(axis)
    keep = statistic.points(x)
    _, lower, status = choice.lanes()
    b, a, residual = (float(v) for v in boot.estimate)
    used = int(np.sum(keep & np.isfinite(choice.median) & ~choice.bound & (choice.median > 0)))
    low, high = boot.ci(0) if math.isfinite(b) else (math.nan, math.nan)
    return PowerLawFit(
        name, b, low, high, a, used, int(np.sum(lower[keep])), int(np.sum(status[keep] == "diverged")),
        exponent_on_grid(name, x[keep]) if exponent_on_grid and keep.any() else None,
        exponent(name) if exponent else None, residual, boot.deterministic,
        int((~keep).sum() + choice.bound[keep].sum()), statistic.min_x, boot.no_ci)


def power_law_fitter(axis: str, exponent: Callable[[str], float | None] | None = None,
                     exponent_on_grid: Callable[[str, np.ndarray], float | None] | None = None):
    """The ``fit`` of `otod.core.analysis.analyse` that reads a `PowerLawFit` off each series' bootstrap."""
    return lambda name, boot, statistic, summary=None: power_law_fit(name, boot, statistic, axis, exponent, exponent_on_grid)
