"""Dense linear algebra for code that runs inside the engine's device programs: one matrix per LAPACK call.

Why. jaxlib's CPU LAPACK kernels (eigh, LU, triangular solve, SVD, …) split a *batch* of matrices into chunks,
schedule the chunks on XLA:CPU's intra-op thread pool and block the calling thread until they are done
(``jax::ParallelBatchMap`` in ``jaxlib/cpu/_lapack.so``, jaxlib 0.10.2; read off its disassembly: a batch no
larger than one chunk runs inline). The calling thread is itself one of that pool's threads. When the engine
runs one program per core (`otod.core.devices`), every device's program can be inside a batched LAPACK call at
once: each blocks one pool thread while its chunks wait in the queue behind the blocked threads, and with every
thread blocked nothing runs them. The process then waits forever at 0 % CPU. Measured on 2 cores: the README's
``--problem kronecker --perturbation 0.1`` sweep (a batched ``eigh`` of H in every block's set-up) hung in 4 of 6
runs; native stacks (gdb, ``thread apply all bt``) showed both ``tf_XLAEigen`` threads in
``lapack_ssyevd_ffi → ParallelBatchMap → BlockingCounter::Wait`` and the main thread waiting for the result.

The fix. A call with a batch of one never leaves its thread. Each function here is wrapped so that under
``vmap`` (however many the engine nests) its batching rule runs the matrices one after another with
``lax.map``: every LAPACK call the compiled program makes is unbatched, and so never waits on the pool. The
devices still run in parallel, one per core; only the intra-op fan-out of one batched call, which the per-core
devices already replace, is given up. Values are those of ``jax.numpy.linalg`` (same kernels, one matrix each).

What LAPACK cannot give: the same bits on every machine. jaxlib's CPU kernels call the LAPACK and BLAS of the
installed SciPy (OpenBLAS), which picks its kernels when it loads, by the CPU it finds or by
``OPENBLAS_CORETYPE``; each kernel set rounds differently. Measured (jaxlib 0.10.2, SciPy's OpenBLAS 0.3.31,
64 solves of 8 × 8 SPD systems): Haswell, SkylakeX, Sandybridge and Prescott kernels gave four different results,
and a float32 KFAC depth sweep moved (`otod sweep depth --depth 1..8 --init xavier --method gd,kfac`: KFAC's
median at depth 2 was 45 iterations under Haswell's kernels and 37 under SkylakeX's, 346 of 1,664 counts
differing; gd, which calls no LAPACK, identical). `spd_solve` therefore solves symmetric positive definite systems
with XLA's own operations (Cholesky and two substitutions), so what a lane computes does not depend on which
kernels the machine's OpenBLAS chose.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def _one_matrix_per_call(fn):
    """``fn`` with a vmap rule that maps it over the batch one element at a time (``lax.map``), so nested vmaps
    never hand LAPACK more than one matrix. Unbatched arguments are broadcast; every output is batched."""
    wrapped = jax.custom_batching.custom_vmap(fn)

    @wrapped.def_vmap
    def rule(axis_size, in_batched, *args):
        flat, tree = jax.tree.flatten(args)
        flags = jax.tree.leaves(in_batched)
        full = [a if b else jnp.broadcast_to(a, (axis_size, *jnp.shape(a))) for a, b in zip(flat, flags)]
        out = jax.lax.map(lambda xs: wrapped(*jax.tree.unflatten(tree, xs)), full)
        return out, jax.tree.map(lambda _: True, out)

    return wrapped


@_one_matrix_per_call
def eigh(a):
    """Eigenvalues (ascending) and eigenvectors of the symmetric matrix ``a``: ``jnp.linalg.eigh``."""
    return tuple(jnp.linalg.eigh(a))


@_one_matrix_per_call
def eigvalsh(a):
    """Eigenvalues (ascending) of the symmetric matrix ``a``: ``jnp.linalg.eigvalsh``."""
    return jnp.linalg.eigvalsh(a)


@_one_matrix_per_call
def inv(a):
    """The inverse of ``a``: ``jnp.linalg.inv``."""
    return jnp.linalg.inv(a)


@_one_matrix_per_call
def solve(a, b):
    """x with a x = b: ``jnp.linalg.solve`` (``b`` a vector or a matrix of right-hand sides)."""
    return jnp.linalg.solve(a, b)


@_one_matrix_per_call
def svd(a):
    """(U, s, Vᵀ) of ``a``: ``jnp.linalg.svd`` with full matrices."""
    return tuple(jnp.linalg.svd(a))


@_one_matrix_per_call
def spd_solve(a, b):
    """x with a x = b for a symmetric positive definite ``a`` [n, n] (``b`` [n] or [n, m]), by Cholesky a = L Lᵀ
    and forward and back substitution (Golub & Van Loan, *Matrix Computations*, 4th ed., Alg. 4.2.1 and 3.1.1-2),
    in XLA's own operations: no LAPACK or BLAS call, so the bits do not depend on the kernels the installed
    OpenBLAS chose (module docstring). Each column and row is read with a one-hot mask, so every loop is a
    ``fori_loop`` over n whatever n is. Under vmap it runs one matrix at a time like the LAPACK functions here: a
    batched version is compiled per batch width and rounds differently (measured: KFAC's final losses moved in
    their last bits when the engine compacted a block's last lanes), one matrix at a time is the same program for
    any width, so a lane's bits do not depend on the block it runs in. A matrix that is not
    positive definite in float arithmetic gives NaN (the square root of a non-positive pivot), which the engine
    records as divergence. Leading axes of ``a`` (a stack of matrices, with ``b`` stacked alike) are mapped over."""
    if jnp.ndim(a) > 2:
        return jax.vmap(spd_solve)(a, b)
    vector = jnp.ndim(b) == 1
    b = b[:, None] if vector else b
    n = a.shape[-1]
    index = jnp.arange(n)

    def unit(j):
        return (index == j).astype(a.dtype)

    def factor_column(j, low):  # column j of L from a's column j less the columns of L found so far
        e = unit(j)
        row = jnp.sum(low * e[:, None], axis=0)
        column = jnp.sum(a * e[None, :], axis=1) - jnp.sum(low * row[None, :], axis=1)
        pivot = jnp.sqrt(jnp.sum(column * e))
        return low + jnp.where(index >= j, column / pivot, 0.0)[:, None] * e[None, :]

    low = jax.lax.fori_loop(0, n, factor_column, jnp.zeros_like(a))
    diagonal = jnp.sum(low * jnp.eye(n, dtype=a.dtype), axis=1)

    def forward(i, y):  # L y = b, row i
        e = unit(i)
        row = jnp.sum(low * e[:, None], axis=0)
        value = (jnp.sum(b * e[:, None], axis=0) - jnp.sum(row[:, None] * y, axis=0)) / jnp.sum(diagonal * e)
        return y + e[:, None] * value[None, :]

    def backward(k, x):  # Lᵀ x = y, row n − 1 − k
        e = unit(n - 1 - k)
        column = jnp.sum(low * e[None, :], axis=1)
        value = (jnp.sum(y * e[:, None], axis=0) - jnp.sum(column[:, None] * x, axis=0)) / jnp.sum(diagonal * e)
        return x + e[:, None] * value[None, :]

    y = jax.lax.fori_loop(0, n, forward, jnp.zeros_like(b))
    x = jax.lax.fori_loop(0, n, backward, jnp.zeros_like(b))
    return x[:, 0] if vector else x
