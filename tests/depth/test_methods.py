"""Per-layer KFAC: at depth 1 with whitened inputs and no damping it is Newton's method (one step); its factors
are the ones its docstring defines; its steps are the same bits whichever kernels the machine's OpenBLAS runs."""

from __future__ import annotations

import contextlib
import io
import os
import platform
import subprocess
import sys

import numpy as np
import pytest

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


#: The float32 KFAC steps of 32 lanes of a depth-4, width-8 net, and LAPACK's solve of the same factors, as bits:
#: what `test_kfac_steps_do_not_depend_on_openblas_kernels` compares between two OpenBLAS kernel sets.
KFAC_BITS = """
import hashlib, jax, jax.numpy as jnp, numpy as np
from otod.core import linalg
from otod.depth.methods import kfac_layers
rng = np.random.default_rng(0)
w = (rng.standard_normal((32, 4, 8, 8)) / np.sqrt(8)).astype(np.float32)
grads = rng.standard_normal((32, 4, 8, 8)).astype(np.float32)
sigma = jnp.asarray(np.diag(np.geomspace(1.0, 0.1, 8)).astype(np.float32))
step = jax.jit(jax.vmap(lambda g, p: kfac_layers(sigma, jnp.zeros((8, 8)), 1e-3).update(g, None, p)[0]))
factors = np.einsum("lkij,lkhj->lkih", w, w) + 1e-3 * np.eye(8, dtype=np.float32)
lapack = jax.jit(jax.vmap(jax.vmap(linalg.solve)))(factors, grads)
print(*(hashlib.sha256(np.asarray(x).tobytes()).hexdigest()[:16] for x in (step(grads, w), lapack)))
"""


@pytest.mark.slow  # a second process that imports JAX: 9 s at load 9
@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="OpenBLAS core names of x86-64")
def test_kfac_steps_do_not_depend_on_openblas_kernels():
    """The same KFAC steps, bit for bit, in this process and in one whose OpenBLAS runs its Prescott kernels
    (``OPENBLAS_CORETYPE``, read when SciPy's OpenBLAS loads, so a second process). LAPACK's solve of the same
    factors is the control: it must differ between the two (else the two processes did not run different
    kernels and the test could not fail). Measured: under Haswell's and SkylakeX's kernels a float32 KFAC depth
    sweep's median at depth 2 was 45 and 37 iterations while KFAC solved with LAPACK."""
    here = os.environ.get("OPENBLAS_CORETYPE", "")
    other = "Haswell" if here.lower() == "prescott" else "Prescott"
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        exec(KFAC_BITS, namespace)
    env = {**os.environ, "OPENBLAS_CORETYPE": other, "OTOD_COMPILATION_CACHE": "off"}
    there = subprocess.run([sys.executable, "-c", KFAC_BITS], env=env, capture_output=True, text=True, timeout=300)
    assert there.returncode == 0, there.stderr
    (kfac_here, lapack_here), (kfac_there, lapack_there) = printed.getvalue().split(), there.stdout.split()
    assert lapack_here != lapack_there, "both processes ran the same OpenBLAS kernels: nothing observed"
    assert kfac_here == kfac_there
