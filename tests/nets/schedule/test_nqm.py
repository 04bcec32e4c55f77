"""otod.nets.schedule.nqm: the net's NQM as the schedule search's problem gives the search's own answers on the
same quadratic, and (slow) the NQM read off the digits MLP starts at the net's start loss."""

from __future__ import annotations

import numpy as np
import pytest

from otod.nets.schedule.nqm import NetQuadratic


def test_a_net_quadratic_is_searched_as_the_nqm_it_holds():
    from otod.noise import theory
    from otod.noise.schedule_search import Evaluator, Family, Problem

    problem = Problem(dim=30, target=0.05)
    q = theory.nqm(30, "hessian")
    held = NetQuadratic(tuple(q.h), tuple(q.c), tuple(q.s0), 0.05)
    assert held.reference(held.quadratic()) == problem.reference(q)
    ours, theirs = Evaluator(held), Evaluator(problem)
    for family, point in ((Family("constant", 1), (40, 200)), (Family("batch", 2), (16, 48, 180, 200, 30))):
        assert ours.outcome(family, point) == theirs.outcome(family, point)


@pytest.mark.slow
def test_the_search_finds_the_same_fewest_examples_on_both():
    from otod.noise import theory
    from otod.noise.schedule_search import Evaluator, Problem, fewest_examples

    q = theory.nqm(30, "hessian")
    a = fewest_examples(Evaluator(NetQuadratic(tuple(q.h), tuple(q.c), tuple(q.s0), 0.05)))
    b = fewest_examples(Evaluator(Problem(dim=30, target=0.05)))
    assert (a.point, a.steps, a.examples) == (b.point, b.steps, b.examples)


@pytest.mark.slow
def test_the_digits_nqm_starts_at_the_nets_start_loss():
    from otod.nets.sweep.options import net_config
    from otod.nets.schedule.batch_schedule import start_losses
    from otod.nets.schedule.nqm import BINS, net_quadratic

    spec = net_config().problem
    held = net_quadratic(spec, 0.1)
    start = 0.5 * float(np.dot(held.h, held.s0))
    assert start == pytest.approx(start_losses(spec, 0, 1)[0], rel=1e-9)   # cross-entropy: L_ref = 0
    assert held.target == 0.1 and len(held.h) <= BINS and min(held.h) > 0
