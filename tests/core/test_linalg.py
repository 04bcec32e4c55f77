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


#: Every LAPACK entry point of `otod.core.linalg` under two vmaps over 3 × 4 lanes of 6 × 6 matrices: one program,
#: whose values one test checks and whose LAPACK calls another reads (compiled once for both).
EVERY_CALL = _nested(lambda h, b: (linalg.eigh(h), linalg.eigvalsh(h), linalg.inv(h), linalg.solve(h, b),
                                   linalg.svd(h)))


def test_values_equal_numpy_under_nested_vmap():
    h = _spd((3, 4), 6)
    b = np.random.default_rng(1).standard_normal((3, 4, 6, 2)).astype(np.float32)
    (w, v), e, i, s, (u, sv, vt) = EVERY_CALL(h, b)
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


def test_spd_solve_equals_numpy_and_calls_no_lapack():
    """`linalg.spd_solve` (Cholesky in XLA's own operations) against NumPy's float64 solve: matrix and vector
    right-hand sides under two vmaps, and a stack of matrices; float32 solves of these well-conditioned matrices
    agree to 1e-4. No LAPACK or BLAS custom call in its
    compiled program (that is what makes its bits the same under every OpenBLAS kernel set,
    tests/depth/test_methods.py). An indefinite matrix gives NaN, never a finite answer."""
    h = _spd((3, 4), 6)
    b = np.random.default_rng(1).standard_normal((3, 4, 6, 2)).astype(np.float32)
    fn = _nested(lambda h, b: (linalg.spd_solve(h, b), linalg.spd_solve(h, b[..., 0])))
    x, v = fn(h, b)
    exact = np.linalg.solve(h.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(x, exact, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(v, exact[..., 0], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(linalg.spd_solve(h[0], b[0]), exact[0], rtol=1e-4, atol=1e-6)
    assert "custom_call_target" not in fn.lower(h, b).compile().as_text()
    assert np.isnan(np.asarray(linalg.spd_solve(np.diag([1.0, -1.0]).astype(np.float32), np.ones(2, np.float32)))).any()


def test_spd_solve_gives_each_matrix_the_same_bits_in_any_batch():
    """The engine compacts a block's last running lanes into a narrower call, and a lane's records must not change
    (`otod.core.engine.compact_width`): 104 KFAC-sized systems (8 × 8, damping 10⁻³) solved together, and in
    batches of 1, 2, 3 and 13 taken from them, give every solution bit for bit. Batched versions (no
    one-matrix-at-a-time rule) failed it: one summing with reductions at a batch of 1, one written out with
    elementwise operations only, each sum in a fixed order, at a batch of 2: XLA:CPU compiles each batch width to
    other code."""
    g = np.random.default_rng(2).standard_normal((104, 8, 8))
    a = (g @ np.swapaxes(g, -1, -2) / 8 + 1e-3 * np.eye(8)).astype(np.float32)
    b = np.random.default_rng(3).standard_normal((104, 8, 8)).astype(np.float32)
    solve = jax.jit(jax.vmap(linalg.spd_solve))
    whole = np.asarray(solve(a, b))
    for start, width in ((0, 1), (7, 2), (50, 3), (91, 13)):
        part = np.asarray(solve(a[start:start + width], b[start:start + width]))
        assert np.array_equal(part, whole[start:start + width]), (start, width)


def test_no_lapack_call_of_a_compiled_program_is_batched():
    """The fix itself: jaxlib's CPU kernels fan a batch out over the intra-op pool and block a pool thread on it,
    which wedges the pool when every device's program does so at once; a call of one matrix runs inline. After
    two vmaps over 3 × 4 lanes, every LAPACK custom call must still take one 6 × 6 matrix."""
    h = _spd((3, 4), 6)
    b = np.ones((3, 4, 6, 2), np.float32)
    lines = [ln for ln in EVERY_CALL.lower(h, b).compile().as_text().splitlines()
             if 'custom_call_target="lapack_' in ln]
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
