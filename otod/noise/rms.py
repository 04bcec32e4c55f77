"""The RMS of Gaussian noise against its size, figure (e) of the noise obstacle (``otod figures noise/rms``): the
norm of d-dimensional N(0, I_d) noise grows as √d (E‖ξ‖² = d), and the error of a mean of n scalar N(0, 1) draws
shrinks as 1/√n (its variance is 1/n). NumPy draws, seeded; kept as a results file
(``results/noise-rms-<digest>.json``, `otod.core.results.kept`) that the figure and the claims table read.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: The results file's kind (its name's prefix).
KIND = "noise-rms"
#: The two quantities: the norm of N(0, I_d) noise against d, the error of a mean of n draws against n.
NORM, MEAN_ERROR = "norm", "mean_error"


def sizes() -> tuple[list[int], list[int]]:
    """The dimensions d (13 points from 1 to 10⁴, log-spaced and rounded) and the sample counts n (1 to 2¹²)."""
    dims = np.unique(np.geomspace(1, 1e4, 13).round()).astype(int)
    return [int(d) for d in dims], [int(n) for n in 2 ** np.arange(0, 13)]


def config(draws: int, seed: int) -> dict[str, Any]:
    """What the records depend on (the results file is named by its digest)."""
    dims, ns = sizes()
    return {"kind": KIND, "draws": int(draws), "seed": int(seed), "dims": dims, "samples": ns}


def rms_records(draws: int, seed: int) -> list[dict[str, Any]]:
    """One record per point: ``quantity`` (`NORM` or `MEAN_ERROR`), ``size`` (d or n) and ``rms``, the root mean
    square over ``draws`` draws of ‖ξ‖ for ξ ~ N(0, I_d), then of the mean of n N(0, 1) draws, in that order from
    one generator seeded with ``seed``."""
    rng = np.random.default_rng(int(seed))
    dims, ns = sizes()
    out = [{"quantity": NORM, "size": d, "rms": float(np.sqrt(np.mean(np.sum(rng.standard_normal((draws, d)) ** 2,
                                                                               -1))))} for d in dims]
    out += [{"quantity": MEAN_ERROR, "size": n, "rms": float(np.sqrt(np.mean(rng.standard_normal((draws, n)).mean(-1)
                                                                                 ** 2)))} for n in ns]
    return out


def measured(draws: int, seed: int, folder: str = "results") -> list[dict[str, Any]]:
    """`rms_records`, read back from ``<folder>/noise-rms-<digest>.json`` where an earlier run wrote it, else drawn
    and written there (`otod.core.results.kept`)."""
    from otod.core.api import kept

    return kept(KIND, config(draws, seed), lambda: rms_records(draws, seed), folder).records


def series(records: list[dict[str, Any]], quantity: str) -> tuple[np.ndarray, np.ndarray]:
    """(sizes, RMS values) of one quantity, in the records' order."""
    rows = [r for r in records if r["quantity"] == quantity]
    return np.array([r["size"] for r in rows], float), np.array([r["rms"] for r in rows], float)


def exponents(records: list[dict[str, Any]]) -> dict[str, float]:
    """The fitted exponent of each quantity, the slope of log RMS on log size by least squares
    (`otod.core.line_fit.fit_line`): theory ½ for the norm, −½ for the mean's error."""
    from otod.core.api import fit_line

    out = {}
    for quantity in (NORM, MEAN_ERROR):
        x, y = series(records, quantity)
        out[quantity] = float(fit_line(np.log(x), np.log(y))[0])
    return out


def exponent_errors(records: list[dict[str, Any]]) -> dict[str, float]:
    """The standard error of each fitted exponent of `exponents`, from the fit's residuals: √(RSS/(m − 2)/Σ(x − x̄)²)
    over the m points of log size x (the textbook least-squares slope error), so the printed exponent carries
    how far the draws leave it from ½ or −½ by chance."""
    from otod.core.api import fit_line

    out = {}
    for quantity in (NORM, MEAN_ERROR):
        x, y = series(records, quantity)
        rss = float(fit_line(np.log(x), np.log(y))[2])
        out[quantity] = float(np.sqrt(rss / (len(x) - 2) / np.sum((np.log(x) - np.log(x).mean()) ** 2)))
    return out
