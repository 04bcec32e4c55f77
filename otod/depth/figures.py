"""The nonlinearity obstacle's figures, and the makers ``otod figures depth`` runs from ``experiments/depth.toml``.

Conventions (`otod.core.plotting`): the median over seeds as a line with filled markers, the IQR over the same
seeds as a band (censored and stalled lanes at their cap, as lower bounds), medians that are only lower bounds
(more than half the lanes censored or stalled) as open △ at that bound, diverged lanes as × at the top, each named
in the legend; theory dashed, log-y; one colour per series (colour by method, line style by init where both
vary). Every sweep a figure needs is an ordinary ``otod sweep depth`` / ``otod sweep toy`` config, cached in
``results/`` like any sweep.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from otod.core.api import (Analysis, caption_text, figure, headroom, INIT_COLORS, inside_only, legend_below,
                           legend_keys, MARKERS, MIN_FONT_PT, PALETTE, panel_grid, Results, save, series_style,
                           series_styles, SeriesAnalysis, SweepFigureSpec, TypedMaker)
from otod.depth.options import depth_config_from_options, toy_config_from_options
from otod.depth.records import depth_analysis

METHOD_COLORS = {"gd": PALETTE[0], "heavy-ball": PALETTE[3], "adam": PALETTE[4], "kfac": PALETTE[8]}


def _color(series: str, index: int) -> str:
    """The colour of one series of a figure with one method (depth-width): by init."""
    method, _, init = series.partition("·")
    return INIT_COLORS.get(init) or METHOD_COLORS.get(method) or PALETTE[index % len(PALETTE)]


def draw_series(ax, series: Sequence[SeriesAnalysis], axis: str, *, chosen: pd.DataFrame | None = None,
                **options) -> dict:
    """The core's iterations-against-an-axis panel (`otod.core.law_figure.draw_series`: medians, IQR bands, △ lower
    bounds, × diverged, each series' law dotted with its 95% band and named in the legend) with this obstacle's
    addition: ``chosen`` (the group's
    records at the chosen settings, with a ``series`` column) adds toy lanes' local minima (◇)."""
    from otod.core.api import draw_series as draw

    def local(ax, one, color, row):
        sub = chosen[chosen["series"] == one.name]
        return "local" if mark_local_minima(ax, sub, axis, color, row=row) else None

    return draw(ax, series, axis, extra=None if chosen is None else local, **{"curves": True, **options})


#: The legend's line on stalled lanes (`otod.depth.records.stalled_at_cap`).
STALLED_LABEL = "stalled lanes (a fixed point of the iteration: stuck for any cap) count at the cap, like censored"
#: The legend's name of `mark_local_minima`'s marks.
LOCAL_LABEL = "◇ at the bottom: toy lanes in another local minimum of f (n/N), never converging (counted as ≥)"


def mark_local_minima(ax, chosen: pd.DataFrame, axis: str, color, *, row: int = 0) -> bool:
    """◇ near the bottom of ``ax`` at every x where toy lanes (``chosen``: one series' records at the chosen
    settings) sit in a local minimum other than f* (the ``minimum`` field of `otod.depth.toy.annotate`), with n/N
    under it; ``row`` staggers several series. Returns whether any was drawn."""
    if "minimum" not in chosen or len(chosen) == 0:
        return False
    local = chosen["minimum"].eq("local").groupby(chosen[axis].to_numpy(float)).agg(["sum", "size"])
    local = local[local["sum"] > 0]
    if local.empty:
        return False
    trans = ax.get_xaxis_transform()
    y = 0.05 + 0.06 * (row % 4)
    ax.plot(local.index.to_numpy(), [y] * len(local), "D", mfc="none", color=color, ms=5, transform=trans,
            clip_on=False, label="_nolegend_")
    for x, (n, total) in zip(local.index, local[["sum", "size"]].to_numpy()):
        ax.annotate(f"{n}/{total}", (x, y), xycoords=trans, xytext=(0, -4), textcoords="offset points", fontsize=MIN_FONT_PT,
                    color=color, ha="center", va="top")
    return True


def _theory_overlay(ax, meta: dict, chosen, label: str = "per-mode theory (identity, gd)") -> None:
    """The per-mode theory and the gradient-flow estimate of gd from the identity, at its chosen steps (``chosen``:
    a group's records at the chosen settings)."""
    from otod.depth.overlays import theory_columns

    columns = theory_columns(meta, chosen)
    if "modes" not in columns:
        return
    xs = sorted(set(chosen.loc[chosen["series"] == "gd·identity", "depth"].tolist()))
    ys = [columns["modes"]("gd·identity", x) for x in xs]
    pts = [(x, y) for x, y in zip(xs, ys) if y is not None]
    if pts:
        ax.plot(*zip(*pts), "--", color="k", lw=1.2, label=label)
    flows = [(x, columns["flow"]("gd·identity", x)) for x in xs]
    flows = [(x, y) for x, y in flows if y is not None]
    if flows:
        ax.plot(*zip(*flows), ":", color="k", lw=1.2, label="gradient-flow integral / η")


def _finish(ax, xlabel: str, title: str, marks: set | None = None, below: bool = True) -> None:  # noqa: D417
    """Log-y, labels, title, grid, and the legend under the panels (`legend_below`, with ``below``; else inside
    the axes): the series, then a grey key for each shared mark in ``marks`` (the band, open △ lower bounds,
    × diverged)."""
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("iterations to tolerance")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.25)
    headroom(ax)
    legend_keys(ax, set(marks or ()))
    if "stalled" in (marks or ()):
        ax.plot([], [], " ", label=STALLED_LABEL)
    if "local" in (marks or ()):
        ax.plot([], [], "D", mfc="none", color="0.3", ms=5, label=LOCAL_LABEL)
    if below is None:  # the caller draws one legend for all panels
        return
    if below:
        legend_below(ax.figure, [ax])
    else:
        ax.legend(frameon=False)


def _describe(meta: dict, static: bool = False) -> str:
    from otod.core.api import read_config

    c = read_config(meta)
    p = c.problem
    if meta["sweep"] == "toy":
        what = f"toy, {p.reading} reading"
    elif p.d_in is not None or p.d_out is not None:
        what = (f"{p.kind}, d_in {p.d_in or 'n'}, d_out {p.d_out or 'n'}, α = √(n/d_out), κ_Φ {p.target_kappa:g}")
    else:
        what = f"{p.kind}, {'width: one panel each' if static else 'width ' + str(p.width)}, κ_Φ {p.target_kappa:g}"
    return f"{what}, tol {c.target.tol:g}, {c.seeds} seeds, lr {c.lr}, {meta['precision']}"


#: The per-mode theory's source, for the captions.
THEORY_NOTE = ("Dashed black: the per-mode theory of gd from the identity init (otod.depth.theory); dotted black: "
               "the gradient-flow integral / η at the same step.")
#: What stalled and censored mean, for the captions.
STALLED_NOTE = ("Stalled lanes sit at a fixed point of the float32 iteration (stuck for any cap); censored lanes are "
                "still moving at the cap; both count as lower bounds at the cap.")


#: What a depth figure's fitted laws look like, said once in its caption (`depth_caption` with ``laws``).
LAWS_NOTE = ("The legend gives each series' law (power or exponential in depth, chosen by AIC) with its slope's 95% "
             "CI (seed bootstrap); dotted: that law, fitted to the medians it reads; hatched: its pointwise 95% band "
             "over the same bootstrap's replicate laws (none without a CI)")


def depth_caption(meta: dict, marks=(), static: bool = False, extra: str = "", laws: bool = True) -> str:
    """A depth figure's caption: its settings, ``extra``, the laws' source (where ``laws``: the figure draws
    them), the marks drawn."""
    return caption_text("Settings: " + _describe(meta, static), extra, LAWS_NOTE if laws else "",
                        STALLED_NOTE if "stalled" in marks else "", marks=marks)


def sweep_figure(results: Results, base: Path, pdf: bool = True, analysis: Analysis | None = None) -> list[Path]:
    """Iterations against depth (or k) per series, with the per-mode theory where it applies; one panel per width
    where the width is swept (a static axis), all sharing the y axis; from ``analysis`` (default: the sweep's
    `depth_analysis`)."""
    meta = results.meta
    analysis = depth_analysis(results) if analysis is None else analysis
    axis = analysis.axis
    groups = analysis.groups
    fig, axes = panel_grid(len(groups), height=2.6) if len(groups) > 1 else figure(columns=2, height=2.8)
    axes = axes if isinstance(axes, list) else [axes]
    styles = series_styles(s.name for s in analysis.series)
    several = len(groups) > 1
    every: set = set()
    for ax, group in zip(axes, groups):
        marks: set = set()
        draw_series(ax, group.series, axis, styles=styles, marks=marks, chosen=group.chosen)
        if axis == "depth":
            _theory_overlay(ax, meta, group.chosen)
        _finish(ax, "number of matrices k" if axis == "layers" else "depth L",
                group.heading if several else "Iterations to tolerance against depth", marks, below=None)
        every |= marks
    if several:
        fig.suptitle("Iterations to tolerance against depth, one panel per width")
    legend_below(fig)
    return save(fig, base, pdf=pdf, caption=depth_caption(meta, every, static=several))


# -- the makers of experiments/depth.toml ---------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ResidualSpec(SweepFigureSpec):
    """`make_depth_residual`'s table: the sweep's options, and ``residual_init``, the inits of the residual V's."""

    residual_init: str


@dataclass(frozen=True, kw_only=True)
class MethodsSpec(SweepFigureSpec):
    """`make_depth_methods`'s table: the sweep's options, and ``method_groups``, the ``--method`` of each sweep."""

    method_groups: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class ToySpec(SweepFigureSpec):
    """`make_toy`'s table: the toy sweep's options, and ``contour_layers``, the k of each loss landscape drawn."""

    contour_layers: tuple[int, ...] = (1, 4)


@dataclass(frozen=True, kw_only=True)
class WidthSpec(SweepFigureSpec):
    """`make_depth_width`'s table: the sweep's options, and ``needed``, the iterations that count as "needs"."""

    needed: float


def _sweep(spec: SweepFigureSpec, kind: str = "depth", **override) -> Results:
    """Run (or read back from ``results/``) the sweep a figure spec describes; its options are the command's."""
    from otod.core.api import run_sweep

    build = depth_config_from_options if kind == "depth" else toy_config_from_options
    return run_sweep(build(**{**spec.options, **override}), out_dir=spec.results_dir)


def deep_linear_series(name: str) -> tuple[Results, Sequence[SeriesAnalysis]]:
    """The sweep of ``experiments/depth.toml``'s figure ``name`` (run, or read back from ``results/``) and its
    series with their laws: what the nets' depth figure draws its deep-linear comparison from
    (`otod.paper.figures.make_nets_depth`), the same numbers as that figure's."""
    from otod.core.api import load_specs, parsed

    results = _sweep(parsed(MAKERS, "depth", name, load_specs()["depth"][name]))
    return results, _one_group(results).series


def _one_group(results: Results):
    """The analysis of a figure's sweep, which sweeps no width: its one group."""
    (group,) = depth_analysis(results).groups
    return group


def make_depth_iterations(spec: SweepFigureSpec, out_dir: Path) -> list[Path]:
    """(a) Iterations against depth per init (gd, tuned lr), log-y, with the per-mode theory for the identity."""
    results = _sweep(spec)
    fig, ax = figure(columns=2, height=2.8)
    group = _one_group(results)
    marks: set = set()
    draw_series(ax, group.series, "depth", marks=marks, chosen=group.chosen)
    _theory_overlay(ax, results.meta, group.chosen)
    _finish(ax, "depth L", "Iterations grow with depth, fastest from the worst init", marks)
    return save(fig, out_dir / spec.name, caption=depth_caption(results.meta, marks, extra=THEORY_NOTE))


def make_depth_residual(spec: ResidualSpec, out_dir: Path) -> list[Path]:
    """(b) The plain net W_L⋯W_1 against the residual (I + V_L)⋯(I + V_1), same init distributions."""
    plain = _sweep(spec)
    residual = _sweep(spec, problem="residual", init=spec.residual_init)
    fig, ax = figure(columns=2, height=2.8)
    marks: set = set()
    colors = {"zero": PALETTE[0], "small": PALETTE[1], "xavier": PALETTE[3]}
    plain_series = _one_group(plain).series
    residual_series = _one_group(residual).series
    plain_names = [s.name for s in plain_series]
    residual_names = [s.name.replace("·", "·V ") for s in residual_series]

    def styles(names, ls):  # colour by init (shared by plain and residual), line style by plain/residual
        return {s: {"color": colors.get(s.split("·")[-1].split(" ")[-1], PALETTE[5 + i]), "ls": ls, "marker": "o"}
                for i, s in enumerate(names)}

    draw_series(ax, plain_series, "depth", names=plain_names, label_prefix="plain ", marker="o",
                styles=styles(plain_names, "-"), marks=marks)
    draw_series(ax, residual_series, "depth", names=residual_names, label_prefix="residual ", marker="s",
                styles=styles(residual_names, "--"), marks=marks, row_offset=len(plain_series))
    _finish(ax, "depth L", r"Residual $(I+V_L)\cdots(I+V_1)$ against plain $W_L\cdots W_1$", marks)
    return save(fig, out_dir / spec.name, caption=depth_caption(
        plain.meta, marks, extra="Plain W_L⋯W_1: circles, solid; residual (I+V_L)⋯(I+V_1): squares, dashed; the "
        "same init distributions, colour by init. Residual ·V zero is W = I"))


def make_depth_methods(spec: MethodsSpec, out_dir: Path) -> list[Path]:
    """(c) gd, heavy ball, Adam and KFAC at one init; momentum methods tune β (a traced axis) with the lr."""
    series = []
    for group in spec.method_groups:
        series += _one_group(_sweep(spec, method=group)).series
    fig, ax = figure(columns=2, height=2.8)
    marks: set = set()
    draw_series(ax, series, "depth", marks=marks)  # colour by method (and line style by init, if several)
    meta = _sweep(spec, method=spec.method_groups[0]).meta
    _finish(ax, "depth L", "Iterations against depth by method at one init", marks)
    return save(fig, out_dir / spec.name, caption=depth_caption(
        meta, marks, extra="Each method's (lr, β) tuned at each depth by the median over seeds"))


def gd_path(matrices, reading: str, step: float, steps: int) -> np.ndarray:
    """gd's iterates (a, b) on the toy from its start, in NumPy float64 (for drawing), with the gradient by central
    differences of the exact loss (h = 1e-6)."""
    from otod.depth.toy import start_entries, toy_loss

    x = np.array(start_entries(matrices, reading))
    path = [x.copy()]
    h = 1e-6
    for _ in range(steps):
        g = np.array([(toy_loss(matrices, x[0] + h, x[1], reading) - toy_loss(matrices, x[0] - h, x[1], reading)),
                      (toy_loss(matrices, x[0], x[1] + h, reading) - toy_loss(matrices, x[0], x[1] - h, reading))])
        x = x - step * g / (2 * h)
        path.append(x.copy())
    return np.asarray(path)


def make_toy(spec: ToySpec, out_dir: Path) -> list[Path]:
    """(d) The toy: the loss over (a, b) for k = 1 and k = 4 matrices with gd's path, and iterations against k for
    both readings."""
    from otod.depth.toy import losses_on_grid, start_entries

    ks = list(spec.contour_layers)
    seed = toy_config_from_options(**spec.options).seed
    fig, axes = figure(columns=2, cols=len(ks) + 1, height=2.5,
                       gridspec_kw={"width_ratios": [1] * len(ks) + [1.4]})
    for ax, k in zip(axes, ks):
        m = np.random.default_rng([seed, 0]).standard_normal((k, 3, 3)) / np.sqrt(3.0)
        a0, b0 = start_entries(m, "per-layer")
        path = gd_path(m, "per-layer", _toy_step(m), 200)
        lo = np.minimum(path.min(0), [a0, b0]) - 1.0
        hi = np.maximum(path.max(0), [a0, b0]) + 1.0
        aa, bb = np.meshgrid(np.linspace(lo[0], hi[0], 201), np.linspace(lo[1], hi[1], 201))
        f = losses_on_grid(m, aa, bb, "per-layer").reshape(aa.shape)
        cs = ax.contour(aa, bb, f, levels=np.quantile(f, np.linspace(0.01, 0.95, 10)), cmap="viridis",
                        linewidths=0.6)
        labels = ax.clabel(cs, cs.levels[::3], fontsize=MIN_FONT_PT, fmt="%.2g", inline=False)
        for label in labels:  # a white ground in place of an inline gap: a label cut at the edge is hidden whole
            label.set_bbox({"facecolor": "white", "edgecolor": "none", "pad": 0.4, "alpha": 0.85})
        inside_only(labels)
        ax.plot(path[:, 0], path[:, 1], ".-", color=PALETTE[1], ms=2, lw=0.8, label="gd path")
        ax.plot(*path[0], "o", color="k", ms=5, label="start")
        ax.set_xlabel("$a = M_1[0,0]$")
        ax.set_ylabel(f"$b = M_{k}[2,2]$")
        ax.set_title(rf"$\frac{{1}}{{2}}\|M_{k}\cdots M_1\|_F^2$, k = {k}")
    ax = axes[-1]
    marks: set = set()
    for row, (reading, marker, color, ls) in enumerate((("per-layer", "o", PALETTE[0], "-"),
                                                         ("shared", "s", PALETTE[3], "--"))):
        results = _sweep(spec, kind="toy", reading=reading)
        group = _one_group(results)
        names = [f"{s.name} {reading}" for s in group.series]
        draw_series(ax, group.series, "layers", names=names, marker=marker, marks=marks, row_offset=row,
                    chosen=group.chosen, styles={s: {"color": color, "ls": ls, "marker": marker} for s in names})
        if reading == "per-layer":
            from otod.depth.overlays import theory_columns

            k1 = theory_columns(results.meta, group.chosen)["theory"]("gd", 1.0)
            if k1 is not None:
                ax.plot([1], [k1], "*", color="k", ms=9, mfc="none", label=f"k = 1 theory (κ = 1): {k1}")
    _finish(ax, "number of matrices k", "iterations vs k", marks, below=None)
    legend_below(fig)
    return save(fig, out_dir / spec.name, caption=depth_caption(
        results.meta, marks, extra="(a, b): the loss over (a, b) for k matrices (per-layer reading), contours "
        "labelled with f, and gd's path from its start (black dot) at step 1/|λ|max of the Hessian there. (c): "
        "iterations against k, per-layer reading circles and solid, shared reading squares and dashed"))


def _toy_step(matrices) -> float:
    """1/|λ|max of the toy's Hessian at the start (per-layer), by central differences: the reference step."""
    from otod.depth.toy import start_entries, toy_loss

    x0 = np.array(start_entries(matrices, "per-layer"))
    h = 1e-4
    f = lambda x: toy_loss(matrices, x[0], x[1], "per-layer")  # noqa: E731
    e = np.eye(2) * h
    hess = np.array([[(f(x0 + e[i] + e[j]) - f(x0 + e[i] - e[j]) - f(x0 - e[i] + e[j]) + f(x0 - e[i] - e[j]))
                      / (4 * h * h) for j in range(2)] for i in range(2)])
    return 1.0 / np.max(np.abs(np.linalg.eigvalsh(hess)))


def width_needed(analysis: Analysis, needed: float) -> dict:
    """(series, depth) → the smallest width whose median count at the chosen (lr, β) (censored lanes as ≥ their
    cap: a median that is only a lower bound never counts as fast) is ≤ ``needed``, or None where no swept width
    reaches it (``analysis``: grouped by width, `depth_analysis`)."""
    fast: dict = {}
    for group in analysis.groups:
        for one in group.series:
            ok = np.isfinite(one.choice.median) & ~one.choice.bound & (one.choice.median <= needed)
            for depth, good in zip(one.cube.x("depth").tolist(), ok.tolist()):
                fast.setdefault((one.name, depth), []).append(group.key[0] if good else None)
    return {key: min((w for w in widths if w is not None), default=None) for key, widths in fast.items()}


SERIES_NAMES = {"gd·orthogonal": "orthogonal init", "gd·xavier": "Gaussian init (N(0, 1/n), xavier)"}


def make_depth_width(spec: WidthSpec, out_dir: Path) -> list[Path]:
    """(e) The width n needed for fast convergence (median ≤ ``needed`` iterations over seeds, censored lanes
    counting as slow) against depth, orthogonal against Gaussian init, on Hu, Xiao & Pennington's (2020)
    rectangular net (d_in, d_out fixed, αW_L⋯W_1 with α = √(n/d_out), step d_out/(L·n)). Their theorem: with
    orthogonal init the width needed does not depend on L; with Gaussian init it grows (about linearly) with L.
    Honest bounds: where the narrowest swept width already suffices the need is only ≤ it (hollow ▽ at it);
    where no swept width suffices it is > the widest (hollow △ above it)."""
    results = _sweep(spec)
    analysis = depth_analysis(results)
    needed = float(spec.needed)
    table = width_needed(analysis, needed)
    widths = sorted(group.key[0] for group in analysis.groups)
    narrowest, widest = widths[0], widths[-1]
    fig, ax = figure(columns=2, height=2.8)
    drawn = {"floor": False, "miss": False}
    for i, series in enumerate(dict.fromkeys(s.name for s in analysis.series)):
        depths = sorted({d for s, d in table if s == series})
        ys = [table[(series, d)] for d in depths]
        color, name = _color(series, i), SERIES_NAMES.get(series, series)
        exact = [(d, y) for d, y in zip(depths, ys) if y is not None and y > narrowest]
        ax.plot(depths, [y if y is not None else np.nan for y in ys], "-", color=color, lw=1.3)
        if exact:
            ax.plot(*zip(*exact), MARKERS[i % len(MARKERS)], color=color, ms=6 - 2 * (i % 2), label=f"{name}: smallest swept width with median ≤ "
                    f"{needed:g} iterations")
        at_floor = [d for d, y in zip(depths, ys) if y == narrowest]
        drawn["floor"] |= bool(at_floor)
        if at_floor:
            ax.plot(at_floor, [narrowest] * len(at_floor), "v", mfc="none", color=color, ms=8,
                    label=f"{name}: ≤ {narrowest:g} (the narrowest swept width suffices)")
        miss = [d for d, y in zip(depths, ys) if y is None]
        drawn["miss"] |= bool(miss)
        if miss:
            ax.plot(miss, [widest * 1.6] * len(miss), "^", mfc="none", color=color, ms=8,
                    label=f"{name}: > {widest:g} (no swept width suffices)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_ylim(narrowest / 1.6, widest * 2.5)
    ax.axhline(widest, color="0.6", lw=0.8, ls=":", label=f"the widest swept width ({widest:g})")
    depths = sorted({d for _, d in table})
    ax.set_xticks(depths, [f"{d:g}" for d in depths])
    ax.set_yticks(widths, [f"{w:g}" for w in widths])
    ax.minorticks_off()
    ax.set_xlabel("depth L")
    ax.set_ylabel("width n needed (ticks: the swept widths)")
    ax.set_title("Width needed: constant in depth for orthogonal init, growing for Gaussian")
    ax.grid(True, which="both", alpha=0.25)
    legend_below(fig)
    return save(fig, out_dir / spec.name, caption=depth_caption(
        results.meta, laws=False, extra=f"The smallest swept width whose median count over seeds is ≤ {needed:g} "
        "iterations (censored lanes counting as slow). Theory: Hu, Xiao & Pennington (2020) predict the width needed "
        "constant in L for orthogonal init and growing about linearly in L for Gaussian init. " + _width_marks(drawn)))


def _width_marks(drawn: dict) -> str:
    """What `make_depth_width` draws, for its caption: no law (the need is read off the swept widths), and the
    hollow bounds only where some were drawn."""
    parts = ["No law is fitted or drawn (the theory has no closed-form curve): filled markers joined by lines are "
             "each init's needed width, read off the swept widths (the y ticks)"]
    if drawn["floor"]:
        parts.append("hollow ▽ where the narrowest swept width already suffices (the need is only ≤ it)")
    if drawn["miss"]:
        parts.append("hollow △ above the widest where no swept width suffices")
    return "; ".join(parts + ["dotted grey: the widest swept width"])


MAKERS = {"depth-iterations": TypedMaker(SweepFigureSpec, make_depth_iterations, depth_config_from_options),
          "depth-residual": TypedMaker(ResidualSpec, make_depth_residual, depth_config_from_options),
          "depth-methods": TypedMaker(MethodsSpec, make_depth_methods, depth_config_from_options),
          "toy": TypedMaker(ToySpec, make_toy, toy_config_from_options),
          "depth-width": TypedMaker(WidthSpec, make_depth_width, depth_config_from_options)}
