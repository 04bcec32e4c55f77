"""What theory says about iterations against depth, computed in NumPy (float64), independently of the engine.

Decoupled (identity) init, whitened inputs, a symmetric target Φ = U diag(s) Uᵀ: every layer stays
W_l = U diag(w) Uᵀ, all layers equal, and each singular mode is a scalar problem (Saxe, McClelland & Ganguli
2014). With u = w^L the mode's end-to-end value:

* ``factor``: the exact discrete recursion of gradient descent on the factors, w ← w + η w^{L−1}(s − w^L)
  (the gradient of ½(w^L − s)² with respect to one of the L equal factors). A float64 engine run measures exactly
  these counts;
* ``modes``: the end-to-end recursion u ← u + η·L·u^{2−2/L}·(s − u) of Saxe et al. and Arora, Cohen & Hazan 2018
  (the first-order expansion of the factor step in η: the product moves by L times one factor's relative step);
* ``flow``: the gradient-flow time ∫_{u₀}^{u} du / (L u^{2−2/L}(s − u)) divided by η, the continuous-time estimate.

With the reference step η = c/(L·s_max^{2(L−1)/L}), ηL·u^{2−2/L} → c·u²/s_max² as L grows: the count tends to a
depth-independent limit (flat in depth). The relative loss is Σ_i (u_i − s_i)² / Σ_i s_i²; a count is the first
t at which it is ≤ tol.

Depth 1 is the convex quadratic ½ tr((W − Φ)Σ(W − Φ)ᵀ) of the conditioning obstacle, with Hessian I ⊗ Σ
(`depth_one_quadratic` gives its spectrum and start for `otod.condition.theory.exact_iterations`). The toy at
k = 1 (per-layer reading) is ½(a² + b²) + const, Hessian I: gd with step c counts
⌈ln(1/tol) / (2 ln(1/|1 − c|))⌉ (`toy_quadratic_iterations`).
"""

from __future__ import annotations

import math

import numpy as np

from otod.depth.linear import input_spectrum, reference_step


def relative_loss(u, s) -> np.ndarray:
    """Σ (u − s)² / Σ s² over the last axis."""
    u, s = np.asarray(u, np.float64), np.asarray(s, np.float64)
    return np.sum((u - s) ** 2, axis=-1) / np.sum(s * s)


def _first_hits(step, to_u, state, columns, s, tol: float, max_iters: int) -> list[int | None]:
    """Each row's first t ≤ max_iters with relative loss ≤ tol (0 where it starts there), stepping every row of
    ``state`` ([rows, modes]) together, or None for a row that never gets there or whose loss stops being finite.
    ``columns`` are the rows' own parameters ([rows, 1] each), passed to ``step(state, *columns)`` and
    ``to_u(state, *columns)``. Rows are independent: a row's count is the count it would have alone (the same
    elementwise operations), and a finished row stops."""
    hits: list[int | None] = [None] * len(state)
    live = np.arange(len(state))
    scale = np.sum(s * s)

    def loss_of(state):  # `relative_loss`, its denominator computed once
        return np.sum((to_u(state, *columns) - s) ** 2, axis=-1) / scale

    loss = loss_of(state)
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(max_iters + 1):
            if t:
                state = step(state, *columns)
                loss = loss_of(state)
            if len(loss) == 1:  # a lone row: Python floats compare in a tenth of the time of arrays
                alone = float(loss[0])
                if tol < alone and (alone < math.inf or not t):
                    continue
            going = (loss > tol) & (loss < np.inf) if t else loss > tol
            if not going.all():
                arrived = loss <= tol
                stop = ~going
                for i in np.flatnonzero(arrived):
                    hits[live[i]] = t
                keep = ~stop
                live, state, columns = live[keep], state[keep], [c[keep] for c in columns]
                if not len(live):
                    break
    return hits


def _rows(depths, s, etas, start: float):
    """The per-row inputs of a batch: every row's modes at ``start``, its depth and its step as columns."""
    depths = np.asarray(depths, np.int64)[:, None]
    return np.full((len(depths), len(s)), start, np.float64), [depths, np.asarray(etas, np.float64)[:, None]]


def factor_iterations_many(depths, s, etas, tol: float, *, w0: float = 1.0, max_iters: int = 1_000_000
                           ) -> list[int | None]:
    """`factor_iterations` at each (depth, η) of ``depths`` and ``etas``, stepped side by side: the claims read
    several depths of one problem, and one loop over time serves them all."""
    s = np.asarray(s, np.float64)
    w, (L, eta) = _rows(depths, s, etas, w0)
    return _first_hits(lambda w, L, below, eta: w + eta * w ** below * (s - w ** L),
                       lambda w, L, below, eta: w ** L, w, [L, L - 1, eta], s, tol, max_iters)


def factor_iterations(depth: int, s, eta: float, tol: float, *, w0: float = 1.0, max_iters: int = 1_000_000
                      ) -> int | None:
    """Gradient descent on L equal factors per mode, w ← w + η w^{L−1}(s − w^L), from w₀ (identity: 1): the count
    to a relative loss ≤ tol, or None if not reached within ``max_iters`` (or diverging)."""
    return factor_iterations_many([depth], s, [eta], tol, w0=w0, max_iters=max_iters)[0]


def mode_iterations_many(depths, s, etas, tol: float, *, u0: float = 1.0, max_iters: int = 1_000_000
                         ) -> list[int | None]:
    """`mode_iterations` at each (depth, η) of ``depths`` and ``etas``, stepped side by side."""
    s = np.asarray(s, np.float64)
    u, (L, eta) = _rows(depths, s, etas, u0)
    return _first_hits(lambda u, rate, power: u + rate * np.abs(u) ** power * (s - u), lambda u, rate, power: u,
                       u, [eta * L, 2.0 - 2.0 / L], s, tol, max_iters)


def mode_iterations(depth: int, s, eta: float, tol: float, *, u0: float = 1.0, max_iters: int = 1_000_000
                    ) -> int | None:
    """The end-to-end per-mode recursion u ← u + η·L·u^{2−2/L}·(s − u) from u₀ (Saxe et al. 2014; Arora, Cohen
    & Hazan 2018): the count to a relative loss ≤ tol, or None."""
    return mode_iterations_many([depth], s, [eta], tol, u0=u0, max_iters=max_iters)[0]


def flow_time(depth: int, s: float, u0: float, u) -> np.ndarray:
    """∫_{u₀}^{u} du / (L u^{2−2/L} (s − u)), the gradient-flow time for one mode to go from u₀ to u (< s), for an
    array of u. With v = −ln(s − u) the integrand becomes the smooth dv / (L (s − e^{−v})^{2−2/L}) (the pole at
    u = s turns into an unbounded range of v), integrated by the trapezoid rule on 200001 points from v₀ to the
    largest v asked for."""
    power = 2.0 - 2.0 / depth
    u = np.atleast_1d(np.asarray(u, np.float64))
    v0, v = -np.log(s - u0), -np.log(s - u)
    grid = np.linspace(v0, max(v.max(), v0), 200_001)
    f = 1.0 / (depth * (s - np.exp(-grid)) ** power)
    cumulative = np.concatenate([[0.0], np.cumsum(0.5 * (f[1:] + f[:-1]) * np.diff(grid))])
    return np.interp(v, grid, cumulative)


def flow_iterations(depth: int, s, eta: float, tol: float, *, u0: float = 1.0) -> float | None:
    """The gradient-flow estimate of the count: the time t at which Σ(u_i(t) − s_i)² = tol·Σ s_i², over η. Each
    mode's time to reach u is `flow_time`, tabulated once; u_i(t) inverts it by interpolation and the crossing
    time is found by bisection on t. None where a mode starts at or above its target (u₀ ≥ s, outside the
    integral's range) without being at it, or at u₀ ≤ 0."""
    s = np.asarray(s, np.float64)
    if relative_loss(np.full_like(s, u0), s) <= tol:
        return 0.0
    if u0 <= 0 or np.any(u0 > s):
        return None
    total = tol * np.sum(s * s)
    tables = []
    for si in s:
        if abs(si - u0) < 1e-12 * si:
            continue
        gaps = np.geomspace(si - u0, si * 1e-10, 4000)  # s − u, from the start to far below the tolerance
        tables.append((si, si - gaps, flow_time(depth, si, u0, si - gaps)))

    def excess(t: float) -> float:
        return sum((si - np.interp(t, times, us)) ** 2 for si, us, times in tables) - total

    lo, hi = 0.0, 1.0
    while excess(hi) > 0:
        hi *= 2.0
        if hi > 1e12:
            return None
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if excess(mid) > 0 else (lo, mid)
    return hi / eta


def identity_prediction(depth: int, s, tol: float, multiplier: float = 1.0, *, max_iters: int = 1_000_000
                        ) -> dict:
    """The three theory counts for identity init at the reference step times ``multiplier``."""
    s = np.asarray(s, np.float64)
    eta = multiplier * reference_step(depth, float(s.max()))
    return {"factor": factor_iterations(depth, s, eta, tol, max_iters=max_iters),
            "modes": mode_iterations(depth, s, eta, tol, max_iters=max_iters),
            "flow": flow_iterations(depth, s, eta, tol)}


def depth_one_quadratic(phi: np.ndarray, rotation: np.ndarray, input_kappa: float
                        ) -> tuple[np.ndarray, np.ndarray]:
    """(Hessian eigenvalues, start in the eigenbasis) of depth 1 from W = 0: the loss ½ tr(EΣEᵀ), E = W − Φ,
    Σ = R diag(σ) Rᵀ, is Σ_k σ_k ‖E r_k‖² / 2: eigenvalue σ_k for each of the n entries of the column E r_k, whose
    start is −Φ r_k."""
    n = phi.shape[0]
    sigma = input_spectrum(n, input_kappa)
    start = -(phi @ rotation)  # column k: E₀ r_k
    return np.repeat(sigma[None, :], n, axis=0).reshape(-1), start.reshape(-1)


def toy_quadratic_iterations(multiplier: float, tol: float) -> int | None:
    """gd on the k = 1 per-layer toy, ½(a² + b²) + const (Hessian I, condition number 1), with step c: the gap
    falls by (1 − c)² per step, so ⌈ln(1/tol) / (2 ln(1/|1 − c|))⌉ steps (1 at c = 1; None for c ≥ 2)."""
    r = abs(1.0 - multiplier)
    if r == 0.0:
        return 1
    if r >= 1.0:
        return None
    return max(1, math.ceil(math.log(tol) / (2.0 * math.log(r)) - 1e-12))
