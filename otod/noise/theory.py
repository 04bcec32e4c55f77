"""Exact theory of the gradient-noise obstacle, in NumPy and independent of the simulator.

The noisy quadratic model (NQM; Zhang, Li, Nado, Martens, Sachdeva, Dahl, Shallue & Grosse 2019, "Which
algorithmic choices matter at which batch sizes?"): a loss ½ Σᵢ hᵢ θᵢ² whose minibatch gradient is
gᵢ = hᵢ θᵢ + ξᵢ with ξᵢ ~ N(0, cᵢ/B). Every eigendirection evolves on its own, and every method here is linear in
θ and the noise, so the second moments of each direction follow a linear recursion with a constant forcing
term; the expected loss ½ Σ hᵢ E θᵢ² is read off them exactly, with no sampling.

With a preconditioner H^{−p} (p ∈ [0, 1]; p = 1 is KFAC-exact on this diagonal model) the update of direction i
is θ ← θ − η hᵢ^{−p} gᵢ, so it contracts by xᵢ = η hᵢ^{1−p} and receives noise of variance
qᵢ = η² hᵢ^{−2p} cᵢ / B. Then, per direction:

* SGD (and preconditioned SGD): the mean m_{t+1} = (1 − x) m_t and the variance
  V_{t+1} = (1 − x)² V_t + q, so the second moment s = m² + V has the closed form
  s_t = a^t s₀ + q (1 − a^t)/(1 − a), a = (1 − x)²;
* heavy-ball (θ_{t+1} = θ_t − η g_t + β(θ_t − θ_{t−1}), optax's ``trace`` form), with u_t = θ_t − θ_{t−1}:
  (E θ², E u², E θu) follow a 3×3 linear recursion plus q (derived in `momentum_matrix`);
* the EMA of iterates θ̃_{t+1} = γ θ̃_t + (1 − γ) θ_{t+1} over SGD: (E θ², E θ̃², E θθ̃) follow a 3×3
  recursion (`ema_matrix`) and the loss is read on θ̃.

A t-step jump is a product of the matrices T^{2^k} (binary powers, computed once per learning rate): the jumps
stay exact where T is defective (heavy-ball at critical damping has a double eigenvalue, where an
eigendecomposition loses its accuracy). Steps to target is the first t with E loss_t ≤ target, found by binary
lifting over those powers (a bisection on t): exact where the expected loss falls monotonically (SGD from a start
above its noise floor), the first crossing of a monotone envelope otherwise.

McCandlish, Kaplan, Amodei et al. 2018 ("An empirical model of large-batch training"): with Σ the per-example
gradient covariance and G the true gradient, B_simple = tr Σ / |G|² and B_noise = tr(HΣ)/(GᵀHG); on the NQM both
are exact along the expected run. The steps of an ideal estimator (one whose every step is perfect up to its
noise) are at least d/(2·target·B) (the NQM notebook's lower line).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

#: Noise spectra c of the NQM (per-example gradient covariance C = diag(c)).
NOISE_SPECTRA = ("hessian", "identity", "square")


class Quadratic(NamedTuple):
    """One noisy quadratic, per direction: curvature h, per-example noise variance c, start second moment s₀."""

    h: np.ndarray
    c: np.ndarray
    s0: np.ndarray


def nqm(dim: int = 10_000, noise: str = "hessian") -> Quadratic:
    """The NQM of Zhang et al. 2019: hᵢ = 1/i, C = H (or I, or H²), θ₀ ~ N(0, I) so E θᵢ,₀² = 1."""
    h = 1.0 / np.arange(1, dim + 1, dtype=np.float64)
    c = {"hessian": h, "identity": np.ones_like(h), "square": h * h}[noise]
    return Quadratic(h, c, np.ones_like(h))


def isotropic(dim: int, sigma: float = 1.0, distance: float = 1.0) -> Quadratic:
    """½‖x − x*‖² in d dimensions, ‖x₀ − x*‖ = distance (a uniform direction: E (x₀ − x*)ᵢ² = distance²/d), and
    per-example noise σ² in every coordinate: the noise's norm grows like √d while the gradient's does not."""
    ones = np.ones(dim)
    return Quadratic(ones, sigma * sigma * ones, distance * distance / dim * ones)


def initial_loss(q: Quadratic) -> float:
    return float(0.5 * np.sum(q.h * q.s0))


def contraction(q: Quadratic, lr, power: float = 0.0):
    """x = η h^{1−p}: the per-step contraction of each direction (lr broadcasts in front of the directions)."""
    return np.asarray(lr, float)[..., None] * q.h ** (1.0 - power)


def noise_variance(q: Quadratic, lr, batch, power: float = 0.0):
    """q = η² h^{−2p} c / B: the variance the update adds per step (lr and batch broadcast in front)."""
    lr = np.asarray(lr, float)[..., None]
    return lr * lr * q.h ** (-2.0 * power) * q.c / np.asarray(batch, float)[..., None]


# -- SGD: the closed form in t -------------------------------------------------------------------------------


def sgd_second_moment(t, x, noise, s0):
    """s_t = a^t s₀ + q (1 − a^t)/(1 − a), a = (1 − x)²: mean (1 − x)^t m₀ and variance
    (1 − x)^{2t} V₀ + q(1 − a^t)/(1 − a) summed (m₀² + V₀ = s₀); at a = 1 the sum is q·t."""
    t = np.asarray(t, float)[..., None]
    a = (1.0 - x) ** 2
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        log_a = np.log(a)
        at = np.exp(t * log_a)
        geometric = np.where(np.abs(1.0 - a) > 1e-300, -np.expm1(t * log_a) / (1.0 - a), t)
    return at * s0 + noise * geometric


def sgd_loss(q: Quadratic, t, lr, batch, power: float = 0.0):
    """Exact expected loss of (preconditioned) SGD after t steps; t, lr and batch broadcast together."""
    s = sgd_second_moment(t, contraction(q, lr, power), noise_variance(q, lr, batch, power), q.s0)
    return 0.5 * np.sum(q.h * s, axis=-1)


# -- the 3×3 recursions --------------------------------------------------------------------------------------


def momentum_matrix(x, beta):
    """Heavy-ball's second moments M = (E θ², E u², E θu), u_t = θ_t − θ_{t−1}, per direction.

    With θ' = (1 − x)θ + βu − n and u' = −xθ + βu − n (n the update's noise, variance q):
    E θ'² = (1−x)² A + β² B + 2β(1−x) C + q;  E u'² = x² A + β² B − 2xβ C + q;
    E θ'u' = −x(1−x) A + β² B + β(1−2x) C + q. Returns (T, f) with M' = T M + q f."""
    x = np.asarray(x, float)
    b = np.broadcast_to(np.asarray(beta, float), x.shape)
    T = np.stack([np.stack([(1 - x) ** 2, b * b, 2 * b * (1 - x)], -1),
                  np.stack([x * x, b * b, -2 * x * b], -1),
                  np.stack([-x * (1 - x), b * b, b * (1 - 2 * x)], -1)], -2)
    return T, np.ones(x.shape + (3,))


def ema_matrix(x, gamma):
    """The EMA of SGD's iterates, M = (E θ², E θ̃², E θθ̃), θ̃' = γθ̃ + (1 − γ)θ', θ' = (1 − x)θ − n:
    E θ'² = a A + q;  E θ̃'² = γ² E + (1−γ)² a A + 2γ(1−γ)(1−x) F + (1−γ)² q;
    E θ'θ̃' = (1−γ) a A + γ(1−x) F + (1−γ) q, with a = (1 − x)². Returns (T, f)."""
    x = np.asarray(x, float)
    g = np.broadcast_to(np.asarray(gamma, float), x.shape)
    a = (1 - x) ** 2
    zero = np.zeros_like(x)
    T = np.stack([np.stack([a, zero, zero], -1),
                  np.stack([(1 - g) ** 2 * a, g * g, 2 * g * (1 - g) * (1 - x)], -1),
                  np.stack([(1 - g) * a, zero, g * (1 - x)], -1)], -2)
    f = np.stack([np.ones_like(x), (1 - g) ** 2, 1 - g], -1)
    return T, f


class Recursion(NamedTuple):
    """M_{t+1} = T M_t + q f per direction, M₀, and the component the loss reads (½ Σ h M[read])."""

    T: np.ndarray
    f: np.ndarray
    M0: np.ndarray
    read: int


def recursion(method: str, q: Quadratic, lr, power: float = 0.0, beta: float = 0.0) -> Recursion:
    """The second-moment recursion of ``method`` (sgd, heavy-ball, precond, ema) at learning rates ``lr``."""
    x = contraction(q, lr, power)
    if method == "ema":
        T, f = ema_matrix(x, beta)
        M0 = np.stack([q.s0, q.s0, q.s0], -1)
    else:
        T, f = momentum_matrix(x, beta if method == "heavy-ball" else 0.0)
        M0 = np.stack([q.s0, np.zeros_like(q.s0), np.zeros_like(q.s0)], -1)
    return Recursion(T, f, np.broadcast_to(M0, f.shape), 1 if method == "ema" else 0)


def moments_after(rec: Recursion, steps: int, noise) -> np.ndarray:
    """M_t by t plain steps (the reference the jumps are tested against); ``noise`` is q per direction."""
    M = np.array(rec.M0)
    for _ in range(steps):
        M = np.einsum("...ij,...j->...i", rec.T, M) + noise[..., None] * rec.f
    return M


def _matvec(P, M):
    """P M for matrices and states held as separate contiguous arrays per entry (no [..., k, k] temporaries)."""
    out = []
    for row in P:
        acc = row[0] * M[0]
        for p, m in zip(row[1:], M[1:]):
            acc += p * m
        out.append(acc)
    return out


def _powers(rec: Recursion, levels: int):
    """(T^{2^k}, Σ_{s<2^k} T^s f) for k = 0..levels−1: a jump of 2^k steps is M ↦ P_k M + q G_k."""
    P, G = rec.T, rec.f
    out = []
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(levels):
            k = G.shape[-1]
            out.append(([[np.ascontiguousarray(P[..., i, j]) for j in range(k)] for i in range(k)],
                        [np.ascontiguousarray(G[..., i]) for i in range(k)]))
            G = G + np.einsum("...ij,...j->...i", P, G)
            P = P @ P
    return out


def _jump(P, G, M, noise):
    out = _matvec(P, M)
    for m, g in zip(out, G):
        m += noise * g
    return out


def _start(rec: Recursion, noise) -> list:
    shape = np.broadcast_shapes(rec.M0.shape[:-1], noise.shape)
    return [np.broadcast_to(rec.M0[..., i], shape) for i in range(rec.M0.shape[-1])]


def loss_at(rec: Recursion, q: Quadratic, noise, t: int) -> np.ndarray:
    """Exact expected loss after t steps by binary jumps (``noise`` = q per direction, broadcast over lanes)."""
    M = _start(rec, noise)
    for k, (P, G) in enumerate(_powers(rec, max(1, int(t).bit_length()))):
        if (int(t) >> k) & 1:
            M = _jump(P, G, M, noise)
    return 0.5 * np.sum(q.h * M[rec.read], axis=-1)


class Hitting(NamedTuple):
    """Steps to target per lane (−1: not reached within max_steps) and whether the lane diverged."""

    steps: np.ndarray
    diverged: np.ndarray


def hitting_steps(rec: Recursion, q: Quadratic, noise, target: float, max_steps: int) -> Hitting:
    """First t ≤ max_steps with expected loss ≤ target, by binary lifting: from t = 0, take each jump 2^k (k
    from high to low) that still leaves the loss above the target; the answer is one step past the end. ``noise``
    has shape [..., lanes, d] matching rec's [lanes, d] (leading batch axes allowed)."""
    levels = max(1, int(max_steps).bit_length())
    powers = _powers(rec, levels)
    M = _start(rec, noise)
    weight = 0.5 * q.h

    def loss(state):
        return np.sum(weight * state[rec.read], axis=-1)

    l0 = loss(M)
    t = np.zeros(l0.shape, np.int64)
    done = l0 <= target
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(levels - 1, -1, -1):
            P, G = powers[k]
            candidate = _jump(P, G, M, noise)
            above = ~(loss(candidate) <= target) & ~done & (t + 2 ** k < max_steps)
            M = [np.where(above[..., None], c, m) for c, m in zip(candidate, M)] if above.any() else M
            t = t + np.where(above, 2 ** k, 0)
        final = loss(_jump(*powers[0], M, noise))
    hit = np.where(done, 0, np.where(final <= target, t + 1, -1))
    diverged = (hit < 0) & ~(np.isfinite(final) & (final < 1e10 * np.maximum(l0, 1e-300)))
    return Hitting(hit, diverged)


def sgd_recursion(q: Quadratic, lr, power: float = 0.0) -> Recursion:
    """SGD's one-component recursion s' = (1 − x)² s + q (the closed form's own recursion)."""
    x = contraction(q, lr, power)
    return Recursion(((1.0 - x) ** 2)[..., None, None], np.ones(x.shape + (1,)),
                     np.broadcast_to(q.s0[..., None], x.shape + (1,)), 0)


def method_hitting_steps(method: str, q: Quadratic, lrs, batches, target: float, max_steps: int,
                         power: float = 0.0, beta: float = 0.0) -> np.ndarray:
    """Steps to target, [batch, lr], −1 where not reached (diverged lanes included)."""
    return method_hitting(method, q, lrs, batches, target, max_steps, power, beta).steps


def method_hitting(method: str, q: Quadratic, lrs, batches, target: float, max_steps: int,
                   power: float = 0.0, beta: float = 0.0) -> Hitting:
    """`Hitting` of ``method`` (sgd, precond, heavy-ball, ema) for every [batch, lr]."""
    lrs, batches = np.asarray(lrs, float), np.asarray(batches, float)
    if method in ("sgd", "precond"):
        rec = sgd_recursion(q, lrs, power)
    else:
        rec = recursion(method, q, lrs, power, beta)
    noise = noise_variance(q, lrs[None, :], batches[:, None], power)
    return hitting_steps(rec, q, noise, target, max_steps)


# -- McCandlish's noise scales, the ideal estimator --------------------------------------------------------------


def noise_scales(q: Quadratic, second_moment, power: float = 0.0) -> tuple[float, float]:
    """(B_simple, B_noise) at a state of second moments E θᵢ² (McCandlish et al. 2018, eqs. 2.9 and 2.7), in the
    whitened coordinates of the preconditioner H^{−p} (gradient and covariance scaled by h^{−p/2}):
    B_simple = tr Σ / E|G|² and B_noise = tr(HΣ) / E[GᵀHG], with Σ = diag(c), G = Hθ."""
    w = q.h ** (-power)
    g2 = q.h * q.h * second_moment
    b_simple = np.sum(w * q.c) / np.sum(w * g2)
    b_noise = np.sum(w * w * q.h * q.c) / np.sum(w * w * q.h * g2)
    return float(b_simple), float(b_noise)


def ideal_steps(dim: int, target: float, batch) -> np.ndarray:
    """The ideal estimator's steps d/(2·target·B): the lower line of the NQM notebook."""
    return dim / (2.0 * target * np.asarray(batch, float))


def two_batch_estimates(g_small_sq, g_big_sq, b_small: float, b_big: float) -> tuple:
    """McCandlish et al. 2018, appendix A.1: unbiased |G|² = (B_big|G_big|² − B_small|G_small|²)/(B_big −
    B_small) and tr Σ = (|G_small|² − |G_big|²)/(1/B_small − 1/B_big)."""
    g2 = (b_big * np.asarray(g_big_sq) - b_small * np.asarray(g_small_sq)) / (b_big - b_small)
    trace = (np.asarray(g_small_sq) - np.asarray(g_big_sq)) / (1.0 / b_small - 1.0 / b_big)
    return g2, trace


# -- the McCandlish curve and the perfect-scaling region ---------------------------------------------------------


def mccandlish_fit(batches, steps) -> tuple[float, float]:
    """(S_min, B_crit) of S(B) = S_min (1 + B_crit/B) (McCandlish et al. 2018, eq. 2.11), with S_min ≥ 0 and
    B_crit ≥ 0: S is linear in 1/B, S = S_min + c/B with c = S_min·B_crit, so the fit is a non-negative least
    squares in (S_min, c), each point weighted by 1/S (its relative misfit counts). Exact, with no start to
    choose; an unconstrained fit printed S_min −3.2 and B_crit nan beside a finite CI.

    S_min = 0 (steps ∝ 1/B over the whole grid: perfect scaling everywhere) gives B_crit = inf, beyond the
    grid; c = 0 (no gain from batch anywhere) gives B_crit = 0. `describe_critical_batch` words both."""
    from scipy.optimize import nnls

    b, s = np.asarray(batches, float), np.asarray(steps, float)
    ok = np.isfinite(s) & (s > 0) & np.isfinite(b) & (b > 0)
    b, s = b[ok], s[ok]
    if len(b) < 2:
        return math.nan, math.nan
    A = np.stack([np.ones_like(b), 1.0 / b], -1) / s[:, None]
    (s_min, c), _ = nnls(A, np.ones_like(s))
    if s_min <= 0:
        return 0.0, math.inf
    return float(s_min), float(c / s_min)


def describe_critical_batch(b_crit: float, batches) -> str:
    """B_crit in words against the batches measured: the number where the grid brackets it, else which side of
    the grid it lies on (a fitted value beyond the data is not a measurement)."""
    b = np.asarray(batches, float)
    if not np.isfinite(b_crit) and not math.isinf(b_crit):
        return "—"
    if b_crit > b.max():
        return f"> {b.max():g} (beyond the largest B)"
    if b_crit < b.min():
        return f"< {b.min():g} (below the smallest B)"
    return f"{b_crit:.4g}"


def perfect_scaling_limit(batches, steps, slack: float = 1.1) -> float | None:
    """The largest B of a pair of consecutive grid points (B < B') over which the steps fall at least as fast as
    1/B within ``slack``: S(B')/S(B) ≤ slack·B/B'. For a grid that doubles this is S(2B)/S(B) ≤ 0.55; it holds
    for any spacing (a ×4 grid asks ≤ 0.275). None: no such pair."""
    b, s = np.asarray(batches, float), np.asarray(steps, float)
    best = None
    for i in range(len(b) - 1):
        if b[i + 1] > b[i] > 0 and s[i] > 0 and s[i + 1] > 0 and s[i + 1] / s[i] <= slack * b[i] / b[i + 1]:
            best = float(b[i])
    return best


