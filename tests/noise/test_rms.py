"""The RMS of Gaussian noise against its size (`otod.noise.rms`, figure (e)): √d for the norm of N(0, I_d) noise
and 1/√n for the error of a mean of n draws, seeded and kept as a results file."""

from __future__ import annotations

import numpy as np

from otod.noise import rms


def test_the_fitted_exponents_are_a_half_and_minus_a_half_within_their_sampling_error():
    """At 2000 draws the RMS of each point is within a few % of √d (1/√n), so the log–log slopes are ½ and −½ to
    ±0.02; the records hold 13 d and 13 n, d from 1 to 10⁴, n from 1 to 4096."""
    records = rms.rms_records(2000, seed=1)
    dims, norms = rms.series(records, rms.NORM)
    ns, errors = rms.series(records, rms.MEAN_ERROR)
    assert (dims[0], dims[-1], len(dims), ns[0], ns[-1], len(ns)) == (1, 10_000, 13, 1, 4096, 13)
    assert np.allclose(norms, np.sqrt(dims), rtol=0.1) and np.allclose(errors, 1 / np.sqrt(ns), rtol=0.1)
    slopes = rms.exponents(records)
    assert abs(slopes[rms.NORM] - 0.5) < 0.02 and abs(slopes[rms.MEAN_ERROR] + 0.5) < 0.02
    error = rms.exponent_errors(records)
    assert 0 < error[rms.NORM] < 0.01 and 0 < error[rms.MEAN_ERROR] < 0.02
    assert abs(slopes[rms.NORM] - 0.5) < 3 * error[rms.NORM] and abs(slopes[rms.MEAN_ERROR] + 0.5) < 3 * error[
        rms.MEAN_ERROR], (slopes, error)


def test_the_exponent_error_is_the_least_squares_slope_error():
    """On points y = ½x + ε with residuals ±0.1 alternating over x = 0…3 (x̄ 1.5, Σ(x − x̄)² = 5), the fitted
    slope's standard error is √(RSS/(m − 2)/Σ(x − x̄)²) computed by hand."""
    x = np.exp(np.arange(4.0))
    y = np.exp(0.5 * np.arange(4.0) + np.array([0.1, -0.1, 0.1, -0.1]))
    records = [{"quantity": rms.NORM, "size": a, "rms": b} for a, b in zip(x, y)]
    records += [{"quantity": rms.MEAN_ERROR, "size": a, "rms": 1 / b} for a, b in zip(x, y)]
    dx = np.arange(4.0) - 1.5
    resid = np.array([0.1, -0.1, 0.1, -0.1])
    slope_shift = (dx * resid).sum() / (dx * dx).sum()
    rss = ((resid - resid.mean() - slope_shift * dx) ** 2).sum()
    expected = np.sqrt(rss / 2 / (dx * dx).sum())
    error = rms.exponent_errors(records)
    assert np.isclose(error[rms.NORM], expected, rtol=1e-12) and np.isclose(error[rms.MEAN_ERROR], expected, rtol=1e-12)


def test_the_draws_are_seeded_and_kept_by_their_settings(tmp_path):
    """The same draws and seed give the same records; `measured` writes them once to results/noise-rms-<digest>.json
    (another seed, another file) and reads them back unchanged."""
    assert rms.rms_records(30, 4) == rms.rms_records(30, 4) != rms.rms_records(30, 5)
    first = rms.measured(30, 4, folder=str(tmp_path))
    assert first == rms.measured(30, 4, folder=str(tmp_path)) == rms.rms_records(30, 4)
    rms.measured(30, 5, folder=str(tmp_path))
    assert len(list(tmp_path.glob("noise-rms-*.json"))) == 2
