
import pytest

from otod.condition import theory


def test_iterations_formula():
    # gd-opt at κ = 100: ρ = 99/101, k = ⌈ln(1e6)/(2 ln(101/99))⌉ = ⌈345.4⌉
    assert theory.iterations("gd-opt", 100, 1e-6) == 346
    assert theory.iterations("gd", 1, 1e-6) == 1 and theory.iterations("newton", 1e6, 1e-6) == 1
    assert theory.iterations("adam", 10, 1e-6) is None


@pytest.mark.parametrize("method,b", [("gd", 1.0), ("nesterov", 0.5), ("heavy-ball", 0.5)])
def test_closed_form_slopes_approach_asymptotic_exponents(method, b):
    assert theory.exponent_on_grid(method, [1e4, 1e5, 1e6], 1e-6) == pytest.approx(b, abs=0.01)


def test_accelerated_rates_beat_gd_and_respect_the_lower_bound():
    """Orderings the closed forms must satisfy (not a restatement of the table): no first-order rate beats the
    lower bound, and acceleration beats gd at every κ > 1."""
    for k in (4.0, 100.0, 1e4):
        lb = theory.contraction_factor("lower-bound", k)
        assert lb <= theory.contraction_factor("heavy-ball", k) + 1e-15
        assert lb <= theory.contraction_factor("nesterov", k) < theory.contraction_factor("gd", k)
        assert theory.contraction_factor("gd-opt", k) < theory.contraction_factor("gd", k)


def test_kfac_rate_is_the_perturbation():
    # ε = 0.1: ρ = 0.1, k = ⌈ln(1e6)/(2 ln 10)⌉ = 3 at every κ; ε = 0: exact, 1 iteration
    assert theory.iterations("kfac", 1e3, 1e-6, perturbation=0.1) == 3
    assert theory.iterations("kfac", 1e3, 1e-6) == 1
