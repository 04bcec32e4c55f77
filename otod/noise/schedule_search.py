"""The schedule of batch and learning rate that reaches a target loss on the exact NQM in the fewest serial steps
within an examples budget, against the best constant batch and the best learning-rate schedule at one batch.

**Why a budget.** With the batch free, serial steps only fall as the batch grows (at the same lr a larger batch
only removes noise), so the fewest steps are the deterministic limit at infinite batch. What a batch schedule buys
is steps at a given cost in examples (Smith, Kindermans, Ying & Le 2017, "Don't decay the learning rate, increase
the batch size": the same epochs in fewer updates; Merrill et al. 2025, a batch warmup reaching OLMo-1B's loss in
43% fewer steps on the same tokens). So every family here minimises the serial steps to the target subject to
examples Σ_t B_t ≤ E, the budget; the default E is twice E_min, the fewest examples of any constant batch B ≥ 1
(lr tuned): McCandlish, Kaplan, Amodei et al. 2018's operating point S = 2 S_min, E = 2 E_min, where a constant batch
sits at the critical batch.

**The families searched** (K phases, `Family`), each a `otod.noise.schedule.BatchSchedule`:

* ``constant``: one batch B and one lr η;
* ``lr-decay``: one batch B, K phases of their own lr η_k (the first K − 1 of n_k steps each): a step schedule of
  the lr at constant batch (the search may choose any lr per phase; on the NQM it chooses a decay);
* ``batch``: K phases of their own batch B_k and lr η_k (the first K − 1 of n_k steps each): a batch schedule
  (the search may choose any batch per phase; on the NQM it chooses a warmup).

They are nested (constant ⊂ lr-decay ⊂ batch at the same K), so each family's best is at least as good as the
one before it wherever the search finds the optimum. K = 2 is what ``otod nqm-schedule`` searches; K = 3 costs
far more (the polls grow with the pairs of 8 coordinates; measured on d = 100, target 0.05, 2 E_min: 111 s and
87k schedules for the batch family, against 4 s for K = 2; steps 67, 46, 42 against 67, 47, 42).

**The lattice.** B = 2^(b/8) (b ≥ 0: 9% apart, B = 1 its true limit), the lr as `otod.noise.search`'s lattice of
fractions of the stability limit 2/max h^{1−p} (its index i up to `search.LR_INDEX_RANGE`'s top, the limit itself
to within 2·10⁻⁸), a phase's length n = round(2^(k/8)) (k ≥ 0: n = 1, a phase of one step, is its true limit).

**The search** (`best`): a coarse grid of the constant family; then for each family a compass search (Kolda, Lewis &
Torczon 2003) from the best point of the family nested in it and from the constant's (`nested_start`), from the
three best points of a coarse grid around each (`grid_starts`), and for the batch family from the two best
quench-shaped starts (`quench_starts`): it polls ±s along every coordinate and every pair of coordinates (the pairs
move along the budget's edge, where one coordinate alone only leaves it), moves to the best point better in (fewer
steps, then fewer examples), and halves s after a poll finds nothing better, until a poll at s = 1 finds nothing
better. The lattice has no edge but the true limits, so a search that starts at a grid's edge walks past it; the
answer is a local optimum on the lattice: every neighbour at one unit, alone and in pairs, was tried and is not
better, and so is every pair of coordinates moved together up to ±4 steps of 8 units (`wide_poll`). It is not proven
a global optimum: the counts have several local optima on the lattice, in basins that a greedy poll leaves (measured
on d = 1000 at 2 E_min: without the quench-shaped starts the batch family's answer was B 1218 × 724 steps at lr
1.99, then B 8192 at lr 1, 725 steps; with them it is B 861 × 664 at lr 1.997, then B 8192 at lr 1.635, 705 steps,
and a compass started a few units off that point climbs to the first batch 1218 and ends at 726). The tests check it
against a brute force over small grids of schedules, where it finds the grid's best. `Optimum.places` says, per
coordinate, whether it is interior (tried on both sides), at a true limit, or unused (its phase never reached).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

import numpy as np

from otod.core.api import INTERIOR, LIMIT, OtodError
from otod.noise import search, theory
from otod.noise.schedule import BatchSchedule, Phase, run_to_target

FAMILIES = ("constant", "lr-decay", "batch")
#: Lattice points per octave of the batch and of a phase's length.
PER_OCTAVE = 8
#: The batch lattice's top, 2^40: a lattice end, far beyond any budget a user gives.
BATCH_INDEX_TOP = 40 * PER_OCTAVE
#: Where a coordinate of an optimum lies when it is neither interior nor at a true limit: on the edge of a box a
#: caller narrowed the lattice to (`Evaluator.box`), where the best may lie beyond.
EDGE = "edge"
#: A coordinate of a phase the schedule never reaches (the target comes first).
UNUSED = "unused"
#: The compass's first step, in lattice units: two octaves of the batch and of a length, and 10^(1/4) in the lr.
START_STEP = 16


@dataclass(frozen=True)
class Family:
    """Which schedules are searched: ``kind`` (one of `FAMILIES`) over ``phases`` phases (1 for constant)."""

    kind: str
    phases: int = 2

    def coordinates(self) -> tuple[str, ...]:
        """The lattice coordinates' names, in order: batch indices b, lr indices i, length indices k."""
        k = 1 if self.kind == "constant" else self.phases
        batches = 1 if self.kind in ("constant", "lr-decay") else k
        return (tuple(f"b{j}" for j in range(batches)) + tuple(f"i{j}" for j in range(k))
                + tuple(f"k{j}" for j in range(k - 1)))


@dataclass(frozen=True)
class Problem:
    """The NQM the schedules run on (`theory.nqm`), the target loss, the step cap and the preconditioner power p."""

    dim: int = 10_000
    noise: str = "hessian"
    target: float = 0.01
    max_steps: int = 10 ** 8
    power: float = 0.0

    def quadratic(self) -> theory.Quadratic:
        return theory.nqm(self.dim, self.noise)

    def reference(self, q: theory.Quadratic) -> float:
        """The reference step 1/max h^{1−p}; the lr lattice is fractions of twice it (the stability limit)."""
        return float(1.0 / np.max(q.h ** (1.0 - self.power)))


def batch_of(b: int) -> float:
    return float(2.0 ** (b / PER_OCTAVE))


def length_of(k: int) -> int:
    return int(round(2.0 ** (k / PER_OCTAVE)))


def lr_of(i: int, reference: float) -> float:
    return float(search.fraction(i * search.LR_UNIT)) * 2.0 * reference


def bounds(name: str, max_steps: int) -> tuple[int, int]:
    """The lattice range of a coordinate: b ∈ [0, `BATCH_INDEX_TOP`], i ∈ `search.LR_INDEX_RANGE`, k from 0 to the
    cap."""
    if name[0] == "b":
        return 0, BATCH_INDEX_TOP
    if name[0] == "i":
        return search.LR_INDEX_RANGE
    return 0, int(math.floor(PER_OCTAVE * math.log2(max_steps)))


def schedule_at(family: Family, point: tuple[int, ...], reference: float) -> BatchSchedule:
    """The schedule at a lattice point of ``family`` (coordinates as `Family.coordinates` names them)."""
    named = dict(zip(family.coordinates(), point))
    k = 1 if family.kind == "constant" else family.phases
    phases = []
    for j in range(k):
        b = named.get(f"b{j}", named["b0"])
        steps = length_of(named[f"k{j}"]) if j < k - 1 else None
        phases.append(Phase(batch_of(b), lr_of(named[f"i{j}"], reference), steps))
    return BatchSchedule(tuple(phases))


class Outcome(NamedTuple):
    steps: int
    examples: float


class Optimum(NamedTuple):
    """A family's best schedule: its lattice point, the schedule, its steps and examples, where each coordinate
    lies (`INTERIOR` or `LIMIT`), and the schedules evaluated."""

    family: Family
    point: tuple[int, ...]
    schedule: BatchSchedule
    steps: int
    examples: float
    places: dict
    evaluated: int


@dataclass
class Evaluator:
    """Counts of schedules on one problem, cached by (family, point); ``budget`` the examples allowed (∞: none).
    ``box`` narrows the lattice (coordinate-name prefix b, i or k → (low, high) indices) and ``unit`` spaces it
    (every unit-th index): what a test's brute force over a small grid of schedules searches too."""

    problem: Problem
    budget: float = math.inf
    cache: dict = field(default_factory=dict)
    box: dict = field(default_factory=dict)
    unit: int = 1
    #: order by examples first (E_min's search, `fewest_examples`) instead of steps
    fewest_examples: bool = False

    def limits(self, family: Family) -> list[tuple[int, int]]:
        return [self.box.get(name[0], bounds(name, self.problem.max_steps)) for name in family.coordinates()]

    def __post_init__(self):
        self.q = self.problem.quadratic()
        self.ref = self.problem.reference(self.q)

    def outcome(self, family: Family, point: tuple[int, ...]) -> Outcome:
        key = (family, point)
        if key not in self.cache:
            p = self.problem
            run = run_to_target(self.q, schedule_at(family, point, self.ref), p.target, p.max_steps, p.power)
            self.cache[key] = Outcome(run.steps, run.examples)
        return self.cache[key]

    def order(self, family: Family, point: tuple[int, ...]) -> tuple:
        """The selection order: the schedules within the budget by fewer steps, then fewer examples; after them
        those over it by fewer examples (so that a search started over the budget walks back into it), and last
        those that never reach the target; the point itself breaks ties."""
        o = self.outcome(family, point)
        if o.steps < 0:
            return (2, math.inf, math.inf, point)
        if self.fewest_examples:
            return (0, o.examples, o.steps, point)
        if o.examples > self.budget:
            return (1, o.examples, o.steps, point)
        return (0, o.steps, o.examples, point)


def _neighbours(point: tuple[int, ...], step: int, limits: list[tuple[int, int]]) -> list[tuple[int, ...]]:
    """±step along every coordinate and every pair of coordinates, clipped to the limits."""
    n = len(point)
    moves = [{j: s} for j in range(n) for s in (step, -step)]
    moves += [{j: s, m: r} for j, m in itertools.combinations(range(n), 2) for s in (step, -step)
              for r in (step, -step)]
    out = []
    for move in moves:
        new = tuple(min(max(v + move.get(j, 0), limits[j][0]), limits[j][1]) for j, v in enumerate(point))
        if new != point and new not in out:
            out.append(new)
    return out


def compass(evaluator: Evaluator, family: Family, start: tuple[int, ...], step: int = START_STEP) -> tuple:
    """The compass search of the module docstring from ``start`` (clipped to the lattice): returns the local
    optimum's point. Steps are multiples of the evaluator's unit; the last poll is at one unit."""
    limits = evaluator.limits(family)
    unit = evaluator.unit
    here = tuple(lo + unit * round((min(max(v, lo), hi) - lo) / unit) for v, (lo, hi) in zip(start, limits))
    step = max(unit, unit * (step // unit))
    while True:
        best = min(_neighbours(here, step, limits), key=lambda p: evaluator.order(family, p))
        if evaluator.order(family, best) < evaluator.order(family, here):
            here = best
        elif step > unit:
            step = max(unit, unit * (step // (2 * unit)))
        else:
            return here


#: The wide poll (`wide_poll`): every pair of coordinates moved together on a grid of ±`WIDE_REACH` steps of
#: `WIDE_STEP` lattice units (up to ± 4 octaves of a batch or length, a factor up to 10^(1/2) in the lr).
WIDE_STEP, WIDE_REACH = 8, 4


def wide_poll(evaluator: Evaluator, family: Family, point: tuple[int, ...]) -> tuple[int, ...] | None:
    """The best point better than ``point`` on a coarse grid of every pair of coordinates around it (`WIDE_STEP`,
    `WIDE_REACH`), or None: the compass's polls reach one step away, and the counts have further local optima
    (measured on d = 1000, budget 2 E_min: they do not all lie within a pair's reach; module docstring)."""
    limits = evaluator.limits(family)
    step = max(evaluator.unit, evaluator.unit * (WIDE_STEP // evaluator.unit))
    offsets = [step * r for r in range(-WIDE_REACH, WIDE_REACH + 1)]
    pairs = itertools.combinations(range(len(point)), 2) if len(point) > 1 else [(0, 0)]
    candidates = []
    for j, m in pairs:
        for u, v in itertools.product(offsets, offsets if m != j else [0]):
            new = list(point)
            new[j] = min(max(new[j] + u, limits[j][0]), limits[j][1])
            new[m] = min(max(new[m] + v, limits[m][0]), limits[m][1])
            candidates.append(tuple(new))
    best = min(candidates, key=lambda p: evaluator.order(family, p))
    return best if evaluator.order(family, best) < evaluator.order(family, point) else None


def local_optimum(evaluator: Evaluator, family: Family, start: tuple[int, ...]) -> tuple[int, ...]:
    """The compass from ``start``, then the wide poll around where it stopped, the compass again from anything
    better it finds, until the wide poll finds nothing better."""
    here = compass(evaluator, family, start)
    while (better := wide_poll(evaluator, family, here)) is not None:
        here = compass(evaluator, family, better)
    return here


def places(evaluator: Evaluator, family: Family, point: tuple[int, ...]) -> dict:
    """Per coordinate: `UNUSED` where its phase is never reached (the target comes first: nothing depends on it),
    `LIMIT` on a true limit (B = 1, the lr at its stability limit, a phase of one step), `INTERIOR` where it was
    tried one unit to both sides (the compass's last poll) and neither is better, else `EDGE`."""
    out = {}
    true = [bounds(name, evaluator.problem.max_steps) for name in family.coordinates()]
    limits, unit = evaluator.limits(family), evaluator.unit
    schedule = schedule_at(family, point, evaluator.ref)
    steps = evaluator.outcome(family, point).steps
    starts = np.concatenate([[0], np.cumsum([p.steps for p in schedule.phases[:-1]])]) if steps >= 0 else None
    for j, (name, (lo, hi)) in enumerate(zip(family.coordinates(), limits)):
        v = point[j]
        phase = int(name[1:])
        if starts is not None and family.kind != "constant" and not (name == "b0" and family.kind == "lr-decay") \
                and starts[phase] >= steps:
            out[name] = UNUSED
            continue
        if (name[0] in "bk" and v == true[j][0]) or (name[0] == "i" and v == true[j][1]):
            out[name] = LIMIT
            continue
        sides = [point[:j] + (w,) + point[j + 1:] for w in (v - unit, v + unit)]
        better = [evaluator.order(family, p) < evaluator.order(family, point) for p in sides]
        out[name] = INTERIOR if not any(better) and lo < v < hi else EDGE
    return out


def optimum(evaluator: Evaluator, family: Family, starts: list[tuple[int, ...]]) -> Optimum:
    """The best of the local optima (`local_optimum`) reached from ``starts``, with where its coordinates lie."""
    ends = [local_optimum(evaluator, family, s) for s in dict.fromkeys(starts)]
    point = min(ends, key=lambda p: evaluator.order(family, p))
    o = evaluator.outcome(family, point)
    return Optimum(family, point, schedule_at(family, point, evaluator.ref), o.steps, o.examples,
                   places(evaluator, family, point), len(evaluator.cache))


def constant_grid(evaluator: Evaluator, spacing: int = 16) -> list[tuple[int, int]]:
    """The constant family's coarse grid: B = 1, 4, 16, ... up to 2^20 and lrs 10^(1/4) apart across the stable
    range (every 16th lattice index from 2u = 10⁻⁶ up to 1 − u = 10⁻³·⁷⁵), inside the evaluator's box (its
    centre where none is)."""
    batches = range(0, 20 * PER_OCTAVE + 1, spacing)
    rates = range(-384, search.LR_INDEX_RANGE[1] // 2, spacing)
    limits = evaluator.limits(Family("constant", 1))
    grid = [(b, i) for b in batches for i in rates if all(lo <= v <= hi for v, (lo, hi) in zip((b, i), limits))]
    return grid or [tuple((lo + hi) // 2 for lo, hi in limits)]


def fewest_examples(evaluator: Evaluator) -> Optimum:
    """E_min: the constant batch (lr tuned) with the fewest examples to the target, by the compass on the order
    (examples, steps) from the coarse grid's three best batches, each at its best lr (no budget)."""
    family = Family("constant", 1)
    by_examples = Evaluator(evaluator.problem, math.inf, evaluator.cache, evaluator.box, evaluator.unit,
                            fewest_examples=True)
    order = by_examples.order
    grid = constant_grid(by_examples)
    best_per_batch = {}
    for p in grid:  # B·S(B) is nearly flat at small B: a start at every batch of the grid
        if p[0] not in best_per_batch or order(family, p) < order(family, best_per_batch[p[0]]):
            best_per_batch[p[0]] = p
    starts = sorted(best_per_batch.values(), key=lambda p: order(family, p))[:3]
    return optimum(by_examples, family, starts)


def nested_start(family: Family, inner: Optimum) -> tuple[int, ...]:
    """The optimum of the family nested in ``family`` (constant in lr-decay, lr-decay in batch) written in it:
    every phase at its batch, with the lrs and lengths it has (from a constant, lengths splitting its steps
    evenly)."""
    named = dict(zip(inner.family.coordinates(), inner.point))
    k = family.phases
    even = int(round(PER_OCTAVE * math.log2(max(1.0, inner.steps / k))))
    lrs = [named.get(f"i{j}", named["i0"]) for j in range(k)]
    lengths = [named.get(f"k{j}", even) for j in range(k - 1)]
    batches = [named["b0"]] * (1 if family.kind == "lr-decay" else k)
    return (*batches, *lrs, *lengths)


#: The coarse grid around a nested start, in lattice units per coordinate kind, for 2 phases and for more: the
#: batch ±2 and ±4 octaves, the lr ±10^(1/4), a length ±1 octave.
GRID_OFFSETS = {2: {"b": (-32, -16, 0, 16, 32), "i": (-16, 0, 16), "k": (-8, 0, 8)},
                3: {"b": (-32, 0, 32), "i": (-16, 0), "k": (-8, 0, 8)}}


def grid_starts(evaluator: Evaluator, family: Family, center: tuple[int, ...], count: int = 3) -> list[tuple]:
    """The ``count`` best points of a coarse grid around ``center`` (`GRID_OFFSETS`), and ``center``: the
    compass's starts."""
    offsets = GRID_OFFSETS[min(family.phases, 3)]
    limits = evaluator.limits(family)
    axes = [sorted({min(max(c + o, lo), hi) for o in offsets[name[0]]})
            for c, name, (lo, hi) in zip(center, family.coordinates(), limits)]
    points = list(itertools.product(*axes))
    return sorted(points, key=lambda p: evaluator.order(family, p))[:count] + [center]


def quench_starts(evaluator: Evaluator, family: Family, decay: Optimum, constant: Optimum, count: int = 2) -> list:
    """Starts of the batch family in the shape of a quench: the constant's batch at the lr schedule's first lr for
    a fraction 0.5, 0.55, ..., 0.9 of the constant's steps, then 2, 3 or 4 octaves more batch at the constant's
    lr; the ``count`` best of them. Measured on d = 1000 at 2 E_min: the other starts' compass ends at 725 steps
    (B 1218 × 724 at lr 1.992, then B 8192 at lr 1), while from the start at 0.64 of the constant's steps it ends
    at 705 (B 861 × 664 at lr 1.997, then B 8192 at lr 1.635), a basin the others never enter."""
    d = dict(zip(decay.family.coordinates(), decay.point))
    b, i = constant.point
    k = family.phases
    points = []
    for fraction in np.arange(0.5, 0.9001, 0.05):
        length = int(round(PER_OCTAVE * math.log2(max(1.0, fraction * constant.steps / (k - 1)))))
        for octaves in (2, 3, 4):
            points.append((*[b] * (k - 1), b + octaves * PER_OCTAVE, *[d[f"i{j}"] for j in range(k - 1)], i,
                           *[length] * (k - 1)))
    limits = evaluator.limits(family)
    points = [tuple(min(max(v, lo), hi) for v, (lo, hi) in zip(p, limits)) for p in points]
    return sorted(dict.fromkeys(points), key=lambda p: evaluator.order(family, p))[:count]


class Comparison(NamedTuple):
    """The three families' optima under one budget, and E_min that sets it."""

    problem: Problem
    budget: float
    fewest: Optimum
    optima: dict


def best(problem: Problem = Problem(), budget_factor: float = 2.0, phases: int = 2,
         progress: Callable[[str], None] | None = None) -> Comparison:
    """The best constant batch, lr schedule at constant batch and batch schedule (K = ``phases``) on ``problem``
    within ``budget_factor`` × E_min examples (module docstring)."""
    say = progress or (lambda text: None)
    evaluator = Evaluator(problem)
    fewest = fewest_examples(evaluator)
    if fewest.steps < 0:
        raise OtodError(f"no constant batch reaches the target {problem.target:g} within {problem.max_steps} steps "
                        "(--max-iters); raise the cap or the target, e.g. --max-iters 100000000")
    say(f"E_min {fewest.examples:.4g} examples (constant B {fewest.schedule.phases[0].batch:.4g})")
    evaluator = Evaluator(problem, budget_factor * fewest.examples, evaluator.cache)
    optima = search_families(evaluator, phases, [fewest.point], say)
    return Comparison(problem, evaluator.budget, fewest, optima)


def search_families(evaluator: Evaluator, phases: int = 2, extra: list | None = None,
                    say: Callable[[str], None] = lambda text: None, kinds: tuple = FAMILIES) -> dict:
    """Each family's optimum within the evaluator's budget (and box): the constant from the coarse grid's three
    best points (and ``extra`` starts), then lr-decay and batch from the nested starts and the grids around them
    (module docstring); only up to the last of ``kinds``."""
    constant_family = Family("constant", 1)
    grid = constant_grid(evaluator)
    starts = sorted(grid, key=lambda p: evaluator.order(constant_family, p))[:3] + list(extra or [])
    optima = {"constant": optimum(evaluator, constant_family, starts)}
    say(f"constant: {optima['constant'].steps} steps")
    inner = optima["constant"]
    for kind in FAMILIES[1:FAMILIES.index(kinds[-1]) + 1]:
        family = Family(kind, phases)
        centers = list(dict.fromkeys([nested_start(family, inner), nested_start(family, optima["constant"])]))
        starts = [p for c in centers for p in grid_starts(evaluator, family, c)]
        if kind == "batch":
            starts += quench_starts(evaluator, family, inner, optima["constant"])
        optima[kind] = optimum(evaluator, family, starts)
        inner = optima[kind]
        say(f"{kind}: {optima[kind].steps} steps")
    return optima
