"""A checkpoint as a start (`otod.nets.branch`): the reference run's checkpoint against an independent plain-JAX
loop and against `otod.nets.trajectory.train`, its cache, the draws it replaces, and the branch's checks."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import otod.nets  # noqa: F401  (registers the net sweep)
from otod.core.errors import OtodError
from otod.nets import branch
from otod.nets.family import seed_starts, start_of
from otod.nets.problem import NetSpec

jax = pytest.importorskip("jax")
jnp = jax.numpy

#: A small net: digits' first 64 images, width 8 (P = 610), branched after 12 steps of SGD at B_ref = 16.
SPEC = NetSpec(width=8, examples=64, batch=8, branch_step=12, branch_batch=16, branch_lr=0.3)


def plain_loop(spec, start, shuffle, steps: int, batch: int, lr: float):
    """The reference run written out independently: a Python loop of θ ← θ − η ∇L_B(θ) in float32, epoch e's
    order the permutation of fold_in(PRNGKey(shuffle), e), step t taking ranks [pB, (p + 1)B) of its position p
    in an epoch of ⌊n/B⌋ steps."""
    x, y = spec.training_arrays(np.float32)
    n = x.shape[0]
    per_epoch = n // batch
    key = jax.random.PRNGKey(int(shuffle))
    params = jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), start)
    grad = jax.grad(lambda p, xb, yb: spec.mean_loss(p, xb, yb))
    for t in range(steps):
        order = np.asarray(jax.random.permutation(jax.random.fold_in(key, t // per_epoch), n))
        idx = order[(t % per_epoch) * batch:(t % per_epoch + 1) * batch]
        g = grad(params, jnp.asarray(x[idx]), jnp.asarray(y[idx]))
        params = jax.tree.map(lambda p, gi: p - np.float32(lr) * gi, params, g)
    return jax.tree.map(lambda p: np.asarray(p, np.float64), params)


def gap(a, b) -> float:
    """The largest |a − b| over two parameter pytrees' leaves."""
    return max(float(np.max(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64))))
               for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


@pytest.mark.slow
def test_the_checkpoint_equals_an_independent_plain_loop_and_the_trajectory():
    """Seed 1's checkpoint after 12 steps at B_ref = 16, η = 0.3 equals an independent Python loop of the same SGD
    to float32 rounding (max |Δθ| ≤ 1e-5 on weights of size ~1, while the run moved them by more than 10⁻²), and
    `otod.nets.trajectory.train` at B = 16 (what ``noise-scale --model mlp`` measures at) bit for bit; its
    training loss lies below the start's."""
    from otod.nets.trajectory import train

    rng = np.random.default_rng([0, 1])
    drawn = seed_starts(SPEC, np.random.default_rng([0, 1]))
    start = start_of(SPEC, drawn)
    got = branch.start_params(SPEC, rng)
    loop = plain_loop(SPEC, start, drawn["shuffle"], 12, 16, 0.3)
    assert gap(got, start) > 1e-2
    assert gap(got, loop) <= 1e-5
    unbranched = dataclasses.replace(SPEC, batch=16, branch_step=None, branch_batch=None, branch_lr=None)
    (_, trained), = train(unbranched, [12], 0.3, seed=0, s=1)
    assert gap(got, trained) == 0
    assert SPEC.initial_loss(0, 1) < dataclasses.replace(SPEC, branch_step=0).initial_loss(0, 1)


@pytest.mark.slow
def test_a_later_checkpoint_continued_from_a_cached_one_is_the_same_run():
    """The cache continues step 12 from step 5: the same parameters, bit for bit, as the run from the start."""
    drawn = seed_starts(SPEC, np.random.default_rng([0, 2]))
    start = start_of(SPEC, drawn)
    branch._checkpoints.clear()
    direct = branch.checkpoint(SPEC, start, drawn["shuffle"])
    branch._checkpoints.clear()
    branch.checkpoint(dataclasses.replace(SPEC, branch_step=5), start, drawn["shuffle"])
    continued = branch.checkpoint(SPEC, start, drawn["shuffle"])
    assert gap(direct, continued) == 0


def test_the_draws_replace_only_the_start_the_sweep_reads(monkeypatch):
    """A branch's draws: the spec's (init, architecture) start is its checkpoint (`branch.checkpoint`, here a
    stand-in, so that no run compiles), every other start and the shuffle seed are the plain draws'; at step 0
    the checkpoint is the float64 start itself, unrounded (a float64 sweep's branch at 0 is its plain sweep)."""
    drawn = seed_starts(SPEC, np.random.default_rng([0, 0]))
    start = start_of(SPEC, drawn)
    at_zero = branch.checkpoint(dataclasses.replace(SPEC, branch_step=0), start, drawn["shuffle"])
    assert gap(at_zero, start) == 0
    marked = jax.tree.map(lambda a: a + 1.0, start)
    monkeypatch.setattr(branch, "checkpoint", lambda spec, s, shuffle: marked)
    out = branch.branch_draws(SPEC, drawn)
    assert out["shuffle"] == drawn["shuffle"]
    for init, arches in drawn["params"].items():
        for arch, params in arches.items():
            expected = marked if (init, arch) == (SPEC.init, SPEC.architecture) else params
            assert gap(out["params"][init][arch], expected) == 0


@pytest.mark.slow
def test_an_unbranched_spec_stores_no_branch_fields():
    """None branch fields are left out of the stored config, so every unbranched sweep keeps its digest (and so
    its results file's name)."""
    from otod.nets.options import net_config

    config = net_config(batch="8,16", width="8", examples="64", seeds=1)
    assert not any(k.startswith("branch") for k in config.to_dict()["problem"])
    assert config.digest() == "cc81bd8936"  # this config's digest before the branch fields existed (commit 252b742)


@pytest.mark.parametrize("fields, says", [
    ({"branch_step": 5}, "needs its step, its reference batch and its reference lr"),
    ({"branch_step": -1, "branch_batch": 8, "branch_lr": 0.1}, "--branch-at -1"),
    ({"branch_step": 5, "branch_batch": 65, "branch_lr": 0.1}, "--branch-batch 65"),
    ({"branch_step": 5, "branch_batch": 8, "branch_lr": 0.0}, "--branch-lr 0.0"),
    ({"branch_step": 5, "branch_batch": 8, "branch_lr": float("nan")}, "--branch-lr nan"),
])
def test_a_bad_branch_is_refused_in_one_line(fields, says):
    with pytest.raises(OtodError, match=None) as info:
        NetSpec(width=8, examples=64, batch=8, **fields)
    assert says in str(info.value) and "\n" not in str(info.value)
