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
