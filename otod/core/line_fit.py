"""The one least-squares line of the core: numbers only, so that both the analysis (every law's fit) and the
runner's plan (the ETA's cost model) use it without the plan reaching the analysis (the design's never-rule:
selection belongs to the analysis, the runner never imports it)."""

from __future__ import annotations

import numpy as np


def fit_line(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Least squares y ≈ intercept + slope·x along the last axis, ignoring entries where x or y is not finite:
    (slope, intercept, residual sum of squares), NaN where fewer than two distinct x remain. The one line fit
    of every law (power laws on logs, exponential laws on log y, the theory's slopes, the ETA's cost model)."""
    x, y = np.broadcast_arrays(np.asarray(x, float), np.asarray(y, float))
    w = np.isfinite(y) & np.isfinite(x)
    n = w.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        xm = np.where(w, x, 0).sum(-1) / n
        ym = np.where(w, y, 0).sum(-1) / n
        dx = np.where(w, x - xm[..., None], 0)
        dy = np.where(w, y - ym[..., None], 0)
        sxx = (dx * dx).sum(-1)
        slope = (dx * dy).sum(-1) / sxx
        intercept = ym - slope * xm
        rss = np.where(w, (dy - slope[..., None] * dx) ** 2, 0).sum(-1)
    ok = (n >= 2) & (sxx > 1e-12)
    return np.where(ok, slope, np.nan), np.where(ok, intercept, np.nan), np.where(ok, rss, np.nan)
