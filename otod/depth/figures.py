"""The nonlinearity obstacle's figures, and the makers ``otod figures depth`` runs from ``experiments/depth.toml``.

Conventions (`otod.core.plotting`): the median over seeds as a line with filled markers, the seed spread (min to
max over converged seeds) as a band, medians that are only lower bounds (more than half the lanes censored or
stalled) as hollow markers at that bound, theory dashed, log-y. Every sweep a figure needs is an ordinary
``otod sweep depth`` / ``otod sweep toy`` config, cached in ``results/`` like any sweep.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from otod.core.fit import censored_medians, iteration_matrix
from otod.core.plotting import save
from otod.core.results import Results
from otod.depth.laws import fit_laws
from otod.depth.records import chosen_records, relabelled

INIT_COLORS = {"identity": "C0", "orthogonal": "C2", "xavier": "C1", "small": "C3", "gaussian": "C4", "zero": "C7"}
METHOD_COLORS = {"gd": "C0", "heavy-ball": "C1", "adam": "C4", "kfac": "C6"}
MARKERS = ("o", "s", "^", "D", "v", "P")


def _color(series: str, index: int) -> str:
    method, _, init = series.partition("·")
    return INIT_COLORS.get(init) or METHOD_COLORS.get(method) or f"C{index % 10}"


def law_label(fit) -> str:
    if fit.law is None:
        return f"{fit.label}: {fit.note or 'no law'}"
    if fit.law == "power":
        return f"{fit.label}: power, b = {fit.power_b:.2f} (ΔAIC {fit.delta_aic:.1f})"
    return f"{fit.label}: exponential, c = {fit.exp_c:.2f} (ΔAIC {fit.delta_aic:.1f})"


def draw_series(ax, records: list[dict], axis: str, *, color_of=_color, label_prefix: str = "",
                marker: str | None = None) -> dict:
    """Median iterations against ``axis`` per series, seed band, hollow markers where the median is only a lower
    bound; returns the series' fits by label."""
    fits = {f.label: f for f in fit_laws(records, axis, n_boot=200)}
    for i, series in enumerate(dict.fromkeys(r["method"] for r in records)):
        xs, y, status = iteration_matrix(records, series, axis)
        lower = np.isin(status, ("censored", "stalled"))
        med, bound = censored_medians(y, lower)
        color = color_of(series, i)
        m = marker or MARKERS[i % len(MARKERS)]
        ok = np.isfinite(med)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            conv = np.where(status == "converged", y, np.nan)
            lo, hi = np.nanmin(conv, 1), np.nanmax(conv, 1)
        band = np.isfinite(lo) & np.isfinite(hi)
        ax.fill_between(xs[band], lo[band], hi[band], color=color, alpha=0.12, lw=0)
        ax.plot(xs[ok], med[ok], "-", color=color, lw=1.3, marker=None)
        ax.plot(xs[ok & ~bound], med[ok & ~bound], m, color=color, ms=5,
                label=label_prefix + law_label(fits[series]))
        if np.any(ok & bound):
            ax.plot(xs[ok & bound], med[ok & bound], m, mfc="none", color=color, ms=7)
    return fits


def _theory_overlay(ax, meta: dict, records: list[dict], label: str = "per-mode theory (identity, gd)") -> None:
    from otod.depth.report import theory_columns

    columns = theory_columns(meta, records)
    if "modes" not in columns:
        return
    xs = sorted({r["depth"] for r in records if r["method"] == "gd·identity"})
    ys = [columns["modes"]("gd·identity", x) for x in xs]
    pts = [(x, y) for x, y in zip(xs, ys) if y is not None]
    if pts:
        ax.plot(*zip(*pts), "--", color="k", lw=1.2, label=label)
    flows = [(x, columns["flow"]("gd·identity", x)) for x in xs]
    flows = [(x, y) for x, y in flows if y is not None]
    if flows:
        ax.plot(*zip(*flows), ":", color="k", lw=1.2, label="gradient-flow integral / η")


def _finish(ax, xlabel: str, title: str) -> None:
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("iterations to tolerance (median over seeds)")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


def _describe(meta: dict) -> str:
    c = meta["config"]
    p = c["problem"]
    what = (f"toy, {p['reading']} reading" if meta["sweep"] == "toy" else
            f"{p['kind']}, width {p['width']}, κ_Φ {p['target_kappa']:g}")
    return f"{what}, tol {c['target']['tol']:g}, {c['seeds']} seeds, lr {c['lr']}, {meta['precision']}"


def sweep_figure(results: Results, base: Path, pdf: bool = True) -> list[Path]:
    """Iterations against depth (or k) per series, with the per-mode theory where it applies; hollow markers:
    lower-bound medians (more than half the lanes censored or stalled)."""
    meta = results.meta
    axis = "layers" if meta["sweep"] == "toy" else "depth"
    records = relabelled(chosen_records(meta, results.records))
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    draw_series(ax, records, axis)
    if axis == "depth":
        _theory_overlay(ax, meta, records)
    _finish(ax, "number of matrices k" if axis == "layers" else "depth L", _describe(meta) +
            "\nhollow: median only a lower bound (most lanes censored or stalled)")
    return save(fig, base, pdf=pdf)


MAKERS: dict = {}
