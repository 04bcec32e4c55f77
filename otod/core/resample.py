"""The seed bootstrap's resampling, shared by every statistic the core's bootstrap (`otod.core.analysis.bootstrap`)
reads: the seed columns each replicate draws (`seed_draws`) and each row's median over them (`resampled_medians`),
without gathering and sorting every resample. Pure NumPy: the choice made on these medians is the analysis's
(`otod.core.analysis.rechosen`)."""

from __future__ import annotations

import numpy as np


def seed_draws(n_seeds: int, n_boot: int, seed: int = 0, batch: int = 100) -> list[np.ndarray]:
    """The seed columns every replicate of a bootstrap draws, with replacement: ``batch`` replicates [replicate,
    seed] at a time from ``default_rng(seed)`` (the stream is the same in any batch size: one draw of [n_boot,
    n_seeds] gives the same columns). A statistic of several cubes, or of per-seed values beside a cube (a
    predictor's median over the same seeds), reads them through the bootstrap's ``draws``, so its replicates
    pair with the cube's."""
    rng = np.random.default_rng(seed)
    return [rng.integers(0, n_seeds, (min(batch, n_boot - start), n_seeds)) for start in range(0, n_boot, batch)]


def sorted_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(each row's sort order, the sorted rows, each row's count of non-NaN entries): what `resampled_medians`
    needs, computed once for all bootstrap replicates."""
    order = np.argsort(a, axis=1)
    return order, np.take_along_axis(a, order, 1), (~np.isnan(a)).sum(1)


def resampled_medians(rows: tuple[np.ndarray, np.ndarray, np.ndarray], cols: np.ndarray) -> np.ndarray:
    """``nan_median(a[:, cols].transpose(1, 0, 2))`` ([replicate, row]: each row's median over the columns that
    replicate drew, NaN ignored), bitwise, without gathering and sorting every resample.

    A replicate that draws column j c_j times holds, in row i, the row's sorted values each repeated c_j times, so
    its k-th order statistic is the first sorted value whose running count exceeds k. With the rows sorted once
    (`sorted_rows`), a pass over the sorted positions keeps every (row, replicate)'s running count and how many
    positions stay at or below the two middle ranks: O(rows × replicates) memory, and about 9× faster than the
    gather-and-sort on 1250 points × 200 seeds × 100 replicates."""
    order, ordered, valid = rows
    n_rows, n_cols = ordered.shape
    counts = np.zeros((n_cols, len(cols)), np.int32)
    np.add.at(counts, (cols.ravel(), np.repeat(np.arange(len(cols)), cols.shape[1])), 1)
    not_nan = np.zeros((n_rows, n_cols))
    np.put_along_axis(not_nan, order, np.arange(n_cols)[None, :] < valid[:, None], 1)
    n = (not_nan @ counts).astype(np.int32)
    below_low, below_high = np.maximum((n - 1) // 2, 0), n // 2
    running = np.zeros_like(n)
    low, high = np.zeros_like(n), np.zeros_like(n)
    for k in range(n_cols):
        running += counts[order[:, k]]
        low += running <= below_low
        high += running <= below_high
    low, high = np.minimum(low, n_cols - 1), np.minimum(high, n_cols - 1)
    index = np.arange(n_rows)[:, None]
    with np.errstate(invalid="ignore"):
        return np.ascontiguousarray(np.where(n > 0, 0.5 * (ordered[index, low] + ordered[index, high]), np.nan).T)
