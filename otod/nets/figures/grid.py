"""The joint D × P grid's summary figure (issue 52): the critical batch against the data D at each parameter count P
and against P at each D, one row per data regime (``--regime stream``, ``--regime finite``: the same net, seeds and
lr grid), with the joint law log B_crit = c + a·log D + b·log P (`otod.core.joint_law`) drawn through the cells
with its pointwise 95% band over the same seed-bootstrap replicates as its CIs.

The spec names the grid (the sweep's options, shared, and each regime's batches) and the committed results file
of each regime; the maker re-reads the file where it is there (and checks that its config is the spec's grid), else
runs the sweep (`otod.nets.sweep.options.net_config`, the reference runs included) and writes it.

The papers' own exponents are drawn only where a paper states one for the critical batch with its page
(`PAPER_EXPONENTS`); none is drawn today: Zhang et al. 2024 (arXiv:2410.21676) and Bergsma et al. 2025
(arXiv:2505.13738) state that B_crit grows with D and hardly with the model, and Li et al. 2025's Step Law
(arXiv:2503.04715) fits the optimal batch, not the critical one; their exponents were not read off a page here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from otod.core.api import FigureSpec, TypedMaker

#: {paper: (exponent of D, exponent of P, "where it is stated")} drawn for reference; empty: none was read off a
#: page (module docstring).
PAPER_EXPONENTS: dict[str, tuple[float, float, str]] = {}
#: Each series' markers are moved by this factor in x per series (centred), so that cells at one D or P do not hide
#: each other; the law's lines stay at the true values.
DODGE = 1.07
#: The regimes a grid figure draws, one row each, in this order.
REGIMES = ("stream", "finite")


@dataclass(frozen=True)
class RegimeTable:
    """One regime's sub-table of a grid figure: its ``batch`` list and its committed ``results`` file ("" where it
    has none yet: the maker runs the sweep)."""

    batch: str
    results: str = ""


def regime_table(name: str, value) -> RegimeTable | None:
    """A regime's sub-table (a TOML table, or already a `RegimeTable`) typed; None where it is empty (the regime
    is not drawn); refused in one line where a key is unknown or ``batch`` missing."""
    from dataclasses import fields

    from otod.core.api import OtodError

    if isinstance(value, RegimeTable) or not value:
        return value or None
    known = {f.name for f in fields(RegimeTable)}
    unknown = sorted(set(value) - known)
    if unknown or "batch" not in value:
        raise OtodError(f"[…{name}]: {'unknown key ' + ', '.join(unknown) if unknown else 'missing key batch'} for "
                        f"a regime of maker 'nets-grid'; known: {', '.join(sorted(known))}")
    return RegimeTable(**{k: str(v) for k, v in dict(value).items()})


@dataclass(frozen=True)
class GridFigureSpec(FigureSpec):
    """A joint grid's figure: the sweep's shared options (``data``, ``examples``, ``width``, ``lr_grid``,
    ``max_iters``, ``seeds``, ``method``) and per regime a table with its ``batch`` list and its ``results`` file
    (relative to the checkout)."""

    examples: str = "256,1024,4096,16384"
    width: str = "4,12,40,128"
    data: str = "teacher"
    lr_grid: str = "0.03..3:9:log"
    max_iters: int = 4096
    seeds: int = 5
    method: str = "sgd"
    stream: RegimeTable | Mapping[str, Any] | None = None
    finite: RegimeTable | Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        for name in REGIMES:  # each regime's sub-table typed once, here
            object.__setattr__(self, name, regime_table(name, getattr(self, name)))

    def regimes(self) -> dict[str, RegimeTable]:
        return {name: regime for name, regime in (("stream", self.stream), ("finite", self.finite)) if regime}

    def options(self, regime: str) -> dict:
        """``net_config``'s keywords for one regime's sweep."""
        return {"data": self.data, "examples": self.examples, "width": self.width,
                "batch": self.regimes()[regime].batch,
                "lr_grid": self.lr_grid, "max_iters": int(self.max_iters), "seeds": int(self.seeds),
                "method": self.method, "regime": regime}


def same_grid(config, options: dict) -> str | None:
    """Why a results file's config (``config``) is not the grid of ``options`` (None where it is): its D, widths,
    batches, seeds and lr grid compared with the spec's, parsed by the sweep's own option parsing."""
    from otod.core.api import parse_range

    axes = dict(config.axes)
    checks = {"examples": ("examples", options["examples"]), "width": ("width", options["width"]),
              "batch": ("batch", options["batch"])}
    for name, (axis, text) in checks.items():
        want = sorted(float(v) for v in parse_range(str(text)))
        have = sorted(float(v) for v in axes.get(axis, ()))
        if not np.allclose(want, have, rtol=1e-9):
            return f"{name} {have} where the spec says {want}"
    if int(config.seeds) != int(options["seeds"]):
        return f"seeds {config.seeds} where the spec says {options['seeds']}"
    want = sorted(float(v) for v in parse_range(str(options["lr_grid"])))
    if not np.allclose(sorted(config.lr_grid), want, rtol=1e-6):
        return f"lr grid {list(config.lr_grid)} where the spec says {want}"
    return None


def grid_results(spec: GridFigureSpec, regime: str):
    """One regime's results: its committed file re-read (refused in one line where its grid is not the spec's),
    or, where there is none, the sweep run and written."""
    from otod.core.api import OtodError, load_results, read_config, run_sweep
    from otod.nets.sweep.options import net_config
    from otod.nets.sweep.predict import run_meta

    options = spec.options(regime)
    path = Path(spec.regimes()[regime].results)
    if path.name and path.is_file():
        results = load_results(path)
        why = same_grid(read_config(results.meta), options)
        if why is not None:
            raise OtodError(f"[{spec.name}] {regime}: {path} holds another grid ({why}); remove it or fix the spec")
        return results
    config = net_config(**{k: (str(v) if k not in ("max_iters", "seeds") else v) for k, v in options.items()})
    return run_sweep(config, out_dir="results", extra_meta=run_meta(config, False))


def law_band(law, data: np.ndarray, params: np.ndarray):
    """The pointwise 95% band of the plane's B_crit at (``data``, ``params``) over its replicate rows (a, b, c),
    or None without rows."""
    reps = np.asarray(law.replicates, float)
    if not len(reps) or law.no_ci:
        return None
    logs = reps[:, 2:3] + reps[:, 0:1] * np.log(data)[None, :] + reps[:, 1:2] * np.log(params)[None, :]
    low, high = np.percentile(logs, [2.5, 97.5], axis=0)
    return np.exp(low), np.exp(high)


def law_text(law) -> str:
    """a, b and a − b with their CIs, and the verdict, as the legend says them."""
    def ci(pair):
        return "(no CI)" if not np.all(np.isfinite(pair)) else f"[{pair[0]:.2f}, {pair[1]:.2f}]"

    return (f"a = {law.a:.2f} {ci(law.a_ci)}, b = {law.b:.2f} {ci(law.b_ci)}, a − b = {law.difference:.2f} "
            f"{ci(law.difference_ci)}: {law.verdict().answer}")


#: The factor of height above the marks and lines a panel leaves for its legend (a band runs on to the top).
LEGEND_ROOM = 4.0
#: How far up (a factor of B_crit) the arrow of a cell whose CI has no upper end points; the label that marks it
#: (`open_ci_drawn`: the caption names the arrow only where one was drawn).
OPEN_ARROW = 3.0
OPEN_CI_LABEL = "_open_ci"


def open_ci_drawn(axes) -> bool:
    """Whether any of ``axes`` drew a cell's open-ended CI (`cell_marks`)."""
    return any(child.get_label() == OPEN_CI_LABEL for ax in axes for child in ax.texts)


def cell_marks(ax, grid, along: str, other_values, x_of, styles) -> None:
    """Each cell's McCandlish B_crit with its 95% CI as bars, against ``along`` ("data" or "params"), one series
    per value of the other axis (``other_values``, styled by ``styles``, dodged in x by `DODGE`); a cell whose B_crit is only a bound (or
    none) is drawn as an open marker at the edge of its batches, not fitted."""
    from otod.core.api import ABOVE, INSIDE

    other = "params" if along == "data" else "data"
    for k, value in enumerate(other_values):
        cells = sorted((c for c in grid.cells if getattr(c, other) == value), key=lambda c: getattr(c, along))
        style = styles[k]
        x = np.array([x_of(c) for c in cells], float) * DODGE ** (k - (len(other_values) - 1) / 2)
        b = np.array([c.values["mccandlish"] for c in cells], float)
        inside = np.array([c.places["mccandlish"] == INSIDE for c in cells])
        lo = np.array([c.cis["mccandlish"][0] for c in cells], float)
        hi = np.array([c.cis["mccandlish"][1] for c in cells], float)
        ok = inside & np.isfinite(b) & (b > 0)
        open_above = ok & (hi == np.inf)
        yerr = [np.maximum(b[ok] - np.nan_to_num(lo[ok], nan=b[ok]), 0),
                np.where(open_above[ok], 0.0, np.maximum(np.nan_to_num(hi[ok], nan=b[ok]) - b[ok], 0))]
        ax.errorbar(x[ok], b[ok], yerr=yerr, fmt=style["marker"], color=style["color"], capsize=2, ms=4)
        for xi, bi in zip(x[open_above], b[open_above]):  # a CI with no upper end: an arrow up, not an infinite bar
            ax.annotate("", xy=(xi, bi * OPEN_ARROW), xytext=(xi, bi), label=OPEN_CI_LABEL,
                        annotation_clip=False, arrowprops=dict(arrowstyle="->", color=style["color"], lw=0.8))
        bound = ~ok
        if bound.any():
            edge = np.array([c.batches[1] if c.places["mccandlish"] == ABOVE else c.batches[0]
                             for c in cells], float)
            ax.plot(x[bound], edge[bound], style["marker"], mfc="none", color=style["color"], ms=4)


def law_lines(ax, law, along: str, other_values, span, styles) -> bool:
    """The joint law through each series (the plane at each value of the other axis, along ``span``), dotted, with
    its pointwise 95% band; returns whether a band was drawn. The band is cut to the height the marks and the
    lines set (and the legend's room above them): a plane fitted through three cells can have bootstrap replicates whose exponents are in the tens,
    and a band of them spanned hundreds of decades (matplotlib overflowed placing the axis) and flattened the
    marks into one line."""
    from otod.core.api import draw_fit_band

    if not np.isfinite(law.a):
        return False
    grid = np.geomspace(*span, 40)
    planes = []
    for k, value in enumerate(other_values):
        fixed = np.full(grid.shape, float(value))
        data, params = (grid, fixed) if along == "data" else (fixed, grid)
        ax.plot(grid, law.law(data, params), ls=":", lw=1.2, color=styles[k]["color"])
        planes.append((law_band(law, data, params), styles[k]["color"]))
    low, high = ax.get_ylim()
    banded = False
    for band, color in planes:
        if band is not None:
            band = tuple(np.clip(edge, low, high * LEGEND_ROOM) for edge in band)
        banded = draw_fit_band(ax, grid, band, color) or banded
    ax.set_ylim(low, high)
    return banded


def grid_panels(axes, grid, regime: str) -> list:
    """One regime's two panels: B_crit against D (one series per P) and against P (one series per D); the row's
    joint law is one entry of the figure's legend. Returns each panel's (ax, keys, labels) for the small legend
    naming its series, drawn after the figure's (`otod.core.plotting.legend_below` gathers and removes the
    panels' own)."""
    from matplotlib.lines import Line2D

    from otod.core.api import fit_band_key, series_style
    from otod.nets.figures.sweep import plain_numbers

    law = grid.mccandlish
    ds = sorted({c.data for c in grid.cells})
    ps = sorted({c.params for c in grid.cells})
    banded, legends = False, []
    for ax, along, others, label in ((axes[0], "data", ps, "P"), (axes[1], "params", ds, "D")):
        styles = [series_style(k + (0 if along == "data" else len(ps))) for k in range(len(others))]
        cell_marks(ax, grid, along, others, lambda c, a=along: getattr(c, a), styles)
        ax.set(xscale="log", yscale="log", xlabel="examples D" if along == "data" else "parameters P",
               ylabel="critical batch B_crit")
        values = ds if along == "data" else ps
        banded = law_lines(ax, law, along, others, (min(values), max(values)), styles) or banded
        keys = [Line2D([], [], marker=st["marker"], ls=":", color=st["color"], ms=4) for st in styles]
        legends.append((ax, keys, [f"{label} = {v:g}" for v in others]))
        plain_numbers(ax)
        from matplotlib import ticker

        ax.xaxis.set_major_locator(ticker.FixedLocator(values))
        low, high = ax.get_ylim()
        ax.set_ylim(low, high * LEGEND_ROOM)
        ax.set_title(f"{regime}: B_crit against {'D, each P' if along == 'data' else 'P, each D'}",
                     fontsize="medium")
    axes[0].plot([], [], ls=":", color="0.3", label=f"{regime}, joint law (dotted): {law_text(law)}")
    if banded:
        fit_band_key(axes[0])
    return legends


def make_grid(spec: GridFigureSpec, out_dir: Path) -> list[Path]:
    """The grid's summary figure (module docstring): one row per regime of the spec."""
    from otod.core.api import figure, legend_below, save
    from otod.nets.sweep.grid import grid_analyses

    regimes = list(spec.regimes())
    analyses = {r: grid_analyses(grid_results(spec, r))[spec.method] for r in regimes}
    fig, axes = figure(columns=2, rows=len(regimes), cols=2, height=2.6 * len(regimes))
    axes = axes if isinstance(axes, list) else [axes]
    legends = []
    for i, regime in enumerate(regimes):
        legends += grid_panels(axes[2 * i:2 * i + 2], analyses[regime], regime)
    legend_below(fig, ncol=1)
    for ax, keys, labels in legends:
        ax.legend(keys, labels, fontsize="x-small", loc="upper left", ncol=2, frameon=False, handlelength=1.6,
                  columnspacing=0.8)
    return save(fig, out_dir / f"nets_{spec.name}", caption=grid_caption(spec, analyses, open_ci_drawn(fig.axes)))


def grid_caption(spec: GridFigureSpec, analyses: dict, open_ci: bool = False) -> str:
    from otod.core.api import caption_text

    said = "; ".join(f"{r}: {law_text(g.mccandlish)}" for r, g in analyses.items())
    batches = "; ".join(f"{r} B = {t.batch}" for r, t in spec.regimes().items())
    return caption_text(
        f"The joint grid D = {spec.examples} × width {spec.width} ({spec.data}, {spec.method}, lr chosen per B "
        f"over {spec.lr_grid}, {spec.seeds} seeds, cap {spec.max_iters}; {batches}); each cell stopped at the "
        "held-out loss its tuned reference run (the smallest batch) reaches after D examples (Zhang et al. 2024)",
        "Markers: each cell's McCandlish B_crit (S(B) = S_min(1 + B_crit/B)), bars its 95% seed-bootstrap CI "
        "re-choosing the lr per B, dodged in x"
        + ("; an arrow up: the CI has no upper end" if open_ci else "")
        + "; open markers: only a bound at the edge of the batches, not fitted; dotted: the "
        "joint law log B_crit = c + a·log D + b·log P fitted over the cells, at each P (left) or D (right), shaded "
        "its pointwise 95% band over the same refitted replicates",
        f"Joint laws: {said}",
        "The papers' own exponents are not drawn: none was read off a page of Zhang et al. 2024, Bergsma et al. "
        "2025 or Li et al. 2025 (the last fits the optimal batch, not the critical one)")


MAKERS = {"nets-grid": TypedMaker(GridFigureSpec, make_grid)}
