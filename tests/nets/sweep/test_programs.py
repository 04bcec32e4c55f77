"""One compiled program for every batch size of a net sweep (`otod.core.variants`, issue 53 item 3): the records
are those of one program per batch size, bit for bit on otod's MLP and CNN, the teacher stream and a user's MLP;
on the zoo's transformer the counts, hits and statuses are the same and the losses read (final and traced) equal
to a few ulps, float32 and float64 alike (the record rule); and the sweep compiles one program per device it runs
on, not one per B."""

from __future__ import annotations

import numpy as np
import pytest

import otod.nets  # noqa: F401  (registers the net sweep)
from otod.core import engine
from otod.core.sweep import run_sweep
from otod.nets.sweep.kind import METHODS
from otod.nets.sweep.options import net_config

jax = pytest.importorskip("jax")

#: Every field of a lane's outcome (`otod.core.engine.Solution`) the records are made of.
FIELDS = ("iterations", "hits", "final_metric", "status", "learning_rate", "trace")


def solutions(config, batches, shared: bool):
    """Each batch size's lanes (2 rates × 2 seeds, in the config's precision): with ``shared``, every B through
    the one program of `otod.core.variants` (``variants``), else through its own program (the path before).
    ``batches``: the B values, or static points (a grid's {examples, width, batch})."""
    specs = [config.spec_at(b if isinstance(b, dict) else {"batch": b}) for b in batches]
    rates, seeds = config.resolved.learning_rates, config.seeds
    lrs = np.repeat(np.asarray(rates, float), seeds)
    seed_idx = np.tile(np.arange(seeds), len(rates))
    out = []
    with jax.enable_x64(bool(config.resolved_x64)):
        for spec in specs:
            out.append(engine.iterations_to_target(
                spec, (METHODS["sgd"],), {"beta": np.zeros(len(lrs))}, seed_idx, lrs, seed=config.seed,
                target=config.target, max_iters=config.resolved_max_iters, relative_lr=config.relative_lr,
                options=config.options, group=(len(rates), seeds), devices=1,
                variants=specs if shared else None))
    return out


def assert_same_records(config, batches, ulps: int = 0):
    """The shared program's outcomes equal the per-B programs' bit for bit (counts, hits, statuses, final losses
    and every checked loss of the trace; with ``ulps``, the losses to that many units in the last place of their
    precision), and it compiled one program for all of ``batches``."""
    before = engine._grid._cache_size()
    shared = solutions(config, batches, True)
    assert engine._grid._cache_size() - before == 1  # one program for every batch size
    alone = solutions(config, batches, False)
    assert engine._grid._cache_size() - before == 1 + len(batches)  # and one each on the path before
    for b, s, a in zip(batches, shared, alone):
        for field in FIELDS:
            x, y = getattr(s, field), getattr(a, field)
            if ulps and field in ("final_metric", "trace"):
                close = np.isclose(x, y, rtol=ulps * np.finfo(x.dtype).eps, atol=0, equal_nan=True)
                assert np.all(close) and np.array_equal(np.isnan(x), np.isnan(y)), (b, field, x, y)
            else:
                assert np.array_equal(x, y, equal_nan=True), (b, field, x, y)
        assert np.all(s.iterations > 0)  # the lanes ran


def small(**kw):
    options = dict(seeds=2, lr="tuned", lr_grid="0.1,0.5", target="0.05", max_iters="40", x64=False)
    options.update(kw)
    return net_config(**options)


def test_one_program_gives_the_mlp_records_of_one_program_per_batch():
    """otod's MLP on digits, B = 8, 256 (epochs of 179 and 5 steps: the order is redrawn 7 times inside the 40
    steps at B = 256), one program against two."""
    assert_same_records(small(width="8"), (8, 256))


@pytest.mark.slow  # 38 s on 2 loaded cores (three programs compile); the MLP keeps the shared path in the fast suite
def test_one_program_gives_a_user_models_records_of_one_program_per_batch():
    """A user's model (tests/fixtures/models/plain_jax.py's MLP), B = 8, 32."""
    assert_same_records(small(model="tests/fixtures/models/plain_jax.py:mlp", target="0.01"), (8, 32))


@pytest.mark.slow  # the CNN's and the transformer's programs compile in seconds each; the MLP and a user's model
# keep the shared program's records in the fast suite
@pytest.mark.parametrize("options", [dict(model="cnn", width="4"),
                                     dict(data="teacher", stream=True, width="8", target="0.01")],
                         ids=["cnn", "stream"])
def test_one_program_gives_every_net_paths_records_of_one_program_per_batch(options):
    """otod's CNN and the teacher stream (fresh examples drawn inside the switched step), B = 8, 32: one
    program's records against one program per B, bit for bit."""
    assert_same_records(small(**options), (8, 32))


@pytest.mark.slow  # 85 s on 2 loaded cores: three transformer programs compile
@pytest.mark.parametrize("x64", [False, True], ids=["float32", "float64"])
def test_one_program_keeps_the_transformers_counts_and_its_losses_to_ulps(x64):
    """The zoo's transformer, B = 8, 32, 40 steps: every count, hit and status the same; the losses read (final
    and the trace's 41 checks) equal to 4 ulps (measured: 30 of 164 trace entries at B = 8 differ, by 1–2 ulps,
    sporadically, not growing along the run: the parameters are the same and the metric, compiled in another
    program, rounds otherwise)."""
    with jax.enable_x64(x64):
        config = small(model="otod.nets.model.zoo:transformer", x64=x64)
    assert_same_records(config, (8, 32), ulps=4)


@pytest.mark.slow  # five programs compile (the shared one, and one per cell and batch): the smallest grid
# (tests/nets/conftest.py) runs the shared path in the fast suite, its cells one program per width
def test_one_program_gives_a_finite_grids_records_of_one_program_per_cell_and_batch(monkeypatch):
    """A finite grid's cells at one width (teacher, width 4, D = 64 and 256, B = 2 and 8; held-out targets 0.1
    and 0.05, so two training sets, two epoch lengths per B and two metric scales) through one program
    (`otod.nets.model.family.variant_fields`: B and D switched) against one program per cell and batch: the same
    records bit for bit, and one program for all four."""
    import dataclasses

    import otod.nets.sweep.options as options

    def targets(spec, sizes, widths, lrs, seeds, seed, method, opts):  # no reference runs: set targets per D
        table = ";".join(f"{int(d)}:{int(w)}:{0.1 if int(d) == 64 else 0.05}:{lrs[0]!r}:interior"
                         for w in widths for d in sizes)
        return dataclasses.replace(spec, held_out_targets=table)

    monkeypatch.setattr(options, "with_regime", targets)
    config = small(data="teacher", regime="finite", examples="64,256", width="4", batch="2,8", target=None)
    points = config.static_points()
    assert len(points) == 4 and {p["examples"] for p in points} == {64.0, 256.0}
    assert_same_records(config, points)


def test_the_default_batch_grid_compiles_one_program_per_device(tmp_path):
    """The default sweep's batch sizes 8..1024 (8, log-spaced) on a reduced grid (one rate, one seed, 3 steps):
    at most one program per device it runs on (2 on this 2-core machine, ≤ 3 as issue 53 asks), where one
    program per batch size compiled 8."""
    before = engine._grid._cache_size()
    results = run_sweep(small(width="8", lr_grid="0.5", seeds=1, max_iters="3"), out_dir=tmp_path)
    programs = engine._grid._cache_size() - before
    devices = sum(1 for k, v in (results.meta["chunks_per_device"] or {"all": 1}).items() if v and k != "all")
    assert len({r["batch"] for r in results.records}) == 8
    assert 1 <= programs <= min(3, max(1, devices))
    assert results.meta["compile_count"] + results.meta["cache_loads"] <= 3
