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


class MomentumState(NamedTuple):
    """The running momentum m_t of `momentum`."""

    trace: optax.Updates


def momentum(decay, nesterov) -> optax.GradientTransformation:
    """optax's ``trace`` with its decay β and its Nesterov switch ν as (traced) arrays rather than Python values:
    m_t = g_t + β m_{t−1}; update = ν (g_t + β m_t) + (1 − ν) m_t.

    With β = 0 this is plain gradient descent, with ν = 0 Polyak's heavy ball, with ν = 1 Nesterov's method in
    Sutskever's form; for β ≥ 0 and ν ∈ {0, 1} it is bitwise ``optax.trace(β, nesterov=bool(ν))`` (0·a + 1·b = b
    exactly). Being arrays, β and ν can differ per lane, so gd, gd-opt, heavy-ball and nesterov run as one compiled
    vmapped program.
    """

    def init(params):
        return MomentumState(jax.tree.map(jnp.zeros_like, params))

    def update(updates, state, params=None):
        del params
        trace = jax.tree.map(lambda g, m: g + decay * m, updates, state.trace)
        out = jax.tree.map(lambda g, m: nesterov * (g + decay * m) + (1 - nesterov) * m, updates, trace)
        return out, MomentumState(trace)

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

    ``build(lr, curvature, options, hyper)`` returns the optax transformation; ``hyperparameters(curvature)`` the
    arrays besides the step that the method fixes from the curvature (momentum β and Nesterov weight ν), which
    ``build`` uses when ``hyper`` is None. Methods with the same ``program`` share one transformation shape and run
    as one compiled program, each lane with its own hyperparameters. ``needs`` names what the problem must offer
    ("kronecker" for KFAC); ``reference`` says where the reference step comes from.
    """

    reference_lr: Callable[[Curvature], jax.Array]
    build: Callable[..., optax.GradientTransformation]
    reference: str
    needs: str | None = None
    program: str | None = None
    hyperparameters: Callable[[Curvature], tuple] = lambda c: ()
    standalone: Callable[..., optax.GradientTransformation] | None = None

    def cheapest(self, lr, c: Curvature, o: MethodOptions) -> optax.GradientTransformation:
        """The method on its own, in its cheapest optax form (``optax.sgd(lr)`` for gd, not the shared momentum
        program with β = 0): what the cost of one of its iterations is counted on."""
        return (self.standalone or self.build)(lr, c, o)


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


def _momentum_method(reference_lr, beta, nesterov: float, reference: str, has_momentum: bool = True) -> Method:
    """A member of the momentum program: gd (β = 0), heavy ball (ν = 0) or Nesterov (ν = 1)."""

    def standalone(lr, c: Curvature, o: MethodOptions):
        if not has_momentum:
            return optax.sgd(lr)
        return optax.sgd(lr, momentum=beta(c), nesterov=bool(nesterov))

    def hyper(c: Curvature):
        b = beta(c)
        return b, jnp.full_like(b, nesterov)

    def build(lr, c: Curvature, o: MethodOptions, hp=None):
        b, nu = hyper(c) if hp is None else hp
        return optax.chain(momentum(b, nu), optax.scale(-lr))

    return Method(reference_lr, build, reference, program="momentum", hyperparameters=hyper,
                  standalone=standalone)


def _kfac(lr, c: Curvature, o: MethodOptions, hp=None):
    if c.kronecker_factors is None:
        raise OtodError("method kfac needs a Kronecker-structured problem; use --problem kronecker")
    return optax.chain(kronecker_precondition(*c.kronecker_factors, o.damping), optax.scale(-lr))


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
    "adam": Method(lambda c: jnp.asarray(1e-2, c.mu.dtype), lambda lr, c, o, hp=None: optax.adam(lr),
                   "no closed form: 1e-2, scale-dependent (Kingma & Ba 2015)"),
    "newton": Method(lambda c: jnp.ones_like(c.mu),
                     lambda lr, c, o, hp=None: optax.chain(precondition(c.inverse_hessian_apply), optax.scale(-lr)),
                     "exact H⁻¹, step 1: one iteration on any quadratic"),
    "jacobi": Method(lambda c: 1.0 / c.jacobi_lipschitz,
                     lambda lr, c, o, hp=None: optax.chain(precondition(lambda g: g / c.hessian_diagonal),
                                                           optax.scale(-lr)),
                     "diag(H)⁻¹ preconditioner, step 1/λ_max(D^{-1/2}HD^{-1/2})"),
    "kfac": Method(lambda c: jnp.ones_like(c.mu), _kfac,
                   "(A+λI)⁻¹ ∇W (B+λI)⁻¹, step 1 (Martens & Grosse 2015)", needs="kronecker"),
}


def programs(names) -> list[tuple[str, ...]]:
    """Group method names into compiled programs: the members of one ``program`` together (in the given order),
    every other method alone."""
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(method(name).program or name, []).append(name)
    return [tuple(g) for g in groups.values()]


def method(name: str) -> Method:
    """Look up a method by name; an unknown name raises `OtodError` listing the known ones."""
    try:
        return METHODS[name]
    except KeyError:
        raise OtodError(f"--method {name}: unknown method; choose from {', '.join(METHODS)}, "
                        "e.g. --method gd,heavy-ball") from None
