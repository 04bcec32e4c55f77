"""Empirical coverage of otod's nominal 95% seed-bootstrap intervals, where the truth is known.

A noise sweep run with many seeds (``--seeds G·K``) is cut into G disjoint groups of K seeds: G independent
repetitions of a K-seed sweep. Each group's analysis (select (lr, β) per batch by the median over its seeds, fit
S(B) = S_min(1 + B_crit/B), bootstrap) gives an interval; the coverage is the fraction of groups whose interval
holds the truth. Two truths:

* the population value: the same analysis on all G·K seeds (the estimand the K-seed interval is for, up to the
  sampling error of G·K seeds);
* the exact path (``--mode exact``, the NQM's moment recursions on the same lr grid): the steps at which the
  *expected* loss reaches the target. The simulator's median first-hitting time of the random loss is a
  different quantity; the gap between the two is printed beside the coverage.

Two intervals: the selection-aware one (`otod.core.analysis.bootstrap`: every resample re-chooses the lr), and
the fixed-selection one (the lr chosen once from the group's seeds, only the seeds resampled): the second is what
otod reported before issue 18.

Usage::

    python3 benchmarks/coverage.py SIMULATED.parquet EXACT.parquet --group 8 [--boot 1000]
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import pandas as pd

from otod.core import critical_batch
from otod.core import analysis
from otod.core import results as results_io


def mccandlish(x: np.ndarray, medians: np.ndarray) -> np.ndarray:
    """(S_min, B_crit) of each replicate's medians (NaN medians left out)."""
    out = np.full((len(medians), 2), np.nan)
    for i, m in enumerate(medians):
        ok = np.isfinite(m)
        out[i] = critical_batch.mccandlish_fit(x[ok], m[ok])
    return out


def fixed(cube: analysis.Cube) -> analysis.Cube:
    """The cube cut to each point's setting chosen on all its seeds: a bootstrap of it resamples the seeds with the
    selection held fixed."""
    index = analysis.chosen(cube).index
    take = lambda a: np.take_along_axis(a, index[:, None, None], 1)  # noqa: E731
    return analysis.Cube(cube.series, cube.points, np.ones(1), np.zeros(1), cube.seeds, take(cube.count),
                         take(cube.status), take(cube.row))


def group_cube(frame: pd.DataFrame, seeds: np.ndarray, method: str) -> analysis.Cube:
    part = frame[frame["seed"].isin(seeds) & (frame["method"] == method)]
    return analysis.cubes(part, ("batch",))[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("simulated")
    parser.add_argument("exact")
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--boot", type=int, default=1000)
    args = parser.parse_args()
    frame = analysis.frame_of(results_io.load(args.simulated))
    exact = analysis.frame_of(results_io.load(args.exact))
    seeds = np.sort(frame["seed"].unique())
    groups = [seeds[i:i + args.group] for i in range(0, len(seeds) - args.group + 1, args.group)]
    for method in frame["method"].unique():
        population = analysis.bootstrap(group_cube(frame, seeds, method), "batch", mccandlish, n_boot=1)
        exact_cube = analysis.cubes(exact[exact["method"] == method], ("batch",))[0]
        truth_exact = analysis.bootstrap(exact_cube, "batch", mccandlish, n_boot=1)
        gap = population.choice.median / truth_exact.choice.median - 1
        print(f"{method}: {len(groups)} groups of {args.group} seeds; population (all {len(seeds)} seeds) "
              f"S_min {population.estimate[0]:.4g}, B_crit {population.estimate[1]:.4g}; exact path S_min "
              f"{truth_exact.estimate[0]:.4g}, B_crit {truth_exact.estimate[1]:.4g}; simulated medians vs exact "
              f"per B: {', '.join(f'{g:+.0%}' for g in gap)}")
        hits = {(kind, truth, i): [] for kind in ("selection-aware", "fixed selection")
                for truth in ("population", "exact") for i in (0, 1)}
        widths = {kind: [] for kind in ("selection-aware", "fixed selection")}
        for g, group in enumerate(groups):
            cube = group_cube(frame, group, method)
            for kind, c in (("selection-aware", cube), ("fixed selection", fixed(cube))):
                boot = analysis.bootstrap(c, "batch", mccandlish, n_boot=args.boot, seed=g)
                for i in (0, 1):
                    low, high = boot.ci(i)
                    for truth, value in (("population", population.estimate[i]),
                                         ("exact", truth_exact.estimate[i])):
                        hits[(kind, truth, i)].append(low <= value <= high)
                low, high = boot.ci(1)
                widths[kind].append(math.log(high / low) if low > 0 and math.isfinite(high) else math.nan)
        for kind in widths:
            cells = ", ".join(f"{name} {100 * np.mean(hits[(kind, truth, i)]):.0f}% against the {truth}"
                              for i, name in ((0, "S_min"), (1, "B_crit")) for truth in ("population", "exact"))
            print(f"  {kind:16s} nominal 95%: {cells}; median width of log B_crit CI "
                  f"{np.nanmedian(widths[kind]):.3f}")


if __name__ == "__main__":
    main()
