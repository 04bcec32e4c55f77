"""Power law or exponential, chosen by AIC: synthetic counts from each law are recognised, censored medians are
left out, and too few points say so."""

from __future__ import annotations

import math

import numpy as np

from otod.core.laws import aic
from otod.depth.records import fit_laws


def records(counts: dict[float, list[float]], series: str = "gd·x", censored_at: float | None = None) -> list[dict]:
    out = []
    for depth, per_seed in counts.items():
        for s, c in enumerate(per_seed):
            status = "censored" if censored_at is not None and c >= censored_at else "converged"
            out.append({"method": series, "depth": depth, "seed": s, "iterations": int(min(c, censored_at or c)),
                        "status": status})
    return out


def noisy(law, depths, seeds=16, seed=0):
    rng = np.random.default_rng(seed)
    return {float(d): list(np.round(law(d) * np.exp(0.05 * rng.standard_normal(seeds)))) for d in depths}


def test_exponential_counts_choose_the_exponential_with_its_rate_in_the_ci():
    """T = 3·e^{0.4L} with 5% noise: exponential by AIC, c within its 95% CI and within 0.02 of 0.4."""
    fit = fit_laws(records(noisy(lambda d: 3 * math.exp(0.4 * d), range(2, 13))), "depth", n_boot=300)[0]
    assert fit.law == "exponential" and fit.delta_aic > 2
    assert fit.exp_ci[0] <= fit.exp_c <= fit.exp_ci[1] and abs(fit.exp_c - 0.4) < 0.02


def test_power_counts_choose_the_power_law():
    """T = 5·L^2 with 5% noise: power law by AIC, b within 0.05 of 2."""
    fit = fit_laws(records(noisy(lambda d: 5 * d ** 2, range(1, 13))), "depth", n_boot=300)[0]
    assert fit.law == "power" and abs(fit.power_b - 2) < 0.05


def test_censored_medians_are_left_out_and_fewer_than_three_points_say_so():
    """Depths whose median is censored drop out; with two depths left, no law is chosen and the note says why."""
    counts = {1.0: [10] * 4, 2.0: [20] * 4, 3.0: [100] * 4, 4.0: [100] * 4}
    fit = fit_laws(records(counts, censored_at=100), "depth")[0]
    assert fit.law is None and fit.points == 2 and fit.left_out == 2
    assert "fewer than 3 depth values" in fit.note


def test_aic_difference_is_n_log_of_the_rss_ratio():
    assert abs(aic(2.0, 10) - aic(1.0, 10) - 10 * math.log(2.0)) < 1e-12


def test_medians_that_rise_and_fall_beyond_their_cis_get_no_law():
    """The toy's medians 1, 8.5, 31, 27, 122.5, 60.5, 114, 55.5 (over k = 1..8) once gave b = 2.11. With 16 seeds
    of 5% noise around them the fall from 122.5 to 55.5 is far outside the CIs: no law, one note saying where.
    The same medians made monotone are fitted as before."""
    medians = [1, 8.5, 31, 27, 122.5, 60.5, 114, 55.5]
    fit = fit_laws(records(noisy(lambda k: medians[int(k) - 1], range(1, 9))), "depth", n_boot=300)[0]
    assert fit.law is None and math.isnan(fit.power_b) and math.isnan(fit.exp_c)
    assert fit.note.startswith("medians rise and fall in depth beyond their 95% CIs (up from 1 to 2, down from")
    rising = fit_laws(records(noisy(lambda k: sorted(medians)[int(k) - 1], range(1, 9))), "depth", n_boot=300)[0]
    assert rising.law is not None and rising.power_b > 0


def test_a_dip_within_the_cis_is_still_fitted():
    """Noise (40% per seed) makes a small dip in the medians; the CIs overlap, so the law is fitted."""
    counts = noisy(lambda d: 10 * d ** 2, range(2, 10), seeds=16)
    rng = np.random.default_rng(3)
    counts = {d: [c * np.exp(0.4 * rng.standard_normal()) for c in cs] for d, cs in counts.items()}
    fit = fit_laws(records(counts), "depth", n_boot=300)[0]
    assert fit.law is not None and 1.5 < fit.power_b < 2.5
