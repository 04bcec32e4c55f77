"""The schedule search (`otod.noise.schedule_search`) against a brute force over small grids of schedules: every
schedule of the grid is run here by an independent plain-NumPy recursion (all schedules at once, one step at a
time: s ← (1 − η h)² s + η² c / B per direction, Zhang et al. 2019), the best within the examples budget is the
one with the fewest steps, then the fewest examples; the search, confined to the same grid (`Evaluator.box`,
``unit``), must end on it. And on a small NQM the three families' optima are nested (batch ≤ lr schedule ≤
constant) with every coordinate interior or at a true limit."""

import itertools
import math

import numpy as np
import pytest

from otod.core.analysis import INTERIOR, LIMIT
from otod.noise import schedule_search as ss

DIM, TARGET, CAP = 30, 0.05, 3000
#: The grid: every 16th lattice index in each box (B = 1, 4, 16, 64, 256; lr multipliers 0.1 … 1.99 of 1/max h
#: in 11 steps; lengths 16 … 4096 in 5).
BOX = {"b": (0, 64), "i": (-64, 96), "k": (32, 96)}
UNIT = 16


def plain_counts(phases_list, budget=None):
    """(steps, examples) of schedules [(B, η, n or None) per phase] by plain steps, all schedules at once; with a
    ``budget``, only until the first step at which a schedule within it reaches the target (the brute force's
    best is among those: no later step is fewer), the others left at −1."""
    h = 1.0 / np.arange(1, DIM + 1)
    n = len(phases_list)
    s = np.ones((n, DIM))
    steps = np.full(n, -1)
    examples = np.zeros(n)
    k = len(phases_list[0])
    batch = np.array([[p[j][0] for j in range(k)] for p in phases_list])
    lr = np.array([[p[j][1] for j in range(k)] for p in phases_list])
    ends = np.cumsum([[p[j][2] if p[j][2] is not None else CAP for j in range(k)] for p in phases_list], axis=1)
    rows = np.arange(n)
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(1, CAP + 1):
            phase = np.minimum((t - 1 >= ends).sum(axis=1), k - 1)
            b, eta = batch[rows, phase], lr[rows, phase]
            s = (1 - eta[:, None] * h) ** 2 * s + eta[:, None] ** 2 * h / b[:, None]
            open_ = steps < 0
            examples[open_] += b[open_]
            hit = open_ & (0.5 * s @ h <= TARGET)
            steps[hit] = t
            if budget is not None and (hit & (examples <= budget)).any():
                break
    return steps, examples


def grid_points(family):
    axes = [range(BOX[name[0]][0], BOX[name[0]][1] + 1, UNIT) for name in family.coordinates()]
    return list(itertools.product(*axes))


def phases_of(family, points):
    return [[(p.batch, p.lr, p.steps) for p in ss.schedule_at(family, pt, 1.0).phases] for pt in points]


def brute_force(family, budget):
    """The grid's best (steps, examples) within the budget: the fewest steps, then the fewest examples."""
    points = grid_points(family)
    steps, examples = plain_counts(phases_of(family, points), budget)
    ok = (steps > 0) & (examples <= budget)
    best = min(np.flatnonzero(ok), key=lambda j: (steps[j], examples[j]))
    return steps[best], examples[best], points


def budget_of():
    """Twice the fewest examples of the constant grid (brute force)."""
    points = grid_points(ss.Family("constant", 1))
    steps, examples = plain_counts(phases_of(ss.Family("constant", 1), points))
    return 2 * examples[steps > 0].min()


@pytest.fixture(scope="module")
def budget():
    return budget_of()


@pytest.mark.parametrize("kind", ["constant", "lr-decay", pytest.param("batch", marks=pytest.mark.slow)])
def test_the_search_finds_the_brute_force_optimum_of_a_small_grid(kind, budget):
    """The search's families confined to the grid (`search_families`, as `best` runs them, up to ``kind``): the
    constant grid has 5·11 schedules, the lr-decay grid 5·11·11·5 = 3025, the batch grid 15125 (slow); the search
    must end at the grid's best steps and examples."""
    evaluator = ss.Evaluator(ss.Problem(DIM, "hessian", TARGET, CAP), budget, box=BOX, unit=UNIT)
    optima = ss.search_families(evaluator, 2, kinds=(kind,))
    family = ss.Family(kind, 1 if kind == "constant" else 2)
    steps, examples, points = brute_force(family, budget)
    # the evaluation agrees with the plain steps on 100 grid points (all of them run to the cap)
    sample = points[:: max(1, len(points) // 100)]
    plain_steps, plain_examples = plain_counts(phases_of(family, sample))
    assert [evaluator.outcome(family, p).steps for p in sample] == list(plain_steps)
    assert (plain_steps > 0).any() and (plain_steps < 0).any()
    found = optima[kind]
    assert (found.steps, found.examples) == (steps, pytest.approx(examples, rel=1e-12))


def test_e_min_is_the_brute_force_fewest_examples_of_the_constant_grid():
    """`fewest_examples` confined to the grid: the fewest examples of any constant schedule on it (then the
    fewest steps), as the plain steps find them."""
    family = ss.Family("constant", 1)
    points = grid_points(family)
    steps, examples = plain_counts(phases_of(family, points))
    best = min(np.flatnonzero(steps > 0), key=lambda j: (examples[j], steps[j]))
    evaluator = ss.Evaluator(ss.Problem(DIM, "hessian", TARGET, CAP), box=BOX, unit=UNIT)
    found = ss.fewest_examples(evaluator)
    assert (found.examples, found.steps) == (examples[best], steps[best])


@pytest.mark.slow  # 4 s
def test_the_families_are_nested_and_their_optima_interior():
    """On the NQM d = 100, target 0.05, budget 2 E_min: batch schedule ≤ lr schedule ≤ constant batch in serial
    steps, every family within the budget, every coordinate interior or at a true limit (measured: 67, 47, 42
    steps, every coordinate interior; the batch schedule took 43 before `quench_starts`)."""
    comparison = ss.best(ss.Problem(100, "hessian", 0.05, 10 ** 6), 2.0, 2)
    steps = [comparison.optima[k].steps for k in ss.FAMILIES]
    assert 0 < steps[2] <= steps[1] <= steps[0]
    assert steps == [67, 47, 42]
    for o in comparison.optima.values():
        assert o.examples <= comparison.budget
        assert set(o.places.values()) <= {INTERIOR, LIMIT}, o.places
