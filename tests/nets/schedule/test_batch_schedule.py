"""otod.nets.schedule.batch_schedule and schedule_start: parsing, the start's history text, and (slow) a schedule run through the
engine: one phase is the constant-batch sweep record for record, and the steps of two phases add up to those of an
independent loop that switches batch at the milestone."""

from __future__ import annotations

import math

import numpy as np
import pytest

from otod.core.errors import OtodError
from otod.nets.schedule.batch_schedule import Phase, parse_schedule
from otod.nets.model.schedule_start import PhaseRun, decode, encode, phase_shuffle, seed_index


def test_phases_parse_in_order():
    s = parse_schedule("16@0.3, 32@0.1,64@0.04")
    assert s.phases == (Phase(16, 0.3), Phase(32, 0.1), Phase(64, 0.04))
    assert s.batches == (16, 32, 64)


def test_doubling_warmup_spaces_milestones_evenly_in_log_loss():
    s = parse_schedule("doubling:16..64@0.04")
    assert s.batches == (16, 32, 64)
    # r_k = r^(k/K): the log milestones are evenly spaced and the last one is r itself
    logs = np.log([p.fraction for p in s.phases])
    np.testing.assert_allclose(np.diff(logs), math.log(0.04) / 3, rtol=1e-12)
    assert s.phases[-1].fraction == pytest.approx(0.04, rel=1e-12)
    assert parse_schedule("doubling:32..32@0.1").phases == (Phase(32, 0.1),)


@pytest.mark.parametrize("text, fragment", [
    ("", "a comma list"), ("16", "is not batch@milestone"), ("x@0.5", "is not a batch size"),
    ("16@1.5", "strictly between 0 and 1"), ("16@0.2,32@0.3", "must lie below the one before"),
    ("16.5@0.2", "not a whole number"), ("doubling:16..48@0.1", "doubled a whole number of times"),
    ("doubling:16@0.1", "doubling:B0..B1@r"), (",".join(f"{2 ** k}@{0.9 ** (k + 1)}" for k in range(9)), "at most 8")])
def test_bad_schedules_are_refused_in_one_line(text, fragment):
    with pytest.raises(OtodError) as e:
        parse_schedule(text)
    assert fragment in str(e.value) and "\n" not in str(e.value)


def test_history_text_round_trips_exactly():
    runs = (PhaseRun(8, "sgd", 0.30000001192092896, 0.0, (5, 6, 7)), PhaseRun(16, "heavy-ball", 0.1, 0.9, (1, 2, 3)))
    assert decode(encode(4, runs)) == (4, runs)
    with pytest.raises(OtodError):
        decode("seed=0;8:sgd:0.1:0:1,2;16:sgd:0.1:0:1")  # seeds disagree


def test_seed_index_recognises_the_engines_generator():
    assert seed_index(np.random.default_rng([3, 2]), 3, 5) == 2
    with pytest.raises(OtodError):
        seed_index(np.random.default_rng([4, 2]), 3, 5)


def test_phase_shuffle_keeps_the_first_phase_and_changes_the_others():
    shuffle = np.array(1234.0)
    assert phase_shuffle(shuffle, 0) == shuffle
    others = {float(phase_shuffle(shuffle, j)) for j in range(1, 4)}
    assert len(others) == 3 and 1234.0 not in others and all(0 <= v < 2 ** 24 for v in others)


# -- slow: through the engine ---------------------------------------------------------------------------------------

NET = dict(data="teacher", width=8, seeds=3, lr="0.3", max_iters=2000)


def records_at(path, batch):
    """The records at one batch, as comparable tuples by (seed, rate, β)."""
    import otod

    frame = otod.load(path).to_pandas()
    frame = frame[frame["batch"] == batch]
    keep = ["seed", "learning_rate", "beta", "iterations", "status", "final_loss"]
    return sorted(tuple(r) for r in frame[keep].itertuples(index=False))


@pytest.mark.slow
def test_one_phase_schedule_is_the_constant_batch_sweep(tmp_path):
    from otod.core.pipeline import sweep
    from otod.nets.sweep.options import net_config
    from otod.nets.schedule.batch_schedule import run_schedule, target_of

    config = net_config(batch="8,16", **NET)
    result = run_schedule(config, parse_schedule("8@0.1"), out=tmp_path / "schedule", n_boot=50)
    import dataclasses

    alone = sweep(dataclasses.replace(config, target=target_of(result.milestones[-1])), out_dir=tmp_path / "alone",
                  plot=False)
    phase = records_at(result.paths[1], 8.0)
    assert phase == records_at(alone.results.path, 8.0) and len(phase) == 3
    # the table's one phase and its constant batch read the same median
    rows = {(r["run"], r["batch"]): r for r in result.rows()}
    assert rows[("phase 1", 8.0)]["steps"] == rows[("constant", 8.0)]["steps"]


def independent_steps(spec, runs, milestones, seed: int, s: int) -> list[int]:
    """Steps per phase of seed s by a plain loop (optax SGD at each phase's batch and step, the minibatch order of
    `otod.nets.model.family.minibatch` from the phase's shuffle seed, the full training loss read after every step),
    switching phase when the loss reaches the milestone: no replay, no engine."""
    import jax
    import jax.numpy as jnp
    import optax

    from otod.nets.model.family import minibatch, seed_starts

    drawn = seed_starts(spec, np.random.default_rng([seed, s]))
    params = jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), drawn["params"][spec.init][spec.architecture])
    x, y = (jnp.asarray(a) for a in spec.training_arrays(np.float32))
    loss = jax.jit(lambda p: spec.mean_loss(p, x, y))
    counts = []
    for j, (run, milestone) in enumerate(zip(runs, milestones)):
        key = jax.random.PRNGKey(int(phase_shuffle(drawn["shuffle"], j)))
        opt = optax.sgd(np.float32(run.lr))
        state = opt.init(params)
        step = jax.jit(lambda p, st, t, b=run.batch, o=opt: _sgd_step(spec, o, p, st, x, y, minibatch(key, t, b,
                                                                                                     x.shape[0])))
        t = 0
        while float(loss(params)) > milestone and t < 2000:
            params, state = step(params, state, t)
            t += 1
        counts.append(t)
    return counts


def _sgd_step(spec, opt, params, state, x, y, idx):
    import jax
    import optax

    g = jax.grad(lambda p: spec.mean_loss(p, x[idx], y[idx]))(params)
    updates, state = opt.update(g, state, params)
    return optax.apply_updates(params, updates), state


@pytest.mark.slow
def test_steps_add_over_phases_as_an_independent_loop_counts_them(tmp_path):
    from otod.nets.sweep.options import net_config
    from otod.nets.schedule.batch_schedule import run_schedule

    config = net_config(batch="8,16,32", **NET)
    result = run_schedule(config, parse_schedule("8@0.3,16@0.1"), out=tmp_path / "s.parquet", n_boot=50)
    # --out FILE.parquet: one file per sweep beside it (one name for all made the second sweep refuse the first's)
    assert [p.name for p in result.paths] == ["s-constant.parquet", "s-phase1.parquet", "s-phase2.parquet"]
    runs = result.runs
    assert all(max(r.steps) < 32 for r in runs)  # every step read: the counts are exact, not to within 3%
    for s in range(config.seeds):
        expected = independent_steps(config.problem, runs, result.milestones, config.seed, s)
        assert [r.steps[s] for r in runs] == expected
    # the schedule's steps are the phases' medians added up, observed from each phase's own records
    medians = [float(np.median(r.steps)) for r in runs]
    assert result.comparison.estimate["schedule_steps"] == pytest.approx(sum(medians))
    assert result.comparison.estimate["schedule_examples"] == pytest.approx(8 * medians[0] + 16 * medians[1])


@pytest.mark.slow
def test_start_losses_are_at_the_starts_the_engine_draws():
    import jax
    import jax.numpy as jnp

    from otod.core.engine import seed_draws
    from otod.nets.model.problem import NetSpec
    from otod.nets.schedule.batch_schedule import start_losses

    spec = NetSpec(data="teacher", width=4, loss="squared", examples=64)
    drawn = seed_draws(spec, 3, 2, np.float64)["params"][spec.init][spec.architecture]
    with jax.enable_x64(True):
        x, y = (jnp.asarray(a) for a in spec.metric_arrays(np.float64))
        expected = [float(spec.mean_loss(jax.tree.map(lambda a, s=s: jnp.asarray(a[s]), drawn), x, y))
                    for s in range(2)]
    assert start_losses(spec, 3, 2) == pytest.approx(expected, rel=1e-12)
