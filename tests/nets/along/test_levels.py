"""Checkpoints spaced by loss (`otod.nets.along.levels`): the first-crossing rule on known traces, the traced mean
against a loss trace computed independently by the hand-written reference loop, and the one-line refusals of a
level never reached and of a diverged run."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import otod.nets  # noqa: F401  (registers the net sweep)
from otod.core.errors import OtodError
from otod.nets.along import levels as branch_levels
from otod.nets.along.branching import Branching
from tests.nets.lanes import plain_sgd

jax = pytest.importorskip("jax")

MODEL = "tests/fixtures/models/plain_jax.py:mlp"


def test_the_checkpoint_of_a_level_is_the_first_step_at_or_below_it():
    """Trace 3, 2, 2.5, 1, 0.5: level 2.5 → step 1 (not 2, where the trace comes back up to it), 2 → 1 (≤, not
    <), 0.7 → 4, 5 (above the start) → 0, 0.1 → never; a NaN never counts as reached."""
    trace = [3.0, 2.0, 2.5, 1.0, 0.5]
    assert branch_levels.first_steps(trace, (2.5, 2.0, 0.7, 5.0, 0.1)) == (1, 1, 4, 0, None)
    assert branch_levels.first_steps([3.0, np.nan, 1.0], (2.0,)) == (2,)


def config(**kw):
    from otod.nets.sweep.options import net_config

    options = dict(model=MODEL, batch="8,16,32", seeds=2)
    options.update(kw)
    return net_config(**options)


def test_resolving_levels_gives_distinct_steps_and_each_levels_step(monkeypatch):
    """A net (digits' first 64 images, width 8), the mean trace given (3, 2, 1.5, 1, 0.5, …), levels 2.9, 2.5, 1.2, 1.1 fall on steps 1, 1, 3, 3:
    two checkpoints (1 and 3), and each level keeps its step in ``reached``."""
    monkeypatch.setattr(branch_levels, "trace_seconds", lambda spec, steps: 0.0)  # no flop count compiled
    monkeypatch.setattr(branch_levels, "mean_trace", lambda spec, starts, lowest: np.array([3, 2, 1.5, 1, 0.5]))
    b = branch_levels.resolve_levels(config(model="mlp", width="8", examples="64"), Branching((), 16, 0.1, 0.5, (2.9, 2.5, 1.2, 1.1)))
    assert b.steps == (1, 3)
    assert b.reached == ((2.9, 1), (2.5, 1), (1.2, 3), (1.1, 3))
    assert branch_levels.describe_level(b, 3) == " (first step where the mean training loss ≤ 1.2, 1.1)"
    assert branch_levels.describe_level(Branching((0, 5)), 5) == ""


def test_a_level_never_reached_and_a_diverged_run_are_refused_in_one_line(monkeypatch):
    """The lowest mean and its step are named where a level is not reached within the cap; a trace that turns
    non-finite is named as a divergence at its first non-finite step."""
    b = Branching((), 16, 0.1, 0.5, (0.01,))
    monkeypatch.setattr(branch_levels, "trace_seconds", lambda spec, steps: 0.0)
    monkeypatch.setattr(branch_levels, "mean_trace", lambda spec, starts, lowest: np.array([3, 2, 0.4, 0.6]))
    with pytest.raises(OtodError) as info:
        branch_levels.resolve_levels(config(model="mlp", width="8", examples="64"), b)
    text = str(info.value)
    assert "\n" not in text and text.startswith("--branch-at loss:0.01: the mean training loss of the 2 seeds'")
    assert "reached 0.4 at best (step 2) in 4 steps, never 0.01" in text
    monkeypatch.setattr(branch_levels, "mean_trace", lambda spec, starts, lowest: np.array([3, 9, np.inf, np.nan]))
    with pytest.raises(OtodError, match="diverged at step 2 before reaching 0.01"):
        branch_levels.resolve_levels(config(model="mlp", width="8", examples="64"), b)


@pytest.mark.slow
def test_the_traced_mean_crosses_each_level_where_an_independent_loop_says(monkeypatch):
    """Two seeds of the plain-JAX fixture model, SGD at B_ref = 16, η = 0.05: the full training loss of each seed's
    run, step by step, from the hand-written loop (`tests.nets.lanes.plain_sgd`, one call over all examples);
    their mean over seeds L̄(t) for t < 60. Levels placed halfway between a new running minimum of L̄ and the
    minimum before it have a known first crossing; the package's traced mean (blocks of 20 steps, a cap of 60)
    finds those steps, and agrees with the independent trace to float32 rounding (1e-5 relative)."""
    from otod.nets.model.model_problem import seed_starts

    monkeypatch.setattr(branch_levels, "BLOCK", 20)
    monkeypatch.setattr(branch_levels, "MAX_REFERENCE_STEPS", 60)
    branch_levels._tracer.cache_clear()
    c = config(seeds=2)
    spec = dataclasses.replace(c.problem, branch_step=0, branch_batch=16, branch_lr=0.05)
    traces = []
    for s in range(2):
        drawn = seed_starts(spec, np.random.default_rng([0, s]))
        traces.append(plain_sgd(spec, drawn["params"], drawn["shuffle"], 60, 16, 0.05, trace=True)[1])
    expected = np.mean(traces, axis=0)
    record = [t for t in range(1, 60) if expected[t] < expected[:t].min()]
    picks = [record[len(record) // 4], record[len(record) // 2], record[-1]]
    levels = tuple(0.5 * (expected[t] + expected[:t].min()) for t in picks)
    assert all(expected[:t].min() - expected[t] > 1e-4 * expected[t] for t in picks)  # no float32 tie
    starts = [branch_levels.seed_start(spec, np.random.default_rng([0, s])) for s in range(2)]
    traced = branch_levels.mean_trace(spec, starts, 0.0)
    assert len(traced) == 60 and traced == pytest.approx(expected, rel=1e-5)
    got = branch_levels.resolve_levels(c, Branching((), 16, 0.05, 0.5, tuple(sorted(levels, reverse=True))))
    assert got.steps == tuple(sorted(picks))
    branch_levels._tracer.cache_clear()
