"""Figures of the gradient-noise obstacle (``otod figures noise``, from ``experiments/noise.toml``).

(a) steps to target vs B per method, log-log: the measured medians (simulate) or exact counts, the exact-theory
curve, the fitted McCandlish curve S_min(1 + B_crit/B) and the ideal estimator's d/(2·target·B); (b) the best lr
vs B; (c) steps vs examples E = B·S with the hyperbola (S/S_min − 1)(E/E_min − 1) = 1; (d) steps vs d under
the two batch rules; (e) the RMS of d-dimensional Gaussian noise vs d and the error of an average of n samples vs
n; (f) Rosenbrock paths with and without gradient noise; (g) the two-batch estimate of B_simple along a run
against the exact value; (h) steps vs B under constant, cosine and one-cycle schedules.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from otod.core.api import (FigureSpec, log_axes as _log_axes, method_color as _color, method_marker as _marker,
                           none_reached as _none_reached, TypedMaker)
from otod.noise import theory
from otod.noise.analysis import NoiseAnalysis, analyse
from otod.noise.options import noise_config, params_configs
from otod.noise.schedule_figure import ScheduleNqmSpec


def _palette():
    from otod.core.api import PALETTE

    return PALETTE


def steps_vs_batch(analysis: NoiseAnalysis, ax, exact: NoiseAnalysis | None = None, dim: float | None = None) -> None:
    """Figure (a) on ``ax``: the core's S(B) panel (`otod.core.batch_figure.steps_vs_batch`, with the exact twin's
    curve, `exact_twin`) and, on a quadratic, the ideal estimator's d/(2·target·B)."""
    from otod.core.api import steps_vs_batch as panel

    def ideal(ax, dim, series):
        q = _quadratic(analysis.config, dim)
        if q is not None:
            xs = np.asarray(sorted({x for s in series for x in s.x}))
            ax.plot(xs, theory.ideal_steps(len(q.h), analysis.config.target.tol, xs), "--", color="0.5",
                    label="ideal estimator d/(2·target·B)")

    panel(analysis, ax, exact, dim, ideal)


def _caption(analysis, *parts, marks=()) -> str:
    from otod.core.api import caption_text

    return caption_text("Settings: " + _title(analysis), *parts, marks=marks)


def _plt():
    from otod.core.api import plt

    return plt


def exact_twin(analysis: NoiseAnalysis) -> NoiseAnalysis | None:
    """The exact curve a figure draws: the analysis itself on the exact path, else the exact path's choice on the
    same sweep that the analysis carries as its theory (`otod.noise.analysis.ExactTwin`: computed at most once per
    command, never re-run by a figure), or None where no recursion applies."""
    if analysis.mode == "exact":
        return analysis
    return analysis.theory.value if analysis.theory is not None else None


def _quadratic(config, dim: float | None = None):
    from otod.noise.report import quadratic_of

    return quadratic_of(config, dim)


def _title(analysis: NoiseAnalysis) -> str:
    c = analysis.config
    lr = "lr (and β) tuned per B" if c.lr == "tuned" else f"lr {c.lr}"
    return f"{c.problem.kind} d = {getattr(c.problem, 'dim', 2)}, target {c.target.tol:g}, {analysis.mode}, {lr}"


def _legend(ax):
    """The legend under the panels (`otod.core.plotting.legend_below`)."""
    from otod.core.api import legend_below

    if ax.get_legend_handles_labels()[0]:
        legend_below(ax.figure)


def sweep_figure(results, base, pdf: bool = False, analysis: NoiseAnalysis | None = None, **kwargs) -> list:
    """Figure (a) of a noise sweep (a params sweep: steps vs d); one panel per d where d is a static axis of a
    batch sweep. ``analysis``: the one the command already made (else it is made here, once)."""
    from otod.core.api import figure, legend_below, panel_grid, save

    analysis = analyse(results) if analysis is None else analysis
    dims = analysis.dims if analysis.axis == "batch" else []
    if len(dims) > 1:
        fig, axes = panel_grid(len(dims), sharey=False)
        exact = exact_twin(analysis)
        for ax, d in zip(axes, dims):
            steps_vs_batch(analysis, ax, exact, dim=d)
            ax.set_title(f"d = {d:g}")
        fig.suptitle("Steps to target against batch size, one panel per d")
        legend_below(fig)
        return save(fig, Path(base), pdf=pdf,
                    caption=_caption(analysis, batch_note(*axes), "One panel per dimension d"))
    fig, ax = figure(columns=2, height=2.8)
    if analysis.axis == "dim":
        params_panel([("", analysis)], ax)
        ax.set_title("Steps to target against dimension d")
    else:
        steps_vs_batch(analysis, ax, exact_twin(analysis))
        ax.set_title("Steps to target against batch size")
    _legend(ax)
    return save(fig, Path(base), pdf=pdf, caption=_caption(analysis, batch_note(ax)))


#: Where figure (a)'s lines come from, for the captions.
BATCH_NOTE = ("Markers: the median steps over seeds at each B's tuned (lr, β), bars the IQR over the same seeds; solid: "
              "the exact expected-loss recursion (otod.noise.exact) at its own tuned lr; dotted: the fitted "
              "McCandlish et al. (2018) curve S_min(1 + B_crit/B){band}; dashed grey: the ideal estimator's "
              "d/(2·target·B)")


def batch_note(*axes) -> str:
    """`BATCH_NOTE` for a figure of ``axes``, naming the fits' shaded band where one was drawn: a fit with a seed
    bootstrap CI has one, the exact path's deterministic fits and fits over fewer than 5 seeds have none."""
    from otod.core.api import FIT_BAND_NOTE, drew_fit_band

    return BATCH_NOTE.format(band="; " + FIT_BAND_NOTE if drew_fit_band(*axes) else "")


def lr_vs_batch(analysis: NoiseAnalysis, ax) -> None:
    """Figure (b): the chosen step size per B, with the analysis's slope over the perfect-scaling region."""
    for i, s in enumerate(analysis.at(analysis.dims[0])):
        ax.plot(s.x, s.summary["learning_rate"], marker=_marker(s.method, i), ms=3, color=_color(s.method, i),
                label=f"{s.method}: slope {s.lr_slope:.2f} up to B = {s.perfect_scaling or 0:g}")
    xs = np.asarray(sorted({x for s in analysis.series for x in s.x}))
    ax.plot(xs, 1e-3 * xs, "--", color="0.5", label="∝ B (linear scaling)")
    ax.set(xscale="log", yscale="log", xlabel="batch size B", ylabel="best learning rate")
    ax.set_xscale("log", base=2)


#: The RMS relative misfit of an S(B) fit above which a figure says the hyperbola does not describe the points.
POOR_FIT = 0.2


def tradeoff(analysis: NoiseAnalysis, ax) -> None:
    """Figure (c): steps S vs examples E = B·S per method, and McCandlish's hyperbola from each fit; a fit whose
    RMS relative misfit exceeds `POOR_FIT` is dashed and says so in the legend (the EMA's S(B) on the exact NQM
    bends away from the hyperbola: misfit 0.38)."""
    for i, s in enumerate(analysis.at(analysis.dims[0])):
        ok = s.fitted
        ax.plot(s.x[ok] * s.median[ok], s.median[ok], _marker(s.method, i), ms=4, color=_color(s.method, i),
                label=s.method)
        fit = s.critical
        if fit is not None and math.isfinite(fit.b_crit) and fit.b_crit > 0:
            grid = np.geomspace(s.x.min(), s.x.max(), 200)
            steps = fit.curve(grid)
            poor = math.isfinite(fit.residual) and fit.residual > POOR_FIT
            ax.plot(grid * steps, steps, "--" if poor else "-", lw=1, color=_color(s.method, i),
                    label=f"{s.method} fit: S_min {fit.s_min:.3g}, E_min {fit.s_min * fit.b_crit:.3g}"
                          + (f" (poor fit: rms misfit {fit.residual:.2g})" if poor else ""))
    ax.set(xscale="log", yscale="log", xlabel="examples processed E = B·S", ylabel="steps S")


def params_panel(labelled, ax) -> None:
    """Figure (d): steps vs d per batch rule [(label, analysis)], with each rule's fitted exponent."""
    for i, (label, analysis) in enumerate(labelled):
        for j, s in enumerate(analysis.series):
            xs, med, ok = s.x, s.median, s.fitted
            censored = ~ok & np.isfinite(med)
            color, marker = _palette()[i], "osDv"[i % 4]
            if ok.any():
                ax.plot(xs[ok], med[ok], marker=marker, ms=4, color=color, ls=("-", "--", "-.", ":")[j % 4],
                        label=f"{label} {s.method}: exponent {s.exponent:.2f}")
            if censored.any():
                ax.plot(xs[censored], med[censored], "^", mfc="none", color=color,
                        label=f"{label}: ≥ cap (censored)")
            if not ok.any() and not censored.any():
                _none_reached(ax, f"{label} {s.method}".strip(), color)
    _log_axes(ax, "dimension d (parameters)", "steps to target")


# -- makers --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class BatchSpec(FigureSpec):
    """`make_batch`'s table: ``figures`` ("abc": steps, lr and trade-off; "a": steps alone) and ``options``, the
    other keys: ``otod sweep noise``'s options (`otod.noise.options.noise_config`)."""

    figures: str = "abc"
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class ParamsSpec(FigureSpec):
    """`make_params`'s table: ``otod sweep params``'s options (`otod.noise.options.params_configs`)."""

    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class SchedulesSpec(FigureSpec):
    """`make_schedules`'s table: ``schedules``, one sweep each, and ``options``, the sweeps' other options."""

    schedules: tuple[str, ...] = ("constant", "cosine", "one-cycle")
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RmsSpec(FigureSpec):
    """`make_noise_rms`'s table: ``draws`` of the noise per point, from ``seed``."""

    draws: int = 200
    seed: int = 0


@dataclass(frozen=True)
class RosenbrockSpec(FigureSpec):
    """`make_rosenbrock`'s table: SGD at ``lr`` for ``steps`` steps at each ``noise`` level σ, from ``seed``."""

    lr: float = 1e-3
    steps: int = 5000
    noise: tuple[float, ...] = (0.0, 3.0, 30.0)
    seed: int = 0


@dataclass(frozen=True)
class EstimatorSpec(FigureSpec):
    """`make_estimator`'s table: ``otod noise-scale``'s options on the NQM (`otod.noise.estimators`)."""

    dim: int | str = 1000
    pairs: str = "4:32"
    decay: str = "0,0.9,0.99"
    lr: float | str = 0.05
    batch: int | str = 32
    steps: int | str = 400
    seeds: int | str = 64
    seed: int | str = 0


def _run_noise(options: Mapping[str, Any]):
    """Run (or read back from ``results/``) the noise sweep of these options, as ``otod sweep noise`` parses them."""
    from otod.noise.runner import run
    from otod.noise.options import noise_config

    config, mode = noise_config(**{k: (str(v) if not isinstance(v, bool) else v) for k, v in options.items()})
    return run(config, mode, "results")


def make_batch(spec: BatchSpec, out_dir: Path) -> list[Path]:
    """Figures (a), (b), (c) of one noise sweep."""
    from otod.core.api import figure, save

    analysis = analyse(_run_noise(dict(spec.options)))
    name = spec.name
    files = []
    fig, ax = figure(columns=2, height=2.8)
    steps_vs_batch(analysis, ax, exact_twin(analysis))
    ax.set_title("Steps to target fall as 1/B up to the critical batch, then level off")
    _legend(ax)
    files += save(fig, out_dir / f"noise_{name}_steps", caption=_caption(analysis, batch_note(ax)))
    if spec.figures == "a":
        return files
    fig, ax = figure(columns=1, height=2.4)
    lr_vs_batch(analysis, ax)
    ax.set_title("The best learning rate grows with B")
    _legend(ax)
    files += save(fig, out_dir / f"noise_{name}_lr", caption=_caption(
        analysis, "The tuned learning rate per B and its slope over the perfect-scaling region; dashed: ∝ B"))
    fig, ax = figure(columns=2, height=2.8)
    tradeoff(analysis, ax)
    ax.set_title("Steps against examples: the McCandlish et al. (2018) hyperbola")
    _legend(ax)
    files += save(fig, out_dir / f"noise_{name}_tradeoff", caption=_caption(
        analysis, "Markers: median steps S against examples E = B·S; lines: (S/S_min − 1)(E/E_min − 1) = 1 from each "
        "method's fitted S(B) (McCandlish et al. 2018)"))
    return files


def params_figure(labelled, base, mode: str, pdf: bool = False) -> list[Path]:
    """Figure (d) of ``otod sweep params``: steps vs d for every batch rule [(label, analysis)], at ``base``.png
    (and .pdf with ``pdf``)."""
    from otod.core.api import caption_text, figure, save

    fig, ax = figure(columns=1, height=2.4)
    params_panel(labelled, ax)
    c = labelled[0][1].config
    lr = "lr tuned per d" if c.lr == "tuned" else f"lr {c.lr}"
    ax.set_title("Steps against d: a fixed batch and B ∝ d")
    _legend(ax)
    return save(fig, Path(base), pdf=pdf, caption=caption_text(
        f"Settings: {c.problem.kind}, target {c.target.tol:g}, {mode}, {lr}",
        "Markers: median steps over seeds per batch rule; the legend gives each rule's fitted exponent in d"))


def make_params(spec: ParamsSpec, out_dir: Path) -> list[Path]:
    """Figure (d): steps vs d under a fixed batch and B ∝ d."""
    from otod.noise.runner import run
    from otod.noise.options import params_configs

    configs, mode = params_configs(**{k: str(v) for k, v in spec.options.items()})
    labelled = [(label, analyse(run(config, mode, "results"))) for label, config in configs]
    return params_figure(labelled, out_dir / f"noise_{spec.name}", mode, pdf=True)


def make_noise_rms(spec: RmsSpec, out_dir: Path) -> list[Path]:
    """Figure (e): RMS of d-dimensional N(0, I) noise vs d (√d), and the error of a mean of n draws vs n (1/√n),
    from the draws kept in ``results/`` (`otod.noise.rms`)."""
    from otod.core.api import caption_text, figure, legend_inside, save
    from otod.noise import rms as noise_rms

    draws = int(spec.draws)
    records = noise_rms.measured(draws, int(spec.seed))
    dims, rms = noise_rms.series(records, noise_rms.NORM)
    ns, err = noise_rms.series(records, noise_rms.MEAN_ERROR)
    slope = noise_rms.exponents(records)
    fig, (a, b) = figure(columns=2, cols=2, height=2.4)
    a.plot(dims, rms, "o", ms=4, label="measured RMS ‖ξ‖")
    a.plot(dims, np.sqrt(dims), "--", color="0.4", label=f"√d (fitted exponent {slope[noise_rms.NORM]:.3f})")
    a.set(xscale="log", yscale="log", xlabel="dimension d", ylabel="RMS norm of N(0, I_d) noise",
          title="noise grows like √d")
    b.plot(ns, err, "s", ms=4, color=_palette()[3], label="measured RMS error of the mean")
    b.plot(ns, 1 / np.sqrt(ns), "--", color="0.4",
           label=f"1/√n (fitted exponent {slope[noise_rms.MEAN_ERROR]:.3f})")
    b.set(xscale="log", yscale="log", xlabel="samples averaged n", ylabel="RMS error",
          title="averaging shrinks it as 1/√n")
    for ax in (a, b):
        legend_inside(ax)
    return save(fig, out_dir / f"noise_{spec.name}", caption=caption_text(
        f"RMS over {draws} draws (seed {int(spec.seed)}) of the norm of d-dimensional N(0, I) noise (left) "
        "and of the error of a mean of n scalar N(0, 1) draws (right); dashed: √d and 1/√n; "
        + rms_exponents_text(slope, noise_rms.exponent_errors(records))
        + " (least squares on log–log, ± its standard error; in the legend)"))


def rms_exponents_text(slope: dict[str, float], error: dict[str, float]) -> str:
    """The caption's words for `otod.noise.rms.exponents` and their `exponent_errors` (the claims table prints the
    same)."""
    from otod.noise.rms import MEAN_ERROR, NORM

    return (f"fitted exponents {slope[NORM]:.3f} ± {error[NORM]:.3f} and {slope[MEAN_ERROR]:.3f} ± "
            f"{error[MEAN_ERROR]:.3f}").replace("-", "−")


def rosenbrock_path(noise: float, lr: float, steps: int, seed: int = 0, batch: float = 1.0) -> np.ndarray:
    """The iterates of SGD on Rosenbrock from (−1.2, 1) with gradient noise σ/√B (NumPy, the family's gradient
    written out: ∇ = (−2(a − x) − 4bx(y − x²), 2b(y − x²)), a = 1, b = 100)."""
    rng = np.random.default_rng(seed)
    z = np.array([-1.2, 1.0])
    path = [z.copy()]
    for _ in range(steps):
        x, y = z
        g = np.array([-2 * (1 - x) - 400 * x * (y - x * x), 200 * (y - x * x)])
        z = z - lr * (g + noise / np.sqrt(batch) * rng.standard_normal(2))
        path.append(z.copy())
    return np.asarray(path)


def make_rosenbrock(spec: RosenbrockSpec, out_dir: Path) -> list[Path]:
    """Figure (f): SGD paths on Rosenbrock with and without gradient noise."""
    from otod.core.api import caption_text, figure, save, series_style

    lr, steps = float(spec.lr), int(spec.steps)
    fig, ax = figure(columns=1, height=2.6)
    X, Y = np.meshgrid(np.linspace(-1.6, 1.6, 300), np.linspace(-0.6, 1.8, 300))
    ax.contour(X, Y, np.log10((1 - X) ** 2 + 100 * (Y - X * X) ** 2 + 1e-3), levels=15, colors="0.8",
               linewidths=0.6)
    for i, sigma in enumerate(spec.noise):
        p = rosenbrock_path(float(sigma), lr, steps, seed=int(spec.seed))
        loss = (1 - p[-1, 0]) ** 2 + 100 * (p[-1, 1] - p[-1, 0] ** 2) ** 2
        style = series_style(i)
        # the noisiest path at the bottom; the second drawn wide under the first, which it follows closely
        ax.plot(p[:, 0], p[:, 1], ls=style["ls"] if i != 1 else "-", lw=(1.0, 2.6, 0.6)[min(i, 2)],
                alpha=0.6 if i == 1 else 1.0, color=style["color"], zorder=10 - i,
                label=f"σ = {sigma:g}: loss {loss:.2g} after {steps}")
    ax.plot([1], [1], "k*", ms=12, mec="w", zorder=20, label="minimum (1, 1)")
    ax.plot([-1.2], [1], "ks", ms=5, zorder=20, label="start (−1.2, 1)")
    ax.set(xlabel="x", ylabel="y", title="Gradient noise throws SGD off the valley floor")
    _legend(ax)
    return save(fig, out_dir / f"noise_{spec.name}", caption=caption_text(
        f"SGD on Rosenbrock (a = 1, b = 100) from (−1.2, 1), lr {lr:g}, {steps} steps, with Gaussian gradient "
        "noise of standard deviation σ per coordinate (seed " + str(int(spec.seed)) + "); grey: contours of "
        "log₁₀ f. Smaller σ drawn over larger; the second path is drawn wide under the first where they coincide"))


def make_estimator(spec: EstimatorSpec, out_dir: Path) -> list[Path]:
    """Figure (g): the two-batch B_simple estimate (median and IQR over seeds) against the exact value, from the
    run kept in ``results/`` (`otod.noise.estimators.measured_estimates`)."""
    from otod.core.api import caption_text, figure, save, series_style
    from otod.noise.estimators import estimate_series, estimate_summary, measured_estimates, parse_scale_options

    o = parse_scale_options(dim=spec.dim, pairs=spec.pairs, decay=spec.decay, lr=spec.lr, batch=spec.batch,
                            steps=spec.steps, seeds=spec.seeds, seed=spec.seed)
    records = measured_estimates(o)
    series = estimate_series(records)
    first = next(iter(series.values()))
    t, exact = first["step"], first["exact"]
    fig, ax = figure(columns=2, height=2.8)
    ax.plot(t, exact, "k-", lw=2, label="exact B_simple = tr Σ/|G|² (mean over seeds)")
    lows = [np.min(exact)]
    for i, ((pair, g), s) in enumerate(series.items()):
        q25, q50, q75 = s["q25"], s["median"], s["q75"]
        lows.append(np.min(q50[q50 > 0], initial=np.inf))
        style = series_style(i + 1)
        ax.plot(t, q50, ls=style["ls"], marker=style["marker"], markevery=max(1, len(t) // 8), ms=3, lw=1,
                color=style["color"], label=f"estimate, B = {pair[0]}:{pair[1]}, EMA decay {g:g}")
        # no "curtain" to the axis: the band is left out at steps where the lower quartile is ≤ 0
        ax.fill_between(t, q25, q75, where=q25 > 0, color=style["color"], alpha=0.15, lw=0)
    ax.fill_between([], [], [], color="0.5", alpha=0.25, lw=0, label=f"IQR over {o['seeds']} seeds")
    # the y axis starts just under the lowest median (no empty decade under the data; a band may run below it)
    ax.set(yscale="log", xlabel="step", ylabel="B_simple", ylim=(0.7 * min(lows), None),
           title="The two-batch estimate of the noise scale against the exact value")
    _legend(ax)
    return save(fig, out_dir / f"noise_{spec.name}", caption=caption_text(
        f"NQM d = {o['dim']}, SGD B = {o['batch']}, lr {o['lr']:g}, {o['steps']} steps, {o['seeds']} seeds",
        "Lines: the median over seeds of each two-batch estimate (McCandlish et al. 2018, Appendix A), shaded its "
        "IQR in the same colour (cut at the axis's foot, just under the lowest median), left out at steps where "
        "the lower quartile is ≤ 0 (the estimate's denominator "
        "changed sign in over a quarter of the seeds; " + estimator_cut_text(estimate_summary(records))
        + "); black: the exact tr Σ/|G|²"))


def estimator_cut_text(summary: list[dict]) -> str:
    """The caption's shares of steps whose band is left out, per pair and decay (`otod.noise.estimators.
    estimate_summary`; the claims table prints the same)."""
    return "share of such steps: " + "; ".join(f"{s['pair']}, decay {s['decay']:g}: {100 * s['cut']:.0f}%"
                                               for s in summary)


def make_schedules(spec: SchedulesSpec, out_dir: Path) -> list[Path]:
    """Figure (h): steps vs B (simulated) under several schedules, each with its own tuned lr; shaded, each
    schedule's IQR over seeds at each B's tuned lr (`otod.core.plotting.draw_band`, censored lanes at their cap)."""
    from otod.core.api import draw_band, figure, legend_key, save, series_style

    fig, ax = figure(columns=2, height=2.8)
    opts = dict(spec.options)
    schedules = list(spec.schedules)
    banded = False
    for i, name in enumerate(schedules):
        analysis = analyse(_run_noise({**opts, "schedule": name}), fit=False)
        for j, s in enumerate(analysis.at(analysis.dims[0])):
            xs, med, ok = s.x, s.median, s.fitted
            style = series_style(i)
            banded = draw_band(ax, xs, s.at_choice("count"), s.at_choice("lower"), style["color"],
                               alpha=0.12) is not None or banded
            ax.plot(xs[ok], med[ok], marker=style["marker"], ms=4 + 1.5 * (len(schedules) - 1 - i),
                    mfc="none" if i < len(schedules) - 1 else None, color=style["color"], ls=style["ls"],
                    label=f"{name} ({s.method})")
            if (~ok).any():
                ax.plot(xs[~ok], med[~ok], "^", mfc="none", color=style["color"], label=f"{name}: ≥ cap (censored)")
    ax.set(xscale="log", yscale="log", xlabel="batch size B", ylabel="steps to target (median over seeds)",
           title="Steps against batch size under three learning-rate schedules")
    ax.set_xscale("log", base=2)
    if banded:
        legend_key(ax, "band")
    _legend(ax)
    return save(fig, out_dir / f"noise_{spec.name}", caption=_caption(
        analysis, "Each schedule with its own tuned lr; the schedule's horizon is the run's cap. Markers: the median "
        f"steps over the {analysis.config.seeds} seeds at each B's tuned lr, each schedule's band in its colour. "
        "Open markers, larger for earlier schedules, stay visible where the series coincide",
        marks=("band",) if banded else ()))


def make_schedule_nqm(spec: ScheduleNqmSpec, out_dir: Path) -> list[Path]:
    """Figure (k): the best batch schedule on the exact NQM against the best constant batch and lr schedule
    (`otod.noise.schedule_figure`)."""
    from otod.noise.schedule_figure import make_schedule_nqm as make

    return make(spec, out_dir)


def _sweep_options(**options):
    """The options a noise-schedules table may add: ``otod sweep noise``'s but ``schedule`` (its ``schedules``)."""


_sweep_options.__signature__ = inspect.signature(noise_config).replace(parameters=[  # type: ignore[attr-defined]
    p for p in inspect.signature(noise_config).parameters.values() if p.name != "schedule"])

MAKERS = {"noise-batch": TypedMaker(BatchSpec, make_batch, noise_config),
          "noise-params": TypedMaker(ParamsSpec, make_params, params_configs),
          "noise-rms": TypedMaker(RmsSpec, make_noise_rms),
          "noise-rosenbrock": TypedMaker(RosenbrockSpec, make_rosenbrock),
          "noise-estimator": TypedMaker(EstimatorSpec, make_estimator),
          "noise-schedules": TypedMaker(SchedulesSpec, make_schedules, _sweep_options),
          "noise-schedule-nqm": TypedMaker(ScheduleNqmSpec, make_schedule_nqm)}
