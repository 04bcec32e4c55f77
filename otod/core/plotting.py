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

import contextlib

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import matplotlib.transforms  # noqa: E402
import numpy as np  # noqa: E402

#: TrueType (Type 42) fonts in PDF and PS: Type 3 fonts are bitmaps to some viewers and rejected by some journals.
FONT_TYPES = {"pdf.fonttype": 42, "ps.fonttype": 42}
matplotlib.rcParams.update(FONT_TYPES)

# -- the paper style -----------------------------------------------------------------------------------------------

#: Okabe & Ito's (2008) colour-blind-safe palette, by name.
OKABE_ITO = {"blue": "#0072B2", "vermillion": "#D55E00", "green": "#009E73", "orange": "#E69F00",
             "purple": "#CC79A7", "sky": "#56B4E9", "black": "#000000", "yellow": "#F0E442"}
#: The series colours in order: Okabe–Ito (yellow, faint on white, last), then two greys. ``"C0"``…``"C9"`` name
#: these too (the colour cycle is set to them), so a maker's ``"C3"`` is vermillion, not tab10's red.
PALETTE = tuple(OKABE_ITO[k] for k in ("blue", "vermillion", "green", "orange", "purple", "sky", "black",
                                        "yellow")) + ("#7F7F7F", "#B3B3B3")
#: The column widths of a two-column paper (inches): one column, and the full text width.
COLUMN_WIDTHS = {1: 3.4, 2: 7.0}
#: The same two sizes for a one-column 5.5 in text block (NeurIPS): a full-width figure (``columns=2``) 5.5 in; a
#: one-column one 2.7 in, half the text width less a 0.1 in gap, so two sit side by side as a pair of subfigures.
#: Heights stay as the maker gives them: the type is as tall in points as in the paper style, so a shorter figure
#: would shrink the data, not the text.
NEURIPS_WIDTHS = {1: 2.7, 2: 5.5}
#: The smallest type a saved figure may hold (points, at its printed size).
MIN_FONT_PT = 7.0

from cycler import cycler  # noqa: E402

_PRINT_RC = {"font.size": 7.5, "axes.titlesize": 8, "axes.labelsize": 7.5, "xtick.labelsize": 7,
             "ytick.labelsize": 7, "legend.fontsize": 7, "legend.title_fontsize": 7, "figure.titlesize": 8.5,
             "lines.linewidth": 1.2, "lines.markersize": 4, "axes.linewidth": 0.6, "grid.linewidth": 0.4,
             "xtick.major.width": 0.6, "ytick.major.width": 0.6, "legend.frameon": False, "savefig.pad_inches": 0.02}
#: The three styles (`use_style`): ``paper`` (the default) draws every figure at its printed size in a two-column
#: paper, one column (3.4 in) or two (7.0 in), type 7-8 pt, and saves the page at exactly that width; ``neurips``
#: does the same for a one-column 5.5 in text block (`NEURIPS_WIDTHS`: 2.7 in or 5.5 in, the same type);
#: ``screen`` draws the paper's figures 1.5× as large (type 10-12 pt) and lets the saved page grow to fit what
#: sticks out. ``widths``: the figure widths (in) by `figure`'s ``columns``; ``printed``: saved at exactly that size.
STYLES = {
    "paper": {"scale": 1.0, "widths": COLUMN_WIDTHS, "printed": True, "rc": _PRINT_RC},
    "neurips": {"scale": 1.0, "widths": NEURIPS_WIDTHS, "printed": True, "rc": _PRINT_RC},
    "screen": {"scale": 1.5, "widths": COLUMN_WIDTHS, "printed": False,
               "rc": {"font.size": 10, "axes.titlesize": 11, "axes.labelsize": 10, "xtick.labelsize": 9,
                      "ytick.labelsize": 9, "legend.fontsize": 9, "legend.title_fontsize": 9, "figure.titlesize": 11,
                      "legend.frameon": False}},
}
#: Serif type to match a LaTeX body (Times-like where installed, else DejaVu Serif), and its mathematics.
SERIF_RC = {"font.family": "serif", "font.serif": ["Times New Roman", "Nimbus Roman", "TeX Gyre Termes",
                                                   "STIX Two Text", "DejaVu Serif"], "mathtext.fontset": "stix"}
_STYLE = {"name": "paper", "serif": False}


def use_style(name: str = "paper", serif: bool = False) -> None:
    """Draw the figures that follow in style ``name`` (`STYLES`), in serif type with ``serif`` (to match a LaTeX
    body). Sets matplotlib's rcParams for this process; `otod figures --style` and `otod plot --style` call it."""
    if name not in STYLES:
        raise ValueError(f"unknown figure style {name!r}; known: {', '.join(STYLES)}")
    _STYLE.update(name=name, serif=serif)
    matplotlib.rcParams.update({"axes.prop_cycle": cycler(color=PALETTE), **FONT_TYPES, **STYLES[name]["rc"]})
    matplotlib.rcParams.update(SERIF_RC if serif else {"font.family": "sans-serif", "mathtext.fontset": "dejavusans"})


@contextlib.contextmanager
def styled(name: str = "paper", serif: bool = False):
    """`use_style` for the figures drawn inside the ``with`` block; the style before it is restored after."""
    before = dict(_STYLE)
    use_style(name, serif)
    try:
        yield
    finally:
        use_style(before["name"], before["serif"])


def style_name() -> str:
    return _STYLE["name"]


def page_width(columns: int = 2) -> float:
    """The width (in) a figure of ``columns`` (1 or 2) is drawn at in the current style (`STYLES`); with 2, the
    widest page the style saves."""
    style = STYLES[_STYLE["name"]]
    return style["widths"][columns] * style["scale"]


use_style("paper")

LINESTYLES = ("-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3)))
MARKERS = ("o", "s", "D", "v", "P", "X", "*", "h")  # no "^": an open △ marks a lower bound


#: One colour per method, from `PALETTE`.
COLORS = {"gd": PALETTE[0], "gd-opt": PALETTE[5], "heavy-ball": PALETTE[3], "nesterov": PALETTE[2],
          "newton": PALETTE[1], "adam": PALETTE[4], "jacobi": PALETTE[6], "kfac": PALETTE[8]}


#: One marker per method (grey-scale prints tell the methods apart by it), from `MARKERS`.
METHOD_MARKERS = {"gd": "o", "gd-opt": "s", "heavy-ball": "D", "nesterov": "v", "newton": "P", "adam": "X",
                  "jacobi": "*", "kfac": "h"}


def series_style(i: int) -> dict:
    """The ``i``-th series' style: ``{"color", "marker", "ls"}``, every one of the three different from the series
    before it, so that neither colour-blind readers nor a grey-scale print lose a series."""
    return {"color": PALETTE[i % len(PALETTE)], "marker": MARKERS[i % len(MARKERS)],
            "ls": LINESTYLES[i % len(LINESTYLES)]}


def figure(columns: int = 1, rows: int = 1, cols: int = 1, height: float | None = None, **kwargs):
    """(fig, axes) at the printed size: one column (3.4 in) or two (7.0 in) wide (in the neurips style 2.7 in or
    5.5 in: `page_width`), ``height`` inches tall (default 2.4 in a row), ``rows`` × ``cols`` panels (``axes`` one
    Axes where there is one, else a flat list), laid out by matplotlib's constrained layout so that nothing leaves
    the page. In the screen style every size is 1.5×."""
    scale = STYLES[_STYLE["name"]]["scale"]
    height = (2.4 * rows if height is None else height)
    fig, axes = plt.subplots(rows, cols, figsize=(page_width(columns), height * scale),
                             layout="constrained", squeeze=False, **kwargs)
    flat = list(axes.ravel())
    return fig, (flat[0] if len(flat) == 1 else flat)


def _wrap(label: str, chars: int) -> str:
    """``label`` wrapped at ``chars`` characters, never inside a mathtext span ``$…$`` (a line break there leaves
    both halves unbalanced)."""
    import re
    import textwrap

    glued = re.sub(r"\$[^$]*\$", lambda m: m.group(0).replace(" ", "\x00"), label)
    return "\n".join(textwrap.fill(part, chars, subsequent_indent="  ")
                     for part in glued.split("\n")).replace("\x00", " ")


#: The most of a figure's height a legend under its panels may take (a referee's rule: a legend as tall as the plot
#: is a table, and belongs in the caption).
LEGEND_SHARE = 1 / 3


def legend_below(fig_or_ax, axes=None, ncol: int | None = None, title: str | None = None, sort_key=None):
    """One legend under the panels of ``fig_or_ax`` (a figure, or one axes: its figure), gathered from ``axes``
    (default all of the figure's), each label once (in the order of ``sort_key(label)`` where given), its lines
    wrapped to its column's width (measured, not guessed); the figure grows taller by the legend's height, so the
    panels keep theirs and the page keeps its width. The columns: ``ncol`` where given, else (of 1, 2, 3) those
    whose legend stays within `LEGEND_SHARE` of the grown figure (at most half the panels' height) and wraps the
    fewest labels, then the shortest; where none stays within it, the shortest, and the panels grow to twice its
    height (a narrow page, e.g. the neurips style's, wraps long labels onto more lines). Returns the legend (None
    where no series is labelled)."""
    fig = fig_or_ax if isinstance(fig_or_ax, matplotlib.figure.Figure) else fig_or_ax.figure
    axes = fig.axes if axes is None else list(axes)
    handles, labels, seen = [], [], set()
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            if label not in seen:
                seen.add(label)
                handles.append(h)
                labels.append(label)
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    if not handles:
        return None
    if sort_key is not None:
        order = sorted(range(len(labels)), key=lambda i: (sort_key(labels[i]), i))
        handles, labels = [handles[i] for i in order], [labels[i] for i in order]
    renderer = fig.canvas.get_renderer()
    limit = fig.get_figheight() * LEGEND_SHARE / (1 - LEGEND_SHARE) * fig.dpi  # pixels: ≤ 1/3 once grown
    tries = [ncol] if ncol is not None else [c for c in (1, 2, 3) if c <= max(1, len(labels))]
    drawn = []  # (labels wrapped, height, columns, legend)
    for columns in tries:
        legend = _legend_in_columns(fig, handles, labels, columns, title, renderer)
        wraps = sum(t.get_text().count("\n") > label.count("\n") for t, label in zip(legend.get_texts(), labels))
        drawn.append((wraps, legend.get_window_extent(renderer).height, columns, legend))
    # within the limit, the legend that wraps the fewest labels (then the shortest); else the shortest
    inside = [d for d in drawn if d[1] <= limit]
    legend = (min(inside, key=lambda d: (d[0], d[1], d[2])) if inside else min(drawn, key=lambda d: d[1]))[3]
    for *_, other in drawn:
        if other is not legend:
            other.remove()
    legend.otod_labels = labels  # the labels as given, before wrapping (what tests and readers compare)
    tall = legend.get_window_extent(renderer).height / fig.dpi
    # where no column count keeps within the share (long labels on a narrow page), the panels grow to twice the
    # legend's height instead: the plot stays at least twice the legend
    panels = max(fig.get_figheight(), tall * (1 - LEGEND_SHARE) / LEGEND_SHARE)
    fig.set_figheight(panels + tall + 0.05)
    return legend


def _legend_in_columns(fig, handles, labels, columns: int, title, renderer):
    """The figure legend under the panels in ``columns`` columns, its labels as given where it fits the page's
    width, else wrapped, narrower each try, until it fits (measured)."""
    # 5% to spare: text measured on the figure's screen renderer draws a little wider in the 150 dpi PNG (hinting)
    width_pt = fig.get_figwidth() * 72 * 0.95
    chars = max(len(line) for label in labels for line in label.split("\n"))  # unwrapped, where it fits
    while True:
        legend = fig.legend(handles, [_wrap(label, chars) for label in labels], loc="outside lower center",
                            ncol=columns, title=title, frameon=False, handlelength=2.2, columnspacing=1.0,
                            borderaxespad=0.2, labelspacing=0.3)
        wide = legend.get_window_extent(renderer).width * 72 / fig.dpi
        if wide <= width_pt - 4 or chars <= 12:
            return legend
        legend.remove()
        chars = max(12, int(chars * (width_pt - 4) / wide) - 1)


def legend_inside(ax, loc: str = "best", **kwargs):
    """The legend inside ``ax`` (where it covers the fewest points, by default)."""
    if not ax.get_legend_handles_labels()[0]:
        return None
    return ax.legend(loc=loc, frameon=False, **kwargs)


def fit_to_page(fig) -> None:
    """What the paper style promises of every saved figure, for figures drawn without `figure`: no type below
    `MIN_FONT_PT`, no legend beside the axes (one to the right of the axes moves below them, `legend_below`), at
    most the style's page wide (`page_width`: 7.0 in, 5.5 in in the neurips style), laid out so that nothing leaves
    the page."""
    from matplotlib.text import Text

    widest = page_width(2)
    if fig.get_figwidth() > widest + 1e-6:
        scale = widest / fig.get_figwidth()
        fig.set_size_inches(widest, fig.get_figheight() * max(scale, 0.75))
    outside = [ax for ax in fig.axes if ax.get_legend() is not None and _sticks_out(ax.get_legend())]
    if outside:
        legend_below(fig, outside)
    for ax in fig.axes:
        plain_log_ticks(ax)
    for text in fig.findobj(Text):
        if text.get_text() and text.get_fontsize() < MIN_FONT_PT:
            text.set_fontsize(MIN_FONT_PT)
    if fig.get_layout_engine() is None:
        fig.set_layout_engine("constrained")


_SUPERSCRIPT = str.maketrans("0123456789-−.", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁻·")


def _plain_powers(text: str) -> str:
    """A log axis's tick label without mathtext: ``$\\mathdefault{10^{-3}}$`` as ``10⁻³``. Mathtext draws the
    exponent at 70% of the label's size (4.9 pt under a 7 pt label), under the paper style's least size."""
    import re

    if not text.startswith("$"):
        return text
    body = re.sub(r"\\mathdefault\{(.*)\}", r"\1", text.strip("$"))
    body = re.sub(r"\^\{([^}]*)\}", lambda m: m.group(1).translate(_SUPERSCRIPT), body)
    return body.replace("\\times", "×").replace("{", "").replace("}", "").replace("\\", "")


def plain_number(x: float) -> str:
    """A tick value as a reader writes it: 400, 2,000, 0.05 (not 4×10², 2×10³, 5×10⁻²)."""
    if x >= 1 and abs(x - round(x)) < 1e-9 * x:
        return f"{round(x):,}"
    return f"{x:.3g}"


class _PlainLogFormatter(matplotlib.ticker.LogFormatterSciNotation):
    """Log-axis tick labels in plain text: powers of ten as 10⁻³, and where ticks between the powers are labelled
    too (an axis spanning less than a decade or two, which looks linear and where 4×10² reads as a formula) every
    labelled tick as a plain number, 400."""

    def __call__(self, x, pos=None):
        text = super().__call__(x, pos)
        if text and self.axis is not None:
            lo, hi = sorted(abs(v) for v in self.axis.get_view_interval())
            between = set(getattr(self, "_sublabels", None) or {1.0}) - {1.0}  # labelled ticks between powers
            if self.axis.get_scale() == "log" and lo > 0 and (np.log10(hi / lo) < 1 or between):  # not symlog
                return plain_number(x)
        return _plain_powers(text)


def plain_log_ticks(ax) -> None:
    """Tick labels of ``ax``'s log axes as plain text (10⁻³, not mathtext: `_plain_powers`; plain numbers on an
    axis spanning less than a decade: `_PlainLogFormatter`)."""
    for axis in (ax.xaxis, ax.yaxis):
        for f in (axis.get_major_formatter(), axis.get_minor_formatter()):
            if type(f) is matplotlib.ticker.LogFormatterSciNotation:
                f.__class__ = _PlainLogFormatter  # the same formatter (its axis, base, thresholds), plain text


#: Greek letters as mathtext writes them (`math_subscripts`).
_GREEK = {"α": r"\alpha", "β": r"\beta", "η": r"\eta", "κ": r"\kappa", "λ": r"\lambda", "μ": r"\mu",
          "σ": r"\sigma", "Σ": r"\Sigma", "Φ": r"\Phi"}
_SUBSCRIPTED = r"(?<![\w\\])(lr|[A-Za-z]|[αβηκλμσΣΦ])_(\{[^}$]*\}|[A-Za-zαβηκλμσΣΦ0-9]+)(?![\w])"


def _math_symbol(match) -> str:
    base, sub = match.group(1), match.group(2).strip("{}")
    base = _GREEK.get(base, base if len(base) == 1 else r"\mathrm{" + base + "}")
    sub = "".join(_GREEK.get(c, c) for c in sub) if len(sub) == 1 or sub.isdigit() else r"\mathrm{" + sub + "}"
    return f"${base}_{{{sub}}}$"


def math_subscripts(text: str) -> str:
    r"""``text`` with each subscripted symbol written with an underscore (B_crit, λ_max, W_L, lr_ref) as mathtext
    ($B_{\mathrm{crit}}$: B with "crit" set as a subscript), so that no figure shows a literal underscore; word
    subscripts upright, one-letter ones italic, as in print. Mathtext already in ``text`` is left as it is."""
    import re

    parts = re.split(r"(\$[^$]*\$)", text)
    return "".join(part if part.startswith("$") and part.endswith("$") and len(part) > 1
                   else re.sub(_SUBSCRIPTED, _math_symbol, part) for part in parts)


def _math_texts(fig) -> None:
    """Every text of ``fig`` through `math_subscripts` (legend entries, titles, axis labels, notes)."""
    from matplotlib.text import Text

    for text in fig.findobj(Text):
        raw = text.get_text()
        if "_" in raw:
            text.set_text(math_subscripts(raw))


_LETTER = r"^\(([a-z])\)\s*"


def panels(fig) -> list:
    """The panels of ``fig``: its visible axes with their axis lines on, other than colour bars and twins (an axes
    at an earlier one's place), top row first, left to right."""
    out, places = [], []
    for ax in fig.axes:
        place = tuple(np.round(ax.get_position().bounds, 3))
        if not ax.get_visible() or not ax.axison or hasattr(ax, "_colorbar") or place in places:
            continue
        places.append(place)
        out.append(ax)
    return sorted(out, key=lambda ax: (-round(ax.get_position().y1, 2), ax.get_position().x0))


def letter_panels(fig) -> None:
    """Panel letters only inside a figure of several panels, and there (a), (b), … in reading order: a letter a
    maker put in a title is dropped first, so that no single-panel figure carries one and no two figures' letters
    clash (each figure is cited on its own)."""
    import re

    found = panels(fig)
    for ax in found:
        ax.set_title(re.sub(_LETTER, "", ax.get_title()))
    if len(found) < 2:
        return
    for i, ax in enumerate(found):
        title = ax.get_title()
        ax.set_title(f"({chr(ord('a') + i)}) {title}" if title else f"({chr(ord('a') + i)})")


def inside_only(texts) -> None:
    """Mark ``texts`` (contour labels, notes on the data) to be hidden by `save` where, once the figure is laid
    out, they would stick out of their axes and be cut at its edge."""
    for text in texts:
        text.otod_inside = True


def _hide_cut_texts(fig) -> None:
    """Hide every text marked by `inside_only` that the laid-out figure draws past its axes' edge."""
    from matplotlib.text import Text

    marked = [t for t in fig.findobj(Text) if getattr(t, "otod_inside", False) and t.axes is not None]
    if not marked:
        return
    fig.draw_without_rendering()
    for text in marked:
        box, edge = text.get_window_extent(), text.axes.bbox
        if box.x0 < edge.x0 - 0.5 or box.x1 > edge.x1 + 0.5 or box.y0 < edge.y0 - 0.5 or box.y1 > edge.y1 + 0.5:
            text.set_visible(False)


def _sticks_out(legend) -> bool:
    """Whether an axes legend is anchored outside its axes (to the right, or below the tick labels)."""
    box = legend.get_bbox_to_anchor()
    ax_box = legend.axes.bbox
    return box.x0 > ax_box.x1 - 1 or box.y1 < ax_box.y0 + 1 or box.x1 < ax_box.x0 + 1


def save(fig, base: Path, pdf: bool = True, caption: str | None = None) -> list[Path]:
    """Write ``base.png`` (150 dpi) and, with ``pdf``, ``base.pdf``, and with ``caption`` ``base.caption.txt`` (the
    run's settings, what the marks mean, where each theory line comes from: what a paper's caption says and the
    title leaves out); return the figure paths. In the paper and neurips styles the page is the figure's size
    (`fit_to_page`: at most 7.0 in or 5.5 in wide, no type under 7 pt); in the screen style it grows to fit what
    sticks out. The PDF
    carries no creation date, so the same numbers give the same bytes and regenerated figures show up in git only
    when they changed. (A sweep writes the PNG alone unless asked: the PDF doubles the time spent saving.)"""
    base = Path(base)
    base.parent.mkdir(parents=True, exist_ok=True)
    paths = [base.with_name(base.name + ".png")] + ([base.with_name(base.name + ".pdf")] if pdf else [])
    paper = STYLES[_STYLE["name"]]["printed"]
    letter_panels(fig)
    _math_texts(fig)
    if paper:
        fit_to_page(fig)
    _hide_cut_texts(fig)
    where = {} if paper else {"bbox_inches": "tight"}
    with matplotlib.rc_context(FONT_TYPES):
        fig.savefig(paths[0], dpi=150, **where)
        if pdf:
            fig.savefig(paths[1], metadata={"CreationDate": None}, **where)
    if caption:
        base.with_name(base.name + ".caption.txt").write_text(caption.strip() + "\n")
    plt.close(fig)
    return paths


def caption_text(*parts: str, marks=()) -> str:
    """A caption from sentences (empty ones dropped), followed by what each shared mark in ``marks`` means
    (`MARK_NOTES`: "band", "lower", "diverged")."""
    sentences = [p.strip().rstrip(".") + "." for p in parts if p and p.strip()]
    sentences += [MARK_NOTES[m] for m in ("band", "lower", "diverged") if m in marks]
    return " ".join(sentences)


# -- bands, lower bounds and diverged lanes ------------------------------------------------------------------------

#: The legend's names of the shared marks.
BAND_LABEL = "IQR over seeds"
LOWER_LABEL = "△ median only a lower bound (≥)"
DIVERGED_LABEL = "× lanes diverged (n/N)"
#: What each shared mark means, said once in the caption (`caption_text`).
MARK_NOTES = {"band": "Shaded: the interquartile range over the same seeds as the median, censored lanes counted "
                      "at their cap as lower bounds.",
              "lower": "Open triangles: medians that are only lower bounds (most lanes censored at the cap or "
                       "stalled), drawn at the value they bound.",
              "diverged": "× in the grey strip at the top: x values where lanes diverged, with how many of the N "
                          "lanes (n/N)."}


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
    # rows of marks 22 pt apart (a × and a two-line 7 pt label under it), from the top of the axes down
    step = 22 if tag else 14
    trans = matplotlib.transforms.offset_copy(trans, fig=ax.figure, y=-step * (row % 4), units="points")
    top = 0.97
    (artist,) = ax.plot(xs[at], np.full(at.sum(), top), "x", color=color, ms=6, mew=1.5, transform=trans,
                        clip_on=False, label=label if label else "_nolegend_", gid="diverged")
    total = status.shape[-1]
    below = matplotlib.transforms.offset_copy(trans, fig=ax.figure, y=-4, units="points")
    for x, k in zip(xs[at], n[at]):
        # a tag above its count, so that neighbouring x's 7 pt labels do not run into each other (ax.text on an
        # offset transform: a two-line annotate on the blended transform lands at the bottom of the axes)
        ax.text(x, top, f"{tag}\n{k}/{total}" if tag else f"{k}/{total}", transform=below, fontsize=MIN_FONT_PT,
                color=color, ha="center", va="top", linespacing=0.95)
    artist.otod_strip_points = step * (row % 4 + 1) + 6  # how deep the marks reach below the top (`headroom`)
    return artist


def headroom(ax) -> None:
    """Where ``ax`` carries × marks of diverged lanes (`mark_diverged`), raise the top of its y axis so that the
    data end below them (the top 22% of the axes, in the axes' own scale) and no × sits on a point. Call it last,
    once the data and the y scale are drawn."""
    if not any(line.get_gid() == "diverged" for line in ax.get_lines()):
        return
    lo, hi = ax.get_ylim()
    deep = max(getattr(line, "otod_strip_points", 0) for line in ax.get_lines())
    height = ax.get_position().height * ax.figure.get_figheight() * 72
    share = 1 - min(0.45, max(0.25, deep / max(height, 1)))  # the data's share of the axes below the strip
    if ax.get_yscale() == "log" and lo > 0:
        top = 10 ** (np.log10(lo) + (np.log10(hi) - np.log10(lo)) / share)
    else:
        top = lo + (hi - lo) / share
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

INIT_COLORS = {"identity": PALETTE[0], "orthogonal": PALETTE[2], "xavier": PALETTE[1], "small": PALETTE[3],
               "gaussian": PALETTE[4], "zero": PALETTE[6]}


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
        styles = {s: series_style(i) for i, s in enumerate(names)}
    return styles


# -- one panel per value of a static axis -------------------------------------------------------------------------


def panel_grid(n: int, height: float = 2.3, sharey: bool = True):
    """(fig, [ax] * n): ``n`` panels, up to 3 a row, across the full text width (`figure`'s two columns: 7.0 in,
    5.5 in in the neurips style), each row ``height`` inches tall."""
    cols = min(n, 3)
    rows = -(-n // cols)
    fig, flat = figure(columns=2, rows=rows, cols=cols, height=height * rows, sharey=sharey)
    flat = flat if isinstance(flat, list) else [flat]
    for ax in flat[n:]:
        ax.remove()
    return fig, flat[:n]
