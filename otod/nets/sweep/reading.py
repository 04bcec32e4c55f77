"""One method's reading of a net's S(B) sweep: S_min and B_crit with their CIs and the per-batch table
(`CriticalBatchPoint`), read from the core's analysis (`reading`). ``otod.critical_batch`` returns one per method
(`otod.nets.batch_api`), and each checkpoint of the critical batch along training holds one per method
(`otod.nets.along.branching`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class CriticalBatchPoint:
    """One method's reading: S_min and B_crit with their 95% CIs (NaN with ``no_ci`` saying why: too few
    seeds), the RMS relative misfit of the S(B) fit, the batches fitted and those left out as censored (a median
    only a lower bound), the largest B of perfect scaling (None: none), and the per-batch table: ``batches``,
    ``steps`` (medians over seeds at the chosen setting), ``lower_bound`` (censored medians), ``lr`` (the chosen
    absolute step) and ``lr_on_edge`` (the choice on the edge of the grid tried)."""

    method: str
    s_min: float
    s_min_ci: tuple[float, float]
    b_crit: float
    b_crit_ci: tuple[float, float]
    misfit: float
    fitted: int
    censored: int
    no_ci: str | None
    perfect_scaling: float | None
    batches: tuple[float, ...]
    steps: tuple[float, ...]
    lower_bound: tuple[bool, ...]
    lr: tuple[float, ...]
    lr_on_edge: tuple[bool, ...]


def reading(series) -> CriticalBatchPoint:
    """A method's `CriticalBatchPoint` from the analysis's `otod.core.critical_batch.Series`."""
    c = series.critical
    nan2 = (math.nan, math.nan)
    summary = series.summary
    lr = summary["learning_rate"].to_numpy(float) if "learning_rate" in summary else np.full(len(summary), np.nan)
    edge = summary["lr_on_edge"].to_numpy(bool) if "lr_on_edge" in summary else np.zeros(len(summary), bool)
    return CriticalBatchPoint(
        method=series.method, s_min=c.s_min if c else math.nan, s_min_ci=tuple(c.s_min_ci) if c else nan2,
        b_crit=c.b_crit if c else math.nan, b_crit_ci=tuple(c.b_crit_ci) if c else nan2,
        misfit=c.residual if c else math.nan, fitted=c.points if c else 0, censored=c.censored if c else 0,
        no_ci=c.no_ci if c else "no fit", perfect_scaling=series.perfect_scaling,
        batches=tuple(float(b) for b in series.x), steps=tuple(float(s) for s in series.median),
        lower_bound=tuple(bool(b) for b in series.bound), lr=tuple(float(v) for v in lr),
        lr_on_edge=tuple(bool(e) for e in edge))
