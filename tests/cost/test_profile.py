"""Wall-clock timing of forward, backward and update, and the memory guard."""

import pytest

from otod.cost import models as M
from otod.cost import profile as P
from otod.core.errors import OtodError


@pytest.mark.parametrize("precision", ["float32", pytest.param("bfloat16", marks=pytest.mark.slow)])
def test_profile_small_mlp(tiny_mlp, precision):
    # Every part takes positive time; the 25th percentile ≤ median ≤ 75th; the ratios are consistent.
    r = P.profile_one(tiny_mlp, 8, "sgd", precision, warmup=1, repeats=5)
    for part in ("forward", "backward", "update"):
        med = getattr(r, f"{part}_s")
        assert 0 < getattr(r, f"{part}_q25_s") <= med <= getattr(r, f"{part}_q75_s")
    assert r.time_ratio == pytest.approx((r.backward_s + r.update_s) / r.forward_s)
    assert r.precision == precision and r.repeats == 5 and r.value_and_grad_s > 0  # fused by default


def test_time_call_orders_samples():
    import jax.numpy as jnp
    import jax

    t = P.time_call(jax.jit(lambda x: x * 2), (jnp.ones(10),), warmup=1, repeats=9)
    assert t.min <= t.q25 <= t.median <= t.q75 <= t.max and t.repeats == 9


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
