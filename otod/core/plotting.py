"""Plotting helpers every obstacle's figures share: one way to save, one palette, one way to mark censoring.

Conventions: log axes for scaling laws, one colour per method (and, where series are method × init, a line style
and marker per init: `series_styles`), the median over seeds as a line with markers, the interquartile range over
the same seeds as a band named in the legend (`censored_quantiles`: censored and stalled lanes count at their cap
as lower bounds), theory dashed, medians that are only lower bounds as open triangles "≥" at that bound, and
diverged lanes as × at the top of the axes (`mark_diverged`), both named in the legend. A static axis (one
compiled program per value: d, width) gets one panel per value (`panel_grid`).
Figures are PNG (150 dpi) and PDF with TrueType (Type 42) fonts, not Type 3; the PDF carries no creation date, so
the same numbers give the same bytes.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

#: TrueType (Type 42) fonts in PDF and PS: Type 3 fonts are bitmaps to some viewers and rejected by some journals.
FONT_TYPES = {"pdf.fonttype": 42, "ps.fonttype": 42}
matplotlib.rcParams.update(FONT_TYPES)

COLORS = {"gd": "C0", "gd-opt": "C9", "heavy-ball": "C1", "nesterov": "C2", "newton": "C3", "adam": "C4",
          "jacobi": "C5", "kfac": "C6"}


def save(fig, base: Path, pdf: bool = True) -> list[Path]:
    """Write ``base.png`` (150 dpi) and, with ``pdf``, ``base.pdf``; return the paths. The PDF carries no creation
    date, so the same numbers give the same bytes and regenerated figures show up in git only when they changed.
    (A sweep writes the PNG alone unless asked: the PDF doubles the time spent saving.)"""
    base = Path(base)
    base.parent.mkdir(parents=True, exist_ok=True)
    paths = [base.with_name(base.name + ".png")] + ([base.with_name(base.name + ".pdf")] if pdf else [])
    with matplotlib.rc_context(FONT_TYPES):
        fig.savefig(paths[0], dpi=150, bbox_inches="tight")
        if pdf:
            fig.savefig(paths[1], bbox_inches="tight", metadata={"CreationDate": None})
    plt.close(fig)
    return paths


# -- bands, lower bounds and diverged lanes ------------------------------------------------------------------------

#: The legend's names of the shared marks.
BAND_LABEL = "shaded: IQR over seeds (censored lanes at their cap)"
LOWER_LABEL = "open △: median only a lower bound ≥ (most lanes censored or stalled)"
DIVERGED_LABEL = "× in the grey strip at the top: lanes diverged at this x (n/N)"


def censored_quantiles(y: np.ndarray, lower: np.ndarray, qs=(0.25, 0.75)) -> tuple[np.ndarray, np.ndarray]:
    """Quantiles ``qs`` over the last axis of the same lanes the median uses (`otod.core.analysis.censored_medians`):
    NaN (diverged) left out, lanes in ``lower`` (censored, stalled) counted as at least their value (+∞ in the
    ranking). Returns (values [len(qs), rows], bound [len(qs), rows]); where a quantile falls on a lower-bound lane
    it is reported, like the median, as the smallest censored value among those it rests on, flagged in ``bound``.
    """
    y, lower = np.atleast_2d(np.asarray(y, float)), np.atleast_2d(np.asarray(lower, bool))
    out = np.full((len(qs), y.shape[0]), np.nan)
    bound = np.zeros((len(qs), y.shape[0]), bool)
    for i in range(y.shape[0]):
        keep = np.isfinite(y[i])
        if not keep.any():
            continue
        values = np.where(lower[i][keep], np.inf, y[i][keep])
        order = np.sort(values)
        floor = np.min(y[i][keep][lower[i][keep]]) if lower[i][keep].any() else np.nan
        for j, q in enumerate(qs):
            pos = q * (len(order) - 1)
            lo, hi = int(np.floor(pos)), int(np.ceil(pos))
            a, b = order[lo], order[hi]
            if np.isinf(b) and (hi != lo or np.isinf(a)) and (pos > lo or np.isinf(a)):
                out[j, i], bound[j, i] = floor, True
            else:
                out[j, i] = a + (b - a) * (pos - lo) if hi != lo else a
    return out, bound


def draw_band(ax, xs, y, lower, color, *, scale: float = 1.0, offset: float = 0.0, alpha: float = 0.15,
              label: str | None = None):
    """The IQR over seeds (`censored_quantiles`) as a shaded band, returned; ``label`` names it in the legend
    (give it once per axes: `BAND_LABEL`)."""
    (q25, q75), _ = censored_quantiles(y, lower)
    ok = np.isfinite(q25) & np.isfinite(q75)
    if not ok.any():
        return None
    return ax.fill_between(np.asarray(xs)[ok], q25[ok] * scale + offset, q75[ok] * scale + offset, color=color,
                           alpha=alpha, lw=0, label=label if label else "_nolegend_")


def mark_diverged(ax, xs, status, color, *, label: str | None = None, row: int = 0, tag: str = ""):
    """× at the top of ``ax`` at every x where some lane diverged, with n/N beside it; returns the marker artist
    (None where nothing diverged). ``label`` names it in the legend (give it once per axes: `DIVERGED_LABEL`);
    ``row`` (the series' index) staggers the × of several series downwards so that none hides another; ``tag``
    prefixes n/N where two series share a colour (e.g. "residual")."""
    status = np.asarray(status, dtype=object)
    n = (status == "diverged").sum(-1)
    at = n > 0
    if not at.any():
        return None
    xs = np.asarray(xs, float)
    trans = ax.get_xaxis_transform()
    top = 0.97 - 0.065 * (row % 4)
    (artist,) = ax.plot(xs[at], np.full(at.sum(), top), "x", color=color, ms=6, mew=1.5, transform=trans,
                        clip_on=False, label=label if label else "_nolegend_", gid="diverged")
    total = status.shape[-1]
    for x, k in zip(xs[at], n[at]):
        ax.annotate(f"{tag} {k}/{total}".strip(), (x, top), xycoords=trans, xytext=(0, -4), textcoords="offset points",
                    fontsize=5, color=color, ha="center", va="top")
    return artist


def headroom(ax) -> None:
    """Where ``ax`` carries × marks of diverged lanes (`mark_diverged`), raise the top of its y axis so that the
    data end below them (the top 22% of the axes, in the axes' own scale) and no × sits on a point. Call it last,
    once the data and the y scale are drawn."""
    if not any(line.get_gid() == "diverged" for line in ax.get_lines()):
        return
    lo, hi = ax.get_ylim()
    if ax.get_yscale() == "log" and lo > 0:
        top = 10 ** (np.log10(lo) + (np.log10(hi) - np.log10(lo)) / 0.75)
    else:
        top = lo + (hi - lo) / 0.75
    ax.set_ylim(lo, top)
    # a grey strip: the marks' row, not a y value (no tick labels in it)
    ax.axhspan(hi, top, color="0.93", zorder=0, lw=0)
    ax.set_yticks([t for t in ax.get_yticks() if lo <= t <= hi])
    ax.set_ylim(lo, top)


def legend_key(ax, kind: str) -> None:
    """A grey legend entry for a shared mark (``kind``: "band", "lower", "diverged") drawn on no data, so the
    legend names it once whatever series carry it."""
    if kind == "band":
        ax.fill_between([], [], [], color="0.5", alpha=0.25, lw=0, label=BAND_LABEL)
    elif kind == "lower":
        ax.plot([], [], "^", mfc="none", color="0.3", ms=6, label=LOWER_LABEL)
    elif kind == "diverged":
        ax.plot([], [], "x", color="0.3", ms=6, mew=1.5, label=DIVERGED_LABEL)


# -- one style per series -----------------------------------------------------------------------------------------

INIT_COLORS = {"identity": "C0", "orthogonal": "C2", "xavier": "C1", "small": "C3", "gaussian": "C4", "zero": "C7"}
LINESTYLES = ("-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3)))
MARKERS = ("o", "s", "D", "v", "P", "X", "*", "h")  # no "^": an open △ marks a lower bound


def series_styles(series) -> dict[str, dict]:
    """``{series: {"color", "ls", "marker"}}`` for series named ``method`` or ``method·init``, no two alike in
    (colour, line style): one method → colour by init; one init → colour by method; both varying → colour by
    method and line style and marker by init. Falls back to a 20-colour palette where names would collide."""
    names = list(dict.fromkeys(series))
    parts = {s: (s.partition("·")[0], s.partition("·")[2]) for s in names}
    methods = list(dict.fromkeys(m for m, _ in parts.values()))
    inits = list(dict.fromkeys(i for _, i in parts.values()))

    def palette(table, keys):
        out, used = {}, set()
        for k in keys:
            c = table.get(k)
            if c is None or c in used:
                c = next(f"C{j}" for j in range(10) if f"C{j}" not in used) if len(used) < 10 else None
            out[k] = c
            used.add(c)
        return out

    styles = {}
    if len(methods) == 1 or len(inits) == 1 and inits != [""]:
        by_init = len(methods) == 1 and inits != [""]
        colors = palette(INIT_COLORS if by_init else COLORS, inits if by_init else methods)
        for i, s in enumerate(names):
            m, init = parts[s]
            styles[s] = {"color": colors[init if by_init else m], "ls": "-", "marker": MARKERS[i % len(MARKERS)]}
    else:
        colors = palette(COLORS, methods)
        for s in names:
            m, init = parts[s]
            k = inits.index(init)
            styles[s] = {"color": colors[m], "ls": LINESTYLES[k % len(LINESTYLES)], "marker": MARKERS[k % len(MARKERS)]}
    if any(v["color"] is None for v in styles.values()) or \
            len({(v["color"], str(v["ls"])) for v in styles.values()}) < len(styles):
        cmap = plt.get_cmap("tab20")
        styles = {s: {"color": cmap(i % 20), "ls": LINESTYLES[(i // 20) % len(LINESTYLES)],
                      "marker": MARKERS[i % len(MARKERS)]} for i, s in enumerate(names)}
    return styles


# -- one panel per value of a static axis -------------------------------------------------------------------------


def panel_grid(n: int, width: float, height: float, sharey: bool = True):
    """(fig, [ax] * n): ``n`` panels in a row (up to 3 a row), each ``width`` × ``height`` inches."""
    cols = min(n, 3)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), sharey=sharey, squeeze=False)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.remove()
    return fig, flat[:n]
