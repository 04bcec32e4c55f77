"""The theory columns against the engine: no measured count exceeds ·bound, and ·exact is what float64 measures."""

import numpy as np
import pytest

from otod.condition.kronecker import KroneckerSpec
from otod.condition.options import condition_sweep
from otod.condition.predictions import predictions
from otod.condition.quadratic import QuadraticSpec
from otod.core.sweep import run_sweep

from tests.conftest import SPECTRA, SPECTRUM_METHODS as METHODS, spectrum_sweep


@pytest.mark.parametrize("spectrum,start", SPECTRA)
def test_no_lane_exceeds_its_bound_and_exact_medians_equal_the_measured_ones(tmp_path, spectrum, start):
    config = spectrum_sweep(spectrum, start)
    results = run_sweep(config, out_dir=tmp_path)
    preds = predictions(results.meta, 1e-6)
    for r in results.records:
        assert r["status"] == "converged"
        assert r["iterations"] <= preds.bound(r["method"], r["kappa"]), r
    for m in METHODS:
        for k in config.values("kappa"):
            measured = np.median([r["iterations"] for r in results.records if r["method"] == m and r["kappa"] == k])
            assert preds.exact(m, k) == measured


def test_the_rate_undercounts_heavy_ball_where_the_bound_does_not(tmp_path):
    """On the worst case (two-point spectrum, equal-loss start) heavy ball's measured median exceeds the
    rate-only count ⌈ln(1/ε)/(2 ln(1/ρ))⌉ at κ = 1000 (its double root adds a factor ~k), but not the bound."""
    config = condition_sweep((1000.0,), methods=("heavy-ball",), seeds=2,
                             problem=QuadraticSpec(dim=20, spectrum="two-point", start="equal-loss"))
    results = run_sweep(config, out_dir=tmp_path)
    preds = predictions(results.meta, 1e-6)
    measured = max(r["iterations"] for r in results.records)
    assert preds.rate("heavy-ball", 1000.0) < measured <= preds.bound("heavy-ball", 1000.0)


def test_on_kronecker_problems_the_bound_uses_the_true_condition_number(tmp_path):
    """With ε = 0.5 the methods step with the true κ(H) ≤ (1+ε)κ, above the nominal κ: the bound at the nominal
    κ would be exceeded; the bound at the true κ is not."""
    config = condition_sweep((1.0, 30.0, 300.0), methods=("gd", "nesterov"), seeds=3,
                             problem=KroneckerSpec(rows=4, cols=5, perturbation=0.5))
    results = run_sweep(config, out_dir=tmp_path)
    preds = predictions(results.meta, 1e-6)
    from otod.condition import theory

    assert any(r["iterations"] > theory.bound_iterations("gd", r["kappa"], 1e-6)
               for r in results.records if r["method"] == "gd")
    for r in results.records:
        assert r["iterations"] <= preds.bound(r["method"], r["kappa"])
