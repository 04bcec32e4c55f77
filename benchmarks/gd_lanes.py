"""The benchmarks' own small kernel: gd on diagonal quadratics, one lane per condition number, JAX only.

Lane l minimises f(x) = ½ Σᵢ λᵢ xᵢ² with λᵢ = κ_l^(−i/(d−1)) (L = 1, μ = 1/κ_l), from x₀ = 1, with gd at the
step 1/L: x ← (1 − λ) ∘ x. It stops at the first iteration t with f(x_t) ≤ tol · f(x₀), so its count grows about as
κ ln(1/tol)/2 (the slowest component decays as (1 − 1/κ)^{2t}): a grid of κ from 1 to 10⁴ is a grid of very
uneven lanes. It shares no code with the engine (``otod.core.engine``), so that what it measures is JAX and the
devices, not otod.

`solve(kappas, d, tol, cap, k)` runs each lane in its own ``lax.while_loop`` (vmapped over lanes, so the batched
loop's predicate is "any lane still running") whose body is a fully unrolled ``lax.scan`` of ``k`` gd steps; every
step checks the tolerance and records the first hit, so the count is exact whatever ``k`` (the lane may run up to
k − 1 steps past its hit, which are not counted). ``k = 1`` is the plain loop.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def eigenvalues(kappas, d: int) -> np.ndarray:
    """[lanes, d] float32: λᵢ = κ^(−i/(d−1)), log-spaced from 1 down to 1/κ (one value, 1, when d = 1)."""
    kappas = np.asarray(kappas, np.float64)
    frac = np.linspace(0.0, 1.0, d) if d > 1 else np.zeros(1)
    return (kappas[:, None] ** -frac[None, :]).astype(np.float32)


def lane(lam, tol, cap, k: int):
    """One lane's count: the first t with f(x_t) ≤ tol·f(x₀), or −1 if none by ``cap`` (checked every step)."""
    x0 = jnp.ones_like(lam)
    f0 = 0.5 * jnp.sum(lam * x0 * x0)

    def step(carry, _):
        t, x, hit = carry
        x = x - lam * x
        t = t + 1
        f = 0.5 * jnp.sum(lam * x * x)
        hit = jnp.where((hit < 0) & (f <= tol * f0) & (t <= cap), t, hit)
        return (t, x, hit), None

    def running(carry):
        t, _, hit = carry
        return (hit < 0) & (t < cap)

    def trip(carry):
        return jax.lax.scan(step, carry, None, length=k, unroll=True)[0]

    zero = jnp.zeros((), jnp.int32)
    _, _, hit = jax.lax.while_loop(running, trip, (zero, x0, zero - 1))
    return hit


def solve(lam, tol, cap, k: int = 1):
    """Every lane of ``lam`` [lanes, d]: vmap of `lane` (one batched while loop; all lanes step until the last
    stops, finished lanes' carries held by a select). Not jitted: callers jit or shard it."""
    return jax.vmap(lane, in_axes=(0, None, None, None))(lam, tol, cap, k)


def predicted_count(kappa, tol: float) -> np.ndarray:
    """About how many iterations a lane of condition number κ needs: ln(1/tol) / (−2 ln(1 − 1/κ)) (the slowest
    component alone), 1 at κ = 1. Used only to size grids and to order lanes, never to check a count."""
    kappa = np.asarray(kappa, np.float64)
    with np.errstate(divide="ignore"):
        slow = np.where(kappa > 1, np.log(1 / tol) / (-2 * np.log1p(-1 / np.maximum(kappa, 1 + 1e-12))), 1.0)
    return np.ceil(slow)


def dense_problems(lanes: int, d: int, kmax: float, seed: int = 0) -> np.ndarray:
    """[lanes, d, d] float32 Hessians H_l = Q diag(λ_l) Qᵀ (one Haar rotation Q, λ_l as in `eigenvalues`, κ_l
    log-spaced from 1 to ``kmax``), each lane holding its own copy: the dense sweep whose loop streams every H once
    per iteration, which is what makes it a memory-bandwidth measurement."""
    q, r = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))
    q = q * np.sign(np.diag(r))
    lam = eigenvalues(np.geomspace(1.0, kmax, lanes), d)
    return np.einsum("ij,lj,kj->lik", q, lam, q, optimize=True).astype(np.float32)


def dense_lane(h, trips):
    """``trips`` gd steps x ← x − H x (step 1/L, L = 1) on one dense quadratic, with f = ½ xᵀHx read every step
    from the same product H x (as a stopping rule would read it); returns the last f. Reads H once per step."""
    def trip(carry):
        t, x, _ = carry
        g = h @ x
        return t + 1, x - g, 0.5 * jnp.dot(x, g)

    x0 = jnp.ones(h.shape[-1], h.dtype)
    return jax.lax.while_loop(lambda c: c[0] < trips, trip, (jnp.zeros((), jnp.int32), x0, jnp.zeros((), h.dtype)))[2]


def dense_solve(h, trips):
    """`dense_lane` for every lane of ``h`` [lanes, d, d]. Not jitted."""
    return jax.vmap(dense_lane, in_axes=(0, None))(h, trips)
