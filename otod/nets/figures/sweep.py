"""The nets obstacle's figures: measured S(B) with the NQM's predicted S(B) over it, B_crit against the parameter
count, and iterations against depth for plain and residual nets (the curvature figures are
`otod.nets.figures.curvature`'s)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from otod.core.api import FIT_BAND_NOTE, SweepFigureSpec, TypedMaker, read_config, run_sweep
from otod.nets.figures.along import MAKERS as ALONG_MAKERS
from otod.nets.figures.curvature import MAKERS as CURVATURE_MAKERS
from otod.nets.figures.predictors import MAKERS as PREDICTOR_MAKERS
from otod.nets.figures.schedule import MAKERS as SCHEDULE_MAKERS
from otod.nets.sweep.options import net_config
from otod.nets.sweep.report import batch_analysis
from otod.nets.figures.workloads import MAKERS as WORKLOAD_MAKERS


def _plt():
    from otod.core.api import plt

    return plt


def predictions(meta: dict, panel: tuple) -> list[dict]:
    from otod.nets.sweep.report import of_panel

    return [p for p in meta.get("nqm_prediction") or [] if of_panel(p, panel)]


def batch_panel(analysis, ax, panel: tuple) -> None:
    """Measured steps vs B (the core's panel, `otod.core.batch_figure`: medians, IQR bars, the S(B) fit) with the
    NQM's predicted S(B) and B_crit for the same net and data over it."""
    from otod.core.api import describe_critical_batch, method_color, steps_vs_batch

    steps_vs_batch(analysis, ax, None, panel=panel)
    colors = {s.method: method_color(s.method, i) for i, s in enumerate(analysis.in_panel(panel))}
    drawn = set()
    for p in predictions(analysis.meta, panel):
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
    from otod.core.api import legend_below, legend_inside

    if ax.get_legend_handles_labels()[0]:
        legend_below(ax.figure) if outside else legend_inside(ax)


def _caption(config, *parts: str, tol: float | None = None) -> str:
    from otod.core.api import caption_text

    return caption_text("Settings: " + _title(config, tol), *parts)


#: Where the batch figure's lines come from, for the captions.
BATCH_NOTE = ("Markers: the median steps over seeds at each B's tuned lr, bars the IQR over the same seeds; dotted: "
              "the fitted S_min(1 + B_crit/B) (McCandlish et al. 2018); " + FIT_BAND_NOTE + "; faint solid: the "
              "NQM's predicted S(B) for the same net (otod.nets.sweep.predict, from its measured curvature and gradient "
              "noise); dashed grey: the NQM's B_noise at the target")


def _title(config, tol: float | None = None) -> str:
    """The settings of a net sweep (its typed config, `otod.core.config.read_config`), at target ``tol`` (default:
    the run's own)."""
    p = config.problem
    named = p.reference if p.kind == "model" else f"{p.model} on {p.data} ({p.loss})"
    step = getattr(p, "branch_step", None)
    branch = (f", every seed from its checkpoint at step {step} of SGD at B = {p.branch_batch}, lr "
              f"{p.branch_lr:g} (otod.nets.model.branch)" if step is not None else "")
    return (f"{named}, target loss {config.target.tol if tol is None else tol:g}, "
            f"{config.seeds} seeds, lr tuned per point{branch}")


def draw_deep_linear(ax, net_series, comparison: dict) -> str | None:
    """The deep-linear obstacle's law in depth beside the nets' (``comparison``: ``series``, the deep-linear
    series' analysis, and ``from``, the net series it is drawn from): its growth a·f(L)/f(L₀) drawn through that net
    series' median at its first depth L₀, black dash-dot over the nets' depths, with its pointwise 95% band over
    the deep-linear bootstrap's replicate laws (each curve through the same point) hatched: the two problems'
    counts differ in scale, their growth per layer is what compares (README: depth on a real net). Returns the
    caption's sentence, or None where the deep-linear series chose no law or the net series has no median at
    L₀."""
    from otod.core.api import draw_fit_band, law_curve, law_curves, law_label

    deep, name = comparison["series"], comparison["from"]
    fit = deep.fit
    anchor = next((s for s in net_series if s.name == name), None)
    if fit.law is None or anchor is None:
        return None
    depths, medians = anchor.cube.x("depth"), anchor.choice.median
    first = int(np.argmin(depths))
    if not np.isfinite(medians[first]) or anchor.choice.bound[first]:
        return None
    l0, t0 = float(depths[first]), float(medians[first])
    grid = np.linspace(l0, float(np.max(depths)), 200)
    ylim = ax.get_ylim()
    ax.plot(grid, t0 * law_curve(fit, grid) / law_curve(fit, [l0]), "-.", color="k", lw=1.2,
            label=f"deep linear {law_label(fit._replace(label=deep.name))}, drawn from {name} at L = {l0:g}")
    band = deep.boot.band(lambda rows: t0 * law_curves(fit.law, rows, grid) / law_curves(fit.law, rows, [l0]))
    draw_fit_band(ax, grid, band, "0.2", hatched=True)
    ax.set_ylim(*ylim)  # the deep-linear law leaves the axes upwards: the nets' data keep them
    return (f"Dash-dot black: the deep-linear obstacle's law in depth for {deep.name} ({comparison['source']}), "
            f"its growth f(L)/f({l0:g}) drawn through {name}'s median at L = {l0:g}, to compare growth per layer, not "
            "counts (the problems differ in scale)" + (", hatched its 95% band over its seed bootstrap" if band
                                                      is not None else ""))


def depth_panel(results, ax, analysis=None, deep_linear: dict | None = None, residual: bool | None = None,
                law_bands: bool = True) -> str | None:
    """Iterations to target against depth, one line per method · init · architecture (residual dashed): the
    core's panel (`otod.core.law_figure.draw_series`: medians at each depth's chosen lr, IQR bands over seeds, △
    lower bounds, × diverged, each series' AIC law dotted and named in the legend), the series dodged in x so
    that coinciding medians stay visible, and depths where every lane stalled (a small plain start at the saddle
    at 0) as ⊘ at the top instead of △ at the iteration the stall rule stopped them; ``analysis``: the sweep's
    `otod.nets.sweep.report.depth_analysis`, where the caller has it; ``deep_linear``: the deep-linear law to draw beside
    them (`draw_deep_linear`), whose caption sentence it returns; ``residual``: only the residual (True) or the
    plain (False) series, each init keeping the style it has beside the other architecture; ``law_bands``: each
    law's hatched 95% band too (`otod.core.law_figure.draw_series`)."""
    from otod.core.api import draw_series, legend_keys, series_style
    from otod.nets.sweep.report import depth_analysis

    analysis = depth_analysis(results) if analysis is None else analysis
    series = analysis.series
    inits = list(dict.fromkeys(_init_of(s.name) for s in series))
    styles = {s.name: {**series_style(inits.index(_init_of(s.name))), "ls": "--" if "residual" in s.name else "-",
                       **({"mfc": "white"} if "residual" in s.name else {})} for s in series}  # residual: open
    if residual is not None:
        series = [s for s in series if ("residual" in s.name) == residual]
    marks: set = set()
    draw_series(ax, series, "depth", styles=styles, marks=marks, dodge=0.06, curves=True, stalled_on_top=True,
                law_bands=law_bands)
    ax.set(yscale="log", xlabel="depth L (weight layers)", ylabel="steps to target (median over seeds)")
    said = draw_deep_linear(ax, series, deep_linear) if deep_linear else None
    ax.grid(True, which="both", alpha=0.25)
    legend_keys(ax, marks)
    return said


def _init_of(name: str) -> str:
    """A depth series' name without its architecture (sgd·kaiming·plain → sgd·kaiming): what its colour follows."""
    return name.replace("·plain", "").replace("·residual", "")


def sweep_figure(results, base, pdf: bool = False, analysis=None, deep_linear: dict | None = None, **kwargs) -> list:
    """The figure of one net sweep: S(B) per net (one panel each) with the prediction, or steps vs depth (with the
    deep-linear law beside it, where ``deep_linear`` gives one: `draw_deep_linear`)."""
    from otod.core.api import figure, legend_below, panel_grid, save

    config = read_config(results.meta)
    again = getattr(analysis, "tol", None)  # another target, re-read from the loss traces
    notes, tol = (), None
    if again is not None and again != config.target.tol:
        notes = (f"Counts re-read at target {again:g} from the loss traces of a run to {config.target.tol:g}; "
                 "the NQM's prediction is the run's, at its own target",)
        tol = again
    if "batch" not in dict(config.axes):
        return _depth_figure(results, Path(base), pdf, analysis, deep_linear, notes, tol)
    from otod.nets.sweep.report import panel_words

    analysis = batch_analysis(results) if analysis is None else analysis
    panels = analysis.panels
    fig, axes = panel_grid(len(panels), sharey=False) if len(panels) > 1 else figure(columns=2, height=2.8)
    axes = np.atleast_1d(axes)
    step = getattr(config.problem, "branch_step", None)
    what = "and the NQM's prediction" if step is None else f"from the checkpoint at step {step}"
    for ax, panel in zip(axes, panels):
        batch_panel(analysis, ax, panel)
        ax.set_title(panel_words(panel) if len(panels) > 1 else
                     f"Measured steps against batch size {what}, {panel_words(panel, short=True)}")
    if len(panels) > 1:
        fig.suptitle("Measured steps against batch size and the NQM's prediction, one panel per net")
    legend_below(fig)
    return save(fig, Path(base), pdf=pdf, caption=_caption(config, BATCH_NOTE, *notes, tol=tol))


def _depth_figure(results, base: Path, pdf: bool, analysis, deep_linear, notes: tuple, tol) -> list:
    """Steps against depth, the plain nets in one panel and the residual nets in another on a shared y axis (each
    init one colour and marker in both; three IQR bands a panel, not six overlapping ones), with the deep-linear
    law in the panel of the series it is drawn from (`draw_deep_linear`). The laws' hatched bands are left out:
    the legend gives each slope's 95% CI."""
    from otod.core.api import figure, legend_below, save
    from otod.nets.sweep.report import depth_analysis

    config = read_config(results.meta)
    analysis = depth_analysis(results) if analysis is None else analysis
    kinds = [k for k in (False, True) if any(("residual" in s.name) == k for s in analysis.series)]
    fig, axes = figure(columns=2, cols=len(kinds), height=2.6, sharey=True)
    said = None
    for ax, residual in zip(np.atleast_1d(axes), kinds):
        said = depth_panel(results, ax, analysis, deep_linear, residual=residual, law_bands=False) or said
        ax.set_title("residual nets (dashed, open markers)" if residual else "plain nets")
        if residual and len(kinds) > 1:
            ax.set_ylabel("")
    fig.suptitle("Steps to target against depth" + (", beside the deep linear nets' law" if said else ""))
    names = [s.name + ":" for s in analysis.series]
    legend_below(fig, sort_key=lambda label: not any(label.startswith(n) for n in names))  # the series first
    notes = (*notes, said) if said else notes
    return save(fig, base, pdf=pdf, caption=_caption(
        config, "Left: plain nets; right: residual nets (dashed, open markers); each init one colour and marker in "
        "both. Markers: "
        "the median steps over seeds at each depth's tuned lr, dodged in x; bands: the IQR over seeds; dotted: "
        "each series' law in depth (power or exponential, chosen by AIC, Akaike 1974), named with its slope and "
        "95% CI (seed bootstrap) in the legend; ⊘: every lane stalled at that depth (no progress within the stall "
        "window; the small plain nets sit at the saddle at 0, loss ln 10)", *notes, tol=tol))


#: The net options that stay numbers when a table gives them as one (`sweep_options`): the others are passed as
#: text, as ``otod sweep net`` gets them typed.
NUMBER_OPTIONS = ("width", "depth", "batch", "examples")


def sweep_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """A figure's net options as `otod.nets.sweep.options.net_config` takes them from the command line: each value
    as text, except booleans and whole numbers of options other than `NUMBER_OPTIONS`' (``seeds = 5``,
    ``max_iters = 5000`` stay numbers). The config, and with it the results file's name (its digest), is the one
    ``otod sweep net`` builds from the same options."""
    return {k: (str(v) if not isinstance(v, (bool, int)) or k in NUMBER_OPTIONS else v) for k, v in options.items()}


def _run(options: Mapping[str, Any], predict: bool = True, results_dir: str = "results"):
    """Run (or read back from ``results_dir``) the net sweep of these options (`sweep_options`), with the NQM's
    prediction in its metadata where ``predict``."""
    from otod.nets.sweep.predict import run_meta

    config = net_config(**sweep_options(options))
    return run_sweep(config, out_dir=results_dir, extra_meta=run_meta(config, predict))


def make_batch(spec: SweepFigureSpec, out_dir: Path) -> list[Path]:
    """Measured S(B) of one net with the NQM's predicted S(B)."""
    results = _run(spec.options, results_dir=spec.results_dir)
    return sweep_figure(results, out_dir / f"nets_{spec.name}", pdf=True)


def rule_panel(ax, analysis, field: str, first_style: int = 0) -> None:
    """B_crit against one panel field (``dim``: the parameter count P; ``examples``: the training set's size D) on
    ``ax``: each panel's B_crit with its 95% seed-bootstrap CI as bars, one series per method and value of the
    other panel fields, and the power law fitted over them (`otod.core.critical_batch.scaling_rules`) dotted, with
    its pointwise 95% band over the same bootstrap rows as its CI shaded (`ScalingRule.band`), its exponent and
    re-selecting CI in the legend."""
    from otod.core.api import draw_fit_band, fit_band_key, inside, scaling_rules, series_style
    from otod.nets.sweep.report import RULE_FIELDS

    symbol = RULE_FIELDS[field][1]
    banded = False
    lines: dict[tuple, list] = {}
    for panel in analysis.panels:
        values = dict(panel)
        for s in analysis.in_panel(panel):
            if field in values and s.critical is not None:
                fixed = tuple((f, v) for f, v in panel if f != field)
                lines.setdefault((s.method, fixed), []).append((values[field], s.critical, s))
    rules = {(r.method, r.fixed): r for r in scaling_rules(analysis, field)}
    for i, ((method, fixed), rows) in enumerate(lines.items()):
        x = np.array([v for v, _, _ in rows], float)
        b = np.array([c.b_crit for _, c, _ in rows], float)
        lo, hi = (np.array([c.b_crit_ci[k] for _, c, _ in rows], float) for k in (0, 1))
        measured = np.array([inside(c.b_crit, s.x[s.fitted]) for _, c, s in rows])
        ok = np.isfinite(b) & (b > 0) & measured
        beyond = np.isfinite(b) & (b > 0) & ~measured
        style = series_style(first_style + i)
        at = ", ".join(f"{RULE_FIELDS[f][1]} = {v:g}" for f, v in fixed if f in RULE_FIELDS)
        name = method + (f" ({at})" if at else "")
        ax.errorbar(x[ok], b[ok], yerr=[np.maximum(b[ok] - np.nan_to_num(lo[ok], nan=b[ok]), 0),
                                        np.maximum(np.nan_to_num(hi[ok], nan=b[ok]) - b[ok], 0)],
                    fmt=style["marker"], color=style["color"], capsize=2,
                    label=f"{name}: measured B_crit (95% CI, seeds)")
        if beyond.any():
            ax.plot(x[beyond], b[beyond], style["marker"], mfc="none", color=style["color"],
                    label=f"{name}: fitted B_crit beyond its batches (not a measurement; not in the fit)")
        r = rules.get((method, fixed))
        if r is not None:
            ci = r.no_ci and "(no CI)" or f"[{r.ci[0]:.2f}, {r.ci[1]:.2f}]"
            grid = np.geomspace(*r.span, 50)
            ax.plot(grid, r.line(grid), ls=":", lw=1.2, color=style["color"],
                    label=f"{name}: fitted B_crit ∝ {symbol}^{r.slope:.2f} {ci}")
            banded = draw_fit_band(ax, grid, r.band(grid), style["color"]) or banded
    if banded:  # one grey key for every rule's band
        fit_band_key(ax)
    if lines and not rules:
        ax.text(0.97, 0.04, "no power law: fewer than 3 B_crit inside their batches", transform=ax.transAxes,
                ha="right", va="bottom",
                fontsize="small", color="0.3")
    ax.set(xscale="log", yscale="log", ylabel="critical batch B_crit")
    plain_numbers(ax)
    from matplotlib import ticker

    ax.xaxis.set_major_locator(ticker.FixedLocator(sorted({v for rows in lines.values() for v, _, _ in rows})))


def plain_numbers(ax) -> None:
    """Log axes ticked at 1, 2, 5 × 10^k and labelled as plain numbers (20, 500, 2000), the minor ticks bare."""
    from matplotlib import ticker

    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(ticker.NullFormatter())


def make_width(spec: SweepFigureSpec, out_dir: Path) -> list[Path]:
    """B_crit against the parameter count (width axis): the measured B_crit with its seed-bootstrap CI, the
    NQM's predicted B_crit and B_noise at the target for each net, and the fitted power law."""
    from otod.core.api import figure, save

    results = _run(spec.options, results_dir=spec.results_dir)
    analysis = batch_analysis(results)
    fig, ax = figure(columns=2, height=2.8)
    rule_panel(ax, analysis, "dim")
    pred = results.meta.get("nqm_prediction") or []
    if pred:
        pp = np.array([q["parameters"] for q in pred], float)
        ax.plot(pp, [q["b_crit"] for q in pred], "s-", mfc="none", color="0.3", label="NQM predicted B_crit")
        ax.plot(pp, [q.get("b_noise_target", math.nan) for q in pred], "d:", mfc="none", color="0.5",
                label="B_noise at the target")
    ax.set(xlabel="parameters P (width varied)")
    ax.set_title("The critical batch against the parameter count")
    _legend(ax)
    return save(fig, out_dir / f"nets_{spec.name}", caption=_caption(
        read_config(results.meta), "Markers: B_crit of each width's fitted S(B), bars its 95% seed-bootstrap CI; open "
        "squares: the NQM's predicted B_crit (otod.nets.sweep.predict); open diamonds: the NQM's B_noise at the target; "
        "dotted: the fitted power law B_crit ∝ P^b, its exponent and 95% CI in the legend, shaded its pointwise 95% "
        "band over the same bootstrap rows (each refitted)"))


#: Settings the fixed-D sweep of `make_data_size` may take apart from the fixed-P one (spec key ``fixed_<name>``):
#: its batches, lr grid and cap, where the widest net needs a smaller lr (hence more steps) than the grid's smallest.
FIXED_D_SETTINGS = ("batch", "lr_grid", "max_iters")


@dataclass(frozen=True, kw_only=True)
class DataSizeSpec(SweepFigureSpec):
    """`make_data_size`'s table: the fixed-P sweep's nested training sets ``examples`` (its sizes D, a list as
    ``--examples`` takes it) and ``options``, the net options both sweeps share (`otod.nets.sweep.options.net_config`'s
    keys: ``width``, ``batch``, ``data``, …); the fixed-D sweep's own: ``widths`` at ``fixed_examples`` training
    examples, with ``fixed_batch``, ``fixed_lr_grid``, ``fixed_max_iters`` in place of the shared setting where given
    (None: the fixed-P sweep's, `FIXED_D_SETTINGS`)."""

    examples: str
    widths: str
    fixed_examples: int
    fixed_batch: str | None = None
    fixed_lr_grid: str | None = None
    fixed_max_iters: int | None = None


def data_size_specs(spec: DataSizeSpec) -> tuple[dict, dict]:
    """The two sweeps' net options of a data-size figure: (fixed P: the spec's ``options``; fixed D: its
    ``widths`` at ``fixed_examples``, with any ``fixed_batch``, ``fixed_lr_grid``, ``fixed_max_iters`` in place
    of the shared setting, so that one panel's range can be widened without rerunning the other's sweep)."""
    base = {**spec.options, "examples": spec.examples}
    fixed = {"batch": spec.fixed_batch, "lr_grid": spec.fixed_lr_grid, "max_iters": spec.fixed_max_iters}
    own = {name: fixed[name] for name in FIXED_D_SETTINGS if fixed[name] is not None}
    return base, {**base, "width": spec.widths, "examples": str(spec.fixed_examples), **own}


def make_data_size(spec: DataSizeSpec, out_dir: Path) -> list[Path]:
    """B_crit against the training set's size D at a fixed net (left) and against the parameter count P at a fixed
    D (right): two batch sweeps of one net (the spec's ``examples`` list at its ``width``; its ``widths`` at its
    ``fixed_examples``), each panel's B_crit with its CI and the power laws fitted over them."""
    from otod.core.api import figure, legend_below, save

    base, wide = data_size_specs(spec)
    by_data = batch_analysis(_run(base, predict=False, results_dir=spec.results_dir))
    results = _run(wide, predict=False, results_dir=spec.results_dir)
    by_width = batch_analysis(results)
    fig, (left, right) = figure(columns=2, height=2.6, cols=2)
    rule_panel(left, by_data, "examples")
    left.set(xlabel="training examples D (nested subsets)")
    left.set_title("B_crit against the data, fixed net")
    rule_panel(right, by_width, "dim", first_style=2)
    right.set(xlabel="parameters P (width varied)")
    right.set_title(f"B_crit against the net, D = {spec.fixed_examples}")
    legend_below(fig)
    return save(fig, out_dir / f"nets_{spec.name}", caption=_caption(
        read_config(results.meta), f"Left: width {base.get('width', 32)}, training sets of D = {spec.examples} "
        "nested examples; right: widths " + str(spec.widths) + f" at D = {spec.fixed_examples}" + "".join(
            f", its {name.replace('_', ' ')} {wide[name]} (left: {base.get(name, 'default')})"
            for name in FIXED_D_SETTINGS if wide.get(name) != base.get(name)) + ". Markers: "
        "B_crit of each panel's fitted S(B) = S_min(1 + B_crit/B), bars its 95% seed-bootstrap CI (re-choosing the "
        "lr per B); dotted: the least-squares power law over the panels, its exponent and 95% CI (each bootstrap "
        "replicate refitted) in the legend, shaded its pointwise 95% band over the same refitted replicates"))


def depth_results(spec: SweepFigureSpec):
    """The net sweep of a depth figure's spec (its net options; the ``deep_linear`` law the paper's maker draws
    beside it is not one, `otod.paper.figures.make_nets_depth`), run or read back."""
    return _run(spec.options, predict=False, results_dir=spec.results_dir)


def make_depth(spec: SweepFigureSpec, out_dir: Path) -> list[Path]:
    """Iterations against depth, plain vs residual and by init. The figure of ``experiments/nets.toml`` also draws
    the depth obstacle's law beside them (`draw_deep_linear`): its maker is the paper's, above both obstacles
    (`otod.paper.figures.make_nets_depth`)."""
    return sweep_figure(depth_results(spec), out_dir / f"nets_{spec.name}", pdf=True)


#: The net sweeps' makers: each table's keys other than the figure's are ``otod sweep net``'s options, checked
#: against `otod.nets.sweep.options.net_config`'s parameters.
MAKERS = {"nets-batch": TypedMaker(SweepFigureSpec, make_batch, net_config),
          "nets-width": TypedMaker(SweepFigureSpec, make_width, net_config),
          "nets-data-size": TypedMaker(DataSizeSpec, make_data_size, net_config)}


#: Every figure maker of the nets obstacle: these, the curvature figures' (`otod.nets.figures.curvature`) and the
#: workloads figure (`otod.nets.figures.workloads`).
ALL_MAKERS = {**CURVATURE_MAKERS, **WORKLOAD_MAKERS, **ALONG_MAKERS, **PREDICTOR_MAKERS, **SCHEDULE_MAKERS, **MAKERS}
