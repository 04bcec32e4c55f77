"""The essay's toy: at k = 1 (per-layer reading) a quadratic with Hessian I, solved in the count its condition
number predicts; the global minimum found in NumPy is the global one (an independent search written here agrees),
and a lane that ends in another local minimum is recorded there, not as converged."""

from __future__ import annotations

import numpy as np
import pytest

from otod.core.engine import iterations_to_target
from otod.depth import theory
from otod.depth.kind import toy_target
from otod.depth.methods import METHODS, MethodOptions
from otod.core.stopping import Status
from otod.depth.toy import ToySpec, global_minimum, local_minima, losses_on_grid, minimum_of, toy_loss


@pytest.mark.parametrize("multiplier", [1.0, 0.5, 0.1])
def test_k1_per_layer_toy_is_solved_in_the_count_its_condition_number_predicts(x64, multiplier):
    """κ = 1 (Hessian I, so the reference step is 1): gd with step c needs ⌈ln(1/tol)/(2 ln(1/|1 − c|))⌉
    iterations: 1, 10 and 66 at tol 1e-6 (tolerance 0 on the count), for every seed."""
    n = 4
    sol = iterations_to_target(ToySpec(layers=1), (METHODS["gd"],), {"beta": np.zeros(n)}, np.arange(n),
                               np.full(n, multiplier), target=toy_target(1e-6), max_iters=1000,
                               options=MethodOptions())
    assert sol.iterations.tolist() == [theory.toy_quadratic_iterations(multiplier, 1e-6)] * n


@pytest.mark.parametrize("reading", ["per-layer", "shared"])
def test_global_minimum_is_below_every_sampled_point_and_a_stationary_point(reading):
    """f* ≤ f on 10⁴ random points, and f* is the value at a point where the gradient vanishes (to 1e-6)."""
    rng = np.random.default_rng(1)
    m = rng.standard_normal((4, 3, 3)) / np.sqrt(3)
    f_star = global_minimum(m, reading)
    a, b = rng.uniform(-4, 4, (2, 10_000))
    assert f_star <= losses_on_grid(m, a, b, reading).min() + 1e-12
    assert f_star <= toy_loss(m, m[0, 0, 0], m[-1 if reading == "per-layer" else 0, 2, 2], reading)


def test_k1_toy_loss_is_the_quadratic_its_docstring_says():
    """f(a, b) = ½(a² + b²) + ½ Σ of the other squared entries, exactly."""
    m = np.random.default_rng(2).standard_normal((1, 3, 3))
    rest = 0.5 * (np.sum(m ** 2) - m[0, 0, 0] ** 2 - m[0, 2, 2] ** 2)
    assert toy_loss(m, 0.3, -0.7, "per-layer") == pytest.approx(0.5 * (0.09 + 0.49) + rest, rel=1e-12)


def independent_loss(m, a, b, reading):
    """½‖M_k⋯M_1‖²_F with a, b written in: the docstring's definition, written afresh (no otod code)."""
    m = np.array(m, float)
    if reading == "shared":
        m[:, 0, 0], m[:, 2, 2] = a, b
    else:
        m[0, 0, 0], m[-1, 2, 2] = a, b
    p = np.eye(3)
    for factor in m:
        p = factor @ p
    return 0.5 * float(np.sum(p * p))


def independent_minimum(m, reading, starts=100, box=6.0, seed=0):
    """The lowest of scipy's BFGS from ``starts`` uniform random points of [−box, box]²."""
    from scipy.optimize import minimize

    best = np.inf
    for x0 in np.random.default_rng(seed).uniform(-box, box, (starts, 2)):
        res = minimize(lambda x: independent_loss(m, x[0], x[1], reading), x0, method="BFGS",
                       options={"gtol": 1e-10})
        best = min(best, float(res.fun))
    return best


def draw(k, seed):
    return np.random.default_rng([0, seed]).standard_normal((k, 3, 3)) / np.sqrt(3.0)


def test_shared_k6_seed13_global_minimum_is_0_005938_not_the_local_0_006340():
    """Issue 18: at k = 6, seed 13 (shared reading) a 161×161 lattice with L-BFGS from its 6 best points returned
    the local minimum 0.0063398; the global one is 0.00593769148218 (independent BFGS from 100 random starts,
    `independent_minimum`: 0.005937691482182). Tolerance 10⁻¹² (the compass search stops at steps of 10⁻¹⁰,
    where f is flat to ~10⁻¹⁹); the local minimum is found too, and is not f*."""
    m = draw(6, 13)
    assert global_minimum(m, "shared") == pytest.approx(0.00593769148218, abs=1e-12)
    values = local_minima(m, "shared").values
    assert values[0] == global_minimum(m, "shared")
    assert np.min(np.abs(values[1:] - 0.00633983493581)) < 1e-12


@pytest.mark.parametrize("reading,k,seed", [pytest.param("shared", 6, 13, marks=pytest.mark.slow),
                                            pytest.param("shared", 8, 13, marks=pytest.mark.slow), ("shared", 5, 3),
                                            ("per-layer", 7, 8)])
def test_global_minimum_agrees_with_an_independent_search(reading, k, seed):
    """No start of an independent search (scipy BFGS from 100 uniform random starts in [−6, 6]², the loss written
    afresh here) goes below otod's f* (by more than 10⁻¹² relative), and the lowest it finds equals it to 10⁻⁹
    relative. Run over all 256 (reading, k ≤ 8, seed < 16) of the figure's sweeps, the two agreed everywhere to
    10⁻¹⁵ (the largest difference 5·10⁻¹⁶)."""
    m = draw(k, seed)
    ours = global_minimum(m, reading)
    theirs = independent_minimum(m, reading, seed=seed)
    assert ours <= theirs * (1 + 1e-12)
    assert theirs == pytest.approx(ours, rel=1e-9)


@pytest.mark.parametrize("k,seed,multiplier,status,local", [
    (3, 13, 1.6164182824074786, Status.STALLED, 0.649789236090),
    pytest.param(6, 13, 1.6164182824074786, Status.CENSORED, 0.006339834936, marks=pytest.mark.slow)])
def test_a_lane_that_ends_in_another_local_minimum_is_recorded_there_not_converged(k, seed, multiplier, status,
                                                                                   local):
    """gd (float32, shared reading) at the multiplier the figure's sweep chose for k = 3 and 6: seed 13 at k = 3
    reaches a fixed point (stalled, at iteration 174) in the local minimum f = 0.6498; seed 13 at k = 6 (issue 18)
    keeps moving by rounding around the local minimum f = 0.006340 (censored at the cap, 2·10⁴ here; which of
    the two a lane in a minimum gets depends on float32 rounding). Neither converges (the target is f*, which lies
    lower), and `minimum_of` places each in that local minimum (to 10⁻⁹)."""
    spec = ToySpec(layers=k, reading="shared")
    sol = iterations_to_target(spec, (METHODS["gd"],), {"beta": np.zeros(1)}, np.array([seed]),
                               np.array([multiplier]), target=toy_target(1e-6), max_iters=20_000,
                               options=MethodOptions())
    assert sol.status.tolist() == [status]
    where, value = minimum_of(draw(k, seed), "shared", float(sol.final_metric[0]))
    assert where == "local" and value == pytest.approx(local, abs=1e-9)
    assert value > global_minimum(draw(k, seed), "shared") + 1e-4
