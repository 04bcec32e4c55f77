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
