"""A checkpoint as a start (`otod.nets.model.branch`): the reference run's checkpoint against an independent plain-JAX
loop and against `otod.nets.measure.trajectory.train`, its cache, the draws it replaces, and the branch's checks."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import otod.nets  # noqa: F401  (registers the net sweep)
from otod.core.errors import OtodError
from otod.nets.model import branch
from otod.nets.model.family import seed_starts, start_of
from otod.nets.model.problem import NetSpec
from tests.nets.lanes import gap, plain_sgd

jax = pytest.importorskip("jax")
jnp = jax.numpy

#: A small net: digits' first 64 images, width 8 (P = 610), branched after 12 steps of SGD at B_ref = 16.
SPEC = NetSpec(width=8, examples=64, batch=8, branch_step=12, branch_batch=16, branch_lr=0.3)


@pytest.mark.slow
def test_the_checkpoint_equals_an_independent_plain_loop_and_the_trajectory():
    """Seed 1's checkpoint after 12 steps at B_ref = 16, η = 0.3 equals an independent Python loop of the same SGD
    to float32 rounding (max |Δθ| ≤ 1e-5 on weights of size ~1, while the run moved them by more than 10⁻²), and
    `otod.nets.measure.trajectory.train` at B = 16 (what ``noise-scale --model mlp`` measures at) bit for bit; its
    training loss lies below the start's."""
    from otod.nets.measure.trajectory import train

    rng = np.random.default_rng([0, 1])
    drawn = seed_starts(SPEC, np.random.default_rng([0, 1]))
    start = start_of(SPEC, drawn)
    got = branch.start_params(SPEC, rng)
    loop = plain_sgd(SPEC, start, drawn["shuffle"], 12, 16, 0.3)
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
    from otod.nets.sweep.options import net_config

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


#: The model contract's plain-JAX fixture (a tanh MLP 5 → 16 → 1 with an init, 96 examples): a user's model.
MODEL = "tests/fixtures/models/plain_jax.py:mlp"


def model_problem(**branch_fields):
    from otod.nets.model.contract import load
    from otod.nets.model.model_problem import problem_of

    problem = problem_of(load(MODEL), batch=8, reference=MODEL)
    return dataclasses.replace(problem, **branch_fields)


@pytest.mark.slow
def test_a_models_checkpoint_is_the_plain_loop_from_its_own_start_and_shuffle():
    """A user's model (the plain-JAX fixture): seed 2's checkpoint after 12 steps of SGD at B_ref = 16, η = 0.1
    equals the hand-written loop (`tests.nets.lanes.plain_sgd`) from the seed's own init(key) start and shuffle
    seed to float32 rounding (max |Δθ| ≤ 1e-5, while the run moved the weights by more than 10⁻²); the branch's
    draws keep the shuffle seed and replace the whole parameter pytree; the checkpoint's loss (the milestone's
    base) lies below the start's; at step 0 the start itself, bit for bit."""
    from otod.nets.model.model_problem import seed_starts as model_starts

    problem = model_problem(branch_step=12, branch_batch=16, branch_lr=0.1)
    drawn = model_starts(problem, np.random.default_rng([0, 2]))
    got = branch.start_params(problem, np.random.default_rng([0, 2]))
    loop = plain_sgd(problem, drawn["params"], drawn["shuffle"], 12, 16, 0.1)
    assert gap(got, drawn["params"]) > 1e-2
    assert gap(got, loop) <= 1e-5
    out = problem.family().draws(np.random.default_rng([0, 2]))
    assert out["shuffle"] == drawn["shuffle"] and gap(out["params"], got) == 0
    assert problem.initial_loss(0, 2) < dataclasses.replace(problem, branch_step=0).initial_loss(0, 2)
    assert gap(branch.start_params(dataclasses.replace(problem, branch_step=0), np.random.default_rng([0, 2])),
               drawn["params"]) == 0


def test_a_models_bad_branch_is_refused_in_one_line_and_an_unbranched_one_stores_no_branch_fields():
    """A user's model takes the net's branch checks (its 96 examples bound B_ref); unbranched, its stored record
    has no branch fields at all (None fields stay out of the digest: old results files keep their names)."""
    with pytest.raises(OtodError) as info:
        model_problem(branch_step=5, branch_batch=97, branch_lr=0.1)
    assert "--branch-batch 97: need a whole number from 1 to the 96 training examples" in str(info.value)
    assert "\n" not in str(info.value)
    from otod.nets.sweep.options import net_config

    config = net_config(model=MODEL, batch="8,16", seeds=1)
    assert not any(k.startswith("branch") for k in config.to_dict()["problem"])
    assert not model_problem().branched and model_problem(branch_step=0, branch_batch=8, branch_lr=0.1).branched
