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
1 − β, unless it sits on a limit of the lattice (`LR_INDEX_RANGE`, `BETA_INDEX_RANGE`). Every count tried is a
record.

**β is searched over its whole stable range** [0, 1) (an EMA's decay, heavy-ball's momentum; Polyak 1964), in
ln(1 − β), beyond the grid's 0.999: the EMA's best decay and heavy-ball's best momentum at small batch lie far
past it, where the memory 1/(1 − β) is a few percent of the run (on the default NQM, d = 10⁴, target 0.01, at
B = 1: the EMA at 1 − β = 5.6·10⁻⁶ takes 869,666 steps against 4,689,418 at 0.999; heavy-ball at 2.0·10⁻⁶
5,179,149 against 6,022,851). Heavy-ball's counts at small batch lie along a valley of fixed effective step
η/(1 − β) (Polyak; the lattice's diagonal), flat over most of [0, 1) and dipping only where the memory nears the
run's length: a compass search that starts on the flat part can stop there (measured: d = 1000 at B = 1 stopped at
β = 0 with 461,321 steps, the dip at 1 − β = 2.3·10⁻⁵ takes 393,335). So the compass is bracketed (`bracket`):
from each batch's best it probes one decade of 1 − β at a time towards 1, at the same lr and along heavy-ball's
valley, until the probes are censored or 10× worse (the count grows about tenfold per decade once 1/(1 − β) is the
run's length: heavy-ball on d = 1000 at B = 1, the best of an lr grid 10^(1/4) apart at 1 − β = 10⁻⁶ … 10⁻⁷ a
quarter decade apart, 5.2·10⁶, 9.5·10⁶, 1.7·10⁷, 3.0·10⁷, 5.2·10⁷); a probe that beats the best restarts the
compass there. The β lattice ends at 1 − β = 10⁻¹⁴ (`BETA_INDEX_RANGE`), where float64 stops resolving it: β is a
float64 just below 1, 2⁻⁵³ ≈ 1.1·10⁻¹⁶ apart, so 1 − β = 10⁻¹⁴ is held to 0.55%, a seventh of the lattice unit
(3.7%), and neighbouring lattice points stay distinct; at 10⁻¹⁵ they are 3.7·10⁻¹⁷ apart and round onto the same
float. The recursions themselves stay exact there: for the same float β,
counts in float64 agree with 80-bit extended precision within 10⁻⁸ (EMA) and 10⁻⁹ (heavy-ball) down to
1 − β = 10⁻¹⁴ (d = 10, B = 10⁶, lr 0.1 of the reference step, heavy-ball's 0.1·(1 − β); cap 2⁶²), heavy-ball
within 10⁻⁶ at 10⁻¹⁵ and 55% off at 10⁻¹⁶. Within the default cap (10⁸ steps) no lane with 1 − β below about
10⁻⁷·⁵ reaches the target (measured on d = 1000 at B = 1: the average keeps a weight of about β^t on its start,
so it needs about ln(L₀/target)/(2(1 − β)) steps), so the bracket ends at an interior optimum long before the
floor; a chosen β on the floor is the limit itself. The lr's lattice reaches 2u = 10⁻²⁴ below, so that
heavy-ball's valley (u ∝ 1 − β) stays on it down to β's floor.

**Where a choice lies** (`lr_place`, `beta_place`): interior (tried on both sides, neither better); at a true limit
(`LIMIT`: the lr within `LIMIT_MARGIN` of its stability limit, β = 0, or 1 − β on its floor); at the end of a
user-given list (`LIST_END`: --lr-grid, --beta), tried as given; or at the end of a default grid tried as given
(`GRID_END`: the simulator's, and the lattice's far lr end), where the best may lie beyond.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

#: Where a chosen lr or β lies among the values searched (module docstring): the analysis says it of every choice
#: (`lr_place`, `beta_place`; `otod.noise.report.chosen_places`), in the core's words.
from otod.core.api import GRID_END, INTERIOR, LIMIT, LIST_END

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
#: The lattice's limits: 2u ≥ 10⁻²⁴ and 2(1 − u) ≥ 10^(−7.5) (the stability limit to within 2·10⁻⁸ of it); β from
#: 0 to 1 − 10⁻¹⁴ (float64's resolution of 1 − β: module docstring).
LR_INDEX_RANGE = (-1536, 480)
BETA_INDEX_RANGE = (-896, 0)
#: The bracket's probes lie this many lattice units apart in 1 − β (one decade), and stop where every probe of a
#: decade is censored or above `PROBE_STOP` × the batch's best count (module docstring).
PROBE_STEP = 64
PROBE_STOP = 10
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


#: The exact search's version, in its results' metadata: a file another version wrote is computed again, not read
#: back (2: β bracketed towards 1 beyond 0.999, issue 34).
VERSION = 2
#: β's floor, 1 − β = 10⁻¹⁴ (`BETA_INDEX_RANGE`): float64's resolution of β near 1 (module docstring).
BETA_FLOOR = math.exp(BETA_INDEX_RANGE[0] * BETA_UNIT)


def lr_place(method: str, multiplier, beta: float, on_edge: bool, given: bool) -> str:
    """Where a chosen lr lies: `INTERIOR` off the edge of the rates tried at its β; on it, `LIMIT` within
    `LIMIT_MARGIN` of the stability limit (`near_limit`: no larger step is stable), else the end of a given list
    (``given``: --lr-grid; `LIST_END`) or of a default grid tried as given (`GRID_END`)."""
    if not on_edge:
        return INTERIOR
    if multiplier is not None and math.isfinite(multiplier) and near_limit(method, multiplier, beta):
        return LIMIT
    return LIST_END if given else GRID_END


def beta_place(beta: float, on_edge: bool, given: bool, floor: float = BETA_FLOOR) -> str:
    """Where a chosen β lies: `INTERIOR` off the edge of the β tried; on it, `LIMIT` at β = 0 (no momentum or
    averaging) or with 1 − β within half a lattice unit of ``floor`` (`BETA_FLOOR`, float64's resolution; a
    float32 simulation's is 10⁻⁵, `otod.core.bracket.beta_floor`), else the end of a given --beta list (``given``;
    `LIST_END`) or of the default list tried as given (`GRID_END`)."""
    if not on_edge:
        return INTERIOR
    if beta == 0.0 or 1.0 - beta <= floor * math.exp(BETA_UNIT / 2):
        return LIMIT
    return LIST_END if given else GRID_END


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


def compass(search: _Search, starts: dict | None = None) -> int:
    """Refine each batch's best point (or the point ``starts`` gives a batch: only those batches) by a compass
    search on the lattice axes (module docstring); returns the number of polling rounds. All batches poll together:
    per round one call for the first polls of every batch and one for the second polls of the batches the first did
    not improve (`_polls`). "Better" is the selection rule's order (fewer steps, then the smaller lr, then the
    smaller β), so the search ends where the selection does: at the best point of everything tried at that batch,
    with its lattice neighbours tried (a point reached earlier that ties with a smaller lr restarts the search
    there)."""
    refine_lr = search.lr_axis.lattice
    refine_beta = search.beta_axis is not None and search.beta_axis.lattice
    if not (refine_lr or refine_beta):
        return 0
    spacing = [_spacing(search.lr_axis.values) if refine_lr else 0,
               _spacing(search.beta_axis.values) if refine_beta else 0]

    def best_at(ib):
        return min((k for k in search.trials if k[0] == ib), key=search.order)

    state = {}
    for ib in (range(len(search.batches)) if starts is None else starts):
        start = best_at(ib) if starts is None else starts[ib]
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
    """The lattice neighbours of the current point at the current steps, inside the lattice's limits, in two sets:
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


def _probes(search: _Search, key: tuple, decades: int) -> list[tuple]:
    """The points ``decades`` decades of 1 − β beyond ``key`` towards β = 1 (`PROBE_STEP` lattice units each),
    inside the lattice's limits, none where that passes β's limit: at the same lr index and, for heavy-ball, at the
    lr index nearest its valley, the same effective step η/(1 − β) (η' = η·(1 − β')/(1 − β), as a fraction of the
    limit 2(1 + β') there: `coordinate`)."""
    ib, il, jb = key
    j = jb - decades * PROBE_STEP
    if j < BETA_INDEX_RANGE[0]:
        return []
    lrs = [il]
    if search.method == "heavy-ball" and search.lr_axis.lattice:
        beta, far = search.beta(jb), search.beta(j)
        u = search.multiplier(il, jb) * (1.0 - far) / (1.0 - beta) / stability_limit(search.method, far)
        lrs.append(int(round(float(coordinate(u)) / LR_UNIT)))
    return list(dict.fromkeys((ib, _clip(i, LR_INDEX_RANGE) if search.lr_axis.lattice else i, j) for i in lrs))


def bracket(search: _Search) -> int:
    """The compass search (`compass`), then its bracket towards β = 1 (module docstring): from each batch's best
    point, probes one decade of 1 − β apart further out (`_probes`), all batches in one call per decade, until a
    decade's probes are all censored or all more than `PROBE_STOP` × the best count, or β's limit; a batch whose
    probe beats its best restarts the compass there, and is probed again from where that ends. Returns the
    polling rounds. Only where β is a lattice axis."""
    rounds = compass(search)
    if search.beta_axis is None or not search.beta_axis.lattice:
        return rounds
    n = len(search.batches)

    def best_at(ib):
        return min((k for k in search.trials if k[0] == ib), key=search.order)

    active = {ib for ib in range(n) if math.isfinite(_score(search.trials[best_at(ib)].steps))}
    while active:
        best = {ib: best_at(ib) for ib in active}
        found, decades, probing = {}, 1, set(active)
        while probing:
            keys = {ib: _probes(search, best[ib], decades) for ib in probing}
            search.lanes([k for ks in keys.values() for k in ks])
            for ib, ks in keys.items():
                better = _better(search, ks, found.get(ib, best[ib]))
                if better is not None:
                    found[ib] = better
            limit = {ib: PROBE_STOP * _score(search.trials[best[ib]].steps) for ib in probing}
            probing = {ib for ib, ks in keys.items() if any(_score(search.trials[k].steps) <= limit[ib] for k in ks)}
            decades += 1
        if found:
            rounds += compass(search, found)
        active = set(found)
    return rounds


def exact_search(method: str, q, batches, tol: float, cap: int, reference: float, power: float, lr_axis: Axis,
                 beta_axis: Axis | None) -> list[Trial]:
    """Every count the exact search asked for, for one method (its `theory` name) on the quadratic ``q``: the grid
    of the axes at every batch, then the compass refinement of each batch's best point on the lattice axes and its
    bracket towards β = 1 (`bracket`)."""
    search = _Search(method, q, np.asarray(batches, float), tol, cap, reference, power, lr_axis, beta_axis)
    search.grid()
    bracket(search)
    return list(search.trials.values())


# -- where a chosen lr or β lies, in words (a noise sweep's report and a net sweep's) --------------------------------


def _points(pairs, axis: str) -> str:
    by_method: dict[str, list] = {}
    for m, x in pairs:
        by_method.setdefault(m, []).append(x)
    name = "B" if axis == "batch" else "d"
    return "; ".join(f"{m} at {name} = {', '.join(f'{x:g}' for x in sorted(xs))}"
                     for m, xs in sorted(by_method.items()))


def edge_lines(chosen: list[dict], axis: str) -> list[str]:
    """What the chosen settings that are not interior mean (``chosen``: one dict per point with method, the axis
    value, beta, lr_place and beta_place: `otod.noise.search.lr_place`, `beta_place`). An lr at its limit is
    within `LIMIT_MARGIN` of the method's stability limit (2/L, 2(1 + β)/L for heavy-ball, in whitened
    coordinates): no larger step is stable, so it is not a failure of the search. β = 0 means no momentum (no
    averaging) is best, the end of β's range [0, 1); β at its other limit is 1 − β = 10⁻¹⁴, where float64 resolves
    no β closer to 1. The end of a given list or of a default grid tried as given may hide a better value beyond
    it."""
    found: dict[tuple, set] = {}
    for r in chosen:
        key = (r["method"], r[axis])
        found.setdefault(("lr", r.get("lr_place")), set()).add(key)
        if r.get("beta_place") == LIMIT:
            found.setdefault(("beta", "zero" if r["beta"] == 0.0 else "floor"), set()).add(key)
        else:
            found.setdefault(("beta", r.get("beta_place")), set()).add(key)
    words = [
        (("lr", LIMIT), "lr* at the stability limit ({}): the chosen lr is the largest tried and within "
         f"{LIMIT_MARGIN:.2g} of the limit (2 × the reference step, 2(1 + β) × it for heavy-ball): no larger "
         "step is stable, so this is the limit itself, not a failure of the search"),
        (("lr", LIST_END), "warning: lr* lies on the edge of the lrs tried ({}): the best step may lie beyond "
         "them; widen --lr-grid"),
        (("lr", GRID_END), "warning: lr* lies on the end of the default lr grid, tried as given ({}): the best "
         "step may lie beyond it; widen it with --lr-grid"),
        (("beta", "zero"), "β* = 0 ({}): no momentum (or no averaging) is best there"),
        (("beta", "floor"), "β* at its limit, 1 − β at the run's float precision (10⁻¹⁴ in float64, 10⁻⁵ in float32) "
         "({}): no β closer to 1 is resolved"),
        (("beta", LIST_END), "warning: β* lies on the edge of --beta ({}): widen --beta"),
        (("beta", GRID_END), "warning: β* lies on the end of the default β list, "
         f"{max(DEFAULT_BETAS):g}, tried as given ({{}}): a longer memory may do better still; give --beta "
         "values closer to 1 (the noise sweep's exact path searches on to β's limit)"),
    ]
    return [text.format(_points(found[key], axis)) for key, text in words if found.get(key)]


def _is_default(values, default: tuple) -> bool:
    return values is not None and len(values) == len(default) and bool(np.allclose(values, default, rtol=1e-12))


def given_lists(config) -> tuple[bool, bool]:
    """(lr, β): whether a sweep's config tried a list as given rather than the default grid (a --lr-grid, a --beta
    list); a sweep without a β axis counts as given."""
    return (not _is_default(config.lr_grid, DEFAULT_LR_GRID),
            not _is_default(dict(config.axes).get("beta"), DEFAULT_BETAS))


def beta_limit(config) -> float:
    """The smallest 1 − β the sweep's precision resolves, where a chosen β is at its limit: the last of the β the
    simulator brackets (`otod.noise.kind.simulated_betas`: 10⁻⁵ in float32), 10⁻¹⁴ in float64 (the exact
    path's `BETA_FLOOR`)."""
    from otod.core.api import beta_floor, beta_ladder

    ladder = beta_ladder(DEFAULT_BETAS, beta_floor(config.resolved.x64))
    return max(1.0 - ladder[-1], BETA_FLOOR) if ladder else BETA_FLOOR


def chosen_places(analysis, uses_beta: tuple[str, ...]) -> list[dict]:
    """Per series point: d, method, the axis value, the chosen lr multiplier (the core summary's rate) and β, the
    median steps there and the chosen absolute step, and where each lies (`otod.noise.search.lr_place`, `beta_place`), from the analysis's edge flags and which lists
    its config gave (`given_lists`)."""
    lr_given, beta_given = given_lists(analysis.config)
    floor = beta_limit(analysis.config)
    return [{"dim": s.dim, "method": s.method, analysis.axis: float(x), "lr_multiplier": rate, "beta": beta,
             "iterations": steps, "learning_rate": lr,
             "lr_place": lr_place(s.method, rate, beta, bool(lr_on), lr_given),
             "beta_place": beta_place(beta, bool(beta_on), beta_given, floor) if s.method in uses_beta
             else None}
            for s in analysis.series
            for x, (rate, beta, lr_on, beta_on, steps, lr) in zip(
                s.x, s.summary[["rate", "beta", "lr_on_edge", "beta_on_edge", "median", "learning_rate"]].itertuples(
                    index=False))]


def edge_warning(analysis, uses_beta: tuple[str, ...]) -> list[str]:
    """`edge_lines` of the analysis's chosen settings (``uses_beta``: the methods that read β): what a noise
    sweep and a net sweep print under their tables."""
    return edge_lines(chosen_places(analysis, uses_beta), analysis.axis)
