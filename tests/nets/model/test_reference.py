"""The data regimes' held-out targets (`otod.nets.model.reference`): the stream never repeats an example within a
run, and a cell's target is the held-out loss its reference run (the smallest batch at its best lr, the sweep's
own starts and minibatches) reaches after D examples, recomputed here by a plain Python loop of SGD steps."""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from otod.nets.model.family import minibatch, stream_minibatch
from otod.nets.model.problem import NetSpec
from otod.nets.model.reference import (parse_table, reference_places, reference_steps, reference_table,
                                       tuned_reference)

SPEC = NetSpec(data="teacher", loss="squared", width=4, batch=4)
LRS = (0.1, 0.3)
SEEDS, SEED = 3, 0


def test_the_stream_never_repeats_an_example_within_a_run():
    """Step t's batch is drawn from fold_in(seed's key, t): over 300 steps of B = 8 the 300 keys are distinct, and
    so are all 2,400 drawn inputs (two Gaussian draws coincide with probability 0); another seed draws other
    examples."""
    spec = dataclasses.replace(SPEC, stream=True, batch=8)
    draw = jax.jit(stream_minibatch(spec), static_argnums=2)  # one program, not each primitive compiled on its own
    key = jax.random.PRNGKey(12345)
    keys = {tuple(np.asarray(jax.random.key_data(jax.random.fold_in(key, t))).tolist()) for t in range(300)}
    assert len(keys) == 300
    xs = np.concatenate([np.asarray(draw(key, t, jnp.float32)[0]) for t in range(300)])
    assert xs.shape == (2400, spec.inputs)
    assert len(np.unique(xs, axis=0)) == 2400
    other = np.asarray(draw(jax.random.PRNGKey(54321), 0, jnp.float32)[0])
    assert not np.isin(other, xs).all(axis=1).any()


@functools.lru_cache(maxsize=None)
def jitted(spec):
    """(the seed's set-up: its problem and start from its draws; one SGD step θ ← θ − lr·∇L(θ; batch t) on the
    stream's step-t draw or the finite set's `minibatch`, returning the new θ and the batch's indices, None for the
    stream; the mean loss), each compiled once per spec: run op by op, the set-up, the minibatch's permutation, the
    update and the held-out loss compiled each primitive on its own, and a fresh ``jax.jit(jax.grad(...))`` per run
    recompiled at every one of the test's 36 runs."""
    family, grad = spec.family(), jax.grad(spec.mean_loss)
    draw = stream_minibatch(spec) if spec.stream else None

    def set_up(drawn):
        problem = family.make({}, drawn)
        return problem, family.init(problem)

    def step(params, problem, t, lr, x, y):
        if draw is not None:
            (xb, yb), idx = draw(problem["key"], t, jnp.float32), None
        else:
            idx = minibatch(problem["key"], t, spec.batch, x.shape[0])
            xb, yb = x[idx], y[idx]
        g = grad(params, xb, yb, problem["residual"])
        return jax.tree.map(lambda p, d: p - lr * d, params, g), idx

    return jax.jit(set_up), jax.jit(step), jax.jit(spec.mean_loss)


def plain_reference(spec, examples: int, lr: float, s: int) -> float:
    """Seed s's reference run by hand: the engine's start (`otod.nets.model.family.seed_starts` from
    default_rng([seed, s]), in float32), ⌊D/B⌋ SGD steps θ ← θ − lr·∇L(θ; batch t) on the stream's step-t batch or
    the finite set's epoch order, then the mean squared loss on the held-out set."""
    drawn = jax.tree.map(lambda a: np.asarray(a, np.float32), spec.family().draws(np.random.default_rng([SEED, s])))
    set_up, step, mean_loss = jitted(spec)
    problem, params = set_up(drawn)
    x, y = (jnp.asarray(a, jnp.float32) for a in spec.training_arrays(np.float32))
    seen = []
    for t in range(reference_steps(examples, spec.batch)):
        params, idx = step(params, problem, jnp.int32(t), jnp.float32(lr), x, y)
        if idx is not None:
            seen += np.asarray(idx).tolist()
    assert len(seen) == len(set(seen))  # the finite reference's one epoch sees each example once
    xh, yh = spec.held_out_arrays(np.float32)
    return float(mean_loss(params, jnp.asarray(xh), jnp.asarray(yh), problem["residual"]))


@pytest.mark.parametrize("regime", ["stream", "finite"])
def test_a_cells_target_is_its_reference_runs_held_out_loss_after_d_examples(regime):
    """For each cell (D, width): the stored target is the median over 3 seeds of the plain loop's held-out loss
    after ⌊D/4⌋ steps at the stored lr, to 2e-5 relative (float32 sums in another order, and the table's 6
    significant digits); that lr is the tuned one: interior or at the stability limit, its median no higher than
    the best of the grid's own lrs."""
    sizes, widths = (32, 64), (4,)
    spec = dataclasses.replace(SPEC, stream=True if regime == "stream" else None, examples=sizes[0])
    text = reference_table(spec, sizes, widths, spec.batch, LRS, SEEDS, SEED)
    table, places = parse_table(text), reference_places(text)
    for d in sizes:
        cell = dataclasses.replace(spec, examples=None if spec.stream else d)
        target, lr = table[d, widths[0]]
        assert places[d, widths[0]] in ("interior", "limit")
        assert target == pytest.approx(np.median([plain_reference(cell, d, lr, s) for s in range(SEEDS)]), rel=2e-5)
        on_grid = [np.median([plain_reference(cell, d, r, s) for s in range(SEEDS)]) for r in LRS]
        assert target <= min(on_grid) * (1 + 2e-5)


GRID = tuple(0.03 * 10 ** (k / 4) for k in range(9))  # --lr-grid 0.03..3:9:log


def bowl(optimum: float, diverge_above: float = np.inf, calls: list | None = None):
    """Synthetic reference losses [rate, seed]: 1 + (log10 lr − log10 optimum)² + 0.01·seed over 3 seeds, +∞
    (diverged) above ``diverge_above``; each call's rates appended to ``calls``."""
    def losses_at(rates):
        if calls is not None:
            calls.append(list(rates))
        r = np.asarray(rates, float)[:, None]
        loss = 1 + (np.log10(r) - np.log10(optimum)) ** 2 + 0.01 * np.arange(3)[None, :]
        return np.where(r > diverge_above, np.inf, loss)
    return losses_at


def test_a_reference_whose_optimum_lies_below_the_grid_is_extended_until_interior():
    """Optimum at lr 0.002, below the grid's 0.03: the choice on the grid is its smallest rate (an edge), so the
    search runs the next 9 rates below it (0.03·10^(−k/4), k = 1..9, one block of the grid's size) and chooses
    k = 5, 0.03·10^(−1.25) = 1.687e-3 (|log10 distance| 0.074, against 0.176 at k = 4): interior, its target the
    median over seeds 1 + 0.074² + 0.01."""
    calls = []
    target, lr, place, lanes = tuned_reference(bowl(0.002, calls=calls), GRID)
    assert place == "interior"
    assert lr == pytest.approx(0.03 * 10 ** -1.25, rel=1e-12)
    assert target == pytest.approx(1 + (np.log10(lr) - np.log10(0.002)) ** 2 + 0.01, rel=1e-12)
    assert len(calls) == 2 and all(len(c) == len(GRID) for c in calls)
    assert min(lanes) == pytest.approx(0.03 * 10 ** (-9 / 4), rel=1e-12)


def test_a_reference_whose_optimum_lies_above_the_grid_stops_at_the_stability_limit():
    """Loss falling all the way up to the optimum 1000, every rate above 10 diverging: the search climbs from 3
    by 10^(1/4) and chooses the largest stable rate tried, 3·10^(2/4) = 9.49, whose next rate (3·10^(3/4) = 16.9)
    diverged on every seed: the true limit."""
    target, lr, place, _ = tuned_reference(bowl(1000.0, diverge_above=10.0), GRID)
    assert place == "limit"
    assert lr == pytest.approx(3 * 10 ** 0.5, rel=1e-12)


def test_a_reference_search_that_runs_out_of_steps_says_grid_end_and_the_report_warns():
    """Optimum at 10⁻⁹, beyond 12 steps below 0.03 (3·10⁻⁵): the choice stays on the edge, place "grid end", and
    the grid report's warning names the cell."""
    from otod.nets.sweep.grid import reference_edge_lines

    target, lr, place, _ = tuned_reference(bowl(1e-9), GRID, steps=12)
    assert place == "grid end"
    assert lr == pytest.approx(0.03 * 10 ** -3, rel=1e-12)
    lines = reference_edge_lines({(256.0, 73.0): (target, lr), (512.0, 73.0): (1.0, 0.3)}, GRID,
                                 {(256.0, 73.0): place, (512.0, 73.0): "interior"})
    assert "interior at 1 of 2 cells" in lines[0] and "D = 256, P = 73 (lr 3e-05)" in lines[0]
    assert len(lines) == 2 and "still on the edge" in lines[1] and "D = 256, P = 73" in lines[1]


def test_a_regime_grids_cells_at_one_width_share_one_start_loss(monkeypatch):
    """With a held-out target the start's metric reads the fixed held-out set at the seed's own start, so D does
    not change it: two cells (D = 32, 64) at one width evaluate `NetSpec.start_loss` once, and each cell's
    initial loss is that loss over its own target, exactly; without a target (the training loss) D is read, and
    each D evaluates its own."""
    from otod.nets.model import problem as problem_module

    table = "32:4:0.5:0.1:interior;64:4:0.25:0.1:interior"
    cells = [dataclasses.replace(SPEC, examples=d, held_out_targets=table, reference_batch=4) for d in (32, 64)]
    plain = [dataclasses.replace(SPEC, examples=d) for d in (32, 64)]
    monkeypatch.setattr(problem_module, "_START_LOSSES", {})
    calls = []
    real = NetSpec.start_loss
    monkeypatch.setattr(NetSpec, "start_loss", lambda self, *a: calls.append(self.examples) or real(self, *a))
    loss = [cell.initial_loss(SEED) for cell in cells]
    assert calls == [32]
    assert loss == [real(cells[0], SEED) / 0.5, real(cells[0], SEED) / 0.25]
    assert cells[0].start_key() == cells[1].start_key() and plain[0].start_key() != plain[1].start_key()
    calls.clear()
    for spec in plain:
        spec.initial_loss(SEED)
    assert calls == [32, 64]
