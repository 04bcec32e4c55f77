"""The S(B) panel every batch sweep draws (the noise obstacle's quadratics, the nets): steps to target against
batch size per method, with the colours and markers a method keeps in every figure.

Per method: the median over seeds at each B's chosen setting with IQR bars (censored-aware quantiles,
`otod.core.plotting.censored_quantiles`), open triangles where a median is only a lower bound, ✕ where lanes
diverged, the fitted S_min (1 + B_crit/B) (McCandlish et al. 2018, `otod.core.critical_batch`) dotted with its
pointwise 95% band over the seed bootstrap's replicate curves (`CriticalBatch.band`), shaded; an
``exact`` analysis of the same sweep (the NQM's recursion) as a solid line of the same colour. What an obstacle
adds (the NQM's ideal estimator, a net's predicted S(B)) it draws on the same axes.
"""

from __future__ import annotations

import math

import numpy as np

from otod.core import critical_batch


def _palette():
    from otod.core.plotting import PALETTE

    return PALETTE


#: The legend's key of the fits' shaded bands (`fit_band_key`).
FIT_BAND_LABEL = "shaded: each fit's 95% band (seeds)"
#: The same key where the band is hatched: on a figure whose shading is already the IQR over seeds.
HATCHED_FIT_BAND_LABEL = FIT_BAND_LABEL.replace("shaded", "hatched", 1)
#: What the shaded band of an S(B) figure is, for its caption (the IQR over seeds is the markers' bars there).
FIT_BAND_NOTE = ("shaded: each fit's pointwise 95% band over the seed bootstrap's replicate curves (each resample "
                 "re-chooses every B's tuned setting and refits S(B); no band where the fit has no CI)")


def draw_fit_band(ax, x, band, color, *, hatched: bool = False) -> bool:
    """A fit's pointwise 95% band (``band``: (low, high) at ``x``, from the same bootstrap replicates as the fit's
    CI: `otod.core.analysis.pointwise_band`) in the fit's colour, shaded, or hatched where the figure's shading
    already means the IQR over seeds; nothing where ``band`` is None (no CI). Returns whether it drew; the caller
    then gives the one grey key (`fit_band_key`)."""
    if band is None:
        return False
    if hatched:
        ax.fill_between(x, *band, facecolor="none", edgecolor=color, hatch="/////", lw=0, alpha=0.45,
                        label="_nolegend_")
    else:
        ax.fill_between(x, *band, color=color, alpha=0.12, lw=0, label="_nolegend_")
    return True


def drew_fit_band(*axes) -> bool:
    """Whether `fit_band_key` keyed a fit band on any of ``axes``: what a caption says of the band follows what was
    drawn (`FIT_BAND_NOTE`)."""
    return any(c.get_label() in (FIT_BAND_LABEL, HATCHED_FIT_BAND_LABEL) for ax in axes for c in ax.collections)


def fit_band_key(ax, *, hatched: bool = False) -> None:
    """The one grey legend key of every fit band `draw_fit_band` drew on ``ax``."""
    if hatched:
        ax.fill_between([], [], [], facecolor="none", edgecolor="0.4", hatch="/////", lw=0,
                        label=HATCHED_FIT_BAND_LABEL)
    else:
        ax.fill_between([], [], [], color="0.5", alpha=0.25, lw=0, label=FIT_BAND_LABEL)

COLORS = {"sgd": 0, "heavy-ball": 3, "ema": 2, "adam": 4}  # indices into `otod.core.plotting.PALETTE`


def method_color(method: str, i: int) -> str:
    k = COLORS.get(method, 1 if method.startswith("precond") else 5 + i % 4)
    return _palette()[k]


def method_marker(method: str, i: int) -> str:
    from otod.core.plotting import MARKERS

    return MARKERS[COLORS.get(method, 1 if method.startswith("precond") else 5 + i % 4) % len(MARKERS)]


def steps_vs_batch(analysis, ax, exact=None, dim: float | None = None, extra=None,
                   panel: tuple | None = None) -> None:
    """The S(B) panel on ``ax`` from a batch sweep's analysis (`otod.core.critical_batch.BatchAnalysis`) and, where
    given, an ``exact`` analysis of the same sweep drawn as lines; ``dim`` draws one group of a sweep over several
    (a static axis), default the first; ``extra(ax, dim, series)`` draws what an obstacle adds before the axes are
    set; ``panel`` draws one panel of a sweep panelled by several fields
    (`otod.core.critical_batch.BatchAnalysis.panels`) instead of ``dim``. The axes end log-log in base 2 on B."""
    from otod.core.plotting import DIVERGED_LABEL, censored_quantiles, mark_diverged

    dim = analysis.dims[0] if dim is None else dim
    simulated = analysis.mode != "exact"
    exact_of = {s.method: s for s in exact.at(dim)} if exact is not None else {}
    diverged_labelled = banded = False
    series = analysis.at(dim) if panel is None else analysis.in_panel(panel)
    for i, s in enumerate(series):
        m, color = s.method, method_color(s.method, i)
        xs, med, ok = s.x, s.median, s.fitted
        if simulated:
            (q25, q75), _ = censored_quantiles(s.at_choice("count"), s.at_choice("lower"))
            censored = ~ok & np.isfinite(med)
            if ok.any():
                ax.errorbar(xs[ok], med[ok], yerr=[med[ok] - q25[ok], q75[ok] - med[ok]], fmt=method_marker(m, i),
                            color=color, ms=4, label=f"{m} (median, bars: IQR over seeds)")
            if censored.any():
                ax.plot(xs[censored], med[censored], "^", mfc="none", color=color,
                        label=f"{m}: △ median only a lower bound (≥)")
            if mark_diverged(ax, xs, s.at_choice("status"), color,
                             label=None if diverged_labelled else DIVERGED_LABEL, row=i) is not None:
                diverged_labelled = True
            if not ok.any() and not censored.any():
                none_reached(ax, m, color)
        if m in exact_of:
            twin = exact_of[m]
            if twin.fitted.any():
                ax.plot(twin.x[twin.fitted], twin.median[twin.fitted], "-", color=color, lw=1.5,
                        marker=None if simulated else method_marker(m, i), ms=3.5, markevery=2,
                        label=f"{m} exact" if simulated else m)  # a marker per method where no points carry one
            elif not simulated:
                none_reached(ax, m, color)
        fit = s.critical
        if fit is not None and math.isfinite(fit.b_crit):
            grid = np.geomspace(xs.min(), xs.max(), 100)
            said = critical_batch.describe_critical_batch(fit.b_crit, xs[s.fitted])
            ax.plot(grid, fit.curve(grid), ":", color=color, lw=1,
                    label=f"{m} fit: B_crit {said if said[0] in '<>' else '= ' + format(fit.b_crit, '.3g')}")
            banded = draw_fit_band(ax, grid, fit.band(grid), color) or banded
    if banded:  # one grey key for every fit's band
        fit_band_key(ax)
    if extra is not None:
        extra(ax, dim, series)
    log_axes(ax, "batch size B", "steps to target")
    ax.grid(True, which="major", alpha=0.25)
    if ax.get_xscale() == "log":
        ax.set_xscale("log", base=2)
        from otod.core.plotting import headroom

        headroom(ax)


def none_reached(ax, method: str, color: str) -> None:
    """A legend entry (no data) for a method none of whose points reached the target: every lane diverged or was
    censored, so the figure says so instead of drawing nothing."""
    ax.plot([], [], "x", color=color, label=f"{method}: no lane reached the target")


def log_axes(ax, xlabel: str, ylabel: str) -> None:
    """Label ``ax`` and make it log-log; where no point reached the target (every lane diverged, as with
    ``--lr 1e38``) there is nothing to scale, so the axes stay linear and say why, instead of failing."""
    ys = [np.asarray(line.get_ydata(), float) for line in ax.lines]
    if any((np.isfinite(y) & (y > 0)).any() for y in ys if y.size):
        ax.set(xscale="log", yscale="log", xlabel=xlabel, ylabel=ylabel)
    else:
        ax.set(xlabel=xlabel, ylabel=ylabel)
        ax.text(0.5, 0.5, "no lane reached the target (diverged or censored)", ha="center", va="center",
                transform=ax.transAxes)


