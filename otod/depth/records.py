"""What a depth or toy table, fit or figure reads: the sweep's `otod.core.analysis.Analysis`, one (lr, β) per
point chosen by the median over seeds (`otod.core.analysis.select`: lanes that did not converge count as worst,
ties to the smaller lr and then the smaller β; methods that ignore β, gd and kfac, give equal counts at every β
and so keep the smallest), one series per method and init (``method·init``), one group per width where width is
swept, and a power-or-exponential law per series (`otod.core.laws`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from otod.core.api import Analysis, Placed, analyse, frame_at, frame_of, placements
from otod.depth.linear import init_name


def series_labels(frame: pd.DataFrame) -> np.ndarray:
    """Each record's series: ``method·init`` in depth sweeps (the init by name, or by its code in files written
    before the init axis had labels), the method in toy sweeps."""
    methods = frame["method"].astype(str).to_numpy(object)
    if "init" not in frame:
        return methods
    inits = np.array([v if isinstance(v, str) else init_name(v) for v in frame["init"].tolist()], object)
    return methods + "·" + inits


def width_heading(fields, key: tuple) -> str:
    return f"width n = {key[0]:g}"


def analysis_of(frame: pd.DataFrame, *, axis: str, point=None, by=(), tol: float | None = None, config=None,
                n_boot: int = 1000, given=()) -> Analysis:
    """The analysis of a depth or toy sweep's records (at one rung) along ``axis``: per group of ``by`` (the
    width), each series' chosen (lr, β) per point of the ``point`` fields (default: ``axis``) and its laws."""
    from otod.core.api import LAWS, law_fit

    return analyse(frame.assign(series=series_labels(frame)), point=point or (axis,), axis=axis, by=by,
                   series="series", statistic=lambda xs: LAWS, fit=lambda name, boot, stat, summary=None: law_fit(name, boot, axis),
                   heading=width_heading, tol=tol, config=config, n_boot=n_boot, given=given)


def depth_analysis(results, tol: float | None = None) -> Analysis:
    """The sweep's analysis at ``tol`` (default: its own tol; another rung of its ladder is read from the recorded
    first hits): what the table, the laws, the figure and ``otod fit`` read."""
    config, tol, frame, axes, by = read_at(results, tol)
    return analysis_of(frame, axis=config.main_axis, point=axes, by=by, tol=tol, config=config,
                       given=given_settings(results.meta, config))


def read_at(results, tol: float | None = None):
    """What a depth or toy analysis reads at ``tol``: (config, tol, the records with stalled lanes at the cap,
    the point fields (every axis), the group fields (the width, where swept))."""
    config, tol, frame = frame_at(results, tol)
    frame = stalled_at_cap(frame, config.resolved_max_iters)
    axes = tuple(n for n, _ in config.axes)
    return config, tol, frame, axes, ("width",) if "width" in axes else ()


def depth_placements(results) -> tuple[Placed, ...]:
    """The choices `depth_analysis` makes at the sweep's own tol, on the point estimates alone (the same records,
    series, points and groups; no bootstrap, no law): what the bracket's rounds read (`otod.core.bracket`)."""
    _, _, frame, axes, by = read_at(results)
    return placements(frame.assign(series=series_labels(frame)), point=axes, by=by, series="series")


def given_settings(meta: dict, config) -> tuple[str, ...]:
    """The settings whose values the user listed, so a choice on their end is at a list's end: the lr where
    --lr-grid is not the default and was not extended (`otod.core.bracket.lr_given`), β where --beta is neither
    the default list nor 0 alone."""
    from otod.core.api import lr_given
    from otod.depth.kind import DEFAULT_BETAS

    betas = tuple(config.values("beta")) if "beta" in dict(config.axes) else (0.0,)
    return (("lr",) if lr_given(meta) else ()) + (("beta",) if betas not in (DEFAULT_BETAS, (0.0,)) else ())


def stalled_at_cap(frame: pd.DataFrame, cap: int | None) -> pd.DataFrame:
    """Stalled lanes (at a fixed point of the iteration: stuck for any cap) counted at the sweep's cap, as censored
    lanes are, not at the iteration they stopped at, so that a median or band resting on them is a lower bound as
    strong as a censored lane's."""
    if cap is None or len(frame) == 0:
        return frame
    stalled = frame["status"].to_numpy(object) == "stalled"
    iterations = frame["iterations"].to_numpy(float, na_value=np.nan)
    return frame.assign(iterations=np.where(stalled, np.maximum(iterations, cap), iterations))


def fit_laws(records, axis: str, *, n_boot: int = 1000) -> list:
    """One `otod.core.laws.LawFit` per series of records (dicts or a DataFrame; several settings per point are
    chosen among first) along ``axis``: a notebook's shortcut to `analysis_of`."""
    return [s.fit for s in analysis_of(frame_of(records), axis=axis, n_boot=n_boot).series]
