"""The interface every problem family offers the engine and the methods."""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import numpy as np

Array = jax.Array


class Curvature(NamedTuple):
    """What a problem tells the optimizers about its Hessian H (all exact: these are test problems).

    mu, lipschitz: the extreme eigenvalues μ and L of H (κ = L/μ).
    inverse_hessian_apply: g ↦ H⁻¹g, for exact Newton.
    hessian_diagonal: diag(H), for the Jacobi preconditioner.
    jacobi_lipschitz: λ_max(D^{-1/2} H D^{-1/2}) with D = diag(H): the L of the Jacobi-preconditioned problem.
    kronecker_factors: (A, B) with H = A⊗B (exactly or approximately), for KFAC; None where H has no such form.
    """

    mu: Array
    lipschitz: Array
    inverse_hessian_apply: Callable[[Array], Array]
    hessian_diagonal: Array
    jacobi_lipschitz: Array
    kronecker_factors: tuple[Array, Array] | None


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
