"""The data regimes' held-out targets (`otod.nets.model.reference`): the stream never repeats an example within a
run, and a cell's target is the held-out loss its reference run (the smallest batch at its best lr, the sweep's
own starts and minibatches) reaches after D examples, recomputed here by a plain Python loop of SGD steps."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from otod.nets.model.family import minibatch, stream_minibatch
from otod.nets.model.problem import NetSpec
from otod.nets.model.reference import parse_table, reference_steps, reference_table

SPEC = NetSpec(data="teacher", loss="squared", width=4, batch=4)
LRS = (0.1, 0.3)
SEEDS, SEED = 3, 0


def test_the_stream_never_repeats_an_example_within_a_run():
    """Step t's batch is drawn from fold_in(seed's key, t): over 300 steps of B = 8 the 300 keys are distinct, and
    so are all 2,400 drawn inputs (two Gaussian draws coincide with probability 0); another seed draws other
    examples."""
    spec = dataclasses.replace(SPEC, stream=True, batch=8)
    draw = stream_minibatch(spec)
    key = jax.random.PRNGKey(12345)
    keys = {tuple(np.asarray(jax.random.key_data(jax.random.fold_in(key, t))).tolist()) for t in range(300)}
    assert len(keys) == 300
    xs = np.concatenate([np.asarray(draw(key, t, jnp.float32)[0]) for t in range(300)])
    assert xs.shape == (2400, spec.inputs)
    assert len(np.unique(xs, axis=0)) == 2400
    other = np.asarray(draw(jax.random.PRNGKey(54321), 0, jnp.float32)[0])
    assert not np.isin(other, xs).all(axis=1).any()


def plain_reference(spec, examples: int, lr: float, s: int) -> float:
    """Seed s's reference run by hand: the engine's start (`otod.nets.model.family.seed_starts` from
    default_rng([seed, s]), in float32), ⌊D/B⌋ SGD steps θ ← θ − lr·∇L(θ; batch t) on the stream's step-t batch or
    the finite set's epoch order, then the mean squared loss on the held-out set."""
    family = spec.family()
    drawn = jax.tree.map(lambda a: np.asarray(a, np.float32), family.draws(np.random.default_rng([SEED, s])))
    problem = family.make({}, drawn)
    params = family.init(problem)
    draw = stream_minibatch(spec) if spec.stream else None
    x, y = (jnp.asarray(a, jnp.float32) for a in spec.training_arrays(np.float32))
    grad = jax.jit(jax.grad(spec.mean_loss))
    seen = []
    for t in range(reference_steps(examples, spec.batch)):
        if draw is not None:
            xb, yb = draw(problem["key"], t, jnp.float32)
        else:
            idx = np.asarray(minibatch(problem["key"], t, spec.batch, x.shape[0]))
            seen += idx.tolist()
            xb, yb = x[idx], y[idx]
        g = grad(params, xb, yb, problem["residual"])
        params = jax.tree.map(lambda p, d: p - jnp.float32(lr) * d, params, g)
    assert len(seen) == len(set(seen))  # the finite reference's one epoch sees each example once
    xh, yh = spec.held_out_arrays(np.float32)
    return float(spec.mean_loss(params, jnp.asarray(xh), jnp.asarray(yh), problem["residual"]))


@pytest.mark.parametrize("regime", ["stream", "finite"])
def test_a_cells_target_is_its_reference_runs_held_out_loss_after_d_examples(regime):
    """For each cell (D, width): the lowest over the lrs of the median over 3 seeds of the plain loop's held-out
    loss after ⌊D/4⌋ steps is the stored target, to 2e-5 relative (float32 sums in another order, and the table's
    6 significant digits), at the same lr."""
    sizes, widths = (32, 64), (4,)
    spec = dataclasses.replace(SPEC, stream=True if regime == "stream" else None, examples=sizes[0])
    table = parse_table(reference_table(spec, sizes, widths, spec.batch, LRS, SEEDS, SEED))
    for d in sizes:
        cell = dataclasses.replace(spec, examples=None if spec.stream else d)
        medians = [np.median([plain_reference(cell, d, lr, s) for s in range(SEEDS)]) for lr in LRS]
        target, lr = table[d, widths[0]]
        assert target == pytest.approx(min(medians), rel=2e-5)
        assert lr == LRS[int(np.argmin(medians))]
