"""Kept for otod.noise until it is ported to otod.core.analysis: the learning-rate and β selection, and every
count a table reads, are `otod.core.analysis`'s (`select`, `mark_selection`, `Cube.selection_counts`)."""

from __future__ import annotations

import math


def count_at(record: dict, rung: int | None = None) -> float:
    """The record's iterations to target (at ladder rung ``rung``, default the reported tol), +∞ if it did not
    converge there. Kept for otod.noise until it is ported to otod.core.analysis."""
    if rung is None:
        return float(record["iterations"]) if record["status"] == "converged" else math.inf
    hit = record.get("hits", [None])[rung]
    return math.inf if hit is None or hit < 0 else float(hit)
