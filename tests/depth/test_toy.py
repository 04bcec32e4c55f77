"""The essay's toy: at k = 1 (per-layer reading) a quadratic with Hessian I, solved in the count its condition
number predicts; the global minimum found in NumPy is a minimum."""

from __future__ import annotations

import numpy as np
import pytest

from otod.core.engine import iterations_to_target
from otod.depth import theory
from otod.depth.kind import toy_target
from otod.depth.methods import METHODS, MethodOptions
from otod.depth.toy import ToySpec, global_minimum, losses_on_grid, toy_loss


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
