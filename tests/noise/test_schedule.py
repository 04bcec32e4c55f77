"""The exact evaluation of a batch-and-lr schedule on the NQM (`otod.noise.schedule`), against an independent
recursion written here in plain NumPy: per direction i, s ← (1 − η hᵢ^{1−p})² s + η² hᵢ^{−2p} cᵢ / B, one step
at a time (Zhang et al. 2019), the loss ½ Σ h s after every step, the first step at or under the target; and at a
constant schedule, against the exact path's own steps to target (`theory.method_hitting_steps`)."""

import numpy as np
import pytest

from otod.core.errors import OtodError
from otod.noise import theory
from otod.noise.schedule import (BatchSchedule, Phase, constant, doubling_warmup, examples_after, losses,
                                 run_to_target, _PhaseState)


def stepwise(h, c, s0, phases, target, cap, power=0.0):
    """(steps, examples, loss curve) by plain steps: phases [(B, η, n or None)]."""
    s, curve, examples, t = s0.astype(float).copy(), [0.5 * h @ s0], 0.0, 0
    for batch, lr, n in phases:
        x, q = lr * h ** (1 - power), lr * lr * h ** (-2 * power) * c / batch
        for _ in range(cap - t if n is None else n):
            s = (1 - x) ** 2 * s + q
            t += 1
            examples += batch
            curve.append(0.5 * h @ s)
            if curve[-1] <= target:
                return t, examples, np.array(curve)
            if t >= cap:
                return -1, examples, np.array(curve)
    return -1, examples, np.array(curve)


def schedule_of(phases):
    return BatchSchedule(tuple(Phase(b, lr, n) for b, lr, n in phases))


CASES = [  # (phases, target): a warmup, an lr decay, an lr rise after a quiet phase (the loss climbs, then falls)
    ([(4.0, 1.0, 150), (64.0, 1.5, None)], 0.05),
    ([(16.0, 1.9, 300), (16.0, 0.4, None)], 0.035),
    ([(256.0, 0.05, 400), (2.0, 1.9, 5), (512.0, 1.0, None)], 0.01),
    ([(1.0, 1.9, 50), (8.0, 1.2, 50), (32.0, 0.8, None)], 0.04),
]


@pytest.mark.parametrize("phases, target", CASES)
def test_steps_examples_and_loss_curve_match_plain_steps(phases, target):
    """Steps and examples exactly (integers, and sums of the batches), the loss at every step within 1e-12
    relative: the closed form per phase is the recursion's own solution."""
    q = theory.nqm(50)
    cap = 20_000
    steps, examples, curve = stepwise(q.h, q.c, q.s0, phases, target, cap)
    run = run_to_target(q, schedule_of(phases), target, cap)
    assert steps > 0 and (run.steps, run.examples) == (steps, examples)
    assert run.loss == pytest.approx(curve[-1], rel=1e-12)
    t = np.arange(len(curve))
    np.testing.assert_allclose(losses(q, schedule_of(phases), t), curve, rtol=1e-12)
    assert examples_after(schedule_of(phases), steps) == examples


def test_a_crossing_inside_a_phase_whose_loss_rises_is_found():
    """Phase 2 raises the lr at a small batch: the loss climbs off its floor and the phase is not monotone (the
    branch and bound's case); phase 3 crosses. A target the loss passes on the way down in phase 1 is found there
    too; and one only phase 2's dip reaches is found in phase 2 (checked by plain steps)."""
    q = theory.nqm(50)
    phases = [(256.0, 0.05, 400), (2.0, 1.9, 40), (512.0, 1.0, None)]
    _, _, curve = stepwise(q.h, q.c, q.s0, phases, 0.0, 1000)
    assert curve[401:441].max() > curve[400] * 2  # the loss rises in phase 2
    assert _PhaseState(q, Phase(256.0, 0.05, 400), q.s0, 0.0).falling  # phase 1 falls from s₀ = 1 ...
    s400 = theory.sgd_second_moment(400, theory.contraction(q, 0.05), theory.noise_variance(q, 0.05, 256.0), q.s0)
    assert not _PhaseState(q, Phase(2.0, 1.9, 40), s400, 0.0).falling  # ... phase 2 does not from its end
    for target in (float(curve[300]), float(curve[441:].min()) * 1.0001):
        steps, examples, _ = stepwise(q.h, q.c, q.s0, phases, target, 1000)
        assert run_to_target(q, schedule_of(phases), target, 1000)[:2] == (steps, examples)


@pytest.mark.parametrize("batch, lr, power", [(1.0, 0.003398208328942558, 0.0), (64.0, 0.2128751661796372, 0.0),
                                              (1024.0, 1.6348258727451623, 0.0), (4096.0, 1.8666478567836675, 0.0),
                                              (256.0, 0.05, 0.5), (4096.0, 0.3, 0.5), (64.0, 2.5, 0.0)])
def test_a_constant_schedule_takes_the_exact_paths_steps(batch, lr, power):
    """At one batch and lr the count is `theory.method_hitting_steps`'s exactly (the default NQM, d = 10⁴,
    target 0.01, at the exact search's tuned lrs of B = 1, 64, 1024, 4096: 6024935, 95942, 10354 and 7832 steps;
    precond:0.5 at B = 256 and 4096 (6170 and 595); and a diverging lr, not reached by either)."""
    q = theory.nqm(10_000)
    method = "sgd" if power == 0 else "precond"
    expected = int(theory.method_hitting_steps(method, q, [lr], [batch], 0.01, 10 ** 8, power=power)[0, 0])
    run = run_to_target(q, constant(batch, lr), 0.01, 10 ** 8, power)
    assert run.steps == expected
    if (batch, lr) in ((256.0, 0.05), (4096.0, 0.3)):
        assert expected == {256.0: 6170, 4096.0: 595}[batch]
    assert run.examples == batch * expected if expected > 0 else run.diverged
    if (batch, lr) == (1024.0, 1.6348258727451623):
        assert expected == 10354


def test_unreached_and_diverged():
    q = theory.nqm(100)
    floor = run_to_target(q, constant(1.0, 1.9), 0.01, 10_000)  # the floor ½ Σ h η/(B(2 − ηh)) is far above
    assert floor.steps == -1 and not floor.diverged and floor.examples == 10_000
    blown = run_to_target(q, constant(64.0, 2.5), 0.01, 10_000)  # past the stability limit 2/max h
    assert blown.steps == -1 and blown.diverged


def test_doubling_warmup_doubles_to_the_final_batch():
    s = doubling_warmup(16, 100, 50, 1.5)
    assert [p.batch for p in s.phases] == [16, 32, 64, 100] and [p.steps for p in s.phases] == [50, 50, 50, None]
    assert examples_after(s, 160) == 50 * (16 + 32 + 64) + 10 * 100


@pytest.mark.parametrize("phases, fragment", [((), "at least one phase"), (((0.5, 1.0, None),), "batch 0.5"),
                                              (((4.0, 0.0, None),), "learning rate 0"),
                                              (((4.0, 1.0, None), (8.0, 1.0, None)), "needs its steps"),
                                              (((4.0, 1.0, 10),), "give it no steps"),
                                              (((4.0, 1.0, -1), (8.0, 1.0, None)), "steps -1")])
def test_a_bad_schedule_is_refused(phases, fragment):
    with pytest.raises(OtodError, match=fragment):
        schedule_of(phases)
