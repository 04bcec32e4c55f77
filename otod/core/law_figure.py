"""Iterations against an axis per series, with the law each follows (power or exponential by AIC,
`otod.core.laws`): the panel the deep linear nets and the real nets both draw along depth.

Per series: the median over seeds at each point's chosen (lr, β) as a line with filled markers, the IQR over the
same seeds as a band (censored and stalled lanes counted as lower bounds, `otod.core.plotting.censored_quantiles`),
open △ where the median is only a lower bound, × at the top where lanes diverged, and the chosen law's curve
(a·L^b or a·e^{cL}, fitted to the medians) thin and dotted over the points it was fitted to, with its pointwise
95% band over the seed bootstrap's replicate laws hatched (`law_band`); the legend names each series' law and its
slope with its 95% CI. Where every lane at a point stalled (``stalled_on_top``: a stochastic family's
window rule, no progress, the lanes' counts say only when they stopped), the point is a ⊘ at the top of the axes,
not a △ at the iteration where the lanes stopped.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

#: The legend's line on points where every lane stalled (`draw_series` with ``stalled_on_top``).
STALLED_TOP_LABEL = "⊘ every lane stalled (no progress): never reached the target"
STALLED_MARKER = r"$\oslash$"


def law_label(fit) -> str:
    """A series' legend entry: its law and slope, or in a few words why none was chosen (the report says it in
    full: `otod.core.laws.LawFit.note`)."""
    if fit.law is None:
        why = ("fewer than 3 points reached" if fit.points < 3 else "rises and falls" if "rise" in fit.note
               else fit.note or "no law")
        return f"{fit.label}: no law ({why})"
    power = fit.law == "power"
    value, (low, high) = (fit.power_b, fit.power_ci) if power else (fit.exp_c, fit.exp_ci)
    ci = f" [{low:.2f}, {high:.2f}]" if not fit.deterministic and np.isfinite([low, high]).all() else ""
    return (f"{fit.label}: {'power, b' if power else 'exponential, c'} = {value:.2f}{ci} "
            f"(ΔAIC {fit.delta_aic:.1f})")


def law_band(boot, law: str | None, xs) -> tuple[np.ndarray, np.ndarray] | None:
    """The pointwise 95% band of a series' chosen law at ``xs``: the percentiles over the law's curves refitted to
    each seed-bootstrap replicate (`otod.core.laws.law_curves` of ``boot``'s replicates, the same ones as the
    law's CI: `otod.core.analysis.Bootstrap.band`); None without a law or a CI."""
    from otod.core.laws import law_curves

    if law is None:
        return None
    return boot.band(lambda rows: law_curves(law, rows, xs))


def law_curve(fit, xs) -> np.ndarray | None:
    """The chosen law's values at ``xs`` (a·x^b or a·e^{cx}), or None where no law was chosen."""
    xs = np.asarray(xs, float)
    if fit is None or fit.law is None:
        return None
    if fit.law == "power":
        return fit.power_a * xs ** fit.power_b
    return fit.exp_a * np.exp(fit.exp_c * xs)


def draw_series(ax, series: Sequence, axis: str, *, names: Sequence[str] | None = None, styles: dict | None = None,
                label_prefix: str = "", marker: str | None = None, ls=None, marks: set | None = None,
                row_offset: int = 0, extra: Callable | None = None, dodge: float = 0.0, curves: bool = False,
                stalled_on_top: bool = False, law_bands: bool = True) -> dict:
    """Median iterations against ``axis`` per series of an analysis (module docstring); returns the series' laws
    by name. ``names`` (default: the series') are what the legend and ``styles`` (default `series_styles`; a
    style's optional "mfc" fills its markers, "white" for open ones) call them; ``marker``/``ls`` override every series' style. ``marks`` (a set) collects which shared marks were drawn
    ("band", "lower", "diverged", "stalled", "stalled-top", and what ``extra`` returns), for the caller to name
    them in the legend. ``row_offset`` staggers this call's × marks below an earlier call's on the same axes.
    ``extra(ax, series, color, row)`` draws what an obstacle adds per series and returns a mark's name or None.
    ``dodge``: each series' x shifted by (row − (n − 1)/2)·dodge, so that coinciding points stay visible;
    ``curves``: draw each chosen law, with its pointwise 95% band hatched where it has a CI and ``law_bands``
    (`law_band`; the shading is the IQR; without ``law_bands`` the CI of the law's slope is the legend's only)."""
    from otod.core.batch_figure import draw_fit_band
    from otod.core.plotting import draw_band, mark_diverged, series_styles

    names = [s.name for s in series] if names is None else list(names)
    styles = styles or series_styles(names)
    marks = set() if marks is None else marks
    for row, (one, name) in enumerate(zip(series, names)):
        shift = (row - (len(series) - 1) / 2) * dodge
        xs = one.cube.x(axis) + shift
        y, lower, status = one.choice.lanes()
        med, bound = one.choice.median, one.choice.bound
        style = styles[name]
        color, m, line = style["color"], marker or style["marker"], ls or style["ls"]
        top = np.all(np.asarray(status, object) == "stalled", axis=-1) if stalled_on_top else np.zeros(len(xs), bool)
        ok = np.isfinite(med) & ~top
        if draw_band(ax, xs, np.where(top[:, None], np.nan, y), lower, color, alpha=0.12) is not None:
            marks.add("band")
        ax.plot(xs[ok], med[ok], color=color, lw=1.3, ls=line, marker=None)
        ax.plot(xs[ok & ~bound], med[ok & ~bound], m, color=color, ms=5, mfc=style.get("mfc", color),
                label=label_prefix + law_label(one.fit._replace(label=name)))
        if np.any(ok & bound):
            ax.plot(xs[ok & bound], med[ok & bound], "^", mfc="none", color=color, ms=7, mew=1.2)
            marks.add("lower")
        if top.any():
            ax.plot(xs[top], np.full(top.sum(), 0.96), ls="none", marker=STALLED_MARKER, color=color, ms=8,
                    transform=ax.get_xaxis_transform(), clip_on=False, label="_nolegend_")
            marks.add("stalled-top")
        fitted = xs[ok & ~bound] - shift
        if curves and fitted.size and law_curve(one.fit, fitted) is not None:
            grid = np.linspace(fitted.min(), fitted.max(), 50)
            ax.plot(grid + shift, law_curve(one.fit, grid), ":", color=color, lw=0.9, label="_nolegend_")
            marks.add("law")
            if law_bands and draw_fit_band(ax, grid + shift, law_band(one.boot, one.fit.law, grid), color,
                                           hatched=True):
                marks.add("law-band")
        if mark_diverged(ax, xs, status, color, row=row + row_offset, tag=label_prefix.strip()) is not None:
            marks.add("diverged")
        added = extra(ax, one, color, row + row_offset) if extra is not None else None
        if added:
            marks.add(added)
        if np.any(status == "stalled") and not top.all():
            marks.add("stalled")
    return {name: one.fit for one, name in zip(series, names)}


#: The legend's line on the dotted law curves (`draw_series` with ``curves``).
LAW_LABEL = "dotted: each series' chosen law, fitted to its medians"


def legend_keys(ax, marks: set) -> None:
    """A grey legend entry for each shared mark `draw_series` drew (``marks``): the band, △ lower bounds,
    × diverged (`otod.core.plotting.legend_key`), ⊘ all stalled, the law curves, and their hatched 95% bands
    (`otod.core.batch_figure.fit_band_key`)."""
    from otod.core.plotting import legend_key

    for kind in ("band", "lower", "diverged"):
        if kind in marks:
            legend_key(ax, kind)
    if "stalled-top" in marks:
        ax.plot([], [], ls="none", marker=STALLED_MARKER, color="0.3", ms=8, label=STALLED_TOP_LABEL)
    if "law" in marks:
        ax.plot([], [], ":", color="0.3", lw=0.9, label=LAW_LABEL)
    if "law-band" in marks:
        from otod.core.batch_figure import fit_band_key

        fit_band_key(ax, hatched=True)
