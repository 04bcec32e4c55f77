"""Hu, Xiao & Pennington (2020): on a rectangular deep linear net (d_in, d_out fixed, αW_L⋯W_1 with
α = √(n/d_out), step d_out/(L·n)) the width needed for fast convergence does not grow with depth under orthogonal
init and grows with depth under Gaussian init. At a fixed width n = 32 (d_in = d_out = 8), going from depth 2 to
depth 8 must leave the orthogonal count nearly unchanged and multiply the Gaussian one."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from otod.core.engine import iterations_to_target
from otod.core.errors import OtodError
from otod.depth.kind import depth_target
from otod.depth.linear import INITS, DeepLinearSpec
from otod.depth.methods import METHODS
from otod.depth.options import depth_config_from_options

SEEDS = 8
TOL = 1e-3


def median_count(depth: int, init: str, width: int = 32) -> float:
    """Median over 8 seeds of gd's iterations at the reference step to a relative loss ≤ 1e-3 (cap 2000)."""
    spec = DeepLinearSpec(depth=depth, width=width, d_in=8, d_out=8)
    sol = iterations_to_target(spec, (METHODS["gd"],), {"init": np.full(SEEDS, float(INITS.index(init))),
                                                        "beta": np.zeros(SEEDS)},
                               np.arange(SEEDS), np.ones(SEEDS), target=depth_target(TOL), max_iters=2000)
    counts = np.where(sol.status == 0, sol.iterations, np.inf)
    return float(np.median(counts))


@pytest.fixture(scope="module")
def counts():
    return {(init, depth): median_count(depth, init) for init in ("orthogonal", "xavier") for depth in (2, 8)}


def test_orthogonal_init_stays_flat_in_depth(counts):
    """Orthogonal factors make every layer's Jacobian an isometry times α, so the output-space curvature is
    Lα²·I at init whatever L: T(8)/T(2) < 1.5 (measured 1)."""
    assert counts[("orthogonal", 8)] / counts[("orthogonal", 2)] < 1.5


def test_gaussian_init_slows_with_depth_at_the_same_width(counts):
    """Gaussian factors at width 32 spread the product's spectrum as L/n grows: T(8)/T(2) > 3 (measured ≈ 6)."""
    assert counts[("xavier", 8)] / counts[("xavier", 2)] > 3


def test_gaussian_is_slower_than_orthogonal_at_depth_8(counts):
    assert counts[("xavier", 8)] > 3 * counts[("orthogonal", 8)]


def test_the_scaled_product_has_unit_gain_at_both_inits():
    """E‖αPx‖² = ‖x‖² at init (module docstring of `otod.depth.linear`): for orthogonal factors with n ≥ d_in,
    d_out the product's d_out×d_in block gives α²‖V_L⋯V_1‖²_F/d_in within 30% of 1 over 4 seeds; the same for
    N(0, 1/n) entries."""
    from otod.depth.linear import rectangular_product

    spec = DeepLinearSpec(depth=6, width=64, d_in=8, d_out=8)
    family = spec.family()

    @jax.jit
    def gain(drawn, code):  # one program for every init and seed (run eagerly, each op compiled on its own: ~40)
        product = spec.output_scale * rectangular_product(family.make({"init": code, "beta": 0.0}, drawn)["start"])
        return jax.numpy.sum(product ** 2) / spec.inputs

    for init in ("orthogonal", "xavier"):
        gains = []
        for s in range(4):
            drawn = jax.tree_util.tree_map(lambda a: np.asarray(a, np.float32),
                                           spec.draws(np.random.default_rng([0, s])))
            gains.append(float(gain(drawn, np.float32(INITS.index(init)))))
        assert abs(np.mean(gains) - 1) < 0.3, (init, gains)


@pytest.mark.parametrize("options,fragment", [
    ({"d_in": "0"}, "--d-in 0: need an integer ≥ 1"),
    ({"d_out": "2.5"}, "--d-out 2.5: need an integer ≥ 1"),
    ({"d_in": "8", "depth": "1..4"}, "need depth ≥ 2"),
    ({"d_in": "8", "problem": "residual", "init": "zero"}, "--problem deep-linear"),
    ({"d_in": "8", "depth": "2", "method": "kfac"}, "--method kfac"),
])
def test_bad_rectangular_options_are_one_line(options, fragment):
    with pytest.raises(OtodError, match=fragment.replace("(", r"\(")):
        depth_config_from_options(**options)


def test_the_square_default_is_unchanged():
    """Without --d-in/--d-out the problem is the square one: its config hashes as before the options existed."""
    config = depth_config_from_options(depth="1..3", init="identity")
    assert "d_in" not in config.to_dict()["problem"] and not config.problem.rectangular
