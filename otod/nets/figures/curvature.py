"""The nets obstacle's curvature figures (``otod figures nets``, from ``experiments/nets.toml``): the Hessian's
spectral density along training, and κ against width.

* ``nets-spectral-density``: the spectral measure (all P eigenvalues where P ≤ 5,000, else SLQ's:
  `otod.nets.measure.curvature.curvature_record`) at a few checkpoints of one SGD run, Gaussian-broadened in
  u = asinh(λ/λ₀) so that the outliers (the top eigenvalues, their range printed in the caption), the bulk near 0
  and the negative eigenvalues share one axis: linear within ±λ₀ of 0 and logarithmic in |λ| beyond. The y axis is the
  density per unit of u (the area under a curve is the fraction of the P eigenvalues), on a log scale, as
  Ghorbani et al. 2019 draw theirs; dotted lines mark each checkpoint's λ_q.
* ``nets-kappa-width``: κ_q = λ_max/λ_q (`otod.nets.measure.curvature`, q = 0.9) of an MLP on the digits at init and at
  the end of a fixed SGD run against its width, the parameter count on the top axis, with the fitted exponent of
  κ_q against P; beside it λ_max and λ_q, which make κ_q up (κ_δ ≈ λ_max/δ + 1 follows λ_max).

What κ_q against width does and does not say: at a fixed quantile, λ_q is the curvature of the (1 − q)·P-th
direction from the top. The training loss of n examples and C classes puts curvature on at most about n(C − 1)
directions of the Gauss–Newton part, and tr H (the total curvature) stays of the same size as P grows, so
tr H/P and λ_q fall like 1/P while λ_max stays put: κ_q ∝ P then says that a shrinking fraction of the directions
carries curvature, which is the claim "adding parameters makes conditioning worse" in its measurable form, not
that the directions the loss needs get flatter.

Each measurement is one `otod curvature` results file in ``results/`` (named by its config's digest), read back
where it exists, so a figure is redrawn without measuring again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from otod.core.api import FigureSpec, TypedMaker
from otod.nets.measure.curvature import DAMPING, LANCZOS_STEPS, PROBES, QUANTILE
from otod.nets.model.problem import NetSpec


def _plt():
    from otod.core.api import plt

    return plt


@dataclass(frozen=True, kw_only=True)
class CurvatureSpec(FigureSpec):
    """A curvature figure's table: the SGD run (``lr``, root ``seed``; float64 with ``x64``) and the measurement
    (`otod.nets.measure.settings.CurvatureConfig`: the top ``k`` eigenvalues, ``probes`` × ``lanczos_steps`` of
    stochastic Lanczos quadrature, κ_q at ``quantile``, κ_δ with ``damping``), the ``otod curvature`` options of the
    same names, its results folder ``results``; ``options``: the net's keys, `otod.nets.model.problem.NetSpec`'s
    fields (model, width, depth, activation, architecture, init, data, examples, loss, batch, …; `net`)."""

    lr: float = 0.1
    seed: int = 0
    k: int = 5
    probes: int = PROBES
    lanczos_steps: int = LANCZOS_STEPS
    quantile: float = QUANTILE
    damping: float = DAMPING
    x64: bool = False
    results: str = "results"
    options: Mapping[str, Any] = field(default_factory=dict)

    def net(self, **override) -> NetSpec:
        """The net the table names (its NetSpec fields; the others' defaults), with ``override`` in place."""
        return NetSpec(**{**self.options, **override})


@dataclass(frozen=True, kw_only=True)
class SpectralDensitySpec(CurvatureSpec):
    """`make_spectral_density`'s table: the run's ``checkpoints``, the asinh axis's linear half-width ``zero``
    (λ₀) and the Gaussian ``broadening`` σ in u = asinh(λ/λ₀) (`density_on_asinh_axis`)."""

    checkpoints: tuple[int, ...] = (0, 100, 1000, 4000)
    zero: float = 1e-3
    broadening: float = 0.2


@dataclass(frozen=True, kw_only=True)
class KappaWidthSpec(CurvatureSpec):
    """`make_kappa_width`'s table: the hidden ``widths`` and the run's length ``steps`` (measured at 0 and there)."""

    widths: tuple[int, ...] = (8, 16, 32, 64, 128, 256)
    steps: int = 1000


def _records(net, spec: CurvatureSpec, checkpoints) -> list[dict]:
    """The curvature records of ``net`` at ``checkpoints`` (`otod.nets.curvature_cli.measured`: read back from
    ``spec.results`` where stored), with the spec's run and measurement."""
    from otod.nets.curvature_cli import check_plan, measured
    from otod.nets.measure.settings import CurvatureConfig

    k, probes, x64 = int(spec.k), int(spec.probes), bool(spec.x64)
    m = check_plan(net, k, probes, int(spec.lanczos_steps), x64)
    config = CurvatureConfig(tuple(int(c) for c in checkpoints), float(spec.lr), int(spec.seed), k, probes, m,
                             float(spec.quantile), float(spec.damping), x64)
    return measured(net, config, str(spec.results))


def _spectrum(r) -> str:
    """How a record's spectrum was measured."""
    return ("exact spectrum (dense Hessian)" if r.get("spectrum") == "dense" else
            f"SLQ {r['probes']} probes × {r['lanczos_steps']} steps")


def _net_title(net, records, spectrum: str | None = None) -> str:
    r = records[0]
    return (f"{net.model.upper()} depth {net.depth} {net.activation} {net.architecture}, {net.init} init, "
            f"{net.data} ({net.dataset().examples} ex.), {net.loss}; SGD lr {r['lr']:g}, B = {net.batch}; "
            f"{spectrum or _spectrum(r)}, {r['precision']}")


def density_on_asinh_axis(nodes, weights, zero: float, sigma: float, points: int = 1500):
    """(λ grid, density per unit of u = asinh(λ/λ₀)): the measure's nodes moved to u and broadened there by a
    Gaussian of width σ (`otod.nets.measure.curvature.broadened_density`)."""
    from otod.nets.measure.curvature import broadened_density

    u = np.arcsinh(np.asarray(nodes) / zero)
    grid = np.linspace(u.min() - 4 * sigma, u.max() + 4 * sigma, points)
    return zero * np.sinh(grid), broadened_density(u, weights, grid, sigma)


def draw_spectral_density(ax, records: list[dict], zero: float, sigma: float, floor: float = 1e-4) -> None:
    """Each checkpoint's spectral density on an asinh axis (`density_on_asinh_axis`), its λ_q dotted and its top
    eigenvalues as ticks at the bottom, coloured dark to light with the step (grey-scale safe)."""
    from otod.core.api import LINESTYLES

    colors = _plt().cm.viridis(np.linspace(0.0, 0.85, len(records)))
    for i, (r, color) in enumerate(zip(records, colors)):
        grid, density = density_on_asinh_axis(r["slq_nodes"], r["slq_weights"], zero, sigma)
        kq = "none (λ_q ≤ 0)" if r["kappa_q"] is None else f"{r['kappa_q']:.3g}"
        ax.plot(grid, np.maximum(density, floor / 10), ls=LINESTYLES[i % len(LINESTYLES)], lw=1.2, color=color,
                label=f"step {r['step']}: loss {r['train_loss']:.3g}, λ_max {r['lambda_max']:.3g}, "
                      f"λ_q {r['lambda_q']:.2g}, κ_q {kq}, {100 * r['negative_mass']:.1f}% negative")
        ax.axvline(r["lambda_q"], color=color, ls=":", lw=1)
        ax.plot(r["top_eigenvalues"], np.full(len(r["top_eigenvalues"]), floor * 1.6), "|", ms=9, mew=1.2,
                color=color)
    ax.set_xscale("symlog", linthresh=zero, linscale=0.6)
    ax.set_yscale("log")
    ax.set_ylim(floor, None)
    ax.axvline(0, color="0.6", lw=0.6)
    ax.set(xlabel=f"Hessian eigenvalue λ (linear within ±{zero:g}, logarithmic in |λ| beyond)",
           ylabel=f"spectral density per unit of asinh(λ/{zero:g})")
    ax.plot([], [], "k:", lw=1, label=f"dotted: λ_q, the {records[0]['quantile']:g} quantile of the spectrum")
    ax.plot([], [], "k|", ms=9, label=f"ticks: top {len(records[0]['top_eigenvalues'])} eigenvalues (Lanczos)")
    ax.grid(alpha=0.25, which="major")


def density_caption(records: list[dict], zero: float, sigma: float) -> str:
    """What the spectral-density figure's axes and marks are."""
    density = "exact" if records[0].get("spectrum") == "dense" else "SLQ"
    tops = [float(v) for r in records for v in r["top_eigenvalues"]]
    return (f"The x axis is u = asinh(λ/λ₀) with λ₀ = {zero:g}, labelled in λ: linear within ±λ₀ of 0 and "
            f"logarithmic in |λ| beyond, so that the outliers (the top eigenvalues here: {min(tops):.2g} to "
            f"{max(tops):.2g}), the bulk near 0 and the negative eigenvalues share one axis. The y axis is the {density} spectral density per unit of u, "
            f"Gaussian-broadened by σ = {sigma:g} in u (the area under a curve is the fraction of the P eigenvalues), "
            "on a log scale as Ghorbani et al. (2019) draw theirs. Dotted verticals: each checkpoint's λ_q; ticks at "
            "the bottom: its top eigenvalues (Lanczos). In the legend, \"negative\": the share of the spectrum below "
            "−10⁻³ λ_max")


def make_spectral_density(spec: SpectralDensitySpec, out_dir: Path) -> list[Path]:
    """The spectral density along training (see the module docstring)."""
    from otod.core.api import caption_text, figure, legend_below, save

    net = spec.net()
    checkpoints = [int(c) for c in spec.checkpoints]
    records = _records(net, spec, checkpoints)
    zero, sigma = float(spec.zero), float(spec.broadening)
    fig, ax = figure(columns=2, height=2.8)
    draw_spectral_density(ax, records, zero, sigma)
    ax.set_title(f"The Hessian spectrum along training, P = {net.parameter_count:,}: outliers leave a bulk near 0")
    legend_below(fig, title="κ_q = λ_max / λ_q")
    return save(fig, out_dir / f"nets_{spec.name}", caption=caption_text(
        "Settings: " + _net_title(net, records) + f"; width {net.width}", density_caption(records, zero, sigma)))


def fitted_exponent(x, y) -> float | None:
    """The slope of log y against log x by least squares (None with fewer than two positive points)."""
    line = fitted_power(x, y)
    return None if line is None else line[0]


def fitted_power(x, y) -> tuple[float, float] | None:
    """(slope, intercept) of log y against log x by least squares (None with fewer than two positive points)."""
    x, y = np.asarray(x, float), np.asarray([np.nan if v is None else v for v in y], float)
    ok = np.isfinite(y) & (y > 0)
    if ok.sum() < 2:
        return None
    slope, intercept = np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)
    return float(slope), float(intercept)


#: The κ_q fits' legend note: no CI and no band, one net (one init, one run) per width, no seeds to resample
#: (the caption says why).
NO_CI = "no CI"


def make_kappa_width(spec: KappaWidthSpec, out_dir: Path) -> list[Path]:
    """κ_q against width at init and at the end of a fixed run, with λ_max and λ_q (see the module docstring)."""
    from otod.core.api import caption_text, figure, legend_inside, save, series_style

    widths = [int(w) for w in spec.widths]
    steps = int(spec.steps)
    by_width = {}
    for w in widths:
        net = spec.net(width=w)
        by_width[w] = (net, _records(net, spec, [0, steps]))
    params = np.array([by_width[w][0].parameter_count for w in widths])
    fig, (left, right) = figure(columns=2, cols=2, height=2.8)
    fits, loss_notes = [], []
    for i, (label, marker) in enumerate((("init (step 0)", "o"), (f"end (step {steps})", "s"))):
        color = series_style(i)["color"]
        rs = [by_width[w][1][i] for w in widths]
        kq = [r["kappa_q"] for r in rs]
        line = fitted_power(params, kq)
        fit = "" if line is None else f": κ_q ∝ P^{line[0]:.2f} ({NO_CI})"
        loss_notes.append(f"{label}: training loss {rs[0]['train_loss']:.3g} (width {widths[0]}) to "
                          f"{rs[-1]['train_loss']:.3g} (width {widths[-1]})")
        left.plot(widths, [np.nan if v is None else v for v in kq], marker + "-", color=color, label=f"{label}{fit}")
        if line is not None:
            fits.append((color, line))
        right.plot(widths, [r["lambda_max"] for r in rs], marker + "-", color=color, label=f"λ_max, {label}")
        right.plot(widths, [r["lambda_q"] for r in rs], marker + "--", mfc="none", color=color,
                   label=f"λ_q, {label}")
    for color, (slope, intercept) in fits:  # the quoted fits, drawn (unlabelled: the legend quotes them)
        left.plot(widths, np.exp(intercept) * params.astype(float) ** slope, ":", lw=1.0, color=color,
                  label="_fit", gid="fit")
    q = by_width[widths[0]][1][0]["quantile"]
    left.set(ylabel=f"κ_q = λ_max / λ_q, q = {q:g}", title="κ_q grows with width")
    right.set(ylabel="Hessian eigenvalue", title="λ_max stays, λ_q falls")
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("width (hidden units)")
        ax.set_xticks(widths, [str(w) for w in widths])
        top = ax.secondary_xaxis("top")
        top.set_xticks(widths, [f"{p:,}" if j % 2 == 0 else "" for j, p in enumerate(params)])
        top.set_xlabel("parameter count P (every other width)")
        ax.grid(alpha=0.25, which="both")
    legend_inside(left, loc="upper left")  # the data rise to the right: the upper left is empty
    legend_inside(right, loc="center", ncol=2, bbox_to_anchor=(0.5, 0.6), columnspacing=0.8, handlelength=1.4)  # between λ_max (about 3) and λ_q (< 0.05)
    for ax in (left, right):
        mark_method_switches(ax, widths, [by_width[w][1][0] for w in widths])
    for ax in (left, right):
        switch_lines_clear_of_legend(ax)
    net = by_width[widths[0]][0]
    kinds = {}
    for w in widths:  # each width's spectrum, exact where P is small enough for the dense Hessian
        kinds.setdefault(_spectrum(by_width[w][1][0]), []).append(w)
    spectrum = "; ".join(f"{kind} at width{'s' if len(ws) > 1 else ''} {', '.join(map(str, ws))}"
                         for kind, ws in kinds.items()) if len(kinds) > 1 else None
    settings = _net_title(net, by_width[widths[0]][1], spectrum).replace(f"{net.model.upper()} depth",
                                                                        f"{net.model.upper()}, width varied, depth")
    return save(fig, out_dir / f"nets_{spec.name}", caption=caption_text(
        "Settings: " + settings,
        f"Left: κ_q = λ_max/λ_q with λ_q the eigenvalue below which {100 * q:g}% of the spectrum lies, at init and "
        "after the run, against width (top axis: the parameter count P); dotted: the least-squares power law "
        "κ_q ∝ P^b quoted in the legend, with no CI and no band: one net (one init, one run) per width, no seeds "
        "to resample" + _switch_note(widths, [_spectrum(by_width[w][1][0]) for w in widths]) + ". Right: what κ_q "
        "is made of, λ_max (solid) and λ_q (dashed, open); κ_δ = (λ_max + δ)/δ follows λ_max. " + "; ".join(loss_notes)))


def _method(r) -> str:
    """A record's spectrum method in one word: exact (the dense Hessian) or SLQ."""
    return "exact" if r.get("spectrum") == "dense" else "SLQ"


def method_switches(widths, records) -> list[tuple[float, str, str]]:
    """(x, method before, method after) at each change of spectrum method between neighbouring widths, x their
    geometric mean (the midpoint on a log width axis); read from the records, so the mark follows the data."""
    methods = [_method(r) for r in records]
    return [(float(np.sqrt(a * b)), ma, mb) for a, b, ma, mb in zip(widths, widths[1:], methods, methods[1:])
            if ma != mb]


def mark_method_switches(ax, widths, records) -> None:
    """Issue 50: where the spectrum's method changes between widths (exact to SLQ), a grey dash-dotted vertical line
    with the method on either side written small at the bottom of the axes, so that a fit across it reads as
    spanning two methods."""
    below = ax.get_xaxis_transform()  # x in data, y in axes fraction
    for x, before, after in method_switches(widths, records):
        ax.axvline(x, color="0.45", ls="-.", lw=0.8, zorder=1, label="_switch", gid="method switch")
        for text, side in ((f"{before} ", "right"), (f" {after}", "left")):
            ax.text(x, 0.03, text, transform=below, ha=side, va="bottom", fontsize=7, color="0.3",
                    gid="method switch")


def switch_lines_clear_of_legend(ax, gap: float = 0.02) -> None:
    """Each method-switch line (`mark_method_switches`) that would cross the legend of ``ax`` broken there: drawn
    below it and, where there is room, above it, ``gap`` (axes fraction) clear, so that no legend text is struck
    through; the figure is drawn once to place the legend."""
    legend = ax.get_legend()
    if legend is None:
        return
    ax.figure.canvas.draw()
    box = legend.get_window_extent().transformed(ax.transAxes.inverted())
    for line in [line for line in ax.get_lines() if line.get_gid() == "method switch"]:
        x = ax.transAxes.inverted().transform(ax.transData.transform((line.get_xdata()[0], 1.0)))[0]
        if not box.x0 <= x <= box.x1:
            continue
        line.set_ydata([0.0, max(box.y0 - gap, 0.0)])
        if box.y1 + gap < 0.95:
            ax.axvline(line.get_xdata()[0], box.y1 + gap, 1.0, color=line.get_color(), ls=line.get_linestyle(),
                       lw=line.get_linewidth(), zorder=line.get_zorder(), label="_switch", gid="method switch")


def _switch_note(widths, spectra) -> str:
    """Where the widths' spectra change method (exact to SLQ), the caption's warning that the fitted exponent spans
    that change (issue 50: κ_0.9 ∝ P^0.73 at init rested on it); empty where every width has one method."""
    return "".join(f"; the fit spans the change of method between widths {a} and {b} ({sa.split(' (')[0]} to "
                   f"{sb.split(' (')[0]}; marked in both panels by the grey dash-dotted vertical line, labelled "
                   f"{sa.split(' ')[0]} and {sb.split(' ')[0]} either side), so its exponent rests partly on that "
                   "switch"
                   for a, b, sa, sb in zip(widths, widths[1:], spectra, spectra[1:]) if sa != sb)


#: The curvature figures' makers: each table's keys other than the figure's are the net's, checked against
#: `otod.nets.model.problem.NetSpec`'s fields.
MAKERS = {"nets-spectral-density": TypedMaker(SpectralDensitySpec, make_spectral_density, NetSpec),
          "nets-kappa-width": TypedMaker(KappaWidthSpec, make_kappa_width, NetSpec)}
