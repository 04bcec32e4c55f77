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


def mean_map(method: str, x, beta) -> list:
    """The 2×2 map of the means whose symmetric square is T, as entries (None: zero): heavy-ball moves (θ, u) by
    [[1 − x, β], [−x, β]], the EMA moves (θ, θ̃) by [[1 − x, 0], [(1 − γ)(1 − x), γ]]. With A = [[a, b], [c, d]]
    the second moments (E θ², E u², E θu) move by the rows [a², b², 2ab], [c², d², 2cd], [ac, bd, ad + bc]."""
    x = np.asarray(x, float)
    b = np.ascontiguousarray(np.broadcast_to(np.asarray(beta, float), x.shape))
    if method == "ema":
        return [[1 - x, None], [(1 - b) * (1 - x), b]]
    return [[1 - x, b], [-x, b]]


class Recursion(NamedTuple):
    """M_{t+1} = T M_t + q f per direction, M₀, the component the loss reads (½ Σ h M[read]), and (3-component
    recursions) the 2×2 mean map whose symmetric square T is: its powers are 4 entries, not 9."""

    T: np.ndarray
    f: np.ndarray
    M0: np.ndarray
    read: int
    A: list | None = None


def recursion(method: str, q: Quadratic, lr, power: float = 0.0, beta=0.0) -> Recursion:
    """The second-moment recursion of ``method`` (sgd, heavy-ball, precond, ema) at learning rates ``lr``; ``beta``
    is one number or one per learning rate (the same shape as ``lr``)."""
    x = contraction(q, lr, power)
    beta = np.asarray(beta, float)
    beta = beta[..., None] if beta.ndim else beta
    if method == "ema":
        T, f = ema_matrix(x, beta)
        M0 = np.stack([q.s0, q.s0, q.s0], -1)
    else:
        beta = beta if method == "heavy-ball" else 0.0
        T, f = momentum_matrix(x, beta)
        M0 = np.stack([q.s0, np.zeros_like(q.s0), np.zeros_like(q.s0)], -1)
    return Recursion(T, f, np.broadcast_to(M0, f.shape), 1 if method == "ema" else 0,
                     [[_nonzero(e) if e is not None else None for e in row] for row in mean_map(method, x, beta)])


def moments_after(rec: Recursion, steps: int, noise) -> np.ndarray:
    """M_t by t plain steps (the reference the jumps are tested against); ``noise`` is q per direction."""
    M = np.array(rec.M0)
    for _ in range(steps):
        M = np.einsum("...ij,...j->...i", rec.T, M) + noise[..., None] * rec.f
    return M


def _matrix_entries(T: np.ndarray) -> list:
    """A [..., k, k] array as k lists of k contiguous per-entry arrays, an entry that is zero in every lane as
    None: the EMA's T has three structural zeros (θ does not read θ̃) and heavy-ball's at β = 0 six, which their
    powers keep, so those products are skipped rather than multiplied out."""
    k = T.shape[-1]
    return [[_nonzero(T[..., i, j]) for j in range(k)] for i in range(k)]


def _vector_entries(f: np.ndarray) -> list:
    return [_nonzero(f[..., i]) for i in range(f.shape[-1])]


def _nonzero(a: np.ndarray):
    a = np.ascontiguousarray(a)
    return a if np.any(a) else None


def _dot(row, column, shape):
    """Σ_l row[l]·column[l] over the entries that are not None (zeros where every term is)."""
    acc = None
    for p, m in zip(row, column):
        if p is None or m is None:
            continue
        if acc is None:
            acc = p * m
        else:
            acc += p * m
    return np.zeros(shape) if acc is None else acc


def _matvec(P, M):
    """P M for matrices and states held as separate contiguous arrays per entry (no [..., k, k] temporaries)."""
    shape = np.broadcast_shapes(*(m.shape for m in M if m is not None))
    return [_dot(row, M, shape) for row in P]


def _matmul(P, Q):
    """P Q entry by entry: (PQ)_ij = Σ_l P_il Q_lj, skipping zero entries (None), which stay None."""
    k = len(P)
    out = []
    for i in range(k):
        row = []
        for j in range(k):
            terms = [(P[i][l], Q[l][j]) for l in range(k) if P[i][l] is not None and Q[l][j] is not None]
            if not terms:
                row.append(None)
                continue
            acc = terms[0][0] * terms[0][1]
            for a, b in terms[1:]:
                acc += a * b
            row.append(acc)
        out.append(row)
    return out


def _symmetric_square(A) -> list:
    """T of a 2×2 mean map A = [[a, b], [c, d]] (`mean_map`): rows [a², b², 2ab], [c², d², 2cd], [ac, bd, ad + bc]."""
    (a, b), (c, d) = A

    def mul(x, y, scale=1.0):
        return None if x is None or y is None else (x * y if scale == 1.0 else scale * x * y)

    def add(x, y):
        return y if x is None else x if y is None else x + y

    return [[mul(a, a), mul(b, b), mul(a, b, 2.0)], [mul(c, c), mul(d, d), mul(c, d, 2.0)],
            [mul(a, c), mul(b, d), add(mul(a, d), mul(b, c))]]


def _powers(rec: Recursion, levels: int):
    """(T^{2^k}, Σ_{s<2^k} T^s f) for k = 0..levels−1: a jump of 2^k steps is M ↦ P_k M + q G_k, by repeated
    squaring, P_{k+1} = P_k², G_{k+1} = G_k + P_k G_k. Where T is the symmetric square of a 2×2 mean map A, so is
    T^{2^k} of A^{2^k}: squaring A costs 12 operations per entry and level, squaring T 45."""
    A = rec.A
    P, G = _matrix_entries(rec.T), _vector_entries(rec.f)
    out = []
    with np.errstate(over="ignore", invalid="ignore"):
        for level in range(levels):
            out.append((P, G))
            if level + 1 < levels:
                PG = _matvec(P, G)
                G = [pg if g is None else g + pg for g, pg in zip(G, PG)]
                if A is None:
                    P = _matmul(P, P)
                else:
                    A = _matmul(A, A)
                    P = _symmetric_square(A)
    return out


def _jump(P, G, M, noise):
    out = _matvec(P, M)
    for m, g in zip(out, G):
        if g is not None:
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
    """First t ≤ max_steps with expected loss ≤ target, by binary lifting: from t, take each jump 2^k (k from high
    to low) over which the loss stays above the target; the answer is one step past the end where the loss there
    is at the target. ``noise`` has shape [..., lanes, d] matching rec's [lanes, d] (leading batch axes allowed).

    Which jumps stay above: for a one-component recursion (SGD and precond, s' = a·s + q with a = (1 − x)² ≥ 0)
    each direction's moment moves one way for all t (s_{t+1} − s_t = a^t (s_1 − s_0)), so over the steps
    t+1..t+2^k a falling direction is at least its value at t+2^k and a rising one at least its value at t: a
    jump is taken where the sum of those bounds is above the target. Where every direction falls the bound is the
    loss at the jump's end, so there the lifting is the plain one, operation for operation. Directions that start below their noise floor rise while the
    others fall (``--noise-spectrum identity``; precond at small batch), and the loss can dip below the target and
    rise again: a plain lifting, reading only the ends of its jumps, stepped over such a dip. Where a descent ends
    without reaching the target but short of ``max_steps``, the lifting starts again from the step after.
    Multi-component recursions (heavy-ball, the EMA) take a jump where the loss at its end is above the target,
    which is the first crossing where the loss falls monotonically; an oscillating loss can dip below the target
    earlier (docs/theory.md)."""
    levels = max(1, int(max_steps).bit_length())
    powers = _powers(rec, levels)
    M = [np.array(m) for m in _start(rec, noise)]
    weight = 0.5 * q.h
    one_component = len(M) == 1

    def loss(state):
        return state[rec.read] @ weight

    l0 = loss(M)
    t = np.zeros(l0.shape, np.int64)
    hit = np.where(l0 <= target, 0, -1)
    searching = hit < 0
    final = np.array(l0)
    with np.errstate(over="ignore", invalid="ignore"):
        rising = (_jump(*powers[0], M, noise)[0] > M[0]) if one_component else None
        if rising is not None and not rising.any():
            rising = None
        while True:
            for k in range(levels - 1, -1, -1):
                P, G = powers[k]
                candidate = _jump(P, G, M, noise)
                bound = loss(candidate) if rising is None else np.where(rising, M[0], candidate[0]) @ weight
                above = ~(bound <= target) & searching & (t + 2 ** k < max_steps)
                if above.any():
                    for c, m in zip(candidate, M):
                        np.copyto(m, c, where=above[..., None])
                t += np.where(above, 2 ** k, 0)
            step = _jump(*powers[0], M, noise)
            final = np.where(searching, loss(step), final)
            reached = searching & (final <= target)
            hit = np.where(reached, t + 1, hit)
            searching &= ~reached & (t + 1 < max_steps)
            if not searching.any():
                break
            for c, m in zip(step, M):  # a descent that ended above the target: start again one step on
                np.copyto(m, c, where=searching[..., None])
            t += searching
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


#: Floats per state array, and floats of stored powers, of one block of lanes: blocks this small stay in cache and
#: let the allocator reuse their memory. Measured on the 2-core development machine (d = 10⁴, 11 batches, 16
#: rates): heavy-ball took 1.5 s of CPU in one block of 16 rates, 0.87 s in blocks of one rate; SGD 0.40 s against
#: 0.13 s. Heavy-ball lanes of one batch each (26 lanes, d = 10⁴): 0.26 s in blocks of 1 or 2 lanes (26 MB of
#: powers each), 0.64 s in blocks of 13 (337 MB, which glibc returns to the system and faults in again).
BLOCK_FLOATS = 2 ** 17
POWER_FLOATS = 2 ** 23


def _blocks(n: int, per_lane: int, power_per_lane: int = 0):
    size = max(1, min(BLOCK_FLOATS // max(1, per_lane), POWER_FLOATS // max(1, power_per_lane)))
    return [slice(i, min(n, i + size)) for i in range(0, n, size)]


def power_floats(q: Quadratic, components: int, max_steps: int) -> int:
    """Floats of the stored powers of one lane: T^{2^k} and Σ_{s<2^k} T^s f, k² + k arrays of d per level."""
    return len(q.h) * max(1, int(max_steps).bit_length()) * (components ** 2 + components)


def _method_recursion(method: str, q: Quadratic, lrs, power: float, beta) -> Recursion:
    return sgd_recursion(q, lrs, power) if method in ("sgd", "precond") else recursion(method, q, lrs, power, beta)


def method_hitting(method: str, q: Quadratic, lrs, batches, target: float, max_steps: int,
                   power: float = 0.0, beta: float = 0.0) -> Hitting:
    """`Hitting` of ``method`` (sgd, precond, heavy-ball, ema) for every [batch, lr], in blocks of rates."""
    lrs, batches = np.asarray(lrs, float), np.asarray(batches, float)
    steps = np.empty((len(batches), len(lrs)), np.int64)
    diverged = np.empty(steps.shape, bool)
    k = 1 if method in ("sgd", "precond") else 3
    for block in _blocks(len(lrs), len(batches) * len(q.h), power_floats(q, k, max_steps)):
        rec = _method_recursion(method, q, lrs[block], power, beta)
        noise = noise_variance(q, lrs[None, block], batches[:, None], power)
        steps[:, block], diverged[:, block] = hitting_steps(rec, q, noise, target, max_steps)
    return Hitting(steps, diverged)


def lane_hitting(method: str, q: Quadratic, lrs, batches, betas, target: float, max_steps: int,
                 power: float = 0.0) -> Hitting:
    """`Hitting` of ``method`` for lanes each with its own (lr, batch, β), in blocks of lanes: what a search that
    tries a few settings per batch asks for (`method_hitting` would pay for every batch at every setting)."""
    lrs = np.asarray(lrs, float)
    batches, betas = (np.broadcast_to(np.asarray(v, float), lrs.shape) for v in (batches, betas))
    steps = np.empty(lrs.shape, np.int64)
    diverged = np.empty(lrs.shape, bool)
    k = 1 if method in ("sgd", "precond") else 3
    for block in _blocks(len(lrs), len(q.h), power_floats(q, k, max_steps)):
        rec = _method_recursion(method, q, lrs[block], power, betas[block])
        noise = noise_variance(q, lrs[block], batches[block], power)
        steps[block], diverged[block] = hitting_steps(rec, q, noise, target, max_steps)
    return Hitting(steps, diverged)


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




