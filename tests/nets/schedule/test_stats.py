"""otod.nets.schedule.stats: the quantities by hand, and the bootstrap re-making every choice (checked against a
brute force that re-chooses by looping over the replicates)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from otod.core.analysis import Cube, chosen
from otod.nets.schedule.stats import compare, quantities, replicate_columns, resampled


def cube(count, rates, batches=(16.0,)):
    """A converged cube [point, setting, seed] of the given counts (settings: the rates, β 0)."""
    count = np.asarray(count, float)
    n_points, n_settings, n_seeds = count.shape
    return Cube("sgd", pd.DataFrame({"batch": list(batches)}), np.asarray(rates, float), np.zeros(n_settings),
                np.arange(n_seeds), count, np.full(count.shape, "converged", object),
                np.arange(count.size).reshape(count.shape))


def test_quantities_by_hand():
    # phases: 10 steps at B = 8, then 20 at B = 16: 30 steps, 8·10 + 16·20 = 400 examples
    # constant: 50, 30, 25 steps at B = 8, 16, 32 (400, 480, 800 examples)
    q = quantities([[10.0, 20.0]], [8, 16], [[50.0, 30.0, 25.0]], [8, 16, 32])
    assert q["schedule_steps"][0] == 30 and q["schedule_examples"][0] == 400
    assert (q["best_batch"][0], q["best_steps"][0], q["ratio"][0]) == (32, 25, 1.2)
    # within 400 examples only B = 8 qualifies
    assert (q["budget_batch"][0], q["budget_steps"][0], q["budget_ratio"][0]) == (8, 50, 0.6)
    # a lower bound (+∞) is never the best and makes the schedule's sum +∞
    q = quantities([[10.0, np.inf]], [8, 16], [[50.0, np.inf, 25.0]], [8, 16, 32])
    assert q["schedule_steps"][0] == np.inf and q["best_batch"][0] == 32
    assert q["schedule_examples"][0] == np.inf and q["budget_batch"][0] == 32  # every batch within +∞ examples


def brute_force(c, cols):
    """Per replicate: every setting's median over the drawn seeds (np.median), the lowest chosen (first of
    equals), its median returned."""
    out = np.empty((len(cols), c.count.shape[0]))
    for r, drawn in enumerate(cols):
        for p in range(c.count.shape[0]):
            medians = [np.median(c.count[p, k, drawn]) for k in range(c.count.shape[1])]
            out[r, p] = medians[int(np.argmin(medians))]
    return out


def test_each_replicate_rechooses_the_setting_on_its_seeds():
    rng = np.random.default_rng(1)
    # two rates whose medians are close: the full sample picks one, many resamples the other
    count = np.stack([rng.integers(40, 60, 7), rng.integers(38, 62, 7)])[None].astype(float)
    c = cube(count, [0.1, 0.3])
    cols = replicate_columns(7, 200, seed=3)
    got = resampled(c, cols)
    np.testing.assert_array_equal(got, brute_force(c, cols))
    # the selection differs between replicates: a bootstrap at the full sample's setting alone would differ
    full = int(np.argmin(np.median(count[0], axis=1)))
    fixed = np.array([np.median(count[0, full, d]) for d in cols])
    assert (got[:, 0] < fixed).any()


def test_compare_uses_one_draw_of_seeds_for_every_phase_and_batch():
    rng = np.random.default_rng(2)
    phases = [cube(rng.integers(5, 15, (1, 2, 6)), [0.1, 0.3], (8.0,)),
              cube(rng.integers(20, 40, (1, 2, 6)), [0.1, 0.3], (16.0,))]
    constant = cube(rng.integers(20, 80, (3, 2, 6)), [0.1, 0.3], (8.0, 16.0, 32.0))
    c = compare([chosen(p) for p in phases], (8, 16), chosen(constant), n_boot=100, seed=5)
    cols = replicate_columns(6, 100, seed=5)
    phase_rep = np.stack([brute_force(p, cols)[:, 0] for p in phases], axis=1)
    np.testing.assert_array_equal(c.phase_replicates, phase_rep)
    np.testing.assert_array_equal(c.constant_replicates, brute_force(constant, cols))
    np.testing.assert_array_equal(c.replicates["schedule_steps"], phase_rep.sum(1))
    best = brute_force(constant, cols).min(1)
    np.testing.assert_array_equal(c.replicates["ratio"], phase_rep.sum(1) / best)
    lo, hi = c.ci("ratio")
    assert lo <= c.estimate["ratio"] <= hi or not np.isfinite(lo)
    assert lo == pytest.approx(np.percentile(c.replicates["ratio"], 2.5))


def test_frontier_interpolates_in_logs_between_undominated_batches():
    from otod.nets.schedule.stats import frontier_steps

    e, s = np.array([400.0, 480.0, 600.0, 800.0]), np.array([50.0, 30.0, 40.0, 25.0])  # 600 is dominated by 480
    t = np.log(440 / 400) / np.log(480 / 400)
    assert frontier_steps(440.0, e, s) == pytest.approx(np.exp((1 - t) * np.log(50) + t * np.log(30)), rel=1e-12)
    t = np.log(700 / 480) / np.log(800 / 480)  # skips the dominated 600
    assert frontier_steps(700.0, e, s) == pytest.approx(np.exp((1 - t) * np.log(30) + t * np.log(25)), rel=1e-12)
    assert frontier_steps(300.0, e, s) == pytest.approx(50.0) and frontier_steps(5000.0, e, s) == pytest.approx(25.0)
    assert np.isnan(frontier_steps(300.0, e, np.full(4, np.inf)))
    assert frontier_steps(480.0, e, np.array([50.0, np.inf, 40.0, 25.0])) == pytest.approx(
        np.exp(np.interp(np.log(480), np.log([400, 600]), np.log([50, 40]))), rel=1e-12)  # a lower bound is left out
    q = quantities([[10.0, 20.0]], [8, 16], [[50.0, 30.0, 25.0]], [8, 16, 32])  # the schedule's 400 examples
    assert q["frontier_steps"][0] == pytest.approx(50, rel=1e-12) and q["frontier_ratio"][0] == pytest.approx(0.6)
