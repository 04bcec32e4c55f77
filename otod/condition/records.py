"""What a condition table, fit or figure reads: the sweep's `otod.core.analysis.Analysis` at a ladder rung, one
learning rate per point (chosen by the median over seeds), one group per static point (dimension d), and a power
law in κ per method over the asymptotic range, beside the theory's exponents."""

from __future__ import annotations

import numpy as np
import pandas as pd

from otod.core.api import Analysis, Placed, analyse, frame_at, placements, power_law, power_law_fitter

#: The fits' asymptotic range: κ at or above this (the count at κ = 1 is 1 by construction).
FIT_MIN_KAPPA = 10.0


def fit_range(kappas) -> float | None:
    """The smallest κ a fit uses: `FIT_MIN_KAPPA`, or every κ (None) when fewer than 3 values reach it."""
    kappas = np.asarray(kappas, float)
    return FIT_MIN_KAPPA if len(np.unique(kappas[kappas >= FIT_MIN_KAPPA])) >= 3 else None


def analysis_of(frame: pd.DataFrame, *, point=("kappa",), static=(), preds=None, tol: float | None = None,
                config=None, n_boot: int = 1000, given=()) -> Analysis:
    """The analysis of a condition sweep's records (at one rung): per static point, each method's chosen rate
    per κ and its power law over `fit_range`, with the theory's exponents where ``preds`` (the sweep's
    `otod.condition.predictions.Predictions`) apply: the asymptotic one, and the slope of the exact counts (or of
    the bound) over the fitted κ."""
    from otod.condition import theory

    fit = power_law_fitter("kappa", theory.exponent if preds else None, preds.slope if preds else None)
    return analyse(frame, point=point, axis="kappa", by=static, statistic=lambda kappas: power_law(fit_range(kappas)),
                   fit=fit, tol=tol, theory=preds, config=config, n_boot=n_boot, given=given)


def condition_analysis(results, tol: float | None = None) -> Analysis:
    """The sweep's analysis at ``tol`` (default: its own tol; another rung of its ladder is read from the
    recorded first hits), with its theory: what the table, the fits, the figure and ``otod fit`` read."""
    from otod.condition.predictions import predictions
    from otod.core.api import lr_given

    config, tol, frame = frame_at(results, tol)
    return analysis_of(frame, point=point_fields(config), static=config.static_axes,
                       preds=predictions(results.meta, tol), tol=tol, config=config,
                       given=("lr",) if lr_given(results.meta) else ())


def point_fields(config) -> tuple[str, ...]:
    """The fields of a point of a condition sweep: every axis (β, where there is one, is a setting)."""
    return tuple(n for n, _ in config.axes)


def condition_placements(results) -> tuple[Placed, ...]:
    """The choices `condition_analysis` makes at the sweep's own tol, on the point estimates alone (the same
    records, points and groups; no bootstrap, no fit): what the bracket's rounds read (`otod.core.bracket`)."""
    config, _, frame = frame_at(results, None)
    return placements(frame, point=point_fields(config), by=config.static_axes)


def coordinate_wise_note(config) -> str | None:
    """A warning where coordinate-wise methods meet a diagonal Hessian (the eigen basis): there Adam and Jacobi
    are exact diagonal preconditioners and look immune to conditioning."""
    methods = [m for m in config.methods if m in ("adam", "jacobi")]
    if methods and config.problem.kind == "quadratic" and config.problem.basis == "eigen":
        return (f"note: {', '.join(methods)} {'is' if len(methods) == 1 else 'are'} coordinate-wise and H is diagonal "
                "in the eigen basis, where a diagonal preconditioner is exact: use --basis rotated to see them "
                "meet conditioning")
    return None
