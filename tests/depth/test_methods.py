"""Per-layer KFAC: at depth 1 with whitened inputs and no damping it is Newton's method (one step); its factors
are the ones its docstring defines."""

from __future__ import annotations

import numpy as np

from otod.core.engine import iterations_to_target
from otod.depth.kind import depth_target
from otod.depth.linear import DeepLinearSpec, init_code
from otod.depth.methods import METHODS, MethodOptions, kfac_layers


def test_kfac_at_depth_one_without_damping_takes_one_step(x64):
    """G = I (squared loss), A = Σ, λ = 0, step 1: W₁ = W₀ − (W₀ − Φ) = Φ, so every lane needs exactly 1
    iteration to a relative loss of 1e-10 (tolerance 0 on the count)."""
    spec = DeepLinearSpec(depth=1)
    n = 4
    sol = iterations_to_target(spec, (METHODS["kfac"],), {"init": np.full(n, float(init_code("xavier"))),
                                                          "beta": np.zeros(n)},
                               np.arange(n), np.ones(n), target=depth_target(1e-10), max_iters=50,
                               options=MethodOptions(damping=0.0))
    assert sol.iterations.tolist() == [1] * n


def test_kfac_factors_match_their_definition(x64):
    """A_l = B_l Σ B_lᵀ and G_l = C_lᵀC_l (B_l: product below layer l, C_l: above), checked against NumPy on a
    depth-3 net: the transformation's output equals G⁻¹ ∇W A⁻¹ built by hand (to 1e-10)."""
    import jax.numpy as jnp

    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 4, 4)) / 2
    grads = rng.standard_normal((3, 4, 4))
    sigma = np.diag([1.0, 0.5, 0.3, 0.2])
    out, _ = kfac_layers(jnp.asarray(sigma), jnp.zeros((4, 4)), 0.0).update(jnp.asarray(grads), None,
                                                                            jnp.asarray(w))
    below = [np.eye(4), w[0], w[1] @ w[0]]
    above = [w[2] @ w[1], w[2], np.eye(4)]
    for layer in range(3):
        a = below[layer] @ sigma @ below[layer].T
        g = above[layer].T @ above[layer]
        want = np.linalg.solve(g, grads[layer]) @ np.linalg.inv(a)
        np.testing.assert_allclose(np.asarray(out[layer]), want, rtol=1e-8, atol=1e-10)
