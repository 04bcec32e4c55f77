"""The two-batch estimators recover the NQM's true |G|² and tr Σ (McCandlish et al. 2018, app. A.1)."""

import numpy as np

from otod.noise import theory
from otod.noise.estimators import run_estimators, two_batch_draw


def test_two_batch_estimator_recovers_the_true_gradient_norm_and_noise_trace_within_three_standard_errors():
    """At a fixed θ of a d = 100 NQM, 4000 nested (4, 32) batch pairs: the means of the estimates equal
    |G|² = Σ h²θ² and tr Σ = Σ c within 3 standard errors of those means."""
    q = theory.nqm(100)
    rng = np.random.default_rng(1)
    G = q.h * rng.standard_normal(100)
    gs, gb = two_batch_draw(rng, G, q.c, 4, 32, shape=(4000,))
    g2, trace = theory.two_batch_estimates(gs, gb, 4, 32)
    for est, truth in ((g2, np.sum(G * G)), (trace, np.sum(q.c))):
        se = est.std(ddof=1) / np.sqrt(est.size)
        assert abs(est.mean() - truth) < 3 * se, (est.mean(), truth, se)


def test_the_run_is_seeded_and_its_truth_is_the_nqm_formula():
    a = run_estimators(50, [(2, 16)], [0.9], 0.1, 8, 20, 4, seed=3)
    b = run_estimators(50, [(2, 16)], [0.9], 0.1, 8, 20, 4, seed=3)
    np.testing.assert_array_equal(a["estimates"][((2, 16), 0.9)], b["estimates"][((2, 16), 0.9)])
    assert a["trace"] == np.sum(theory.nqm(50).c)
    np.testing.assert_allclose(a["true"], a["trace"] / a["g2"])


def test_the_exact_b_simple_is_the_ratio_of_expectations_at_the_step_it_names():
    """tr Σ / E|G(θ_t)|² from the second-moment recursion equals tr Σ over the Monte-Carlo mean of |G(θ_t)|² of
    400 independent SGD runs (the estimator runs' own true |G|² at column t, the state after t updates) within 5%,
    at t = 0 exactly; a mean of per-run ratios is not it (it is larger, by Jensen)."""
    import numpy as np

    from otod.noise import theory
    from otod.noise.estimators import exact_simple_noise_scale, run_estimators

    out = run_estimators(100, [(1, 8)], [0.0], 0.05, 32, 60, 400, seed=3)
    q = out["quadratic"]
    for t in (0, 20, 59):
        exact = exact_simple_noise_scale(q, 0.05, 32, t)
        ratio_of_means = out["trace"] / float(np.mean(out["g2"][:, t]))
        assert abs(exact - ratio_of_means) <= 0.05 * exact, (t, exact, ratio_of_means)
    assert exact_simple_noise_scale(q, 0.05, 32, 0) == np.sum(q.c) / np.sum(q.h ** 2 * q.s0)
    assert float(np.mean(out["true"][:, 59])) > 1.05 * exact_simple_noise_scale(q, 0.05, 32, 59)
    assert theory.noise_scales(q, q.s0)[0] == exact_simple_noise_scale(q, 0.05, 32, 0)


def test_a_median_two_batch_estimate_that_is_no_batch_size_is_printed_undefined_with_its_reason():
    """Pair 1:2 at decay 0 on d = 100 (8 seeds): at step 200 the median EMA(tr Σ̂)/EMA(|Ĝ|²) is negative, so the
    table prints 'undefined' with the reason, never a negative batch; the other rows print their positive number."""
    import numpy as np

    from otod.noise.estimators import noise_scale_report, run_estimators

    args = dict(dim=100, pairs=[(1, 2)], decays=[0.0], lr=0.05, batch=32, steps=400, seeds=8, seed=0)
    [estimates] = run_estimators(**args)["estimates"].values()
    assert np.median(estimates[:, 200]) < 0 < np.median(estimates[:, 100])
    text = noise_scale_report(**args)
    rows = [line.split() for line in text.splitlines() if line.startswith("    1:2")]
    assert [(row[2], row[4]) for row in rows if row[4] == "undefined"] == [("200", "undefined")]
    assert all(float(row[4]) > 0 for row in rows if row[4] != "undefined")
    assert "undefined (1:2 decay 0 step 200): the median over seeds" in text


def test_the_summary_reads_the_cut_share_the_bias_and_the_lag_off_the_kept_quartiles():
    """`estimate_summary` on records written here: a series whose lower quartile is ≤ 0 at 1 of its 4 steps (cut
    25%), whose median lies under the exact value at 2 of them (below 50%), and whose exact value over its median
    is 2, 4, 0.5, 1 (lag 0.5–4, largest at step 2); `estimate_records` keeps run_estimators' quartiles per step."""
    from otod.noise.estimators import estimate_records, estimate_summary

    exact = [2.0, 4.0, 1.0, 3.0]
    median = [1.0, 1.0, 2.0, 3.0]
    records = [{"b_small": 4, "b_big": 32, "decay": 0.99, "step": k + 1, "q25": [-1.0, 0.5, 1.0, 2.0][k],
                "median": median[k], "q75": 5.0, "exact": exact[k]} for k in range(4)]
    (s,) = estimate_summary(records)
    assert s == {"pair": "4:32", "decay": 0.99, "cut": 0.25, "below": 0.5, "lag_lo": 0.5, "lag_hi": 4.0,
                 "lag_step": 2}
    out = run_estimators(30, [(2, 8)], [0.0, 0.9], 0.1, 8, 6, 5, seed=2)
    kept = estimate_records(out)
    assert len(kept) == 2 * 6 and [r["step"] for r in kept[:6]] == [1, 2, 3, 4, 5, 6]
    q25, q50 = np.percentile(out["estimates"][((2, 8), 0.9)], [25, 50], axis=0)
    assert [r["median"] for r in kept[6:]] == q50.tolist() and [r["q25"] for r in kept[6:]] == q25.tolist()
    assert [r["exact"] for r in kept[:6]] == out["true"].mean(0).tolist()
