"""The predictors of B_crit along training (`otod.nets.along.predictors`): the joint seed bootstrap replays the critical
batch's own re-selecting bootstrap draw for draw, the ratio's CI on known replicates, the ranking's known factors,
and the rows and table of an along-training result with them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from otod.nets.along import predictors as pr

def synthetic_cube(seeds: int = 5):
    """A batch sweep's cube [batch, lr, seed]: S = 50 (1 + 32/B) at the best lr (×1.3 and ×1.6 at the others,
    which of them is best differs by seed), times a seed's log-normal scatter (σ 0.15), all converged."""
    import pandas as pd

    from otod.core.analysis import Cube

    rng = np.random.default_rng(7)
    batches = np.array([8.0, 16.0, 32.0, 64.0, 128.0, 256.0])
    rates = np.array([0.5, 1.0, 2.0])
    steps = 50.0 * (1 + 32.0 / batches)
    factor = np.array([1.3, 1.0, 1.6])[None, :, None] * np.exp(rng.normal(0, 0.15, (len(batches), 3, seeds)))
    count = np.round(steps[:, None, None] * factor)
    shape = count.shape
    return Cube("sgd", pd.DataFrame({"batch": batches}), rates, np.zeros(3), np.arange(seeds), count,
                np.full(shape, "converged", object), np.arange(count.size).reshape(shape))


#: Resamples in these tests (the reports take 500; 200 keep each test well under 2 s).
N_BOOT = 200


def synthetic_series(seeds: int = 5):
    """What `joint_ratio_intervals` reads of a `otod.core.critical_batch.Series`: its choice (the cube) and its
    critical batch (from the core's bootstrap of the cube: `N_BOOT` resamples, generator seed 0)."""
    from types import SimpleNamespace

    from otod.core import analysis as core
    from otod.core.critical_batch import critical_batch_fit

    cube = synthetic_cube(seeds)
    boot = core.bootstrap(cube, "batch", critical_batch_fit, n_boot=N_BOOT, seed=0)
    critical = SimpleNamespace(b_crit=float(boot.estimate[1]), b_crit_ci=boot.ci(1), replicates=boot.replicates,
                               draws=boot.draws, deterministic=boot.deterministic)
    return SimpleNamespace(choice=boot.choice, critical=critical)


def test_the_draws_the_ratio_reads_are_those_behind_the_critical_batch_replicates():
    """On a 5-seed batch sweep whose lr choice differs by seed: the draws the core's bootstrap keeps are its
    generator's (seed 0, 100 per call), and re-choosing every batch's lr on them and refitting gives its B_crit
    replicates bit for bit (so replicate r of a predictor's median, on draw r, pairs with B_crit's replicate r),
    whose 2.5/97.5 percentiles are B_crit's CI."""
    from otod.core import analysis as core
    from otod.core.critical_batch import critical_batch_fit

    series = synthetic_series()
    cols = series.critical.draws
    assert cols.shape == (N_BOOT, 5) and cols.min() == 0 and cols.max() == 4
    np.testing.assert_array_equal(cols, np.random.default_rng(0).integers(0, 5, (N_BOOT, 5)))
    cube = series.choice.cube
    mine = critical_batch_fit(cube.x("batch"), core.rechosen(cube)(cols))[:, 1]
    np.testing.assert_array_equal(mine, series.critical.replicates[:, 1])
    lo, hi = np.percentile(mine[~np.isnan(mine)], [2.5, 97.5])
    assert (lo, hi) == pytest.approx(series.critical.b_crit_ci, rel=1e-12)


def test_the_joint_ci_of_a_predictor_equal_on_every_seed_is_b_crit_s_ci_inverted():
    """A predictor equal to c on every seed: each replicate's ratio is c / B_crit_r, so the joint CI is
    [c / B_crit's upper end, c / its lower end] (up to the percentile's interpolation between neighbouring
    replicates: 1%); a predictor that differs across seeds widens the interval at the same median."""
    series = synthetic_series()
    lo, hi = series.critical.b_crit_ci
    cis = pr.joint_ratio_intervals(series, {"same": (40.0,) * 5, "spread": (10.0, 20.0, 40.0, 80.0, 160.0)})
    assert cis["same"] == pytest.approx((40.0 / hi, 40.0 / lo), rel=0.01)
    assert cis["spread"][0] < cis["same"][0] and cis["spread"][1] > cis["same"][1]


def test_a_sweep_of_too_few_seeds_gives_no_ratio_ci():
    """Four seeds give no CI for B_crit (`otod.core.analysis.no_ci_reason`), so none for the ratio either."""
    short = synthetic_series(4)
    ci = pr.joint_ratio_intervals(short, {"b_simple": (1.0, 2.0, 3.0, 4.0)})["b_simple"]
    assert all(math.isnan(v) for v in ci)


def test_the_resampled_median_and_percentile_interval_on_known_draws():
    """Values 1..5: resample (0,0,0,0,0) → 1, (4,4,4,4,4) → 5, (0,1,2,3,4) → 3, and (0,0,1,1,4) → 2 (values
    1,1,2,2,5), and with the
    non-finite seed 4 left out of (3,4) → 4; the 95% interval of 0..100 is [2.5, 97.5]; ∞ is kept, NaN dropped."""
    cols = np.array([[0, 0, 0, 0, 0], [4, 4, 4, 4, 4], [0, 1, 2, 3, 4], [0, 0, 1, 1, 4]])
    np.testing.assert_array_equal(pr.resampled_predictor((1.0, 2.0, 3.0, 4.0, 5.0), cols), [1, 5, 3, 2])
    np.testing.assert_array_equal(pr.resampled_predictor((1.0, 2.0, 3.0, 4.0, math.nan), np.array([[3, 4, 4]])), [4])
    assert pr.percentile_interval(np.arange(101.0)) == pytest.approx((2.5, 97.5), rel=1e-12)
    assert pr.percentile_interval(np.array([1.0, np.inf, np.nan] * 40))[1] == np.inf
    assert all(math.isnan(v) for v in pr.percentile_interval(np.array([np.nan])))


def test_the_ranking_s_factor_is_the_median_miss_either_way():
    """Ratios 2, 0.5, 4 → |log| = log 2, log 2, log 4 → factor 2; ratios 1.5, 1.5 → 1.5 ranks first; NaN and
    non-positive ratios are not counted; a predictor with none is left out."""
    ranked = pr.ranking({"a": [2.0, 0.5, 4.0], "b": [1.5, 1.5, math.nan], "c": [math.nan, 0.0]})
    assert [r["predictor"] for r in ranked] == ["b", "a"]
    assert ranked[0]["factor"] == pytest.approx(1.5) and ranked[0]["checkpoints"] == 2
    assert ranked[1]["factor"] == pytest.approx(2.0) and (ranked[1]["ratio_min"], ranked[1]["ratio_max"]) == (0.5, 4.0)


def test_rows_carry_every_predictor_its_joint_ci_and_the_best():
    """A checkpoint with B_crit 20 and predictors B_simple (30, 40, 90) → 40, NQM (18, 20, 22) → 20: ratios 2 and
    1, the joint CIs as given, NQM C∝H named best (factor 1; an ablation variant, as exact, is no predictor and is
    not ranked); the table prints the ratio with its CI."""
    from otod.nets.along import branching as along
    from tests.nets.along.test_branching import point

    cp = along.Checkpoint(100, 0.8, (0.7, 0.9), 0.4, (point(20.0, (10.0, 40.0)),), None, (30.0, 40.0, 90.0),
                          (10.0, 12.0, 14.0), {"nqm_scaled": (18.0, 20.0, 22.0), "ablation_fractional": (20.0,) * 3},
                          {"sgd": {"b_simple": (1.1, 3.9), "nqm_scaled": (0.6, 1.8)}})
    result = along.AlongTrainingResult((cp,), along.Branching((100,)), {}, "")
    row, = result.rows()
    assert (row["b_simple_ratio"], row["b_simple_ratio_lo"], row["b_simple_ratio_hi"]) == (2.0, 1.1, 3.9)
    assert (row["nqm_scaled"], row["nqm_scaled_ratio"], row["nqm_scaled_min"]) == (20.0, 1.0, 18.0)
    assert math.isnan(row["b_noise_ratio_lo"]) and row["b_noise_ratio"] == pytest.approx(0.6)
    assert row["best_predictor"] == "nqm_scaled" and row["best_factor"] == pytest.approx(1.0)
    assert [r["predictor"] for r in result.best()["sgd"]] == ["nqm_scaled", "b_noise", "b_simple"]
    text = along.predictor_table(result)
    assert "2 [1.1, 3.9]" in text and "1 [0.6, 1.8]" in text and "best predictor (sgd): NQM C∝H" in text


def test_a_standard_error_is_a_diagnostic_and_the_table_states_it():
    """``se_b_noise`` (B_noise's standard error where tr(HΣ) is drawn, `checkpoint_predictors` with
    ``trace_examples``) is neither ranked nor tabulated as a predictor, and the table says B_noise was drawn, with
    the seeds' median relative error: 0.5/10, 1/12, 2/14 → 8.3%, largest 14%."""
    from otod.nets.along import branching as along
    from tests.nets.along.test_branching import point

    cp = along.Checkpoint(100, 0.8, (0.7, 0.9), 0.4, (point(20.0, (10.0, 40.0)),), None, (30.0, 40.0, 90.0),
                          (10.0, 12.0, 14.0), {"se_b_noise": (0.5, 1.0, 2.0)}, {"sgd": {}})
    result = along.AlongTrainingResult((cp,), along.Branching((100,)), {}, "")
    assert [r["predictor"] for r in result.best()["sgd"]] == ["b_noise", "b_simple"]
    text = along.predictor_table(result)
    assert "median 8.3% (largest 14%) of B_noise" in text and "se_b_noise" not in text
    assert not pr.is_predictor("se_b_noise") and not pr.is_predictor("ablation_fractional")
    assert pr.is_predictor("two_batch_8_64")


def test_the_drawn_trace_is_each_seeds_own_draw_and_all_examples_are_the_exact_values():
    """With ``trace_examples`` = m < n, seed s's B_noise and its standard error are those of
    `gradient_moments(problem, m, seed=1000·root + s)` (its own draw; B_simple stays exact: from the per-example
    norms there, `otod.nets.measure.example_norms`, equal to the vmapped gradients' to 1e-10 in float64), and m = n
    gives the exact values with a zero error."""
    import jax

    from otod.nets.model.branch import start_of_seed
    from otod.nets.measure.noise_scale import gradient_moments
    from tests.nets.measure.test_noise_scale import TINY

    spec = TINY[0]
    exact = pr.checkpoint_predictors(spec, 3, 2, pairs=((2, 4),), draws=4)
    drawn = pr.checkpoint_predictors(spec, 3, 2, pairs=((2, 4),), draws=4, trace_examples=5)
    every = pr.checkpoint_predictors(spec, 3, 2, pairs=((2, 4),), draws=4, trace_examples=spec.examples)
    with jax.enable_x64(True):
        own = [gradient_moments(pr.noise_problem(spec, start_of_seed(spec, 3, s)), 5, seed=3000 + s)
               for s in range(2)]
    assert drawn["b_noise"] == tuple(m["b_noise"] for m in own) != exact["b_noise"]
    assert drawn["se_b_noise"] == tuple(m["trace_h_sigma_se"] / m["gHg"] for m in own)
    assert all(v > 0 for v in drawn["se_b_noise"])
    assert drawn["b_simple"] == pytest.approx(exact["b_simple"], rel=1e-10)
    assert every["b_noise"] == pytest.approx(exact["b_noise"], rel=1e-12) and every["se_b_noise"] == (0.0, 0.0)
