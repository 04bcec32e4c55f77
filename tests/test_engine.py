"""The engine against a plain per-config loop, against closed forms, and its compilation count."""

import math

import numpy as np
import pytest

from otod import theory
from otod.engine import Status, count_compilations, iterations_to_tolerance
from otod.methods import MethodOptions
from otod.problems import KroneckerSpec, QuadraticSpec

from tests.conftest import KRONECKER_EXACT, SMALL_RANDOM, SMALL_ROTATED, TWO_POINT, reference_iterations


def grid(values, seeds):
    v = np.repeat(np.asarray(values, float), seeds)
    s = np.tile(np.arange(seeds), len(values))
    return v, s, np.ones_like(v)


@pytest.mark.parametrize("method", ["gd", "heavy-ball", "nesterov", "adam", "jacobi"])
def test_engine_matches_plain_optax_loop_exactly_in_float64(x64, method):
    """Same problems, same optax transformation, same stopping rule: identical iteration counts (no tolerance)."""
    kappas, seeds = [1.0, 3.0, 17.0, 60.0], 3
    v, s, lr = grid(kappas, seeds)
    sol = iterations_to_tolerance(SMALL_ROTATED if method == "jacobi" else SMALL_RANDOM, method, v, s, lr,
                                  tol=1e-6, max_iters=3000)
    expected = [reference_iterations(SMALL_ROTATED if method == "jacobi" else SMALL_RANDOM, method, k, i,
                                     max_iters=3000)[0] for k, i in zip(v, s)]
    assert np.asarray(sol.iterations).tolist() == expected


def test_gd_opt_on_two_point_spectrum_equals_closed_form(x64):
    """Step 2/(L+μ) contracts both eigendirections by exactly ρ = (κ−1)/(κ+1): k = ⌈ln(1/ε)/(2 ln(1/ρ))⌉ ± 1."""
    kappas = np.geomspace(1, 1e4, 25)
    v, s, lr = grid(kappas, 2)
    sol = iterations_to_tolerance(TWO_POINT, "gd-opt", v, s, lr, tol=1e-6, max_iters=200_000)
    predicted = np.array([theory.iterations("gd-opt", k, 1e-6) for k in v])
    assert np.all(np.asarray(sol.status) == Status.CONVERGED)
    assert np.max(np.abs(np.asarray(sol.iterations) - predicted)) <= 1


@pytest.mark.parametrize("spec", [SMALL_RANDOM, SMALL_ROTATED, KRONECKER_EXACT])
def test_newton_takes_one_iteration_at_every_kappa(spec):
    v, s, lr = grid(np.geomspace(1, 1e4, 9), 2)
    sol = iterations_to_tolerance(spec, "newton", v, s, lr, tol=1e-6)
    assert np.asarray(sol.iterations).tolist() == [1] * len(v)


def test_kfac_is_exact_on_kronecker_and_slows_as_perturbation_grows():
    """ε = 0: (A⊗B)⁻¹ is H⁻¹, one iteration. ε > 0: KFAC's preconditioned Hessian has eigenvalues in [1, 1+ε],
    so step 1 contracts the error by ≤ ε per iteration and needs ≥ 1 and ≈ ln(1/tol)/(2 ln(1/ε)) iterations."""
    v, s, lr = grid([10.0, 100.0, 1000.0], 2)
    counts = []
    for eps in (0.0, 0.05, 0.3, 0.8):
        sol = iterations_to_tolerance(KroneckerSpec(rows=4, cols=5, perturbation=eps), "kfac", v, s, lr, tol=1e-6)
        assert np.all(np.asarray(sol.status) == Status.CONVERGED)
        counts.append(int(np.max(np.asarray(sol.iterations))))
        if eps:
            assert np.max(np.asarray(sol.iterations)) <= math.ceil(math.log(1e6) / (2 * math.log(1 / eps))) + 1
    assert counts[0] == 1
    assert counts == sorted(counts) and counts[-1] > counts[1] > counts[0]


@pytest.mark.parametrize("method", ["gd", "heavy-ball", "nesterov", "newton"])
def test_eigen_and_rotated_bases_agree(x64, method):
    """A rotation changes nothing for rotation-equivariant methods: same counts up to rounding (±1)."""
    v, s, lr = grid([2.0, 30.0, 300.0], 3)
    eig = iterations_to_tolerance(SMALL_RANDOM, method, v, s, lr, tol=1e-8, max_iters=20_000)
    rot = iterations_to_tolerance(SMALL_ROTATED, method, v, s, lr, tol=1e-8, max_iters=20_000)
    assert np.max(np.abs(np.asarray(eig.iterations) - np.asarray(rot.iterations))) <= 1


def test_compilations_do_not_grow_with_the_number_of_sweep_values():
    counts = []
    for n in (10, 100):
        spec = QuadraticSpec(dim=8 + n % 7)  # a fresh spec each time, so neither run hits the other's cache
        v, s, lr = grid(np.linspace(1, 50, n), 4)
        with count_compilations() as compiles:
            iterations_to_tolerance(spec, "gd", v, s, lr, tol=1e-4)
        counts.append(len(compiles))
    assert counts[0] == counts[1] >= 1


def test_diverging_learning_rate_marks_lanes_diverged_and_others_finish():
    """GD diverges for steps > 2/L: multipliers 2.5 and 10 of 1/L diverge, 1 converges, 1e-4 is censored."""
    v = np.full(4, 50.0)
    sol = iterations_to_tolerance(SMALL_RANDOM, "gd", v, np.zeros(4, int), np.array([1.0, 2.5, 10.0, 1e-4]),
                                  tol=1e-6, max_iters=2000)
    assert np.asarray(sol.status).tolist() == [Status.CONVERGED, Status.DIVERGED, Status.DIVERGED,
                                               Status.CENSORED]
    assert int(sol.iterations[3]) == 2000


def test_kfac_damping_option_reaches_the_transformation():
    """Damping λ makes the step (A+λ)⁻¹A ≠ I: with λ = 1 (μ = 1) the error contracts by ≤ 1 − 1/(1+1)² per factor
    pair and takes more than one iteration."""
    v, s, lr = grid([10.0], 1)
    sol = iterations_to_tolerance(KRONECKER_EXACT, "kfac", v, s, lr, tol=1e-6, options=MethodOptions(damping=1.0))
    assert int(sol.iterations[0]) > 1
