"""Where the noise sweeps look for each point's best (learning rate, β), and how the exact path finds it.

**The stable range.** On a quadratic every method here contracts direction i by x = η·hᵢ^{1−p} per step. SGD,
preconditioned SGD and SGD under the EMA of iterates are stable for 0 < x < 2: multipliers of the reference step
1/max h^{1−p} below 2 (2/L in whitened coordinates). Heavy-ball (m = g + βm, θ −= η·m) moves (θ_t, θ_{t−1}) of
each direction by [[1 + β − x, −β], [1, 0]], whose eigenvalues, the roots of λ² − (1 + β − x)λ + β, lie inside the
unit circle exactly for 0 ≤ β < 1 and 0 < x < 2(1 + β) (the Jury conditions; Polyak 1964, "Some methods of
speeding up the convergence of iteration methods"): its limit is the multiplier 2(1 + β) (`stability_limit`).
Second moments move by the symmetric square of these maps, with the same limits.

**The grid** holds fractions u of that limit, log-spaced towards both ends: in the coordinate z = ln 2u (u ≤ ½),
z = −ln 2(1 − u) (u > ½), 10^(5/32) ≈ 1.43 apart. Below half the limit that is multipliers 10^(5k/32) of half the
limit (1 for SGD) down to 8·10⁻⁷; above it the distance to the limit shrinks by that factor per point, down to
1.1·10⁻³ of the limit (`DEFAULT_LR_GRID`, 57 points). The step a method needs at a large batch sits there: SGD's
best on the default NQM at B = 65536 is 1.6% below its limit, and a grid that stopped at the multiplier 1.41
cost it 37% more steps (9451 against 6887). β (heavy-ball's momentum, the EMA's decay) is spaced in ln(1 − β):
β = 0 and 1 − β = 10^(−j/2), j = 1…6, up to 0.999 (`DEFAULT_BETAS`).

**The exact search** (`exact_search`), where a count costs milliseconds: the grid's (lr, β), every other point in
each coordinate (`EXACT_STRIDE`), at every batch; then at each batch a compass search (Kolda, Lewis & Torczon 2003,
"Optimization by direct search: new perspectives on some classical and modern methods") on the lattice
z = i·U, ln(1 − β) = j·U, U = ln 10/64, from the best grid point. It polls the neighbours at the current steps
(lr, β, and the diagonals), moves to the best one if it is better in the selection rule's order (fewer steps,
then the smaller lr, then the smaller β), doubles a step that moved the same way twice (an optimum beyond the
grid is bracketed in a few moves), divides the steps by `SHRINK` after a poll that found nothing better, and stops
when a poll at one unit finds nothing better. The answer is then a local optimum to within a factor 10^(1/64) ≈
2^(1/19) in the lr (finer still near the stability limit, where the unit is one of the distance to it) and in
1 − β, unless it sits on a stated limit (`LR_INDEX_RANGE`: 10⁻¹² of the limit below, 2·10⁻⁸ of it above, which is
the stability limit itself; β ∈ [0, 0.999]). Every count tried is a record.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

#: The lattice's unit, the same in z and in w = ln(1 − β): a factor 10^(1/64) ≈ 2^(1/19) in the lr below half the
#: limit (in the distance to it above) and in 1 − β. One unit for both makes the diagonal (+1, +1) keep
#: z − w, and so heavy-ball's effective step η/(1 − β), fixed: the valley the counts lie along at small batch.
LR_UNIT = BETA_UNIT = math.log(10) / 64
#: The default grid's lattice indices: z = i·LR_UNIT, from 2u = 10^(−195/32) ≈ 8·10⁻⁷ (the multiplier for SGD)
#: to 2(1 − u) = 10^(−85/32) ≈ 2⁻⁸·⁸ (u = 1 − 0.0011), 10^(5/32) ≈ 1.43 apart: 57 points, the multiplier 1 (half
#: the limit) among them.
DEFAULT_LR_INDICES = tuple(range(-390, 171, 10))
#: The default β lattice indices: w = j·BETA_UNIT, 1 − β = 10^(j/64) from 1 (β = 0) to 10⁻³ (β = 0.999),
#: 10^(1/2) apart: 0, 0.684, 0.9, 0.968, 0.99, 0.997, 0.999.
DEFAULT_BETA_INDICES = tuple(range(0, -193, -32))
#: The exact search starts from every other point of a lattice grid in each coordinate (the default: lr points
#: 10^(5/16) ≈ 2.05 apart, β = 0, 0.9, 0.99, 0.999). Measured on the default sweep (d = 10⁴, B = 1…1024): the
#: optima it refines to are those from the whole grid (heavy-ball within 0.14% at every B, better by 1–2% at
#: B = 64 and 128, where the whole grid started the compass in a worse valley), for a fifth of the grid's cost.
EXACT_STRIDE = 2
#: The search's stated limits on the lattice: 2u ≥ 10⁻¹² and 2(1 − u) ≥ 10^(−7.5) (the stability limit to within
#: 2·10⁻⁸ of it); β from 0 to 0.999.
LR_INDEX_RANGE = (-768, 480)
BETA_INDEX_RANGE = (-192, 0)
#: A step (in lattice units) grows to at most this by doubling: one decade of the lr and of 1 − β.
MAX_STEP = (64, 64)
#: What a failed poll divides the steps by. Measured on the default sweep (d = 10⁴, B = 1…1024): heavy-ball's
#: refinement tried 391 lanes instead of 544 with halving, ema's 493 instead of 599, with the same optima to within
#: 0.14%.
SHRINK = 4
#: Methods whose steps have a theory stability limit on a quadratic (adam has none: its grid spans the same
#: multipliers as SGD's, up to 2).
LIMITED = ("sgd", "heavy-ball", "ema", "precond")


def fraction(z):
    """u of the coordinate z: e^z/2 for z ≤ 0, 1 − e^(−z)/2 above."""
    z = np.asarray(z, float)
    return np.where(z <= 0, 0.5 * np.exp(np.minimum(z, 0.0)), 1.0 - 0.5 * np.exp(-np.maximum(z, 0.0)))


def coordinate(u):
    """z of a fraction u ∈ (0, 1) of the stability limit: ln 2u for u ≤ ½, −ln 2(1 − u) above."""
    u = np.asarray(u, float)
    return np.where(u <= 0.5, np.log(2 * np.minimum(u, 0.5)), -np.log(2 * (1 - np.maximum(u, 0.5))))


def beta_of(j) -> float:
    """β at lattice index j: 1 − 10^(j/64), exactly 0 at j = 0."""
    return 0.0 if j == 0 else float(1.0 - math.exp(j * BETA_UNIT))


DEFAULT_LR_GRID = tuple(float(fraction(i * LR_UNIT)) for i in DEFAULT_LR_INDICES)
DEFAULT_BETAS = tuple(min(beta_of(j), 0.999) for j in DEFAULT_BETA_INDICES)
#: The default grid's closest approach to the stability limit (a fraction of it, 1.1·10⁻³): a chosen lr this close
#: or closer is the limit itself, not the edge of a grid that stopped short.
LIMIT_MARGIN = 1.0 - DEFAULT_LR_GRID[-1]


def stability_limit(method: str, beta: float) -> float:
    """The largest stable multiplier of the reference step: 2 for sgd, precond:p and ema, 2(1 + β) for heavy-ball
    (Polyak 1964; module docstring); adam has no theory limit and spans SGD's range (2)."""
    return 2.0 * (1.0 + beta) if method == "heavy-ball" else 2.0


def near_limit(method: str, multiplier: float, beta: float) -> bool:
    """Whether a multiplier is within `LIMIT_MARGIN` of the method's stability limit (only methods that have one)."""
    name = "precond" if method.startswith("precond") else method
    limit = stability_limit(name, beta)
    return name in LIMITED and multiplier >= limit * (1.0 - LIMIT_MARGIN) * (1 - 1e-12)


class Trial(NamedTuple):
    """One count the search asked for: batch, multiplier of the reference step, β, steps (−1: not reached) and
    whether the lane diverged."""

    batch: float
    multiplier: float
    beta: float
    steps: int
    diverged: bool


class Axis(NamedTuple):
    """One search axis: on the lattice (``lattice``: start indices, refined) or a list of values tried as given."""

    lattice: bool
    values: tuple


def _score(steps: int) -> float:
    return math.inf if steps < 0 else float(steps)


class _Search:
    """The counts of one method on one quadratic, cached by (batch index, lr key, β key); a key is a lattice
    index on a lattice axis, else an index into the axis's list."""

    def __init__(self, method, q, batches, tol, cap, reference, power, lr_axis: Axis, beta_axis: Axis | None):
        self.method, self.q, self.batches, self.tol, self.cap = method, q, batches, tol, cap
        self.reference, self.power = reference, power
        self.lr_axis, self.beta_axis = lr_axis, beta_axis
        self.trials: dict[tuple, Trial] = {}

    def beta(self, jb) -> float:
        if self.beta_axis is None:
            return 0.0
        return beta_of(jb) if self.beta_axis.lattice else float(self.beta_axis.values[jb])

    def multiplier(self, il, jb) -> float:
        if not self.lr_axis.lattice:
            return float(self.lr_axis.values[il])
        return float(fraction(il * LR_UNIT)) * stability_limit(self.method, self.beta(jb))

    def theory_method(self, beta: float) -> str:
        """heavy-ball and ema at β = 0 are SGD: the one-component recursion gives their counts at a fraction of the
        cost (the 3-component one reduces to it term by term there)."""
        return "sgd" if beta == 0.0 and self.method in ("heavy-ball", "ema") else self.method

    def grid(self) -> None:
        """Every (lr, β) of the axes at every batch: one outer product of batches × rates per β."""
        from otod.noise import theory

        lr_keys = self.lr_axis.values if self.lr_axis.lattice else range(len(self.lr_axis.values))
        beta_keys = ((0,) if self.beta_axis is None else
                     self.beta_axis.values if self.beta_axis.lattice else range(len(self.beta_axis.values)))
        for jb in beta_keys:
            beta = self.beta(jb)
            lrs = np.array([self.multiplier(il, jb) for il in lr_keys])
            hit = theory.method_hitting(self.theory_method(beta), self.q, lrs * self.reference, self.batches,
                                        self.tol, self.cap, power=self.power, beta=beta)
            for ib in range(len(self.batches)):
                for n, il in enumerate(lr_keys):
                    self.trials[(ib, il, jb)] = Trial(float(self.batches[ib]), float(lrs[n]), beta,
                                                      int(hit.steps[ib, n]), bool(hit.diverged[ib, n]))

    def lanes(self, keys) -> None:
        """The counts of ``keys`` not asked for yet, in one call."""
        from otod.noise import theory

        keys = [k for k in dict.fromkeys(keys) if k not in self.trials]
        if not keys:
            return
        betas = np.array([self.beta(jb) for _, _, jb in keys])
        lrs = np.array([self.multiplier(il, jb) for _, il, jb in keys])
        batches = np.array([self.batches[ib] for ib, _, _ in keys])
        names = np.array([self.theory_method(b) for b in betas])
        steps, diverged = np.empty(len(keys), np.int64), np.empty(len(keys), bool)
        for name in dict.fromkeys(names):
            mask = names == name
            hit = theory.lane_hitting(name, self.q, lrs[mask] * self.reference, batches[mask], betas[mask],
                                      self.tol, self.cap, power=self.power)
            steps[mask], diverged[mask] = hit.steps, hit.diverged
        for n, key in enumerate(keys):
            self.trials[key] = Trial(float(batches[n]), float(lrs[n]), float(betas[n]), int(steps[n]),
                                     bool(diverged[n]))

    def order(self, key) -> tuple:
        """The selection rule's order: fewer steps (not reached: +∞), then the smaller lr, then the smaller β."""
        t = self.trials[key]
        return _score(t.steps), t.multiplier, t.beta


def _clip(value: int, bounds: tuple[int, int]) -> int:
    return min(max(value, bounds[0]), bounds[1])


def compass(search: _Search) -> int:
    """Refine each batch's best point by a compass search on the lattice axes (module docstring); returns the
    number of polling rounds. All batches poll together: per round one call for the first polls of every batch and
    one for the second polls of the batches the first did not improve (`_polls`). "Better" is the selection rule's
    order (fewer steps, then the smaller lr, then the smaller β), so the search ends where the selection does: at
    the best point of everything tried at that batch, with its lattice neighbours tried (a point reached earlier
    that ties with a smaller lr restarts the search there)."""
    refine_lr = search.lr_axis.lattice
    refine_beta = search.beta_axis is not None and search.beta_axis.lattice
    if not (refine_lr or refine_beta):
        return 0
    spacing = [_spacing(search.lr_axis.values) if refine_lr else 0,
               _spacing(search.beta_axis.values) if refine_beta else 0]

    def best_at(ib):
        return min((k for k in search.trials if k[0] == ib), key=search.order)

    state = {}
    for ib in range(len(search.batches)):
        start = best_at(ib)
        if math.isfinite(_score(search.trials[start].steps)):
            state[ib] = {"at": start, "step": [max(1, s // 2) for s in spacing], "last": [0, 0]}
    valley = search.method == "heavy-ball"
    rounds = 0
    while state:
        rounds += 1
        polls = {ib: _polls(s, refine_lr, refine_beta, valley) for ib, s in state.items()}
        search.lanes([k for first, _ in polls.values() for k in first])
        stuck = [ib for ib, s in state.items() if _better(search, polls[ib][0], s["at"]) is None]
        search.lanes([k for ib in stuck for k in polls[ib][1]])
        for ib in list(state):
            s = state[ib]
            first, second = polls[ib]
            new = _better(search, first, s["at"]) or _better(search, second, s["at"])
            if new is not None:
                for axis, (old, moved) in enumerate(zip(s["at"][1:], new[1:])):
                    direction = (moved > old) - (moved < old)
                    if direction and direction == s["last"][axis]:
                        s["step"][axis] = min(2 * s["step"][axis], MAX_STEP[axis])
                    s["last"][axis] = direction
                s["at"] = new
            elif any(step > 1 for step, on in zip(s["step"], (refine_lr, refine_beta)) if on):
                s["step"] = [max(1, step // SHRINK) for step in s["step"]]
                s["last"] = [0, 0]
            elif best_at(ib) != s["at"]:
                s.update(at=best_at(ib), step=[1, 1], last=[0, 0])
            else:
                del state[ib]
    return rounds


def _better(search: _Search, keys: list, here: tuple):
    """The best of ``keys`` if it is better than ``here`` in the selection order, else None."""
    if not keys:
        return None
    best = min(keys, key=search.order)
    return best if search.order(best) < search.order(here) else None


def _spacing(indices) -> int:
    gaps = np.diff(sorted(indices))
    return int(np.min(gaps)) if len(gaps) else 8


def _polls(state: dict, refine_lr: bool, refine_beta: bool, valley: bool) -> tuple[list, list]:
    """The lattice neighbours of the current point at the current steps, inside the stated limits, in two sets:
    first the lr moves and the β moves most likely to help (for heavy-ball along the diagonal that keeps its
    effective step η/(1 − β), elsewhere at a fixed lr), then, polled only where none of those helps, the other β
    moves."""
    ib, il, jb = state["at"]
    sl, sb = state["step"]
    first, second = [], []
    if refine_lr:
        first += [(sl, 0), (-sl, 0)]
    if refine_beta and refine_lr:
        along, across = [(sb, sb), (-sb, -sb)], [(0, sb), (0, -sb)]
        if not valley:
            along, across = across, along
        first += along
        second += across + [(sb, -sb), (-sb, sb)]
    elif refine_beta:
        first += [(0, sb), (0, -sb)]
    out: tuple[list, list] = ([], [])
    for moves, keys in ((first, out[0]), (second, out[1])):
        for dl, db in moves:
            key = (ib, _clip(il + dl, LR_INDEX_RANGE) if refine_lr else il,
                   _clip(jb + db, BETA_INDEX_RANGE) if refine_beta else jb)
            if key != state["at"] and key not in out[0] and key not in out[1]:
                keys.append(key)
    return out


def exact_search(method: str, q, batches, tol: float, cap: int, reference: float, power: float, lr_axis: Axis,
                 beta_axis: Axis | None) -> list[Trial]:
    """Every count the exact search asked for, for one method (its `theory` name) on the quadratic ``q``: the grid
    of the axes at every batch, then the compass refinement of each batch's best point on the lattice axes."""
    search = _Search(method, q, np.asarray(batches, float), tol, cap, reference, power, lr_axis, beta_axis)
    search.grid()
    compass(search)
    return list(search.trials.values())
