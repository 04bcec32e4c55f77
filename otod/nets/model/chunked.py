"""The training loss of a model and everything derived from it (its gradient, Hessian-vector products, the
per-example gradient statistics built on them) accumulated over chunks of the data, so that memory is bounded by
one chunk's activations, not the data set's.

A model's ``loss(params, batch)`` is the *mean* loss over the batch's examples (`otod.nets.model.contract`), so the
mean over n examples split into chunks c of n_c examples is exactly the weighted sum

    L(θ) = Σ_c (n_c / n) · loss(θ, chunk_c)

and so are its gradient and its Hessian (linear in L). `chunked_mean` writes that sum as a ``lax.scan`` over the
full chunks (stacked [k, chunk, …], one compiled body) plus one call on the n mod chunk examples left over, with
the body under ``jax.checkpoint``: reverse mode then keeps only each chunk's inputs (slices of the data) across
the scan and recomputes the chunk's activations when it differentiates it, so the gradient, and the
forward-over-reverse Hessian-vector product jvp(∇L) (Pearlmutter 1994) that `otod.nets.measure.curvature` and
`otod.nets.measure.noise_scale` build from it, hold one chunk's activations (primal and tangent) at a time. The price is
one more forward pass per chunk. The result is the one-call loss summed in another order: equal to rounding
(tested to 1e-10 relative in float64, `tests/nets/model/test_contract.py`), as PyHessian and init2winit accumulate
their Hessian-vector products over batches.

`activation_floats` estimates one example's activations from the loss's own jaxpr, so that a chunk can be sized
(`chunk_for`) and the memory estimated before anything is allocated.
"""

from __future__ import annotations

import math
from typing import Callable

from otod.core.api import lazy

jax = lazy("jax")
jnp = lazy("jax.numpy")

#: Floats one chunk may hold in activations, primal and tangent, forward and backward (2^25 floats: 128 MiB in
#: float32, 256 MiB in float64).
CHUNK_FLOATS = 2 ** 25


def pieces(n: int, chunk: int) -> tuple[int, int, int]:
    """(c, k, r): the chunk c = min(chunk, n), k full chunks of c examples and r = n − kc left over."""
    c = max(1, min(int(chunk), n))
    return c, n // c, n - (n // c) * c


def chunked_mean(loss: Callable, chunk: int) -> Callable:
    """f(params, *data) = the mean of ``loss(params, batch)`` over all examples of ``data`` (arrays with a common
    leading example axis), computed ``chunk`` examples at a time (module docstring): the same number as
    ``loss(params, data)`` to rounding, with derivatives whose memory is one chunk's. Hashable by (loss, chunk),
    so that jit caches a compile per model and chunk."""
    return _ChunkedMean(loss, int(chunk))


class _ChunkedMean:
    """`chunked_mean`'s function: a class so that two of the same loss and chunk are equal (one jit cache entry)."""

    def __init__(self, loss: Callable, chunk: int):
        self.loss, self.chunk = loss, chunk

    def __eq__(self, other):
        return isinstance(other, _ChunkedMean) and (self.loss, self.chunk) == (other.loss, other.chunk)

    def __hash__(self):
        return hash((self.loss, self.chunk))

    def __call__(self, params, *data):
        n = data[0].shape[0]
        c, k, r = pieces(n, self.chunk)
        body = jax.checkpoint(lambda p, batch: self.loss(p, batch))
        if k == 1 and r == 0:
            return body(params, tuple(data))
        stacked = tuple(a[:k * c].reshape((k, c) + a.shape[1:]) for a in data)
        dtype = jax.eval_shape(body, params, tuple(a[:c] for a in data)).dtype

        def step(total, batch):
            return total + body(params, batch), None

        total, _ = jax.lax.scan(step, jnp.zeros((), dtype), stacked)
        total = total * (c / n)
        if r:
            total = total + body(params, tuple(a[k * c:] for a in data)) * (r / n)
        return total


def example_loss(loss: Callable) -> Callable:
    """ℓ(params, *example) = loss(params, the batch of that one example): one example's loss, whose gradient
    vmapped over examples is the per-example gradient."""
    return _ExampleLoss(loss)


class _ExampleLoss:
    def __init__(self, loss):
        self.loss = loss

    def __eq__(self, other):
        return isinstance(other, _ExampleLoss) and self.loss == other.loss

    def __hash__(self):
        return hash((_ExampleLoss, self.loss))

    def __call__(self, params, *example):
        return self.loss(params, tuple(a[None] for a in example))


def _jaxpr_floats(jaxpr) -> int:
    """Elements of every value a jaxpr's equations make, sub-jaxprs (scan, pjit, custom derivatives) included."""
    total = 0
    for eqn in jaxpr.eqns:
        for var in eqn.outvars:
            shape = getattr(var.aval, "shape", ())
            total += int(math.prod(shape))
        for value in eqn.params.values():
            inner = value if hasattr(value, "eqns") else getattr(value, "jaxpr", None)
            if inner is not None and hasattr(inner, "eqns"):
                total += _jaxpr_floats(inner)
    return total


def activation_floats(loss: Callable, params, data: tuple) -> int:
    """One example's activations, estimated as the difference between the values the loss's jaxpr makes on a
    batch of two examples and on one: what grows with the batch (layer outputs, the loss's terms), not the
    parameters. At least 1."""
    one = jax.make_jaxpr(loss)(params, tuple(a[:1] for a in data)).jaxpr
    if data[0].shape[0] < 2:
        return max(1, _jaxpr_floats(one))
    two = jax.make_jaxpr(loss)(params, tuple(a[:2] for a in data)).jaxpr
    return max(1, _jaxpr_floats(two) - _jaxpr_floats(one))


def chunk_for(examples: int, activations: int, vectors: int = 1, floats: int = CHUNK_FLOATS) -> int:
    """Examples per chunk: each holds about 4 × activations floats (primal and tangent, forward and backward)
    for each of ``vectors`` Hessian-vector products at once, within ``floats``; at least 1, at most the data."""
    return int(max(1, min(examples, floats // max(1, 4 * activations * max(1, vectors)))))
