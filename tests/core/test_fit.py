"""The fit's building blocks that do not depend on an obstacle."""

import numpy as np

from otod.core.fit import nan_median


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
