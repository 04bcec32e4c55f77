"""Power-law fits read off the analysis (`otod.core.fit.power_law_fit`): a known law recovered inside its CI,
identical seeds reported as deterministic, lower-bound medians left out, censored and diverged lanes counted."""

import math

import numpy as np
import pytest

from otod.core.analysis import analyse, frame_of, power_law
from otod.core.fit import power_law_fitter


def records_of(x, y, lower=None, status=None) -> list[dict]:
    """Records of one method from a matrix [value, seed] of counts (``lower``: censored lanes; ``status``: any
    status per lane)."""
    y = np.asarray(y, float)
    return [{"method": "gd", "kappa": float(v), "seed": s, "learning_rate": 1.0, "iterations": float(y[i, s]),
             "status": status[i][s] if status is not None else
             ("censored" if lower is not None and lower[i][s] else "converged")}
            for i, v in enumerate(x) for s in range(y.shape[1])]


def fit_of(records, min_x=None):
    (fit,) = analyse(frame_of(records), point=("kappa",), axis="kappa", statistic=lambda x: power_law(min_x),
                     fit=power_law_fitter("kappa")).groups[0].fits
    return fit


def test_fit_recovers_a_known_power_law_and_covers_it():
    rng = np.random.default_rng(1)
    x = np.geomspace(1, 1e3, 20)
    y = 3.0 * x[:, None] ** 0.7 * np.exp(rng.normal(0, 0.05, (20, 8)))
    fit = fit_of(records_of(x, y))
    assert abs(fit.exponent - 0.7) < 0.02 and fit.ci_low < 0.7 < fit.ci_high
    assert abs(fit.prefactor - 3.0) < 0.3 and fit.points == 20 and fit.residual < 0.05
    assert not fit.deterministic


def test_identical_seeds_are_reported_as_deterministic_not_as_an_interval():
    x = np.geomspace(10, 1e3, 6)
    fit = fit_of(records_of(x, np.repeat((2 * x)[:, None], 4, axis=1)))
    assert fit.deterministic and fit.ci_low == fit.ci_high == fit.exponent == pytest.approx(1.0)


def test_a_median_resting_on_censored_lanes_is_a_lower_bound_and_left_out():
    """At x = 1000, 3 of 4 seeds are censored at 500: the median is only '≥ 500', so that point is left out and
    the slope comes from the converged points (exactly 1)."""
    x = np.array([10.0, 100.0, 1000.0])
    y = np.array([[20.0] * 4, [200.0] * 4, [500.0, 500.0, 500.0, 2000.0]])
    lower = np.array([[False] * 4, [False] * 4, [True, True, True, False]])
    fit = fit_of(records_of(x, y, lower))
    assert fit.points == 2 and fit.exponent == pytest.approx(1.0) and fit.excluded_points == 1


def test_censored_and_diverged_lanes_are_excluded_and_counted():
    x = (1.0, 10.0, 100.0)
    status = [["diverged" if s == 3 and v == 1.0 else "censored" if v == 100.0 and s < 2 else "converged"
               for s in range(4)] for v in x]
    y = [[50 if status[i][s] == "censored" else 2 * v for s in range(4)] for i, v in enumerate(x)]
    fit = fit_of(records_of(x, y, status=status))
    assert fit.excluded_censored == 2 and fit.excluded_diverged == 1
    assert fit.exponent == pytest.approx(1.0)  # 2κ exactly on the converged lanes; censored 50s would bend it


def test_points_below_the_fit_range_are_left_out_and_counted():
    x = np.array([1.0, 10.0, 100.0, 1000.0])
    y = np.array([[1.0] * 3, [20.0] * 3, [200.0] * 3, [2000.0] * 3])
    fit = fit_of(records_of(x, y), min_x=10.0)
    assert fit.points == 3 and fit.excluded_points == 1 and fit.min_x == 10.0 and fit.exponent == pytest.approx(1.0)


def test_fit_with_one_point_is_nan_not_an_error():
    fit = fit_of(records_of([10.0], np.array([[5.0, 6.0]])))
    assert math.isnan(fit.exponent) and math.isnan(fit.ci_low) and fit.points == 1
