"""The curvature of a net's training loss: Hessian-vector products (this module), and Lanczos and stochastic Lanczos
quadrature on top of them.

H·v is the forward-mode derivative of the gradient along v, jvp(∇L, (θ,), (v,)) (Pearlmutter 1994): one
forward-over-reverse pass, about the cost of two gradients, never forming H. Vectors are flat (`flatten`), so the
linear algebra is that of ordinary arrays.
"""

from __future__ import annotations

from typing import Callable

from otod.core.lazy import lazy

jax = lazy("jax")
jnp = lazy("jax.numpy")


def flatten(params):
    """(flat vector, unflatten): `jax.flatten_util.ravel_pytree`."""
    from jax.flatten_util import ravel_pytree

    return ravel_pytree(params)


def hessian_vector_product(loss: Callable, params) -> Callable:
    """v ↦ ∇²loss(params)·v on flat vectors v, for a loss of the parameter pytree alone."""
    flat, unflatten = flatten(params)
    grad = jax.grad(lambda f: loss(unflatten(f)))

    def hvp(v):
        return jax.jvp(grad, (flat,), (v.astype(flat.dtype),))[1]

    return hvp
