"""One matrix per LAPACK call (`otod.core.linalg`): the values of jax.numpy.linalg, no batched LAPACK call in a
compiled program, no other LAPACK entry point in the package, and the multi-device program that used to
deadlock run many times under a timeout."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import numpy as np

from otod.core import linalg

ROOT = Path(__file__).resolve().parents[2]


def _spd(shape, n, seed=0):
    g = np.random.default_rng(seed).standard_normal((*shape, n, n))
    return (g @ np.swapaxes(g, -1, -2) + n * np.eye(n)).astype(np.float32)


def _nested(fn):
    return jax.jit(jax.vmap(jax.vmap(fn)))


def test_values_equal_numpy_under_nested_vmap():
    h = _spd((3, 4), 6)
    b = np.random.default_rng(1).standard_normal((3, 4, 6, 2)).astype(np.float32)
    (w, v), e, i, s, (u, sv, vt) = _nested(
        lambda h, b: (linalg.eigh(h), linalg.eigvalsh(h), linalg.inv(h), linalg.solve(h, b), linalg.svd(h)))(h, b)
    exact = np.linalg.eigvalsh(h.astype(np.float64))
    np.testing.assert_allclose(w, exact, rtol=1e-5)
    np.testing.assert_allclose(e, exact, rtol=1e-5)
    np.testing.assert_allclose(np.abs(np.einsum("...ij,...ij->...j", v, v)), 1.0, rtol=1e-5)  # unit eigenvectors
    np.testing.assert_allclose(i, np.linalg.inv(h.astype(np.float64)), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(s, np.linalg.solve(h.astype(np.float64), b), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(sv, np.linalg.svd(h.astype(np.float64))[1], rtol=1e-5)
    np.testing.assert_allclose((u * sv[..., None, :]) @ vt, h, rtol=1e-4, atol=1e-4)


def test_an_unbatched_argument_is_shared_by_every_lane():
    h, b = _spd((5,), 4), np.arange(4, dtype=np.float32)
    x = jax.vmap(lambda h: linalg.solve(h, b))(h)
    np.testing.assert_allclose(x, np.linalg.solve(h.astype(np.float64), b), rtol=1e-4, atol=1e-6)


def test_no_lapack_call_of_a_compiled_program_is_batched():
    """The fix itself: jaxlib's CPU kernels fan a batch out over the intra-op pool and block a pool thread on it,
    which wedges the pool when every device's program does so at once; a call of one matrix runs inline. After
    two vmaps over 3 × 4 lanes, every LAPACK custom call must still take one 6 × 6 matrix."""
    h = _spd((3, 4), 6)
    b = np.ones((3, 4, 6, 2), np.float32)
    fn = _nested(lambda h, b: (linalg.eigh(h)[0], linalg.inv(h), linalg.solve(h, b), linalg.svd(h)[1]))
    lines = [ln for ln in fn.lower(h, b).compile().as_text().splitlines() if 'custom_call_target="lapack_' in ln]
    targets = {re.search(r'custom_call_target="(\w+)"', ln).group(1) for ln in lines}
    assert {"lapack_ssyevd_ffi", "lapack_sgetrf_ffi", "lapack_sgesdd_ffi"} <= targets
    for line in lines:
        operands = re.findall(r"f32\[([0-9,]*)\]", line.split("custom-call(")[0])
        assert operands and all(len(dims.split(",")) <= 2 for dims in operands), line


def test_the_package_calls_lapack_only_through_otod_core_linalg():
    """A jax.numpy.linalg call anywhere else would bring batched LAPACK calls back into device programs."""
    pattern = re.compile(r"\b(jnp\.linalg|jax\.numpy\.linalg|jax\.scipy\.linalg|jsp\.linalg|lax\.linalg)\b")
    offenders = [f"{p.relative_to(ROOT)}:{n}" for p in sorted((ROOT / "otod").rglob("*.py"))
                 if p.name != "linalg.py" or p.parent.name != "core"
                 for n, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert offenders == []


REPEATED_SWEEPS = textwrap.dedent("""
    import os, sys, tempfile
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
    os.environ["OTOD_COMPILATION_CACHE"] = "off"
    import numpy as np
    from otod.condition.kronecker import KroneckerSpec
    from otod.condition.options import condition_sweep
    from otod.core.sweep import run_sweep
    config = condition_sweep(tuple(np.geomspace(1, 1000, 7)), methods=("gd", "nesterov", "kfac", "newton"),
                             problem=KroneckerSpec(rows=6, cols=6, perturbation=0.1), seeds=4)
    with tempfile.TemporaryDirectory() as d:
        for i in range(int(sys.argv[1])):
            results = run_sweep(config, path=os.path.join(d, f"r{i}.json"))
            assert len(results.records) == 7 * 4 * 4
    print("done", flush=True)
""")


def test_the_multi_device_kronecker_sweep_never_hangs():
    """The README's perturbed-Kronecker sweep, shrunk to 6 × 6, run 20 times in one process on 2 CPU devices
    (compiled once, so each run takes about 0.2 s). Before the fix the same script hung in 3 of 3 processes
    within 15 runs (a batched ``eigh`` per device, both pool threads waiting); the watchdog is off, so a hang
    fails this test by its timeout."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OTOD_WATCHDOG_SECONDS": "off"}
    proc = subprocess.run([sys.executable, "-c", REPEATED_SWEEPS, "20"], capture_output=True, text=True, env=env,
                          timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "done"


# -- solve_spd: Gauss–Jordan in plain XLA for the small SPD systems of per-layer KFAC -----------------------------


def _factor_like(batch, n, depth, seed):
    """SPD matrices shaped like KFAC's factors: P Pᵀ + 10⁻³ I, P a product of ``depth`` N(0, 1/n) matrices
    (condition numbers of 10²–10⁵), in float32."""
    rng = np.random.default_rng(seed)
    p = np.broadcast_to(np.eye(n), (batch, n, n))
    for _ in range(depth):
        p = rng.standard_normal((batch, n, n)) / np.sqrt(n) @ p
    return (p @ np.swapaxes(p, -1, -2) + 1e-3 * np.eye(n)).astype(np.float32)


import pytest  # noqa: E402


@pytest.mark.parametrize("n", [1, 8, linalg.UNROLL_SPD + 4])  # unrolled and fori_loop paths
def test_solve_spd_is_as_accurate_as_lapack_lu(n):
    """Against the float64 solution of the same float32 system: over 500 factor-like matrices per depth, the
    relative error of `solve_spd` is within 2× of LU's (jnp.linalg.solve, partial pivoting) at the median and 3× at
    the worst matrix, and below cond · 2⁻²³ (measured at n = 8: median 1.1e-5 against LU's 1.6e-5, worst 3.7e-4
    against 1.1e-3; at n = 20, depth 1: median 8.0e-6 against 5.2e-6, worst 9.7e-5 against 4.4e-5)."""
    for depth in (1, 3, 6):
        a = _factor_like(500, n, depth, seed=depth)
        b = np.random.default_rng(10 + depth).standard_normal((500, n, 3)).astype(np.float32)
        exact = np.linalg.solve(a.astype(np.float64), b.astype(np.float64))
        err = {}
        for name, solve in (("spd", linalg.solve_spd), ("lu", jax.numpy.linalg.solve)):
            x = np.asarray(jax.jit(solve)(a, b), np.float64)
            err[name] = np.linalg.norm(x - exact, axis=(1, 2)) / np.linalg.norm(exact, axis=(1, 2))
        assert np.median(err["spd"]) <= 2 * np.median(err["lu"]) + 1e-7
        assert err["spd"].max() <= 3 * err["lu"].max() + 1e-7
        assert np.all(err["spd"] <= np.linalg.cond(a.astype(np.float64)) * 2.0 ** -23)


def test_solve_spd_batches_under_vmap_with_no_custom_call():
    """Plain XLA: nested vmaps batch it natively (the values of the unbatched call, bit for bit), and the
    compiled program has no custom call at all, so no LAPACK pool wait can wedge a multi-device program."""
    a = _factor_like(12, 8, 2, seed=0).reshape(3, 4, 8, 8)
    b = np.random.default_rng(1).standard_normal((3, 4, 8, 8)).astype(np.float32)
    fn = _nested(linalg.solve_spd)
    batched = np.asarray(fn(a, b))
    one = np.stack([np.asarray(jax.jit(linalg.solve_spd)(a[i, j], b[i, j])) for i in range(3) for j in range(4)])
    np.testing.assert_array_equal(batched.reshape(12, 8, 8), one)
    assert "custom-call" not in fn.lower(a, b).compile().as_text()
