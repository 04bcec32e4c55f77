"""The nets obstacle's figures: measured S(B) with the NQM's predicted S(B) over it, B_crit against the parameter
count, and iterations against depth for plain and residual nets (the curvature figures are
`otod.nets.curvature_figures`'s)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from otod.core.sweep import run_sweep
from otod.nets.curvature_figures import MAKERS as CURVATURE_MAKERS
from otod.nets.report import batch_analysis


def _plt():
    from otod.core.plotting import plt

    return plt


def predictions(meta: dict, dim: float) -> list[dict]:
    return [p for p in meta.get("nqm_prediction") or [] if float(p.get("parameters", math.nan)) == float(dim)]


def batch_panel(analysis, ax, dim: float) -> None:
    """Measured steps vs B (the noise obstacle's panel: medians, IQR bars, the S(B) fit) with the NQM's predicted
    S(B) and B_crit for the same net over it."""
    from otod.noise.figures import _color, steps_vs_batch

    from otod.core.critical_batch import describe_critical_batch

    steps_vs_batch(analysis, ax, None, dim=dim)
    colors = {s.method: _color(s.method, i) for i, s in enumerate(analysis.at(dim))}
    drawn = set()
    for p in predictions(analysis.meta, dim):
        curve = np.asarray(p.get("curve") or [], float)
        if curve.size:
            ok = np.isfinite(curve[:, 1])
            said = describe_critical_batch(p["b_crit"], curve[ok, 0])
            ax.plot(curve[ok, 0], curve[ok, 1], "-", color=colors.get(p["method"], "0.3"), lw=1.5, alpha=0.6,
                    label=f"{p['method']}: NQM prediction (B_crit {said if said[0] in '<>' else '= ' + said})")
        b_noise = p.get("b_noise_target", math.nan)
        if math.isfinite(b_noise) and round(b_noise, 6) not in drawn:  # SGD's, the same for every method
            drawn.add(round(b_noise, 6))
            ax.axvline(b_noise, color="0.5", ls="--", lw=0.8, label=f"B_noise at the target (NQM) {b_noise:.3g}")


def _legend(ax, outside: bool = True):
    """The legend under the panels (`otod.core.plotting.legend_below`), or inside the axes."""
    from otod.core.plotting import legend_below, legend_inside

    if ax.get_legend_handles_labels()[0]:
        legend_below(ax.figure) if outside else legend_inside(ax)


def _caption(config: dict, *parts: str) -> str:
    from otod.core.plotting import caption_text

    return caption_text("Settings: " + _title(config), *parts)


#: Where the batch figure's lines come from, for the captions.
BATCH_NOTE = ("Markers: the median steps over seeds at each B's tuned lr, bars the IQR over the same seeds; dotted: "
              "the fitted S_min(1 + B_crit/B) (McCandlish et al. 2018); faint solid: the NQM's predicted S(B) for "
              "the same net (otod.nets.predict, from its measured curvature and gradient noise); dashed grey: the "
              "NQM's B_noise at the target")


def _title(config: dict) -> str:
    p = config["problem"]
    return (f"{p['model']} on {p['data']} ({p['loss']}), target loss {config['target']['tol']:g}, "
            f"{config['seeds']} seeds, lr tuned per point")


def depth_panel(results, ax, analysis=None) -> None:
    """Iterations to target against depth, one line per method · init · architecture (residual dashed), medians
    at each depth's chosen lr with IQR bars; censored medians as open triangles (lower bounds); ``analysis``: the
    sweep's `otod.nets.report.depth_analysis`, where the caller has it."""
    from otod.nets.report import depth_analysis

    from otod.core.plotting import series_style

    analysis = depth_analysis(results) if analysis is None else analysis
    for i, s in enumerate(analysis.series):
        rows = s.summary
        x, med, low = (rows["value"].to_numpy(float), rows["median"].to_numpy(float),
                       rows["lower_bound"].to_numpy(bool))
        style = series_style(i)
        ls = "--" if "residual" in s.name else "-"
        ok = np.isfinite(med) & ~low
        law = s.fit.law if s.fit is not None else None
        ax.plot(x[ok], med[ok], ls=ls, marker=style["marker"], color=style["color"], ms=4,
                label=f"{s.name}" + (f" ({law} by AIC)" if law else ""))
        if (np.isfinite(med) & low).any():
            ax.plot(x[low], med[low], "^", mfc="none", color=style["color"], ms=5,
                    label=f"{s.name}: △ median only a lower bound (≥)")
    ax.set(yscale="log", xlabel="depth L (weight layers)", ylabel="steps to target (median over seeds)")


def sweep_figure(results, base, pdf: bool = False, analysis=None, **kwargs) -> list:
    """The figure of one net sweep: S(B) per net (one panel each) with the prediction, or steps vs depth."""
    from otod.core.plotting import figure, legend_below, panel_grid, save

    config = results.meta["config"]
    again = getattr(analysis, "tol", None)  # another target, re-read from the loss traces
    notes = ()
    if again is not None and again != config["target"]["tol"]:
        notes = (f"Counts re-read at target {again:g} from the loss traces of a run to {config['target']['tol']:g}; "
                 "the NQM's prediction is the run's, at its own target",)
        config = {**config, "target": {**config["target"], "tol": again}}
    if "batch" not in config["axes"]:
        fig, ax = figure(columns=2, height=2.8)
        depth_panel(results, ax, analysis)
        ax.set_title("Steps to target against depth, plain and residual nets")
        _legend(ax)
        return save(fig, Path(base), pdf=pdf, caption=_caption(
            config, "Markers: the median steps over seeds at each depth's tuned lr; residual nets dashed; the legend "
            "names each series' law in depth (power or exponential, chosen by AIC)", *notes))
    analysis = batch_analysis(results) if analysis is None else analysis
    dims = analysis.dims
    fig, axes = panel_grid(len(dims), sharey=False) if len(dims) > 1 else figure(columns=2, height=2.8)
    axes = np.atleast_1d(axes)
    for ax, d in zip(axes, dims):
        batch_panel(analysis, ax, d)
        ax.set_title(f"P = {d:g} parameters" if len(dims) > 1 else
                     f"Measured steps against batch size and the NQM's prediction, P = {d:g}")
    if len(dims) > 1:
        fig.suptitle("Measured steps against batch size and the NQM's prediction, one panel per net")
    legend_below(fig)
    return save(fig, Path(base), pdf=pdf, caption=_caption(config, BATCH_NOTE, *notes))


def _run(spec: dict, predict: bool = True):
    from otod.nets.options import net_config

    options = {k.replace("-", "_"): (str(v) if not isinstance(v, (bool, int)) or k in ("width", "depth", "batch")
                                     else v) for k, v in spec.items() if k not in ("maker", "name")}
    config = net_config(**options)
    extra = None
    if predict and "batch" in dict(config.axes):
        from otod.nets.predict import sweep_predictions

        extra = lambda: {"nqm_prediction": sweep_predictions(config)}  # noqa: E731
    return run_sweep(config, out_dir="results", extra_meta=extra)


def make_batch(spec: dict, out_dir: Path) -> list[Path]:
    """Measured S(B) of one net with the NQM's predicted S(B)."""
    results = _run(spec)
    return sweep_figure(results, out_dir / f"nets_{spec['name']}", pdf=True)


def make_width(spec: dict, out_dir: Path) -> list[Path]:
    """B_crit against the parameter count (width axis): the measured B_crit with its seed-bootstrap CI, the
    NQM's predicted B_crit and B_noise at the target for each net, and the fitted power law."""
    from otod.core.plotting import figure, save, series_style
    from otod.core.analysis import MIN_BOOTSTRAP_SEEDS
    from otod.nets.report import width_rule

    results = _run(spec)
    analysis = batch_analysis(results)
    fig, ax = figure(columns=2, height=2.8)
    for i, method in enumerate(dict.fromkeys(s.method for s in analysis.series)):
        rows = [(d, s) for d in analysis.dims for s in analysis.at(d) if s.method == method and s.critical]
        p = np.array([d for d, _ in rows], float)
        b = np.array([s.critical.b_crit for _, s in rows], float)
        lo = np.array([s.critical.b_crit_ci[0] for _, s in rows], float)
        hi = np.array([s.critical.b_crit_ci[1] for _, s in rows], float)
        ok = np.isfinite(b) & (b > 0)
        style = series_style(i)
        ax.errorbar(p[ok], b[ok], yerr=[np.maximum(b[ok] - lo[ok], 0), np.maximum(hi[ok] - b[ok], 0)],
                    fmt=style["marker"], color=style["color"], label=f"{method}: measured B_crit (95% CI, seeds)")
    pred = results.meta.get("nqm_prediction") or []
    if pred:
        pp = np.array([q["parameters"] for q in pred], float)
        ax.plot(pp, [q["b_crit"] for q in pred], "s-", mfc="none", color="0.3", label="NQM predicted B_crit")
        ax.plot(pp, [q.get("b_noise_target", math.nan) for q in pred], "d:", mfc="none", color="0.5",
                label="B_noise at the target")
    for method, r in (width_rule(analysis) or {}).items():
        ci = (f"(no CI: fewer than {MIN_BOOTSTRAP_SEEDS} seeds)" if r["no_ci"] else
              f"[{r['ci'][0]:.2f}, {r['ci'][1]:.2f}]")
        grid = np.geomspace(*r["parameters"], 50)
        color = series_style(list(dict.fromkeys(s.method for s in analysis.series)).index(method))["color"]
        ax.plot(grid, np.exp(r["intercept"]) * grid ** r["slope"], ls=":", lw=1.2, color=color,
                label=f"{method}: fitted B_crit ∝ P^{r['slope']:.2f} {ci}")
    ax.set(xscale="log", yscale="log", xlabel="parameters P (width varied)", ylabel="critical batch B_crit")
    ax.set_title("The critical batch against the parameter count")
    _legend(ax)
    return save(fig, out_dir / f"nets_{spec['name']}", caption=_caption(
        results.meta["config"], "Markers: B_crit of each width's fitted S(B), bars its 95% seed-bootstrap CI; open "
        "squares: the NQM's predicted B_crit (otod.nets.predict); open diamonds: the NQM's B_noise at the target; "
        "the legend gives the fitted power law B_crit ∝ P^b with its CI"))


def make_depth(spec: dict, out_dir: Path) -> list[Path]:
    """Iterations against depth, plain vs residual and by init."""
    results = _run(spec, predict=False)
    return sweep_figure(results, out_dir / f"nets_{spec['name']}", pdf=True)


MAKERS = {"nets-batch": make_batch, "nets-width": make_width, "nets-depth": make_depth}


#: Every figure maker of the nets obstacle: these and the curvature figures' (`otod.nets.curvature_figures`).
ALL_MAKERS = {**CURVATURE_MAKERS, **MAKERS}
