"""The noise sweeps' default tuning finds the optimum: the steps the default exact sweep reports per (B, method)
against an independent search written here, from the recursions as docs/theory.md states them (NumPy; nothing
from otod.noise.theory).

The reference. The NQM (hᵢ = 1/i, cᵢ = hᵢ, E θᵢ,₀² = 1), per direction x = η hᵢ^(1−p), q = η² hᵢ^(−2p) cᵢ/B:
SGD's second moment s' = (1 − x)² s + q; heavy-ball's (E θ², E u², E θu) and the EMA's (E θ², E θ̃², E θθ̃)
3×3 recursions with their forcing (1, 1, 1) and (1, (1 − γ)², 1 − γ). Appending q to the state makes each an
autonomous (k + 1)×(k + 1) map, whose powers 2^j (NumPy's matmul on the stacked directions) give the loss at any
t. The steps to target: double t until the loss is at most the target, then bisect by the powers below. The
optimum: for each β of a profile (β = 0 and 1 − β = 10^(−j/4), j = 1…32: β's stable range [0, 1) down to
1 − β = 10⁻⁸, beyond which no lane reaches the target within the cap), an lr grid 2^(1/2) apart over the stable
range (multipliers of 1/max h^(1−p) below 2, or 2(1 + β) for heavy-ball: log-spaced up to half the limit, and in
the distance to it above), then local grids around each batch's best to 2^(1/8), 2^(1/32) and 2^(1/256); then from
every profile β within 2% (+1 step) of the best, β 10^(1/64) apart out to the neighbouring profile points, the lr
carried from β to β and refined again at each. Every count is the reference's own; only the grid of β is shared
with otod's lattice (1 − β on powers of 10^(1/64)).

The claim: the default's steps lie within 3% above the reference optimum at B = 1, 64, 1024 and 65536 for sgd,
precond:0.5, heavy-ball (β tuned) and ema (decay tuned), and not below it by more than the reference's own
resolution (0.5%: the default cannot beat the optimum). Fast at d = 300; at the default d = 10⁴ under
``-m slow``.
"""

from __future__ import annotations

import numpy as np
import pytest

BATCHES = (1.0, 64.0, 1024.0, 65536.0)
TARGET = 0.01
CAP = 100_000_000
METHODS = ("sgd", "precond:0.5", "heavy-ball", "ema")
#: Above the reference optimum by at most this fraction; below it by at most its own resolution.
ABOVE, BELOW = 0.03, 0.005
#: The β profile reaches 1 − β = 10^(−BETA_DECADES): β's stable range is [0, 1), and within the cap (10⁸) no lane
#: with a memory 1/(1 − β) much beyond 10⁸ reaches the target.
BETA_DECADES = 8


def recursion(method: str, x: np.ndarray, beta: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(T [d, k, k], forcing f [k], start pattern [k] times s₀, the component the loss reads) per direction, as
    docs/theory.md writes them."""
    if method in ("sgd", "precond"):
        return ((1 - x) ** 2)[:, None, None], np.ones(1), np.ones(1), 0
    one, b = np.ones_like(x), np.full_like(x, beta)
    if method == "heavy-ball":
        T = np.stack([np.stack([(1 - x) ** 2, b * b, 2 * b * (1 - x)], -1),
                      np.stack([x * x, b * b, -2 * x * b], -1),
                      np.stack([-x * (1 - x), b * b, b * (1 - 2 * x)], -1)], -2)
        return T, np.ones(3), np.array([1.0, 0.0, 0.0]), 0
    a, g = (1 - x) ** 2, b
    T = np.stack([np.stack([a, 0 * one, 0 * one], -1),
                  np.stack([(1 - g) ** 2 * a, g * g, 2 * g * (1 - g) * (1 - x)], -1),
                  np.stack([(1 - g) * a, 0 * one, g * (1 - x)], -1)], -2)
    return T, np.array([1.0, (1 - beta) ** 2, 1 - beta]), np.ones(3), 1


class Reference:
    """Steps to target of one (method, power) on the NQM of dimension d, by the augmented maps' powers."""

    def __init__(self, method: str, dim: int):
        self.method, self.power = ("precond", 0.5) if method.startswith("precond") else (method, 0.0)
        self.h = 1.0 / np.arange(1, dim + 1)
        self.c = self.h

    def limit(self, beta: float) -> float:
        return 2.0 * (1.0 + beta) if self.method == "heavy-ball" else 2.0

    def steps(self, multiplier: float, beta: float, batches) -> list[float]:
        """Steps to target at each batch (inf: not within the cap)."""
        lr = multiplier / np.max(self.h ** (1 - self.power))
        x = lr * self.h ** (1 - self.power)
        T, f, start, read = recursion(self.method, x, beta)
        k = len(f)
        aug = np.zeros((len(x), k + 1, k + 1))
        aug[:, :k, :k], aug[:, :k, k], aug[:, k, k] = T, f, 1.0
        powers = [aug]
        with np.errstate(all="ignore"):
            for _ in range(CAP.bit_length()):
                powers.append(powers[-1] @ powers[-1])
        return [self._first(powers, start, read, lr * lr * self.h ** (-2 * self.power) * self.c / b) for b in batches]

    def _first(self, powers, start, read, q) -> float:
        """The first t with loss ≤ target: double t (z at t = 2^j by one power each) until the loss is at most the
        target, then bisect (2^(j−1), 2^j] by the powers below, taking each that leaves the loss above it."""
        z = np.concatenate([np.outer(np.ones_like(q), start), q[:, None]], 1)

        def loss(state) -> float:
            value = 0.5 * np.sum(self.h * state[:, read])
            return value if np.isfinite(value) else np.inf

        if loss(z) <= TARGET:
            return 0.0
        with np.errstate(all="ignore"):
            z = np.einsum("dij,dj->di", powers[0], z)
            t, j = 1, 0
            while loss(z) > TARGET:
                if t > CAP:
                    return np.inf
                z, t, j = np.einsum("dij,dj->di", powers[j], z), 2 * t, j + 1
            if t == 1:
                return 1.0
            t //= 2
            z = self._at(powers, t, start, q)
            for bit in range(j - 2, -1, -1):
                candidate = np.einsum("dij,dj->di", powers[bit], z)
                if loss(candidate) > TARGET:
                    z, t = candidate, t + 2 ** bit
        return float(t + 1) if t + 1 <= CAP else np.inf

    @staticmethod
    def _at(powers, t: int, start, q):
        z = np.concatenate([np.outer(np.ones_like(q), start), q[:, None]], 1)
        for j in range(t.bit_length()):
            if t >> j & 1:
                z = np.einsum("dij,dj->di", powers[j], z)
        return z


def stable_grid(limit: float, per_octave: int) -> np.ndarray:
    """Multipliers over (0, limit): limit·2^(−k/n)/2 up to half the limit (down to 2⁻²⁵ of it), then
    limit·(1 − 2^(−k/n)/2) towards it (to within 2⁻¹⁵)."""
    k = np.arange(0, 24 * per_octave + 1)
    below = limit * 2.0 ** (-k / per_octave) / 2
    above = limit * (1 - 2.0 ** (-k[1:14 * per_octave + 1] / per_octave) / 2)
    return np.sort(np.concatenate([below, above]))


def around(m: float, limit: float, width: float, points: int) -> np.ndarray:
    """``points`` multipliers spanning a factor ``width`` either side of m, in the grid's coordinate: log m below
    half the limit, −log(limit − m) above (so the stable range is never left)."""
    u = m / limit
    z = np.log(2 * u) if u <= 0.5 else -np.log(2 * (1 - u))
    zs = z + np.linspace(-1, 1, points) * np.log(width)
    return limit * np.where(zs <= 0, np.exp(np.minimum(zs, 0)) / 2, 1 - np.exp(-np.maximum(zs, 0)) / 2)


def refine_lr(ref: Reference, beta: float, b: float, steps: float, m: float, widths) -> tuple[float, float]:
    """(steps, multiplier) after a local grid of 9 points spanning each of ``widths`` around the best so far."""
    for width in widths:
        local = around(m, ref.limit(beta), width, 9)
        counts = [ref.steps(v, beta, [b])[0] for v in local]
        i = int(np.argmin(counts))
        if counts[i] < steps:
            steps, m = counts[i], local[i]
    return steps, m


def best_lr(ref: Reference, beta: float) -> dict:
    """Per batch (steps, multiplier): a grid 2^(1/2) apart over the stable range, then local grids of 9 points
    spanning ±2^(1/2), ±2^(1/8) and ±2^(1/64) (spacings 2^(1/8), 2^(1/32), 2^(1/256)) around each batch's best."""
    grid = stable_grid(ref.limit(beta), 2)
    table = np.array([ref.steps(m, beta, BATCHES) for m in grid])
    out = {}
    for i, b in enumerate(BATCHES):
        steps, m = table[:, i].min(), grid[table[:, i].argmin()]
        out[b] = (refine_lr(ref, beta, b, steps, m, (2 ** 0.5, 2 ** (1 / 8), 2 ** (1 / 64)))
                  if np.isfinite(steps) else (steps, m))
    return out


def reference_optimum(method: str, dim: int) -> dict:
    """Per batch the reference optimum's steps, over lr (and β for heavy-ball and ema: a profile over
    1 − β = 10^(−j/4) and β = 0; then from every profile point within 2% (+1 step) of the best, β 10^(1/64) apart
    out to the neighbouring profile points, walked outwards with the lr carried and refined at each over
    ±2^(1/2), ±2^(1/8) and ±2^(1/64): the lr of the optimum can jump between valleys where counts are small)."""
    ref = Reference(method, dim)
    if method not in ("heavy-ball", "ema"):
        return {b: v[0] for b, v in best_lr(ref, 0.0).items()}
    betas = np.concatenate([[0.0], 1 - 10.0 ** (-np.arange(1, 4 * BETA_DECADES + 1) / 4)])
    profile = {beta: best_lr(ref, beta) for beta in betas}
    out = {}
    for b in BATCHES:
        counts = np.array([profile[beta][b][0] for beta in betas])
        walked: dict[int, float] = {16 * j: c for j, c in enumerate(counts)}
        for j in np.flatnonzero(counts <= counts.min() * 1.02 + 1):
            for direction in (1, -1):
                carried = profile[betas[j]][b][1]
                for k in 16 * j + direction * np.arange(1, 16):
                    if not 0 <= k <= 64 * BETA_DECADES or k in walked:
                        break
                    beta = 1 - 10.0 ** (-k / 64)
                    walked[k], carried = refine_lr(ref, beta, b, np.inf, carried,
                                                   (2 ** 0.5, 2 ** (1 / 8), 2 ** (1 / 64)))
        out[b] = min(walked.values())
    return out


def default_steps(method: str, dim: int) -> dict:
    """The default exact sweep's steps per B for one method: its choices, as the report prints them."""
    from otod.noise.report import exact_choices
    from otod.noise.options import noise_config

    config, _ = noise_config(batch=",".join(f"{b:g}" for b in BATCHES), dim=dim, method=method)
    return {r["batch"]: float(r["iterations"]) for r in exact_choices(config)}


def compare(method: str, dim: int) -> list[str]:
    """The comparisons that fail (each line: the default's steps, the reference's, the difference); all are
    printed."""
    chosen, optimum = default_steps(method, dim), reference_optimum(method, dim)
    failures, lines = [], []
    for b in BATCHES:
        got, best = chosen[b], optimum[b]
        lines.append(f"{method} B={b:g}: default {got:g}, reference {best:g} ({got / best - 1:+.2%})")
        if not (best * (1 - BELOW) <= got <= best * (1 + ABOVE)):
            failures.append(lines[-1])
    print("\n".join(lines))
    return failures


@pytest.mark.parametrize("method", [m if m in ("sgd", "precond:0.5") else pytest.param(m, marks=pytest.mark.slow)
                                    for m in METHODS])  # heavy-ball and ema (78 s of CPU) with -m slow
def test_the_default_search_finds_the_optimum_on_a_small_nqm(method):
    """d = 300: at every B within 3% above the reference optimum and not 0.5% below it (measured on 2026-12-03:
    within +0.21% everywhere, never below)."""
    assert not compare(method, 300)


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
def test_the_default_search_finds_the_optimum_on_the_default_nqm(method):
    """d = 10⁴ (the default): at every B within 3% above the reference optimum and not 0.5% below it."""
    assert not compare(method, 10_000)
