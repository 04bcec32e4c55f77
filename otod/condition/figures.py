"""The conditioning obstacle's figures, and the makers ``otod figures condition`` runs from
``experiments/condition.toml``: iterations (or FLOPs) to tolerance against κ with theory and fitted exponents,
the whole bill side by side, and gradient descent's zig-zag on a 2-D quadratic. The conventions are
`otod.core.plotting`'s: the median over seeds as a line, the IQR over the same seeds as a band (censored lanes at
their cap, as lower bounds), theory dashed in the same colour, the fitted exponent with its 95% CI in the legend,
medians that are only lower bounds as open △, diverged lanes as × at the top, each named in the legend. A static
axis (several dimensions d) gives one panel per value.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from otod.condition.bill import iteration_flops, setup_costs
from otod.condition.options import sweep_config_from_options
from otod.condition.records import condition_analysis
from otod.core.api import (Analysis, caption_text, COLORS, DIVERGED_LABEL, draw_band, draw_fit_band, figure, FigureSpec,
                           fit_band_key, Group, headroom, legend_below, legend_key, LOWER_LABEL, mark_diverged,
                           METHOD_MARKERS, panel_grid, Results, save, series_style, SweepFigureSpec, TypedMaker)


def _describe(meta: dict, static: str = "") -> str:
    """One line on the sweep for under the figure; ``static`` names the static axes (one panel each), whose
    first value the config's problem holds and which the line then leaves out."""
    from otod.core.api import read_config

    c = read_config(meta)
    p = c.problem
    dim = "d: one panel each" if "dim" in static else f"d={getattr(p, 'dim', None)}"
    shape = f"{dim}, {p.spectrum}, {p.basis} basis" if p.kind == "quadratic" else \
        f"{p.rows}×{p.cols} Kronecker, ε={p.perturbation:g}"
    return (f"{shape}, start {p.start}, tol {c.target.tol:g}, {c.seeds} seeds, lr {c.lr}, {meta['precision']}")


def fit_label(f, theory_name: str = "theory") -> str:
    """Legend text of one method: fitted exponent and CI (or 'deterministic'), the exact slope and asymptotic
    exponent of theory, and what the fit left out."""
    if not np.isfinite(f.exponent):
        label = f"{f.method}: fewer than 2 κ values converged, no fit"
    else:
        ci = "deterministic" if f.deterministic else "(no CI)" if f.no_ci else f"[{f.ci_low:.3f}, {f.ci_high:.3f}]"
        label = f"{f.method}: b = {round(f.exponent, 3) + 0.0:.3f} {ci}"
        if f.theory_grid is not None:
            label += f"; {theory_name} {f.theory_grid:.3f} here, {f.theory_asymptotic:g} as κ→∞"
    left_out = [f"{n} {what}" for n, what in ((f.excluded_censored, "censored"), (f.excluded_diverged, "diverged"))
                if n]
    return label + (f" ({', '.join(left_out)} lanes left out)" if left_out else "")


def bound_label(meta: dict) -> str:
    """The legend's name of the dashed line: a bound in exact arithmetic (the caption says over what, and that in
    float32 rounding can push a lane's count past it: `bound_note`)."""
    return "dashed: worst-case bound (exact arithmetic)"


def bound_note(meta: dict) -> str:
    """What the caption adds of the bound where the lanes do not run in float64: rounding can push a lane's count
    past it (e.g. gd-opt at κ = 1000, tol 1e-6: median 3462.5 against 3454)."""
    if meta.get("precision") == "float64":
        return ""
    return (f"The lanes run in {meta.get('precision', 'float32')}: rounding can add iterations past the bound, "
            "which holds in exact arithmetic")


def setup_label(meta: dict, method: str, flops: float) -> str:
    """What a method's set-up FLOPs pay for, for the caption of a FLOPs figure."""
    from otod.condition.bill import setup_description
    from otod.core.api import read_config

    return f"{method}: {setup_description(read_config(meta).problem, method)}, {flops:.2g} FLOPs"


def draw_condition(ax, results: Results, group: Group, *, flops: dict[str, float] | None = None,
                   setup: dict[str, float] | None = None, preds=None) -> None:
    """Iterations (or FLOPs, where ``flops`` gives FLOPs per iteration) to tolerance against κ on ``ax``, for one
    static point's ``group`` of the sweep's analysis: the median over seeds at the chosen rate (filled: in the
    fit; hollow: below the fit's range), the IQR over the same seeds as a band (censored lanes counted at their
    cap as lower bounds), medians that are only lower bounds as open triangles, diverged lanes as × at the top,
    and theory (``preds``): the worst-case bound dashed, the exact count dotted. With ``flops``, the y axis is
    set-up (``setup``) + iterations × FLOPs of one iteration, and the legend names each set-up cost."""
    meta = results.meta
    bound_labelled = exact_labelled = lower_labelled = band_labelled = diverged_labelled = False
    fit_drawn = fit_banded = False
    for row, series in enumerate(group.series):
        method, fit, choice = series.name, series.fit, series.choice
        scale = flops[method] if flops else 1.0
        once = (setup or {}).get(method, 0.0) if flops else 0.0
        xs = series.cube.x("kappa")
        y, lower, status = choice.lanes()
        med, bound = choice.median, choice.bound
        color = COLORS.get(method, None)
        inside = group.statistic.points(xs)
        ok = ~bound & np.isfinite(med)
        ax.plot(xs[ok], med[ok] * scale + once, "-", lw=1.4, color=color)
        label = fit_label(fit, preds.slope_of if preds else "theory")
        marker = METHOD_MARKERS.get(method, "o")
        ax.plot(xs[ok & inside], med[ok & inside] * scale + once, marker, ms=3.5, color=color, label=label)
        if (ok & ~inside).any():
            ax.plot(xs[ok & ~inside], med[ok & ~inside] * scale + once, marker, ms=3.5, mfc="white", color=color)
        if draw_band(ax, xs, y, lower, color, scale=scale, offset=once, alpha=0.2) is not None and not band_labelled:
            legend_key(ax, "band")  # one grey key names every series' band
            band_labelled = True
        fitted_line = _draw_fit(ax, series, xs[ok & inside], color, scale, once)
        fit_drawn, fit_banded = fit_drawn or fitted_line, fit_banded or fitted_line == "band"
        if bound.any():
            ax.plot(xs[bound], med[bound] * scale + once, "^", mfc="none", color=color, ms=6,
                    label=None if lower_labelled else LOWER_LABEL)
            lower_labelled = True
        if mark_diverged(ax, xs, status, color, label=None if diverged_labelled else DIVERGED_LABEL,
                         row=row) is not None:
            diverged_labelled = True
        if preds is None:
            continue
        # the bound is smooth in κ: 24 log-spaced κ draw it (each value is a certified polynomial bound)
        pick = np.unique([int(np.argmin(np.abs(np.log(xs) - np.log(t)))) for t in np.geomspace(xs[0], xs[-1], 24)])
        xb = xs[pick]
        th = np.asarray([preds.bound(method, float(x)) or np.nan for x in xb], float)
        if np.isfinite(th).any():
            ax.plot(xb, th * scale + once, "--", lw=1.0, color=color, alpha=0.9,
                    label=None if bound_labelled else bound_label(meta))
            bound_labelled = True
        ex = np.asarray([(preds.exact(method, float(x)) or np.nan) for x in xs], float)
        if np.isfinite(ex).any():
            ax.plot(xs, ex * scale + once, ":", lw=1.6, color="k", alpha=0.6,
                    label=None if exact_labelled else "exact: these lanes in exact arithmetic")
            exact_labelled = True
    if fit_drawn:
        ax.plot([], [], "-.", color="0.3", lw=0.9, label=FIT_LABEL)
    if fit_banded:
        fit_band_key(ax, hatched=True)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("condition number κ = L/μ")
    ax.set_ylabel("FLOPs to tolerance" if flops else "iterations to tolerance")
    ax.grid(True, which="both", alpha=0.25)
    headroom(ax)
    if group.statistic.min_x:
        ax.plot([], [], "o", ms=3.5, mfc="white", color="0.4", label="hollow: not fitted (κ < 10)")


#: The legend's name of the fitted power laws' lines (`_draw_fit`).
FIT_LABEL = r"dash-dot: each method's fitted $a\,\kappa^{b}$"


def _draw_fit(ax, series, fitted, color, scale: float = 1.0, once: float = 0.0) -> str | None:
    """One method's fitted power law a·κ^b (``series.fit``, a `otod.core.fit.PowerLawFit`) dash-dotted over the κ
    it was fitted to (``fitted``), as ``scale``·a·κ^b + ``once`` on a FLOPs axis, with its pointwise 95% band
    over the seed bootstrap's replicate laws hatched (`otod.core.law_figure.law_band`; none where the fit is
    deterministic or has no CI). Returns "band" or "line" for what it drew, or None (no fit)."""
    from otod.core.api import law_band

    fit = series.fit
    if fitted.size < 2 or not np.isfinite(fit.exponent) or not np.isfinite(fit.prefactor):
        return None
    grid = np.geomspace(fitted.min(), fitted.max(), 50)
    ax.plot(grid, fit.prefactor * grid ** fit.exponent * scale + once, "-.", color=color, lw=0.9,
            label="_nolegend_")
    band = law_band(series.boot, "power", grid)
    if band is None:
        return "line"
    draw_fit_band(ax, grid, tuple(b * scale + once for b in band), color, hatched=True)
    return "band"


def _legend_below(fig, axes=None):
    """One legend under the panels, where it cannot cover data and cannot widen the page: the methods first, then
    the keys."""
    legend_below(fig, axes, sort_key=lambda label: ": b =" not in label and "no fit" not in label)


def _marks(axes) -> set:
    """Which shared marks (band, lower bounds, diverged lanes) the legends of ``axes`` name."""
    from otod.core.api import BAND_LABEL

    labels = {label for ax in axes for label in ax.get_legend_handles_labels()[1]}
    return {kind for kind, label in (("band", BAND_LABEL), ("lower", LOWER_LABEL), ("diverged", DIVERGED_LABEL))
            if label in labels}


#: Where the theory lines come from, for the captions.
THEORY_NOTE = ("Dashed: the worst-case bound over spectra and starts at each method's own step, in exact arithmetic "
               "(otod.condition.theory); dotted black: these lanes' count in exact arithmetic. The legend gives "
               "each method's fitted exponent b of iterations ∝ κ^b with its 95% CI (seed bootstrap), the exact "
               "slope of the theory over this grid and its asymptotic exponent; dash-dot: that fit, a·κ^b over the κ "
               "it was fitted to, hatched around it its pointwise 95% band over the same bootstrap's replicate fits "
               "(none where every seed gives the same counts).")


def condition_caption(meta: dict, axes, static: str = "", extra: str = "") -> str:
    """The caption of a conditioning figure: the sweep's settings, the theory's source, the marks drawn."""
    return caption_text("Settings: " + _describe(meta, static), extra, THEORY_NOTE, bound_note(meta),
                        marks=_marks(axes))


def condition_figure(results: Results, base: Path, *, flops: dict[str, float] | None = None,
                     setup: dict[str, float] | None = None, pdf: bool = True, analysis: Analysis | None = None
                     ) -> list[Path]:
    """Figure (a): iterations (or FLOPs: set-up + iterations × one iteration) to tolerance vs κ, log-log, written
    to ``base``.png/.pdf; one panel per value of a static axis (dimension d), each with its own fits, from
    ``analysis`` (default: the sweep's `condition_analysis`)."""
    analysis = condition_analysis(results) if analysis is None else analysis
    preds = analysis.theory
    title = ("FLOPs to tolerance (set-up + iterations × one iteration) vs κ" if flops
             else "Iterations to tolerance vs κ: a power of κ per method")
    flops_note = "FLOPs: set-up + iterations × XLA's FLOPs of one iteration." if flops else ""
    if flops and setup:
        flops_note += " Set-up: " + "; ".join(setup_label(results.meta, m, f) for m, f in setup.items() if f) + "."
    if len(analysis.groups) == 1:
        fig, ax = figure(columns=2, height=2.8)
        draw_condition(ax, results, analysis.groups[0], flops=flops, setup=setup, preds=preds)
        ax.set_title(title)
        caption = condition_caption(results.meta, [ax], extra=flops_note)
        _legend_below(fig)
        return save(fig, base, pdf=pdf, caption=caption)
    fig, axes = panel_grid(len(analysis.groups), sharey=True)
    for ax, group in zip(axes, analysis.groups):
        draw_condition(ax, results, group, flops=flops, setup=setup, preds=preds)
        ax.set_title(group.heading)
    for ax in axes[1:]:
        ax.set_ylabel("")
    fig.suptitle(title)
    static = ", ".join(analysis.config.static_axes)
    caption = condition_caption(results.meta, axes, static, extra=flops_note + " One panel per value of " + static)
    _legend_below(fig)
    return save(fig, base, pdf=pdf, caption=caption)


def zigzag_paths(kappa: float = 10.0, angle: float = 0.5, start=(-3.0, 0.6), steps: int = 80) -> dict:
    """Paths of gd (step 2/(L+μ)), heavy-ball and newton on f(x) = ½ xᵀ R diag(1, κ) Rᵀ x from one start (given
    in the eigenbasis: mostly along the shallow direction), run through the same optax transformations as the
    engine."""
    import jax.numpy as jnp
    import optax

    from otod.condition.methods import METHODS, MethodOptions
    from otod.condition.quadratic import Curvature

    c, s = np.cos(angle), np.sin(angle)
    rot = np.array([[c, -s], [s, c]])
    h = rot @ np.diag([1.0, kappa]) @ rot.T
    curv = Curvature(mu=jnp.asarray(1.0), lipschitz=jnp.asarray(kappa),
                     hessian_eigenvalues=jnp.asarray([1.0, kappa]), hessian_eigenvectors=jnp.asarray(rot),
                     hessian_diagonal=jnp.diag(h), jacobi_lipschitz=jnp.asarray(1.0))
    info = {"curvature": curv}
    paths = {"h": h}
    for name, key in (("gd, step 2/(L+μ)", "gd-opt"), ("heavy-ball", "heavy-ball"), ("newton", "newton")):
        m = METHODS[key]
        opt = m.build(m.reference_lr(info), info, MethodOptions())
        x = jnp.asarray(rot @ np.asarray(start))
        state = opt.init(x)
        pts = [np.asarray(x)]
        for _ in range(steps):
            u, state = opt.update(jnp.asarray(h) @ x, state, x)
            x = optax.apply_updates(x, u)
            pts.append(np.asarray(x))
            if 0.5 * float(x @ (jnp.asarray(h) @ x)) < 1e-8:
                break
        paths[name] = np.asarray(pts)
    return paths


def zigzag_figure(base: Path, kappa: float = 10.0) -> list[Path]:
    """Figure (b): contours of a 2-D quadratic with κ = 10 and the paths of gd, heavy-ball and newton."""
    paths = zigzag_paths(kappa)
    h = paths.pop("h")
    extent = 1.1 * max(np.abs(p).max() for p in paths.values())
    g = np.linspace(-extent, extent, 300)
    xx, yy = np.meshgrid(g, g)
    ff = 0.5 * (h[0, 0] * xx ** 2 + 2 * h[0, 1] * xx * yy + h[1, 1] * yy ** 2)
    fig, ax = figure(columns=1, height=3.0)
    ax.contour(xx, yy, ff, levels=np.geomspace(0.02, ff.max(), 14), colors="0.75", linewidths=0.6)
    for i, (name, pts) in enumerate(paths.items()):
        style = series_style(i)
        ax.plot(pts[:, 0], pts[:, 1], marker=style["marker"], ls=style["ls"], ms=3, lw=1.0, color=style["color"],
                label=f"{name}: {len(pts) - 1} step{'s' if len(pts) > 2 else ''} to f < 1e-8")
    ax.plot(0, 0, "k*", ms=10)
    ax.set_aspect("equal")
    ax.set_xlim(-extent, extent)
    ax.set_ylim(-extent, extent)
    ax.set_title("gd zig-zags across a narrow valley; newton does not")
    ax.set_xlabel("parameter x₁")
    ax.set_ylabel("parameter x₂")
    legend_below(fig)
    return save(fig, base, caption=caption_text(
        f"Paths on the 2-D quadratic f(x) = ½ xᵀ R diag(1, κ) Rᵀ x with κ = {kappa:g}, from one start mostly along "
        "the shallow direction, through the engine's own optax transformations at each method's reference step",
        "grey: contours of f; star: the minimum"))


@dataclass(frozen=True)
class ZigzagSpec(FigureSpec):
    """`zigzag_figure`'s table: the quadratic's condition number ``kappa``."""

    kappa: float = 10.0


def _sweep_from_spec(spec: SweepFigureSpec) -> Results:
    """Run (or resume) the sweep an experiment spec describes, with the CLI's own option parsing."""
    from otod.condition.options import sweep_config_from_options
    from otod.core.api import run_sweep

    return run_sweep(sweep_config_from_options(**spec.options), out_dir=spec.results_dir)


def make_condition_iterations(spec: SweepFigureSpec, out_dir: Path) -> list[Path]:
    return condition_figure(_sweep_from_spec(spec), Path(out_dir) / spec.name)


def make_zigzag(spec: ZigzagSpec, out_dir: Path) -> list[Path]:
    return zigzag_figure(Path(out_dir) / spec.name, float(spec.kappa))


def bill_figure(results: Results, flops: dict[str, float], base: Path) -> list[Path]:
    """Iterations and FLOPs to tolerance side by side: serial complexity and the whole bill."""
    fig, (left, right) = figure(columns=2, cols=2, height=2.6)
    analysis = condition_analysis(results)
    (group,) = analysis.groups
    draw_condition(left, results, group, preds=analysis.theory)
    setup = setup_costs(results)
    draw_condition(right, results, group, flops=flops, setup=setup, preds=analysis.theory)
    left.set_title("iterations to tolerance")
    right.set_title("FLOPs to tolerance")
    per_iter = ", ".join(f"{m} {f:.3g}" for m, f in flops.items())
    once = "; ".join(setup_label(results.meta, m, f) for m, f in setup.items())
    fig.suptitle("The whole bill: fewer iterations can cost more FLOPs")
    caption = condition_caption(results.meta, [left, right], extra=(
        f"Right: set-up + iterations × XLA's FLOPs of one iteration. FLOPs per iteration: {per_iter}. Set-up FLOPs "
        f"(textbook counts of the factorisations, which XLA's count leaves out): {once}"))
    legend_below(fig, [right], sort_key=lambda label: ": b =" not in label and "no fit" not in label)
    return save(fig, base, caption=caption)


def make_condition_bill(spec: SweepFigureSpec, out_dir: Path) -> list[Path]:
    results = _sweep_from_spec(spec)
    return bill_figure(results, iteration_flops(results), Path(out_dir) / spec.name)


MAKERS = {"condition-iterations": TypedMaker(SweepFigureSpec, make_condition_iterations, sweep_config_from_options),
          "condition-bill": TypedMaker(SweepFigureSpec, make_condition_bill, sweep_config_from_options),
          "zigzag": TypedMaker(ZigzagSpec, make_zigzag)}
