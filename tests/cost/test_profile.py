"""Wall-clock timing of forward, backward and update, and the memory guard. What the timing computes from its samples
and where each part's numbers go are checked on known timings (a stand-in clock, stand-in parts); one real run
checks that the device gives a number for each part."""

import pytest

from otod.cost import models as M
from otod.cost import profile as P
from otod.core.errors import OtodError


@pytest.mark.parametrize("precision", ["float32", pytest.param("bfloat16", marks=pytest.mark.slow)])
def test_profile_small_mlp(tiny_mlp, precision):
    """A real timing on the device: every part, and the fused value_and_grad, a positive, finite number of
    seconds, and the row says what it timed."""
    import math

    r = P.profile_one(tiny_mlp, 8, "sgd", precision, warmup=1, repeats=5)
    for seconds in (r.forward_s, r.backward_s, r.update_s, r.value_and_grad_s):
        assert 0 < seconds < math.inf
    assert r.precision == precision and r.repeats == 5 and r.model == tiny_mlp.name and r.batch == 8


#: The timings `test_each_part_lands_in_its_own_columns` hands out, one per part, every number distinct.
PART_TIMINGS = {"forward": P.Timing(2.0, 1.5, 2.5, 1.0, 3.0, 5), "backward": P.Timing(6.0, 5.0, 7.0, 4.0, 9.0, 5),
                "update": P.Timing(0.5, 0.25, 0.75, 0.125, 1.0, 5),
                "value_and_grad": P.Timing(7.5, 7.0, 8.0, 6.5, 9.5, 5)}


def test_each_part_lands_in_its_own_columns(tiny_mlp, monkeypatch):
    """Each timed program is told apart by what it computes (the loss alone: forward; one argument, the
    pullback: backward; (loss, gradient): value_and_grad; the rest: the optimizer's (params, state) update), given
    its own known timing, and the row carries each part's median and quartiles in that part's columns, with the
    ratios (backward + update)/forward and backward/forward of those medians."""
    import jax
    import numpy as np

    def part(fn, args):
        out = fn(*args)
        if len(args) == 1:
            return "backward"
        if not isinstance(out, tuple):
            assert np.shape(out) == ()
            return "forward"
        leaves = jax.tree.leaves(out[0])
        return "value_and_grad" if len(leaves) == 1 and np.shape(leaves[0]) == () else "update"

    timed = []
    monkeypatch.setattr(P, "time_call", lambda fn, args, warmup, repeats: timed.append(part(fn, args)) or
                        PART_TIMINGS[timed[-1]])
    r = P.profile_one(tiny_mlp, 8, "sgd", warmup=1, repeats=5)
    assert sorted(timed) == sorted(PART_TIMINGS)
    for name in ("forward", "backward", "update"):
        t = PART_TIMINGS[name]
        assert (getattr(r, f"{name}_s"), getattr(r, f"{name}_q25_s"), getattr(r, f"{name}_q75_s")) == (
            t.median, t.q25, t.q75), name
    assert r.value_and_grad_s == 7.5
    assert r.time_ratio == (6.0 + 0.5) / 2.0 and r.backward_forward_time == 6.0 / 2.0


class _Clock:
    """`otod.cost.profile`'s clock, stood in for: it moves only while a result is waited for."""

    def __init__(self):
        self.now, self.reads = 0.0, 0

    def perf_counter(self):
        self.reads += 1
        return self.now


class _Pending:
    """A dispatched result that takes ``seconds`` of ``clock`` to become ready (as a device program does: the
    call returns at once, ``block_until_ready`` waits)."""

    def __init__(self, clock, seconds):
        self.clock, self.seconds = clock, seconds

    def block_until_ready(self):
        self.clock.now += self.seconds
        return self


def test_time_call_times_each_repeat_until_ready_after_the_warmup(monkeypatch):
    """Two warm-up calls of 100 s each (compiling), then nine of 5, 1, 4, 2, 3, 9, 7, 8, 6 s: the nine alone are
    timed, each until its result is ready, giving median 5, quartiles 3 and 7 (the 25th and 75th percentiles of
    1..9), min 1, max 9."""
    clock = _Clock()
    monkeypatch.setattr(P, "time", clock)
    seconds = iter([100.0, 100.0, 5.0, 1.0, 4.0, 2.0, 3.0, 9.0, 7.0, 8.0, 6.0])
    calls = []

    def fn(x):
        calls.append(x)
        return _Pending(clock, next(seconds))

    t = P.time_call(fn, ("x",), warmup=2, repeats=9)
    assert t == P.Timing(median=5.0, q25=3.0, q75=7.0, min=1.0, max=9.0, repeats=9)
    assert len(calls) == 11 and clock.reads == 2 * 9


def test_too_large_to_time_says_so():
    # LinearNet with Adam: 617M params × 4 B × (4 + 2·2) ≈ 19.7 GB; refuse it with 1 GiB free, point at flops.
    with pytest.raises(OtodError, match="too large to time in memory.*otod flops"):
        P.check_fits(M.linearnet(), 1, "adam", available=2**30)
    P.check_fits(M.mlp((784, 512, 10)), 64, "adam", available=2**30)  # 407k params fit easily
    assert P.memory_needed(M.linearnet(), 1, "adam") > 8 * 4 * 616_000_000


def test_bad_precision():
    with pytest.raises(OtodError, match="--precision"):
        P.check_precision("float8")


def test_unfused_profile_skips_value_and_grad(tiny_mlp, monkeypatch):
    # fused=False times the three parts only: 3 timed programs, where the default times the fused one too (the test
    # above reads its column), and the fused column is NaN.
    import math

    timed = []
    real = P.time_call
    monkeypatch.setattr(P, "time_call", lambda fn, *a: timed.append(fn) or real(fn, *a))
    r = P.profile_one(tiny_mlp, 8, "sgd", warmup=1, repeats=3, fused=False)
    assert len(timed) == 3 and math.isnan(r.value_and_grad_s)
    assert r.forward_s > 0 and r.backward_s > 0 and r.update_s > 0
