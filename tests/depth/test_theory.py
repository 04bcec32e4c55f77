"""The per-mode theory (NumPy) against the engine, and against itself: identity init is flat in depth, the
end-to-end recursion is the factor recursion to first order, the flow integral is the integral."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad

from otod.core.engine import iterations_to_target
from otod.depth import theory
from otod.depth.kind import depth_target
from otod.depth.linear import DeepLinearSpec, init_code, reference_step
from otod.depth.methods import METHODS, MethodOptions

TOL = 1e-6


def engine_counts(spec, init: str, seeds: int = 2, lr: float = 1.0, method: str = "gd", max_iters: int = 20_000):
    n = seeds
    return iterations_to_target(spec, (METHODS[method],), {"init": np.full(n, float(init_code(init))),
                                                            "beta": np.zeros(n)},
                                np.arange(n), np.full(n, lr), target=depth_target(TOL), max_iters=max_iters,
                                options=MethodOptions())


@pytest.fixture(scope="module")
def identity_counts():
    """Engine counts, float64, identity init at the reference step, depths 2 and 10 (2 seeds each)."""
    import jax

    with jax.enable_x64(True):
        return {depth: engine_counts(DeepLinearSpec(depth=depth), "identity") for depth in (2, 10)}


def test_identity_init_counts_equal_the_factor_recursion_exactly(identity_counts):
    """Tolerance 0: a float64 run measures the factor recursion's count (identity init is decoupled)."""
    for depth, sol in identity_counts.items():
        s = DeepLinearSpec(depth=depth).target_singular_values()
        expected = theory.factor_iterations(depth, s, reference_step(depth, s.max()), TOL)
        assert sol.iterations.tolist() == [expected] * 2, depth


def test_identity_init_counts_agree_with_the_per_mode_recursion_within_ten_percent(identity_counts):
    """The end-to-end recursion u ← u + ηL·u^(2−2/L)(s − u) predicts the counts within 10% (issue tolerance)."""
    for depth, sol in identity_counts.items():
        s = DeepLinearSpec(depth=depth).target_singular_values()
        predicted = theory.mode_iterations(depth, s, reference_step(depth, s.max()), TOL)
        assert abs(np.median(sol.iterations) - predicted) <= 0.1 * predicted, (depth, sol.iterations, predicted)


def test_identity_init_with_the_reference_step_is_nearly_flat_in_depth(identity_counts):
    """T(10)/T(2) < 2.5 (issue tolerance); measured 10/6."""
    ratio = np.median(identity_counts[10].iterations) / np.median(identity_counts[2].iterations)
    assert ratio < 2.5


def test_per_mode_counts_tend_to_a_depth_independent_limit():
    """With η = 1/(L s_max^{2(L−1)/L}) the per-mode count at L = 100 and L = 1000 differ by at most 1."""
    s = DeepLinearSpec().target_singular_values()
    counts = [theory.mode_iterations(L, s, reference_step(L, s.max()), TOL) for L in (100, 1000)]
    assert abs(counts[0] - counts[1]) <= 1


def test_end_to_end_recursion_is_the_factor_recursion_to_first_order_in_the_step():
    """At a step 100× smaller the two recursions' counts agree within 1% (they differ by O(η²) per step)."""
    s = DeepLinearSpec().target_singular_values()
    eta = 0.01 * reference_step(6, s.max())
    a, b = theory.factor_iterations(6, s, eta, TOL), theory.mode_iterations(6, s, eta, TOL)
    assert abs(a - b) <= 0.01 * a


def test_flow_time_equals_adaptive_quadrature():
    """The smooth-substitution integral equals scipy's quad on ∫ du/(L u^{2−2/L}(s − u)) within 1e-6 relative."""
    for depth, s, u in ((2, 2.0, 1.5), (5, 1.7, 1.6), (12, 2.0, 1.999)):
        want, _ = quad(lambda x: 1.0 / (depth * x ** (2 - 2 / depth) * (s - x)), 1.0, u, epsrel=1e-12)
        assert theory.flow_time(depth, s, 1.0, u)[0] == pytest.approx(want, rel=1e-6)


def test_flow_estimate_approaches_the_discrete_count_for_small_steps():
    """For η → 0 the discrete count is the flow time over η: within 2% at 1/1000 of the reference step."""
    s = DeepLinearSpec().target_singular_values()
    eta = 1e-3 * reference_step(4, s.max())
    discrete = theory.factor_iterations(4, s, eta, TOL)
    assert theory.flow_iterations(4, s, eta, TOL) == pytest.approx(discrete, rel=0.02)


@pytest.mark.parametrize("multiplier,expected", [(1.0, 1), (0.5, 10), (1.5, 10), (0.1, 66), (2.0, None)])
def test_toy_quadratic_count(multiplier, expected):
    """⌈ln(1/tol)/(2 ln(1/|1 − c|))⌉: c = ½ gives (¼)^k ≤ 1e-6 at k = 10; c = 0.1 gives 0.81^k at k = 66."""
    assert theory.toy_quadratic_iterations(multiplier, TOL) == expected


def test_depths_stepped_side_by_side_give_each_depths_own_count():
    """`factor_iterations_many` and `mode_iterations_many` (the claims' batched reads) give, row by row, the count
    of the recursion written out here one depth at a time, exactly: w ← w + η w^{L−1}(s − w^L) and
    u ← u + ηL|u|^{2−2/L}(s − u) to Σ(u − s)² ≤ tol·Σs² (cap 20,000), at twice the reference step on
    κ = 2, width 8, tol 1e-4, where the rows' counts all differ (factor 2 to 537, modes 1 to 148)."""
    from otod.depth.linear import singular_values

    s, tol = singular_values(8, 2.0), 1e-4
    depths = [2, 3, 5, 8, 12]
    etas = [2.0 * reference_step(d, float(s.max())) for d in depths]

    def written_out(step, u_of, start):
        x = np.full_like(s, start)
        for t in range(1, 20_001):
            x = step(x)
            loss = np.sum((u_of(x) - s) ** 2) / np.sum(s * s)
            if not np.isfinite(loss):
                return None
            if loss <= tol:
                return t
        return None

    factor = [written_out(lambda w, L=L, e=e: w + e * w ** (L - 1) * (s - w ** L), lambda w, L=L: w ** L, 1.0)
              for L, e in zip(depths, etas)]
    modes = [written_out(lambda u, L=L, e=e: u + e * L * np.abs(u) ** (2.0 - 2.0 / L) * (s - u), lambda u: u, 1.0)
             for L, e in zip(depths, etas)]
    assert theory.factor_iterations_many(depths, s, etas, tol, max_iters=20_000) == factor
    assert theory.mode_iterations_many(depths, s, etas, tol, max_iters=20_000) == modes
    assert [theory.factor_iterations(L, s, e, tol, max_iters=20_000) for L, e in zip(depths, etas)] == factor
    assert len(set(factor)) == len(set(modes)) == len(depths) and None not in factor
