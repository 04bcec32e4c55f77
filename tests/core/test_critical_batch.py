"""The critical batch as statistics of any S(B) (`otod.core.critical_batch`) and its report text
(`otod.core.batch_report`): McCandlish et al.'s curve recovered exactly, the perfect-scaling limit on a doubling
grid, B_crit beyond or below the grid said in words, the table's marks by where a choice lies, and the scaling rule
of B_crit across panels (`scaling_rules`) recovering a known exponent."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from otod.core import critical_batch
from otod.core.analysis import GRID_END, INTERIOR, LIMIT, LIST_END
from otod.core.batch_report import MARKS, beta_text, steps_text, table


def test_mccandlish_fit_recovers_its_own_curve_and_the_perfect_scaling_limit():
    b = 2.0 ** np.arange(0, 12)
    s = 300.0 * (1 + 64.0 / b)
    s_min, b_crit = critical_batch.mccandlish_fit(b, s)
    assert s_min == pytest.approx(300.0, rel=1e-9) and b_crit == pytest.approx(64.0, rel=1e-9)
    # S(2B)/S(B) = (B + B_c/2)/(B + B_c) ≤ 0.55 ⇔ B ≤ (0.55 − 0.5)·B_c/0.45 = 7.1: the last grid B is 4
    assert critical_batch.perfect_scaling_limit(b, s) == 4.0


def test_mccandlish_fit_never_prints_a_negative_s_min_or_a_nan_b_crit():
    """Data an unconstrained fit turned into S_min < 0 and B_crit nan: steps ∝ 1/B over a ×4 grid (perfect
    scaling everywhere, B_crit beyond the grid), steps that fall faster than 1/B (noise), and flat steps."""
    b = 4.0 ** np.arange(0, 8)
    perfect = 1e5 / b
    s_min, b_crit = critical_batch.mccandlish_fit(b, perfect)
    assert s_min == 0.0 and b_crit == np.inf
    assert critical_batch.describe_critical_batch(b_crit, b) == "> 16384 (beyond the largest B)"
    faster = 1e5 / b ** 1.1  # curves the wrong way: the best non-negative fit is still S_min = 0
    s_min, b_crit = critical_batch.mccandlish_fit(b, faster)
    assert s_min >= 0 and (b_crit == np.inf or b_crit >= 0)
    s_min, b_crit = critical_batch.mccandlish_fit(b, np.full(len(b), 70.0))
    assert s_min == pytest.approx(70.0) and b_crit == pytest.approx(0.0, abs=1e-9)
    assert critical_batch.describe_critical_batch(b_crit, b) == "< 1 (below the smallest B)"
    assert critical_batch.describe_critical_batch(64.0, b) == "64"


def test_the_two_column_nonnegative_least_squares_equals_scipys_nnls():
    """`nonnegative_least_squares_2` against SciPy's active-set ``nnls`` on 300 random problems, a third of them
    with a column or the target flipped in sign (so the unconstrained optimum leaves x ≥ 0 on one side, the
    other, or both): the same minimiser within 1e-9 relative, and the same residual."""
    from scipy.optimize import nnls

    rng = np.random.default_rng(0)
    for trial in range(300):
        A = rng.uniform(0.1, 2.0, (rng.integers(2, 12), 2))
        y = rng.normal(1.0, 1.0, len(A))
        if trial % 3 == 1:
            A[:, trial % 2] *= -1
        elif trial % 3 == 2:
            y = -np.abs(y)
        expected, _ = nnls(A, y)
        got = np.array(critical_batch.nonnegative_least_squares_2(A, y))
        assert np.all(got >= 0)
        assert np.sum((A @ got - y) ** 2) == pytest.approx(np.sum((A @ expected - y) ** 2), rel=1e-9, abs=1e-12)
        np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-9)


def test_the_stacked_fits_equal_one_fit_at_a_time_bit_for_bit():
    """`mccandlish_fits` and `critical_batch_fit` (every bootstrap row at once) against `mccandlish_fit` and
    `relative_misfit` row by row, bit for bit, on 100 grids of 1–7 batches × 20 noisy rows (S_min 0–100, B_crit
    0–2,000, log-normal noise 0.01, 0.3 or 1.5) with NaN, +inf, 0 and negative steps mixed in, rows of perfect
    scaling (S_min = 0, B_crit inf), flat rows (B_crit 0) and an all-NaN row: the printed numbers cannot move."""
    rng = np.random.default_rng(1)
    for trial in range(100):
        b = np.sort(rng.choice(2.0 ** np.arange(11), rng.integers(1, 8), replace=False))
        rows = rng.uniform(0, 100) * (1 + rng.uniform(0, 2000) / b) * np.exp(
            rng.normal(0, rng.choice([0.01, 0.3, 1.5]), (20, len(b))))
        u = rng.random(rows.shape)
        rows[u < 0.1], rows[(u >= 0.1) & (u < 0.13)], rows[(u >= 0.13) & (u < 0.15)] = np.nan, np.inf, 0.0
        rows[(u >= 0.15) & (u < 0.17)] = -3.0
        rows[0], rows[1], rows[2] = np.nan, 1e4 / b, 10.0
        one_at_a_time = []
        for steps in rows:
            s_min, b_crit = critical_batch.mccandlish_fit(b, steps)
            one_at_a_time.append((s_min, b_crit, critical_batch.relative_misfit(b, steps, s_min, b_crit)))
        np.testing.assert_array_equal(critical_batch.critical_batch_fit(b, rows), np.array(one_at_a_time))


def test_the_table_marks_each_choice_by_where_it_lies_and_shows_beta_only_where_read():
    """One method with β and one without, two batches: an interior choice has no mark, a limit |, the end of a
    list or grid *; sgd's β is —; a lower-bound median prints ≥N; β near 1 prints as 1−x."""
    summary = pd.DataFrame({"value": [1.0, 2.0], "median": [120.0, 80.0], "lower_bound": [False, True],
                            "learning_rate": [0.1, 0.2], "beta": [0.9, 1 - 5e-6], "lr_on_edge": [False, True],
                            "beta_on_edge": [False, False]})
    series = [critical_batch.Series(m, 10.0, None, summary) for m in ("heavy-ball", "sgd")]
    places = {(10.0, "heavy-ball", 1.0): (INTERIOR, INTERIOR), (10.0, "heavy-ball", 2.0): (LIMIT, LIST_END),
              (10.0, "sgd", 1.0): (GRID_END, INTERIOR), (10.0, "sgd", 2.0): (INTERIOR, INTERIOR)}
    lines = table(series, "B", ("heavy-ball",), places)
    assert lines[2].split() == ["1", "120", "0.1", "0.9", "120", "0.1*", "—"]
    assert lines[3].split() == ["2", "≥80", "0.2|", "1−5e-6*", "≥80", "0.2", "—"]
    assert (MARKS[INTERIOR], MARKS[LIMIT], MARKS[LIST_END], MARKS[GRID_END]) == (" ", "|", "*", "*")
    assert beta_text(0.999) == "0.999" and beta_text(1 - 2e-6) == "1−2e-6" and steps_text(np.nan, False) == "—"
    # without places, an edge flag is the end of a list
    assert table(series[:1], "B", ("heavy-ball",))[3].split()[2] == "0.2*"


def test_a_b_crit_counts_only_inside_the_batches_of_its_fit():
    inside = critical_batch.inside
    batches = [8, 16, 1024]
    assert inside(31.1, batches) and inside(8, batches) and inside(1024, batches)
    assert not inside(1651.0, batches)  # heavy-ball's predicted B_crit, fitted over B ≤ 1024
    assert not inside(4.0, batches) and not inside(float("inf"), batches) and not inside(31.1, [])


def synthetic_panels(a: float, b: float, seeds: int = 5) -> pd.DataFrame:
    """Records of a batch sweep over 3 parameter counts P × 3 training sizes D, whose steps follow S(B) = 1000(1 +
    B_crit/B) exactly at the median seed, B_crit = 2·D^a·(P/100)^b; the other seeds' steps are ±2% and ±4% of it,
    assigned to seeds in a different order at each point (so resamples move the medians), and a second learning
    rate 1.5× slower that the selection must not choose."""
    rng = np.random.default_rng(0)
    rows = []
    for p in (100.0, 1000.0, 10000.0):
        for d in (64.0, 256.0, 1024.0):
            b_crit = 2.0 * d ** a * (p / 100.0) ** b
            for batch in 2.0 ** np.arange(1, 10):
                clean = 1000.0 * (1.0 + b_crit / batch)
                spread = rng.permutation(np.linspace(-0.04, 0.04, seeds))
                for seed in range(seeds):
                    for lr, slower in ((0.1, 1.5), (0.3, 1.0)):
                        rows.append(dict(method="sgd", seed=seed, status="converged", learning_rate=lr, beta=0.0,
                                         iterations=clean * slower * (1.0 + spread[seed]), batch=batch, dim=p,
                                         examples=d))
    return pd.DataFrame(rows)


def test_the_scaling_rule_recovers_known_exponents_in_d_at_fixed_p_and_in_p_at_fixed_d():
    """B_crit = 2·D^0.5·(P/100)^0.2 exactly at the medians: each of the 3 rules in D (one per P) gives slope 0.5 and
    each in P (one per D) 0.2, to 1e-6 (the S(B) fit is exact on the medians, the slope of an exact power law is
    its exponent); each 95% CI (the seeds resampled and the lr re-chosen per replicate) covers it and is narrower
    than ±0.15 (the ±4% seed spread moves a B_crit by well under 2^0.15)."""
    frame = synthetic_panels(0.5, 0.2)
    analysis = critical_batch.analyse_batches(frame, {"config": {}}, axis="batch", point=("batch",),
                                              by=("dim", "examples"), n_boot=200)
    assert len(analysis.panels) == 9 and all(len(analysis.in_panel(p)) == 1 for p in analysis.panels)
    assert all(s.summary["learning_rate"].eq(0.3).all() for s in analysis.series)
    for field, exponent, other in (("examples", 0.5, "dim"), ("dim", 0.2, "examples")):
        rules = critical_batch.scaling_rules(analysis, field)
        assert sorted(dict(r.fixed)[other] for r in rules) == (
            [100.0, 1000.0, 10000.0] if other == "dim" else [64.0, 256.0, 1024.0])
        for r in rules:
            assert r.points == 3 and r.slope == pytest.approx(exponent, abs=1e-6)
            assert r.ci[0] <= exponent <= r.ci[1] and r.ci[1] - r.ci[0] < 0.3, r
            x, fixed = np.array(r.span), dict(r.fixed)
            d, p = (x, fixed["dim"]) if field == "examples" else (fixed["examples"], x)
            assert r.line(x) == pytest.approx(2.0 * d ** 0.5 * (p / 100.0) ** 0.2, rel=1e-6)


def test_the_fits_band_is_the_percentiles_of_the_replicate_curves_and_absent_without_a_ci():
    """The drawn S(B) fit's 95% band: at each B the 2.5 and 97.5 percentiles of S_min_r (1 + B_crit_r/B) over the
    bootstrap's replicates (here 100 replicates with S_min = 10 + r/10 and B_crit = 20: the band is 10.2475 and
    19.6525 times (1 + 20/B)); none where the fit is deterministic, has no CI, or too few finite replicates."""
    reps = np.column_stack([10 + np.arange(100) / 10, np.full(100, 20.0), np.zeros(100)])

    def fit(**kw):
        base = dict(s_min=15.0, b_crit=20.0, residual=0.0, s_min_ci=(10.2, 19.8), b_crit_ci=(20.0, 20.0), points=5,
                    censored=0, diverged=0, deterministic=False, replicates=reps)
        return critical_batch.CriticalBatch(**{**base, **kw})

    b = np.array([4.0, 20.0, 80.0])
    lo, hi = fit().band(b)
    np.testing.assert_allclose(lo, np.percentile(10 + np.arange(100) / 10, 2.5) * (1 + 20 / b), rtol=1e-12)
    np.testing.assert_allclose(hi, np.percentile(10 + np.arange(100) / 10, 97.5) * (1 + 20 / b), rtol=1e-12)
    np.testing.assert_allclose([lo / (1 + 20 / b), hi / (1 + 20 / b)], [[10.2475] * 3, [19.6525] * 3], rtol=1e-12)
    assert fit(deterministic=True).band(b) is None
    assert fit(no_ci="3 seeds give 10 distinct bootstrap resamples").band(b) is None
    assert fit(replicates=reps[:10]).band(b) is None


def test_a_scaling_rules_band_is_the_percentiles_of_its_refitted_lines_and_absent_without_a_ci():
    """B_crit ∝ x^slope drawn with its 95% band (`ScalingRule.band`): the percentiles over the replicate lines
    e^(intercept_r)·x^(slope_r). 100 replicates of slope 0.5 and e^(intercept_r) = 10 + r/10 give 10.2475·√x and
    19.6525·√x; none without a CI (``no_ci``) or without replicates. The replicates `scaling_rules` keeps are the
    ones its CI reads: their slopes' 2.5 and 97.5 percentiles are the rule's CI."""
    lines = np.column_stack([np.full(100, 0.5), np.log(10 + np.arange(100) / 10)])
    rule = critical_batch.ScalingRule("sgd", "dim", (), 0.5, math.log(15.0), (0.5, 0.5), 3, (100.0, 10000.0),
                                      None, lines)
    x = np.array([100.0, 1000.0, 10000.0])
    lo, hi = rule.band(x)
    np.testing.assert_allclose([lo, hi], [10.2475 * np.sqrt(x), 19.6525 * np.sqrt(x)], rtol=1e-12)
    assert dataclasses.replace(rule, no_ci="4 seeds give 35 distinct bootstrap resamples").band(x) is None
    assert dataclasses.replace(rule, replicates=np.empty((0, 2))).band(x) is None
    frame = synthetic_panels(0.5, 0.2)
    analysis = critical_batch.analyse_batches(frame, {"config": {}}, axis="batch", point=("batch",),
                                              by=("dim", "examples"), n_boot=100)
    for r in critical_batch.scaling_rules(analysis, "examples"):
        assert r.replicates.shape[1] == 2 and len(r.replicates) > critical_batch.MIN_RULE_REPLICATES
        np.testing.assert_allclose(np.percentile(r.replicates[:, 0], [2.5, 97.5]), r.ci, rtol=1e-12)
        lo, hi = r.band(np.array(r.span))
        assert np.all(lo <= r.line(np.array(r.span)) * 1.001) and np.all(hi >= r.line(np.array(r.span)) * 0.999)
