"""Sweeps: chunking keeps one compile per method, files record everything, interrupted sweeps resume."""

import pytest

from otod import results as results_io
from otod.core.errors import OtodError
from otod.sweep import SweepConfig, chunk_plan, run_sweep

from tests.conftest import SMALL_RANDOM


def test_chunk_plan_has_equal_chunks_covering_every_value():
    plan = chunk_plan(10, 8, 24)
    assert [len(c) for c in plan] == [3, 3, 3, 3]
    assert sorted(set(i for c in plan for i in c)) == list(range(10))


def test_metadata_records_config_versions_precision_and_compiles(tmp_path):
    config = SweepConfig(values=(1.0, 5.0, 9.0, 13.0), methods=("gd", "nesterov"), problem=SMALL_RANDOM, seeds=2,
                         chunk_lanes=4)  # 2 values per chunk: 2 chunks per method, one compile per method
    r = run_sweep(config, out_dir=tmp_path)
    m = r.meta
    assert m["complete"] and m["config"]["problem"]["dim"] == 16 and m["precision"] == "float32"
    assert {"jax", "otod", "device", "backend"} <= set(m["environment"])
    assert len(r.records) == 4 * 2 * 2
    assert m["compile_count"] <= 2 + 1  # one program per method (plus at most one tiny helper)


def test_same_config_same_numbers(tmp_path):
    config = SweepConfig(values=(3.0, 30.0), methods=("gd",), problem=SMALL_RANDOM, seeds=3)
    a = run_sweep(config, path=tmp_path / "a.json").records
    b = run_sweep(config, path=tmp_path / "b.json").records
    assert a == b


def test_interrupted_sweep_resumes_without_rerunning_finished_chunks(tmp_path):
    config = SweepConfig(values=(1.0, 2.0, 3.0, 4.0), methods=("gd", "newton"), problem=SMALL_RANDOM, seeds=1,
                         chunk_lanes=2)
    full = run_sweep(config, path=tmp_path / "full.json")
    # Simulate an interruption after the first two chunks: keep only what had been saved by then.
    meta = dict(full.meta, complete=False, finished_chunks=[["gd", 0], ["gd", 1]])
    partial = [r for r in full.records if r["method"] == "gd"]
    results_io.save(tmp_path / "part.json", meta, partial)
    resumed = run_sweep(config, path=tmp_path / "part.json")
    assert resumed.meta["complete"] and resumed.meta["resumed_chunks"] == 2
    assert sorted(map(str, resumed.records)) == sorted(map(str, full.records))


@pytest.mark.parametrize("kwargs,fragment", [({"tol": 0.0}, "strictly between"), ({"values": (0.5,)}, "≥ 1"),
                                             ({"methods": ("kfac",)}, "Kronecker"), ({"seeds": 0}, "≥ 1"),
                                             ({"lr": "fast"}, "theory, tuned")])
def test_bad_configs_raise(kwargs, fragment):
    with pytest.raises(OtodError, match=fragment):
        SweepConfig(**{"values": (1.0, 2.0), **kwargs})


def test_tuned_learning_rate_picks_the_best_multiplier(tmp_path):
    """On a two-point spectrum gd's best fixed step is 2/(L+μ) ≈ 2/L: tuning 1/L over multipliers up to 2 must
    find a step near it and beat --lr theory by about 2× at κ = 100."""
    from otod.fit import best_over_learning_rates
    from otod.problems import QuadraticSpec

    spec = QuadraticSpec(dim=10, spectrum="two-point", start="equal-loss")
    grid = (0.5, 1.0, 1.5, 1.98)
    tuned = run_sweep(SweepConfig(values=(100.0,), methods=("gd",), problem=spec, seeds=1, lr="tuned",
                                  lr_grid=grid), out_dir=tmp_path)
    best = best_over_learning_rates(tuned.records)[0]
    assert len(tuned.records) == 4 and best["lr_multiplier"] == pytest.approx(1.98)
    theory_run = [r for r in tuned.records if r["lr_multiplier"] == pytest.approx(1.0)][0]
    assert 1.7 < theory_run["iterations"] / best["iterations"] < 2.3


def test_precision_is_float64_exactly_where_float32_rounding_would_meet_the_tolerance(tmp_path):
    """Rule: float64 when tol < 10·(κ_max·ε₃₂)². At κ = 1000, tol = 1e-12 is below float32's reach: forcing float32
    leaves lanes short of the tolerance (censored), while the automatic choice (float64) converges."""
    from otod.problems import QuadraticSpec

    assert not SweepConfig(values=(1000.0,)).resolved_x64
    auto = SweepConfig(values=(1000.0,), tol=1e-12, methods=("gd-opt",), seeds=2, max_iters=40_000,
                       problem=QuadraticSpec(dim=20, spectrum="two-point", start="equal-loss"))
    assert auto.resolved_x64
    r64 = run_sweep(auto, path=tmp_path / "a.json")
    r32 = run_sweep(SweepConfig(**{**auto.__dict__, "x64": False}), path=tmp_path / "b.json")
    assert r64.meta["precision"] == "float64" and r32.meta["precision"] == "float32"
    assert {r["status"] for r in r64.records} == {"converged"}
    assert {r["status"] for r in r32.records} != {"converged"}
