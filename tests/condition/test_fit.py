"""Power-law fits: the exponents theory predicts, recovered from sweeps; exclusion of censored lanes."""

import math

import numpy as np
import pytest

from otod.condition.options import condition_sweep
from otod.condition.report import text_report
from otod.condition.quadratic import QuadraticSpec
from otod.core.fit import fit_power_law, fit_sweep
from otod.core.sweep import run_sweep

from tests.conftest import TWO_POINT


@pytest.fixture(scope="module")
def two_point_sweep(tmp_path_factory):
    """κ ∈ [10, 1000], two-point spectrum, equal-loss start, the setting where exponents approach theory fastest."""
    config = condition_sweep(np.geomspace(10, 1000, 15), methods=("gd", "heavy-ball", "nesterov"),
                             problem=TWO_POINT, seeds=3, tol=1e-6)
    return run_sweep(config, out_dir=tmp_path_factory.mktemp("fit"))


@pytest.mark.parametrize("method,expected,tolerance", [("gd", 1.0, 0.05), ("heavy-ball", 0.5, 0.08),
                                                       ("nesterov", 0.5, 0.08)])
def test_fitted_exponents_match_theory(two_point_sweep, method, expected, tolerance):
    """gd: iterations ∝ κ (b = 1 ± 0.05); heavy-ball, nesterov: ∝ √κ (b = 0.5 ± 0.08; the double root's factor k
    bends heavy-ball's slope up a little at small κ)."""
    fit = {f.method: f for f in fit_sweep(two_point_sweep.records, "kappa")}[method]
    assert abs(fit.exponent - expected) <= tolerance
    assert fit.excluded_censored == fit.excluded_diverged == 0 and fit.points == 15


def test_fit_recovers_a_known_power_law_and_covers_it():
    rng = np.random.default_rng(1)
    x = np.geomspace(1, 1e3, 20)
    y = 3.0 * x[:, None] ** 0.7 * np.exp(rng.normal(0, 0.05, (20, 8)))
    line = fit_power_law(x, y)
    assert abs(line.exponent - 0.7) < 0.02 and line.ci_low < 0.7 < line.ci_high
    assert abs(line.prefactor - 3.0) < 0.3 and line.points == 20 and line.residual < 0.05
    assert not line.deterministic


def test_identical_seeds_are_reported_as_deterministic_not_as_an_interval():
    x = np.geomspace(10, 1e3, 6)
    line = fit_power_law(x, np.repeat((2 * x)[:, None], 4, axis=1))
    assert line.deterministic and line.ci_low == line.ci_high == line.exponent == pytest.approx(1.0)


def test_a_median_resting_on_censored_lanes_is_a_lower_bound_and_left_out():
    """At x = 1000, 3 of 4 seeds are censored at 500: the median is only '≥ 500', so that point is left out and
    the slope comes from the converged points (exactly 1)."""
    x = np.array([10.0, 100.0, 1000.0])
    y = np.array([[20.0] * 4, [200.0] * 4, [500.0, 500.0, 500.0, 2000.0]])
    lower = np.array([[False] * 4, [False] * 4, [True, True, True, False]])
    line = fit_power_law(x, y, lower)
    assert line.points == 2 and line.exponent == pytest.approx(1.0)


def test_censored_and_diverged_lanes_are_excluded_and_counted():
    recs = []
    for x in (1.0, 10.0, 100.0):
        for s in range(4):
            status = "censored" if (x == 100.0 and s < 2) else ("diverged" if s == 3 and x == 1.0 else "converged")
            recs.append({"method": "gd", "kappa": x, "seed": s, "learning_rate": 1.0,
                         "iterations": 50 if status == "censored" else int(2 * x), "status": status})
    fit = fit_sweep(recs, "kappa")[0]
    assert fit.excluded_censored == 2 and fit.excluded_diverged == 1
    assert fit.exponent == pytest.approx(1.0)  # 2κ exactly on the converged lanes; censored 50s would bend it


def test_fit_with_one_point_is_nan_not_an_error():
    line = fit_power_law([10.0], np.array([[5.0, 6.0]]))
    assert math.isnan(line.exponent) and line.points == 1


def test_theory_is_left_out_of_the_report_when_the_step_is_not_the_methods_own(tmp_path):
    """An absolute --lr is not the textbook method: no exact/bound/rate columns, no theory exponents."""
    spec = QuadraticSpec(dim=8)
    own = text_report(run_sweep(condition_sweep((2.0, 20.0), methods=("gd",), problem=spec, seeds=2),
                                out_dir=tmp_path))
    fixed = text_report(run_sweep(condition_sweep((2.0, 20.0), methods=("gd",), problem=spec, seeds=2, lr=0.05),
                                  out_dir=tmp_path))
    header = lambda text: text.split("median iterations")[0]  # noqa: E731
    assert "bound" in header(own) and "exact" in header(own)
    assert "bound" not in header(fixed) and "exact" not in header(fixed)
    fits = [line for line in fixed.splitlines() if line.startswith("gd ")]
    assert fits and fits[-1].split()[4:6] == ["—", "—"]
