"""Optimizers as optax `GradientTransformation`s, with their textbook step sizes from μ and L.

The first-order methods are optax's own; the second-order ones optax lacks (exact Newton, Jacobi, KFAC) are
written here in the same shape: a factory returning ``GradientTransformation(init, update)``, chained with
``optax.scale(-lr)``. Each `Method` also says its reference step size and momentum (Nesterov 2018 §2.1–2.2;
Polyak 1964; Lessard, Recht & Packard 2016), which ``--lr theory`` uses and ``--lr tuned`` multiplies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import optax

from otod.errors import OtodError
from otod.problems.base import Curvature


def precondition(direction: Callable[[jax.Array], jax.Array]) -> optax.GradientTransformation:
    """A stateless transformation g ↦ direction(g), e.g. g ↦ H⁻¹g for Newton."""

    def init(params):
        del params
        return optax.EmptyState()

    def update(updates, state, params=None):
        del params
        return jax.tree.map(direction, updates), state

    return optax.GradientTransformation(init, update)


class KroneckerState(NamedTuple):
    """The damped inverse Kronecker factors (A + λI)⁻¹ and (B + λI)⁻¹, computed once at init."""

    a_inverse: jax.Array
    b_inverse: jax.Array


def kronecker_precondition(a: jax.Array, b: jax.Array, damping: float) -> optax.GradientTransformation:
    """KFAC-style preconditioning of a matrix gradient G ↦ (A + λI)⁻¹ G (B + λI)⁻¹.

    For a Hessian H = A⊗B this is H⁻¹ vec(G), because (A⊗B)⁻¹ = A⁻¹⊗B⁻¹ (Martens & Grosse 2015, eq. 13);
    damping λ keeps the factors invertible and trades exactness for stability, as in KFAC's Tikhonov damping.
    """

    def init(params):
        del params
        eye = lambda n: jnp.eye(n, dtype=a.dtype)  # noqa: E731
        return KroneckerState(jnp.linalg.inv(a + damping * eye(a.shape[0])),
                              jnp.linalg.inv(b + damping * eye(b.shape[0])))

    def update(updates, state, params=None):
        del params
        return jax.tree.map(lambda g: state.a_inverse @ g @ state.b_inverse, updates), state

    return optax.GradientTransformation(init, update)


@dataclass(frozen=True)
class MethodOptions:
    """Options some methods read: KFAC's damping λ (relative to μ = 1)."""

    damping: float = 1e-4


class Method(NamedTuple):
    """A method: its reference learning rate from the curvature, and a factory of the transformation.

    ``build(lr, curvature, options)`` returns the optax transformation; ``needs`` names what the problem must
    offer ("kronecker" for KFAC); ``reference`` says where the reference step comes from.
    """

    reference_lr: Callable[[Curvature], jax.Array]
    build: Callable[[jax.Array, Curvature, MethodOptions], optax.GradientTransformation]
    reference: str
    needs: str | None = None


def _kappa(c: Curvature):
    return c.lipschitz / c.mu


def heavy_ball_momentum(c: Curvature):
    """Polyak's optimal momentum β = ((√κ − 1)/(√κ + 1))² (Polyak 1964; Lessard et al. 2016 §3.2)."""
    r = jnp.sqrt(_kappa(c))
    return ((r - 1) / (r + 1)) ** 2


def nesterov_momentum(c: Curvature):
    """Nesterov's momentum for strongly convex problems, β = (√κ − 1)/(√κ + 1) (Nesterov 2018, §2.2)."""
    r = jnp.sqrt(_kappa(c))
    return (r - 1) / (r + 1)


def _kfac(lr, c: Curvature, o: MethodOptions):
    if c.kronecker_factors is None:
        raise OtodError("method kfac needs a Kronecker-structured problem; use --problem kronecker")
    return optax.chain(kronecker_precondition(*c.kronecker_factors, o.damping), optax.scale(-lr))


METHODS: dict[str, Method] = {
    "gd": Method(lambda c: 1.0 / c.lipschitz, lambda lr, c, o: optax.sgd(lr),
                 "step 1/L; ρ = 1 − 1/κ (Nesterov 2018, §2.1)"),
    "gd-opt": Method(lambda c: 2.0 / (c.lipschitz + c.mu), lambda lr, c, o: optax.sgd(lr),
                     "step 2/(L+μ); ρ = (κ−1)/(κ+1) (Nesterov 2018, Thm 2.1.15)"),
    "heavy-ball": Method(lambda c: 4.0 / (jnp.sqrt(c.lipschitz) + jnp.sqrt(c.mu)) ** 2,
                         lambda lr, c, o: optax.sgd(lr, momentum=heavy_ball_momentum(c)),
                         "α = 4/(√L+√μ)², β = ((√κ−1)/(√κ+1))²; ρ = (√κ−1)/(√κ+1) (Polyak 1964)"),
    "nesterov": Method(lambda c: 1.0 / c.lipschitz,
                       lambda lr, c, o: optax.sgd(lr, momentum=nesterov_momentum(c), nesterov=True),
                       "step 1/L, β = (√κ−1)/(√κ+1); ρ = 1 − 1/√κ (Nesterov 2018, §2.2)"),
    "adam": Method(lambda c: jnp.asarray(1e-2, c.mu.dtype), lambda lr, c, o: optax.adam(lr),
                   "no closed form: 1e-2, scale-dependent (Kingma & Ba 2015)"),
    "newton": Method(lambda c: jnp.ones_like(c.mu),
                     lambda lr, c, o: optax.chain(precondition(c.inverse_hessian_apply), optax.scale(-lr)),
                     "exact H⁻¹, step 1: one iteration on any quadratic"),
    "jacobi": Method(lambda c: 1.0 / c.jacobi_lipschitz,
                     lambda lr, c, o: optax.chain(precondition(lambda g: g / c.hessian_diagonal),
                                                  optax.scale(-lr)),
                     "diag(H)⁻¹ preconditioner, step 1/λ_max(D^{-1/2}HD^{-1/2})"),
    "kfac": Method(lambda c: jnp.ones_like(c.mu), _kfac,
                   "(A+λI)⁻¹ ∇W (B+λI)⁻¹, step 1 (Martens & Grosse 2015)", needs="kronecker"),
}


def method(name: str) -> Method:
    """Look up a method by name; an unknown name raises `OtodError` listing the known ones."""
    try:
        return METHODS[name]
    except KeyError:
        raise OtodError(f"--method {name}: unknown method; choose from {', '.join(METHODS)}, "
                        "e.g. --method gd,heavy-ball") from None
