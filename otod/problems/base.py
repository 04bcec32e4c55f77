"""The interface every problem family offers the engine and the methods."""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import numpy as np

Array = jax.Array


class Curvature(NamedTuple):
    """What a problem tells the optimizers about its Hessian H (all exact: these are test problems). Pure data (a
    pytree of arrays), computed once per lane before the iterations start.

    mu, lipschitz: the extreme eigenvalues μ and L of H (κ = L/μ).
    hessian_eigenvalues, hessian_eigenvectors: H = V diag(λ) Vᵀ over the flattened parameters; V is None where H
    is diagonal in the parameters' own coordinates (then λ has the parameters' shape).
    hessian_diagonal: diag(H), for the Jacobi preconditioner.
    jacobi_lipschitz: λ_max(D^{-1/2} H D^{-1/2}) with D = diag(H): the L of the Jacobi-preconditioned problem.
    kronecker_factors: (A, B) with H = A⊗B (exactly or approximately), for KFAC; None where H has no such form.
    """

    mu: Array
    lipschitz: Array
    hessian_eigenvalues: Array
    hessian_eigenvectors: Array | None
    hessian_diagonal: Array
    jacobi_lipschitz: Array
    kronecker_factors: tuple[Array, Array] | None

    def inverse_hessian_apply(self, g: Array) -> Array:
        """H⁻¹g = V diag(1/λ) Vᵀ g: the exact Newton direction."""
        if self.hessian_eigenvectors is None:
            return g / self.hessian_eigenvalues.reshape(g.shape)
        v = self.hessian_eigenvectors
        return (v @ ((v.T @ g.reshape(-1)) / self.hessian_eigenvalues)).reshape(g.shape)


class ProblemFamily(NamedTuple):
    """Pure functions of one problem family; see the package docstring."""

    draws: Callable[[np.random.Generator], dict]
    make: Callable[[Array, dict], Any]
    loss: Callable[[Any, Array], Array]
    curvature: Callable[[Any], Curvature]
    start: Callable[[Any], Array]


def family(spec) -> ProblemFamily:
    """The `ProblemFamily` for a spec (`QuadraticSpec` or `KroneckerSpec`)."""
    return spec.family()
