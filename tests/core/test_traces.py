"""The trace → steps rule (`otod.core.traces`): steps to a target are the first checkpoint whose value is ≤ it, in
the run's precision; a trace written to a record reads back as the same numbers; the checkpoints are the ones a
split dynamics reads at; the replay of one point's lanes prunes, stalls and censors as the engine does."""

from __future__ import annotations

import numpy as np
import pytest

from otod.core.errors import OtodError
from otod.core.stopping import Target
from otod.core.retarget import Replay, below_target
from otod.core.traces import checkpoints, steps_to, trace_lists


def net_like_checks(t):
    """Every iteration up to 32, then 2^(⌊log₂ t⌋ − 5) apart (the net family's rule), one scalar t at a time."""
    import jax
    import jax.numpy as jnp

    t = jnp.asarray(t, jnp.int32)
    return t % jnp.left_shift(1, jnp.maximum(0, 31 - jax.lax.clz(t) - 5)) == 0


def test_steps_are_the_first_checkpoint_at_or_below_the_target():
    iterations = [0, 1, 2, 4, 8, 16]
    trace = [2.0, 1.5, 0.9, 0.5, 0.25, 0.3]
    assert steps_to(trace, iterations, 0.5) == 4  # equal counts as reached
    assert steps_to(trace, iterations, 0.6) == 4
    assert steps_to(trace, iterations, 1.0) == 2
    assert steps_to(trace, iterations, 0.26) == 8
    assert steps_to(trace, iterations, 0.1) is None  # censored: no checkpoint reaches it
    assert steps_to([2.0, None, 0.4], [0, 1, 2], 0.5) == 2  # a non-finite read never reaches a target


def test_steps_compare_in_the_runs_precision():
    """The engine compares float32(loss) ≤ float32(target): a loss of float32(0.2) = 0.20000000298 reaches 0.2 in
    float32, not in float64."""
    loss = float(np.float32(0.2))
    assert steps_to([1.0, loss], [0, 7], 0.2, np.float32) == 7
    assert steps_to([1.0, loss], [0, 7], 0.2, np.float64) is None


def test_a_trace_written_to_a_record_reads_back_as_the_same_floats():
    """Each lane's trace up to its last read, in the shortest decimal of float32 (the same float32 back), None
    where not finite."""
    rng = np.random.default_rng(0)
    trace = rng.random((3, 6)).astype(np.float32)
    trace[1, 2] = np.nan
    lists = trace_lists(trace, np.array([0, 1, 2, 4, 8, 16]), np.array([16, 4, 0]))
    assert [len(r) for r in lists] == [6, 4, 1]
    assert lists[1][2] is None
    back = np.asarray([v for r in lists for v in r if v is not None], np.float32)
    want = np.concatenate([trace[0], trace[1, [0, 1, 3]], trace[2, :1]])
    assert np.array_equal(back, want)
    assert max(len(repr(v)) for r in lists for v in r if v is not None) <= 11  # 9 digits, not float64's 17


def test_checkpoints_follow_the_checks_and_end_at_the_cap():
    """0, then every iteration to 32, then 32 per doubling (so a count is known to within 1/32 of itself), and the
    cap itself; about 32·(1 + log₂(cap/32)) slots in all."""
    cap = 20_000
    got = checkpoints(net_like_checks, 1, cap)
    assert list(got[:33]) == list(range(33))
    assert got[-1] == cap and np.all(np.diff(got) > 0)
    assert np.all(np.diff(got)[32:-1] <= got[33:-1] / 32)
    assert len(got) <= 32 * (1 + np.log2(cap / 32)) + 2
    every_fourth = checkpoints(net_like_checks, 4, 100)
    assert list(every_fourth[:4]) == [0, 4, 8, 12] and every_fourth[-1] == 100


def test_a_target_below_the_runs_own_is_refused_naming_it():
    error = below_target(0.05, Target(0.1, kind="absolute"))
    assert isinstance(error, OtodError) and "--target 0.05" in str(error) and "0.1" in str(error)


def replay(values, lengths, run_status, tol, window=10**6):
    values = np.asarray(values, np.float32)
    r = Replay(values, np.asarray(lengths), np.asarray(run_status, object), np.arange(values.shape[-1]),
               np.float32(tol), "absolute", window)
    r.run()
    return r


def test_replay_prunes_a_rate_once_its_median_cannot_beat_the_best():
    """Two rates × one seed: rate 0 reaches 0.5 at iteration 2, so rate 1 (still above it) is pruned there, as
    the engine's median rule does (its lower bound 3 > the best's 2)."""
    r = replay([[[2.0, 1.0, 0.4, 0.3, 0.2]], [[2.0, 1.9, 1.8, 0.45, 0.1]]], [[5], [5]],
               [["converged"], ["converged"]], 0.5)
    assert r.status.tolist() == [["converged"], ["pruned"]]
    assert r.hit.tolist() == [[2], [-1]] and r.last.tolist() == [[2], [2]]
    assert not r.undetermined.any()


def test_replay_censors_at_the_cap_and_flags_a_lane_the_run_pruned_too_soon():
    """One rate: a lane never reaching the target is censored at the last checkpoint. Two rates whose lane the
    run pruned (its trace ends) before it could be judged at this target: undetermined, counted as pruned."""
    r = replay([[[2.0, 1.0, 0.9, 0.8]]], [[4]], [["censored"]], 0.5)
    assert r.status.tolist() == [["censored"]] and r.last.tolist() == [[3]]
    r = replay([[[2.0, 1.0, 0.9, 0.8]], [[2.0, 1.9, np.nan, np.nan]]], [[4], [2]],
               [["censored"], ["pruned"]], 0.5)
    assert r.status.tolist() == [["censored"], ["pruned"]] and r.undetermined.tolist() == [[False], [True]]


def test_replay_stalls_by_the_window_rule():
    """No 0.1% decrease for more than ``window`` iterations: stalled at the check where it is seen."""
    r = replay([[[2.0, 1.0, 1.0, 1.0, 1.0, 1.0]]], [[6]], [["stalled"]], 0.5, window=2)
    assert r.status.tolist() == [["stalled"]] and r.last.tolist() == [[4]]


@pytest.mark.parametrize("tol", [0.0999999])
def test_retarget_refuses_a_target_below_the_runs(tol):
    from otod.core.retarget import retarget
    from otod.condition.options import condition_sweep

    config = condition_sweep((4.0, 9.0), tol=0.1)
    meta = {"sweep": config.sweep, "config": config.to_dict()}
    with pytest.raises(OtodError, match="below this run's target 0.1"):
        retarget(None, meta, tol)
