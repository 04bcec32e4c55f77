"""Condition sweeps: the precision rule, stalled lanes, tuning, and a static dimension axis."""

import pytest

from otod.condition.options import condition_sweep
from otod.condition.quadratic import QuadraticSpec
from otod.core.sweep import run_sweep
from otod.core.analysis import frame_of, select

TWO_POINT = QuadraticSpec(dim=20, spectrum="two-point", start="equal-loss")


def test_precision_is_float64_exactly_where_float32_rounding_would_meet_the_tolerance(tmp_path):
    """Rule: float64 when tol < 10·(κ_max·ε₃₂)². At κ = 1000, tol = 1e-12 is below float32's reach: forced float32,
    every lane stalls (no 0.1% decrease for 4000 iterations, long before the cap of 40000) instead of being
    reported as merely slow; the automatic choice (float64) converges."""
    assert not condition_sweep((1000.0,)).resolved_x64
    auto = condition_sweep((1000.0,), tol=1e-12, methods=("gd-opt",), seeds=2, max_iters=40_000, problem=TWO_POINT)
    assert auto.resolved_x64
    r64 = run_sweep(auto, path=tmp_path / "a.json")
    r32 = run_sweep(condition_sweep((1000.0,), tol=1e-12, methods=("gd-opt",), seeds=2, max_iters=40_000,
                                    problem=TWO_POINT, x64=False), path=tmp_path / "b.json")
    assert r64.meta["precision"] == "float64" and r32.meta["precision"] == "float32"
    assert {r["status"] for r in r64.records} == {"converged"}
    assert {r["status"] for r in r32.records} == {"stalled"}
    assert all(r["iterations"] < 40_000 and r["final_gap"] > 1e-12 for r in r32.records)


def test_tuned_learning_rate_finds_the_better_step(tmp_path):
    """On a two-point spectrum gd's best fixed step is 2/(L+μ) ≈ 2/L: tuning 1/L over multipliers up to 1.98 must
    choose 1.98 and beat --lr theory by about 2× at κ = 100."""
    spec = QuadraticSpec(dim=10, spectrum="two-point", start="equal-loss")
    tuned = run_sweep(condition_sweep((100.0,), methods=("gd",), problem=spec, seeds=1, lr="tuned",
                                      lr_grid=(0.5, 1.0, 1.5, 1.98)), out_dir=tmp_path)
    best = select(frame_of(tuned), ("kappa",)).iloc[0]
    assert len(tuned.records) == 4 and best["lr_multiplier"] == pytest.approx(1.98) and best["lr_on_edge"]
    reference = [r for r in tuned.records if r["lr_multiplier"] == pytest.approx(1.0)][0]
    assert reference["status"] == "pruned"  # it could no longer win once 1.98 had converged
    theory_run = run_sweep(condition_sweep((100.0,), methods=("gd",), problem=spec, seeds=1),
                           out_dir=tmp_path).records[0]
    assert 1.7 < theory_run["iterations"] / best["iterations"] < 2.3


def test_a_static_dimension_axis_gives_one_program_per_dimension_and_the_same_counts(tmp_path):
    """--dim 11,37: one compiled program per dimension, and each dimension's counts equal a sweep at that dim."""
    both = run_sweep(condition_sweep((2.0, 20.0), methods=("gd",), problem=QuadraticSpec(dim=11), dims=(11, 37),
                                     seeds=2), out_dir=tmp_path)
    assert both.meta["compile_count"] + both.meta["cache_loads"] == 2
    for d in (11, 37):
        alone = run_sweep(condition_sweep((2.0, 20.0), methods=("gd",), problem=QuadraticSpec(dim=d), seeds=2),
                          out_dir=tmp_path)
        assert [r["iterations"] for r in both.records if r["dim"] == d] == [r["iterations"] for r in alone.records]


def test_adam_is_tuned_by_default_while_the_other_methods_keep_their_own_step(tmp_path):
    """Under --lr theory Adam's reference step (1e-2) is no theory, so it is tuned over the default grid (13
    multipliers, 1 among them); gd keeps its one step 1/L. On d = 11 with 2 κ × 2 seeds, gd's lanes are the
    dimension test's d = 11 sweep's (κ is traced), so its program is compiled once for both."""
    results = run_sweep(condition_sweep((4.0, 40.0), methods=("gd", "adam"), seeds=2,
                                        problem=QuadraticSpec(dim=11)), out_dir=tmp_path)
    adam = [r for r in results.records if r["method"] == "adam"]
    gd = [r for r in results.records if r["method"] == "gd"]
    assert len(gd) == 2 * 2 and {r["lr_multiplier"] for r in gd} == {1.0}
    assert len(adam) == 2 * 2 * 13 and 1.0 in {r["lr_multiplier"] for r in adam}
    from otod.condition.records import condition_analysis

    chosen = condition_analysis(results).chosen
    assert (chosen["method"] == "adam").sum() == 2 * 2
