"""The exact spectrum of a small net's Hessian: H built column by column from Hessian-vector products, then all P
eigenvalues by a symmetric eigensolver, so that every quantity `otod.nets.measure.curvature` otherwise estimates by
stochastic Lanczos quadrature (SLQ) is computed without sampling or quadrature error.

* H e_j is the j-th column of H, one Hessian-vector product (the forward-mode derivative of the gradient,
  Pearlmutter 1994, as `otod.nets.measure.curvature` computes it); ``jax.lax.map`` runs them ``chunk`` at a time
  (`dense_chunk`: the chunk's activations, primal and tangent over the whole training set, held to
  `CHUNK_FLOATS`). `jax.hessian` (forward over reverse on every basis vector at once) computes the same matrix
  but holds all P tangents' activations together: at P = 2,410 (the default net, float32, second call) it took
  2.1 s and 2.3 GiB of peak memory against the columns' 1.4 s and 0.8 GiB (`DENSE_MAX_PARAMETERS`' machine); on
  the shared 2-core development machine 10.4 s and 2.0 GiB against 5.8 s and 0.5 GiB. The columns are
  symmetrised, (H + Hᵀ)/2 (rounding makes H·e_j and Hᵀ·e_j differ in the last bits), and decomposed in float64 by
  LAPACK's divide and conquer (``dsyevd``, via `scipy.linalg.eigh`).
* Exact means: no sampling error (every direction is counted, not 8 random ones) and no quadrature error (every
  eigenvalue is a node, with weight exactly 1/P). What is left is the rounding of the Hessian-vector products in
  the working precision: at the default net's init, the float32 spectrum's λ_max, λ_min, tr H/P and tr H²/P
  differ from the float64 one's by under 6·10⁻⁸ relative, λ_0.9 by 5·10⁻⁷, the negative mass not at all
  (`benchmarks/dense_cost.py --compare`).
* Cost: P Hessian-vector products (SLQ's default takes 8 × 100 + 70 = 870) and O(P³) for the eigenvalues, in P²
  floats of memory. `DENSE_MAX_PARAMETERS` says where that is affordable.
"""

from __future__ import annotations

import functools
import math
from typing import Callable

import numpy as np

from otod.core.api import lazy

jax = lazy("jax")
jnp = lazy("jax.numpy")

#: The dense spectrum is computed where P ≤ this; above it, SLQ with an interval per estimate
#: (`otod.nets.measure.slq_error`). Cost per checkpoint, measured by `benchmarks/dense_cost.py` (digits MLP at init,
#: n = 1,438 examples, float32, second call; a 16-core machine's CPU held to 2 cores by taskset, since the shared
#: 2-core development machine's timings varied by up to 20× with its load): at P = 2,410 (width 32, the default
#: net) the columns took 1.4 s and the eigenvalues 0.65 s, 0.83 GiB peak for the whole process, against 0.46 s
#: and 0.70 GiB for SLQ's 8 × 100 steps and the top 10 (the whole default command, 3 checkpoints: 11.8 s with
#: SLQ, 43 s dense, on the loaded development machine); at P = 4,810 (width 64) 4.4 s + 4.7 s and 1.2 GiB, against
#: 1.1 s and 0.71 GiB. The columns grow as P²·n and the eigensolver as P³: at P = 10⁴ they
#: would take about 19 s + 42 s a checkpoint on 2 cores, so the limit keeps the exact spectrum under about 10 s a
#: checkpoint there. Memory: `dense_bytes`, 0.8 GB at the limit.
DENSE_MAX_PARAMETERS = 5000
#: Floats a chunk of Hessian-vector products may hold in activations (primal and tangent, forward and backward).
CHUNK_FLOATS = 2 ** 25


def is_dense(size: int, limit: int | None = None) -> bool:
    """Whether a net of ``size`` parameters gets the exact dense spectrum (P ≤ `DENSE_MAX_PARAMETERS`)."""
    return size <= (DENSE_MAX_PARAMETERS if limit is None else limit)


def dense_bytes(size: int) -> int:
    """Memory of the dense path beyond the net: H in the working precision, its float64 copy and LAPACK's
    workspace (about 2P² more floats for ``dsyevd`` without vectors): 4 float64 P × P matrices at most."""
    return 4 * 8 * size * size


def activation_floats(spec) -> int:
    """Floats of one example's layer outputs: each dense layer's fan-out, each convolution's channels × pixels."""
    image = spec.dataset().image
    pixels = image[0] * image[1] if image else 1
    return int(sum(s[-1] * (pixels if len(s) == 4 else 1) for s in spec.shapes()))


def dense_chunk(examples: int, activations: int, size: int) -> int:
    """Columns per chunk: each Hessian-vector product holds about 4 × examples × activations floats (primal and
    tangent, forward and backward) and a few P-vectors; at most P, at least 1."""
    return int(max(1, min(size, CHUNK_FLOATS // (4 * examples * activations + 4 * size))))


def _columns(loss, params, data, chunk):
    from jax.flatten_util import ravel_pytree  # `otod.nets.measure.curvature.flatten`, which imports this module

    flat, unflatten = ravel_pytree(params)
    grad = jax.grad(lambda f: loss(unflatten(f), *data))
    size = flat.shape[0]

    def column(j):
        return jax.jvp(grad, (flat,), (jax.nn.one_hot(j, size, dtype=flat.dtype),))[1]

    return jax.lax.map(column, jnp.arange(size), batch_size=chunk)


@functools.cache
def _compiled():
    """The jit of `_columns` (loss and chunk static), made on first use so that importing imports no JAX."""
    return jax.jit(_columns, static_argnames=("loss", "chunk"))


def dense_hessian(loss: Callable, params, data: tuple = (), chunk: int = 128) -> np.ndarray:
    """∇²loss(params, *data) as a float64 P × P array, symmetrised: columns H e_j in the parameters' dtype,
    ``chunk`` at a time."""
    h = np.asarray(_compiled()(loss, params, tuple(data), int(chunk)), np.float64)
    return (h + h.T) * 0.5


def dense_eigenvalues(loss: Callable, params, data: tuple = (), chunk: int = 128) -> np.ndarray:
    """All P eigenvalues of ∇²loss(params, *data), ascending, float64 (`dense_hessian`, then ``dsyevd``)."""
    import scipy.linalg

    return scipy.linalg.eigh(dense_hessian(loss, params, data, chunk), eigvals_only=True, driver="evd",
                             overwrite_a=True, check_finite=False)


def quantile_index(size: int, q: float) -> int:
    """The index (ascending order) of the q-quantile of P equally weighted eigenvalues: the smallest i with
    (i + 1)/P ≥ q, i.e. ⌈qP⌉ − 1 (qP rounded to 9 digits first, so that q = 0.9 at P = 2,410 gives 2,168, not the
    next one by the rounding of 0.9)."""
    return int(min(size - 1, max(0, math.ceil(round(q * size, 9)) - 1)))


def exact_summary(eigenvalues: np.ndarray, q: float, tolerance: float) -> dict:
    """The SLQ quantities of `otod.nets.measure.curvature.curvature_record`, exact, from all P eigenvalues (ascending):
    λ_max, λ_min, λ_q (`quantile_index`), the negative mass (the fraction of eigenvalues below −tolerance·λ_max),
    tr H/P = mean λ and tr H²/P = mean λ²."""
    lam = np.asarray(eigenvalues, np.float64)
    lambda_max = float(lam[-1])
    return {"lambda_max": lambda_max, "lambda_min": float(lam[0]), "lambda_q": float(lam[quantile_index(lam.size, q)]),
            "negative_mass": float(np.count_nonzero(lam < -tolerance * lambda_max) / lam.size),
            "trace_per_parameter": float(np.mean(lam)), "square_trace_per_parameter": float(np.mean(lam ** 2))}
