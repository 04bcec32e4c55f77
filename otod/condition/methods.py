"""The conditioning obstacle's methods as optax transformations, with their textbook step sizes from μ and L.

The first-order methods are optax's own (in the shared `otod.core.methods.momentum` form, so gd, gd-opt,
heavy-ball and nesterov run as one program); the second-order ones optax lacks (exact Newton, Jacobi, KFAC on a
Kronecker-structured Hessian) are written here in the same shape: a factory returning a
``GradientTransformation``, chained with ``optax.scale(-lr)``. Each reads ``info["curvature"]`` (μ, L, the
eigendecomposition) or ``info["kronecker"]`` (the factors A, B), which the quadratic families provide; its
reference step (Nesterov 2018 §2.1–2.2; Polyak 1964; Lessard, Recht & Packard 2016) is what ``--lr theory``
uses and ``--lr tuned`` multiplies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


from otod.core.api import Method, lazy, momentum, precondition

jax = lazy("jax")
jnp = lazy("jax.numpy")
linalg = lazy("otod.core.linalg")
optax = lazy("optax")

CURVATURE = frozenset({"curvature"})


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
        return KroneckerState(linalg.inv(a + damping * eye(a.shape[0])),
                              linalg.inv(b + damping * eye(b.shape[0])))

    def update(updates, state, params=None):
        del params
        return jax.tree.map(lambda g: state.a_inverse @ g @ state.b_inverse, updates), state

    return optax.GradientTransformation(init, update)


@dataclass(frozen=True)
class MethodOptions:
    """Options some methods read: KFAC's damping λ (relative to μ = 1)."""

    damping: float = 1e-4


def _kappa(c):
    return c.lipschitz / c.mu


def heavy_ball_momentum(c):
    """Polyak's optimal momentum β = ((√κ − 1)/(√κ + 1))² (Polyak 1964; Lessard et al. 2016 §3.2)."""
    r = jnp.sqrt(_kappa(c))
    return ((r - 1) / (r + 1)) ** 2


def nesterov_momentum(c):
    """Nesterov's momentum for strongly convex problems, β = (√κ − 1)/(√κ + 1) (Nesterov 2018, §2.2)."""
    r = jnp.sqrt(_kappa(c))
    return (r - 1) / (r + 1)


def _momentum_method(reference_lr, beta, nesterov: float, reference: str, has_momentum: bool = True) -> Method:
    """A member of the momentum program: gd (β = 0), heavy ball (ν = 0) or Nesterov (ν = 1); the step and β are
    functions of the curvature."""

    def standalone(lr, info, o):
        if not has_momentum:
            return optax.sgd(lr)
        return optax.sgd(lr, momentum=beta(info["curvature"]), nesterov=bool(nesterov))

    def hyper(info):
        b = beta(info["curvature"])
        return b, jnp.full_like(b, nesterov)

    def build(lr, info, o, hp=None):
        b, nu = hyper(info) if hp is None else hp
        return optax.chain(momentum(b, nu), optax.scale(-lr))

    return Method(lambda info: reference_lr(info["curvature"]), build, reference, needs=CURVATURE,
                  program="momentum", hyperparameters=hyper, standalone=standalone)


def _newton(lr, info, o, hp=None):
    return optax.chain(precondition(info["curvature"].inverse_hessian_apply), optax.scale(-lr))


def _jacobi(lr, info, o, hp=None):
    return optax.chain(precondition(lambda g: g / info["curvature"].hessian_diagonal), optax.scale(-lr))


def _kfac(lr, info, o, hp=None):
    return optax.chain(kronecker_precondition(*info["kronecker"], o.damping), optax.scale(-lr))


METHODS: dict[str, Method] = {
    "gd": _momentum_method(lambda c: 1.0 / c.lipschitz, lambda c: jnp.zeros_like(c.mu), 0.0,
                           "step 1/L; ρ = 1 − 1/κ (Nesterov 2018, §2.1)", has_momentum=False),
    "gd-opt": _momentum_method(lambda c: 2.0 / (c.lipschitz + c.mu), lambda c: jnp.zeros_like(c.mu), 0.0,
                               "step 2/(L+μ); ρ = (κ−1)/(κ+1) (Nesterov 2018, Thm 2.1.15)", has_momentum=False),
    "heavy-ball": _momentum_method(lambda c: 4.0 / (jnp.sqrt(c.lipschitz) + jnp.sqrt(c.mu)) ** 2,
                                   heavy_ball_momentum, 0.0,
                                   "α = 4/(√L+√μ)², β = ((√κ−1)/(√κ+1))²; ρ = (√κ−1)/(√κ+1) (Polyak 1964)"),
    "nesterov": _momentum_method(lambda c: 1.0 / c.lipschitz, nesterov_momentum, 1.0,
                                 "step 1/L, β = (√κ−1)/(√κ+1); ρ = 1 − 1/√κ (Nesterov 2018, §2.2)"),
    "adam": Method(lambda info: jnp.asarray(1e-2, info["curvature"].mu.dtype),
                   lambda lr, info, o, hp=None: optax.adam(lr),
                   "no closed form: 1e-2 (Kingma & Ba 2015), which is scale-dependent: tuned over --lr-grid "
                   "by default", needs=CURVATURE, tuned_by_default=True),
    "newton": Method(lambda info: jnp.ones_like(info["curvature"].mu), _newton,
                     "exact H⁻¹, step 1: one iteration on any quadratic", needs=CURVATURE),
    "jacobi": Method(lambda info: 1.0 / info["curvature"].jacobi_lipschitz, _jacobi,
                     "diag(H)⁻¹ preconditioner, step 1/λ_max(D^{-1/2}HD^{-1/2})", needs=CURVATURE),
    "kfac": Method(lambda info: jnp.ones_like(info["curvature"].mu), _kfac,
                   "(A+λI)⁻¹ ∇W (B+λI)⁻¹, step 1 (Martens & Grosse 2015)",
                   needs=frozenset({"curvature", "kronecker"})),
}
