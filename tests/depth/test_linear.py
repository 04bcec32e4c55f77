"""Deep linear problems: depth 1 is the conditioning obstacle's quadratic, the residual parameterization is the
plain net moved by I, balanced init keeps the product, and the Gaussian scalar chain is exponentially slow."""

from __future__ import annotations

import numpy as np
import pytest

from otod.condition import theory as condition_theory
from otod.core.engine import iterations_to_target
from otod.core.errors import OtodError
from otod.core.stopping import Status
from otod.depth import theory
from otod.depth.kind import depth_target
from otod.depth.records import fit_laws
from otod.depth.linear import DeepLinearSpec, balance, chain_product, init_code, transposed_product
from otod.depth.methods import METHODS, MethodOptions
from tests.depth.conftest import xla_dot_is_the_written_chain

TOL = 1e-6


def run(spec, init, seeds, *, lr=1.0, method="gd", max_iters=20_000, beta=0.0, damping=1e-3, stall_window=None):
    return iterations_to_target(spec, (METHODS[method],), {"init": np.full(seeds, float(init_code(init))),
                                                           "beta": np.full(seeds, beta)},
                                np.arange(seeds), np.full(seeds, lr), target=depth_target(TOL), max_iters=max_iters,
                                options=MethodOptions(damping=damping), stall_window=stall_window)


def test_depth_one_equals_the_condition_obstacles_exact_counts(x64):
    """Depth 1 from W = 0 with an input covariance of κ_x = 30 is ½tr((W−Φ)Σ(W−Φ)ᵀ), a quadratic with Hessian
    I⊗Σ: gd at the reference step 1/λ_max(Σ) = 1 needs exactly the count `otod.condition.theory.exact_iterations`
    gives on that spectrum and start (tolerance 0), seed by seed."""
    spec = DeepLinearSpec(depth=1, input_kappa=30.0)
    sol = run(spec, "zero", 4)
    expected = []
    for s in range(4):
        drawn = spec.draws(np.random.default_rng([0, s]))
        phi = drawn["u"] @ np.diag(spec.target_singular_values()) @ drawn["v"].T
        lam, z = theory.depth_one_quadratic(phi, drawn["r"], 30.0)
        expected.append(condition_theory.exact_iterations("gd", lam, z, TOL, mu=lam.min(), lipschitz=lam.max()))
    assert sol.iterations.tolist() == expected
    assert min(expected) > 100  # a real condition-number count (≈ 30·ln(1e6)/2), not a trivial one


def test_residual_with_zero_v_is_the_plain_net_from_the_identity(x64):
    """(I + V) with V = 0 follows the plain net's identity-init trajectory exactly: same counts (tolerance 0)."""
    plain = run(DeepLinearSpec(depth=3), "identity", 2)
    residual = run(DeepLinearSpec(problem="residual", depth=3), "zero", 2)
    assert residual.iterations.tolist() == plain.iterations.tolist()


def test_balanced_init_keeps_the_product_and_balances_the_factors(x64):
    """W_{j+1}ᵀW_{j+1} = W_jW_jᵀ and the same product, to 1e-10."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((4, 5, 5)) / np.sqrt(5)
    import jax

    @jax.jit
    def balanced(w):  # one program (run eagerly, each op compiled on its own: ~15)
        b = balance(w)
        return b, chain_product(b), chain_product(w)

    b, product, before = (np.asarray(a) for a in balanced(w))
    np.testing.assert_allclose(product, before, atol=1e-10)
    for j in range(3):
        np.testing.assert_allclose(b[j + 1].T @ b[j + 1], b[j] @ b[j].T, atol=1e-10)


@pytest.mark.slow
def test_gaussian_scalar_chain_grows_faster_than_any_power_of_depth():
    """Shamir's setting: w_l ~ N(0, 1), y = 2, gd at the reference step, medians over 64 seeds at depths 4, 10
    and 20, lanes past 10⁵ iterations censored (counted as ≥ 10⁵).
    Issue tolerances: T(20)/T(10) > 20 (measured 418) and the exponential wins by AIC. The AIC claim needs a
    range wider than 10..20: on the 11 depths 10..20 alone the two laws are not told apart (the power law, b ≈ 8,
    wins by ΔAIC 2.8), on 2..20 the exponential wins by ΔAIC 23 (`otod sweep depth --problem chain`)."""
    medians = {}
    records = []
    for depth in (4, 10, 20):
        sol = run(DeepLinearSpec(problem="chain", depth=depth, width=1), "gaussian", 64, max_iters=100_000,
                  stall_window=100_000)
        converged = sol.status == 0
        counts = np.where(converged, sol.iterations, np.inf)
        medians[depth] = np.median(counts)
        records += [{"method": "gd·gaussian", "depth": float(depth), "seed": s, "iterations": int(sol.iterations[s]),
                     "status": "converged" if converged[s] else "censored"} for s in range(64)]
    assert medians[20] / medians[10] > 20, medians
    fit = fit_laws(records, "depth", n_boot=100)[0]
    assert fit.law == "exponential" and fit.points == 3, fit


@pytest.mark.parametrize("kwargs,fragment", [
    (dict(depth=0), "depth must be an integer ≥ 1"),
    (dict(width=0), "width must be an integer ≥ 1"),
    (dict(init_scale=0.0), "init-scale"),
    (dict(target_kappa=0.5), "must be ≥ 1"),
    (dict(problem="chain", width=3), "the chain is scalar"),
])
def test_bad_specs_are_refused_in_one_line(kwargs, fragment):
    with pytest.raises(OtodError, match=fragment):
        DeepLinearSpec(**kwargs)


def chain_lane(depth, seed, cap):
    return iterations_to_target(DeepLinearSpec(problem="chain", depth=depth, width=1), (METHODS["gd"],),
                                {"init": np.array([float(init_code("gaussian"))]), "beta": np.zeros(1)},
                                np.array([seed]), np.ones(1), target=depth_target(TOL), max_iters=cap,
                                options=MethodOptions())


def test_a_slow_chain_lane_is_censored_at_the_cap_not_stalled():
    """Depth 8, seed 56 (gd at the reference step, float32) makes no 0.1% progress for its first 10⁵ iterations:
    the old stall rule called it stalled at 100,001. It is on the plateau near P = 0 and escapes: with a cap of
    10⁵ it is censored (final loss still above 0.999), with 2·10⁵ it converges at 124,803 iterations (measured on
    the development CPU; tolerance 1%, for another XLA's rounding)."""
    short = chain_lane(8, 56, 100_000)
    assert short.status.tolist() == [Status.CENSORED] and short.iterations.tolist() == [100_000]
    assert short.final_metric[0] > 0.999
    long = chain_lane(8, 56, 200_000)
    assert long.status.tolist() == [Status.CONVERGED]
    assert long.iterations[0] == pytest.approx(124_803, rel=0.01)


def test_a_chain_lane_whose_float32_step_rounds_to_zero_is_stalled():
    """Depth 15, seed 59: the product p = 5.5·10⁻¹¹ makes every gd update η(y − p)p/w_l smaller than half a
    float32 ulp of w_l (checked here in NumPy, float32): the iteration is at a fixed point after its first step
    (iteration 2: the trace state of gd fills once), stalled with its loss at 1. In float64 the same lane moves:
    it is censored at the cap instead."""
    spec = DeepLinearSpec(problem="chain", depth=15, width=1)
    w = spec.draws(np.random.default_rng([0, 59]))["gaussian"].ravel()
    p, y = np.prod(w), spec.target_value
    update = theory.reference_step(15, y) * (y - p) * p / w
    assert np.all(np.float32(w) + np.float32(update) == np.float32(w))  # the prediction: frozen in float32
    sol = chain_lane(15, 59, 1000)
    assert sol.status.tolist() == [Status.STALLED] and sol.iterations.tolist() == [2]
    assert sol.final_metric[0] == 1.0
    import jax

    with jax.enable_x64(True):
        assert np.all(w + update != w)
        assert chain_lane(15, 59, 1000).status.tolist() == [Status.CENSORED]


@pytest.mark.parametrize("problem,method,beta", [("chain", "gd", 0.0), ("chain", "heavy-ball", 0.9),
                                                 ("chain", "adam", 0.9), ("deep-linear", "gd", 0.0),
                                                 ("deep-linear", "adam", 0.9)])
def test_a_lane_at_an_exact_saddle_is_stalled_at_its_first_iteration(problem, method, beta):
    """From W = 0 at depth ≥ 2 every gradient is a product containing a zero factor: ∇ = 0 exactly, so no method
    moves and the first iteration leaves the state bit for bit unchanged: stalled at iteration 1 (tolerance 0),
    relative loss exactly 1."""
    spec = DeepLinearSpec(problem=problem, depth=3, width=1 if problem == "chain" else 4)
    sol = run(spec, "zero", 2, method=method, beta=beta, max_iters=1000)
    assert sol.status.tolist() == [Status.STALLED] * 2 and sol.iterations.tolist() == [1, 1]
    assert sol.final_metric.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("width,matrices", [(1, 3), (2, 1), (5, 36), (8, 104), (16, 13), (64, 2)])
def test_transposed_product_is_xlas_dot_bit_for_bit(width, matrices):
    """aᵀb written out as a chain of fused multiply-adds gives the bits of XLA:CPU's dot contracting both
    operands' major dimension, vmapped over matrices as the engine runs it (a chain summed in another order, e.g.
    starting fma(a₀, b₀, a₁b₁), differs in about 11 % of the entries at width 8)."""
    import jax

    rng = np.random.default_rng(width)
    a, b = (jax.numpy.asarray(rng.standard_normal((matrices, width, width)), jax.numpy.float32) for _ in range(2))
    by_dot = jax.jit(jax.vmap(lambda x, y: jax.lax.dot_general(x, y, (((0,), (0,)), ((), ())))))(a, b)
    written = jax.jit(jax.vmap(transposed_product))(a, b)
    if xla_dot_is_the_written_chain():
        np.testing.assert_array_equal(np.asarray(written), np.asarray(by_dot), strict=True)
    else:  # this CPU's kernel sums in another order: the two differ by rounding order only
        np.testing.assert_allclose(np.asarray(written), np.asarray(by_dot), rtol=0,
                                   atol=4 * width * np.finfo(np.float32).eps * float(np.abs(by_dot).max()))
    exact = np.einsum("mki,mkj->mij", np.asarray(a, np.float64), np.asarray(b, np.float64))
    np.testing.assert_allclose(np.asarray(written), exact, rtol=0, atol=2e-6 * width * np.abs(exact).max())
