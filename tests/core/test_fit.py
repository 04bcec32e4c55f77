"""The fit's building blocks that do not depend on an obstacle."""

import numpy as np

from otod.core.fit import nan_median, resampled_medians, sorted_rows


def test_nan_median_equals_numpys_with_nan_and_infinity():
    """Odd and even counts, NaN left out, +∞ (a censored lane) counted as a value, all-NaN rows NaN."""
    rng = np.random.default_rng(0)
    a = rng.integers(1, 50, (300, 7, 9)).astype(float)
    a[rng.random(a.shape) < 0.2] = np.nan
    a[rng.random(a.shape) < 0.1] = np.inf
    a[0, 0] = np.nan
    with np.errstate(invalid="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            expected = np.nanmedian(a, axis=-1)
    np.testing.assert_array_equal(nan_median(a), expected)


def test_resampled_medians_equal_the_medians_of_the_gathered_resamples_bitwise():
    """The bootstrap's counting shortcut gives exactly what gathering each replicate's columns and taking their
    NaN-ignoring median gives: odd and even numbers of seeds, NaN (diverged) and +∞ (censored) lanes, an all-NaN
    point, and one seed."""
    rng = np.random.default_rng(1)
    for points, seeds in ((40, 9), (40, 8), (25, 1), (300, 64)):
        a = np.round(rng.lognormal(3, 1, (points, seeds)))
        a[rng.random(a.shape) < 0.15] = np.nan
        a[rng.random(a.shape) < 0.05] = np.inf
        a[0] = np.nan
        cols = rng.integers(0, seeds, (50, seeds))
        expected = nan_median(a[:, cols].transpose(1, 0, 2))
        np.testing.assert_array_equal(resampled_medians(sorted_rows(a), cols), expected)
