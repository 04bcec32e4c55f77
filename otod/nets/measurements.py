"""``otod fit`` and ``otod plot`` on the nets' measurement files (not sweeps): a curvature file (``otod curvature``,
with or without ``--model``) and a noise-scale file (``otod noise-scale --model``), read back and shown as the
command showed them, with a figure.

* curvature: the command's table (one row per checkpoint; SLQ's intervals where the spectrum is not exact; the top
  eigenvalues); the figure is the spectral density at each checkpoint on an asinh axis
  (`otod.nets.figures.curvature.draw_spectral_density`) beside λ_max and λ_q against the step.
* noise scale: the command's text (the exact |G|², tr Σ, GᵀHG, tr(HΣ), B_simple, B_noise per checkpoint, and each
  batch pair's two-batch estimates); the figure is B_simple and B_noise against the step, with each pair's
  two-batch estimate of B_simple and its 16–84% interval beside them.

Each presenter is ``present(results, *, text=True, figure_base=None, pdf=False) -> (text, files)``, registered
with the core by results kind (`MEASUREMENTS`), so ``otod/cli.py`` dispatches without importing the nets.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np


def _steps_axis(ax, steps) -> None:
    """A step axis: symlog (linear below 1) where step 0 sits beside larger ones, else linear."""
    steps = np.asarray(steps, float)
    if steps.size and steps.max() >= 10 * max(1.0, steps[steps > 0].min() if (steps > 0).any() else 1.0):
        ax.set_xscale("symlog", linthresh=1.0, linscale=0.4)
    ax.set_xlabel("SGD step of the measured run")


def curvature_text(results) -> str:
    from otod.nets.curvature_text import spectrum_line, table

    records = results.records
    config = results.meta["config"]
    what = config.get("model") or "{model} width {width} depth {depth}".format(**config.get("net", {}))
    return "\n".join([f"curvature: {what}; {len(records)} checkpoints; {results.meta.get('precision')}",
                      spectrum_line(records), table(records)])


def curvature_figure(results, base: Path, pdf: bool = False) -> list[Path]:
    """(a) λ_max and λ_q (with SLQ's interval where the spectrum is estimated) against the step; (b) the spectral
    density at each checkpoint."""
    from otod.core.api import caption_text, figure, legend_below, save, series_style
    from otod.nets.figures.curvature import density_caption, draw_spectral_density

    records = results.records
    zero, sigma = 1e-3, 0.2
    fig, (a, b) = figure(columns=2, cols=2, height=2.8, gridspec_kw={"width_ratios": (1, 2)})
    steps = np.array([r["step"] for r in records], float)
    for i, (key, name) in enumerate((("lambda_max", "λ_max (Lanczos)"), ("lambda_q", "λ_q"))):
        style = series_style(i)
        values = np.array([r[key] if r[key] is not None else np.nan for r in records], float)
        a.plot(steps, values, marker=style["marker"], color=style["color"], ls=style["ls"], ms=4, label=name)
        intervals = [r.get(f"{key}_interval") for r in records]
        if any(iv is not None for iv in intervals):
            lo = np.array([iv[0] if iv is not None else np.nan for iv in intervals], float)
            hi = np.array([iv[1] if iv is not None else np.nan for iv in intervals], float)
            a.fill_between(steps, lo, hi, color=style["color"], alpha=0.15, lw=0)
    a.set(yscale="log", ylabel="Hessian eigenvalue", title="λ_max and λ_q along training")
    _steps_axis(a, steps)
    a.grid(alpha=0.25, which="major")
    a.legend(frameon=False, loc="best")
    draw_spectral_density(b, records, zero, sigma)
    b.set_title("the spectral density at each checkpoint")
    legend_below(fig, [b], title="κ_q = λ_max / λ_q")
    interval = "" if records[0].get("spectrum") == "dense" else "; bands: SLQ's 95% intervals over probes"
    return save(fig, Path(base), pdf=pdf, caption=caption_text(
        f"Settings: {curvature_text(results).splitlines()[0]}",
        f"(a) λ_max from Lanczos and λ_q, the {records[0]['quantile']:g} quantile of the spectrum{interval}. "
        "(b) " + density_caption(records, zero, sigma)))


def noise_text(results) -> str:
    from otod.nets.measure.noise_scale import net_report

    records = results.records
    config = results.meta["config"]
    what = config.get("model") or "the net of the file's config"
    return net_report(None, list(records), config.get("lr", math.nan), config.get("seed", 0), str(what),
                      config.get("batch"))


def noise_figure(results, base: Path, pdf: bool = False) -> list[Path]:
    """B_simple and B_noise against the step (exact), with each batch pair's two-batch estimate of B_simple and
    its 16–84% interval."""
    from otod.core.api import caption_text, figure, legend_below, save, series_style

    records = results.records
    exact = list({r["step"]: r for r in records}.values())
    steps = np.array([r["step"] for r in exact], float)
    fig, ax = figure(columns=1, height=2.6)
    for i, (key, name) in enumerate((("b_simple", "B_simple = tr Σ/|G|² (exact)"),
                                     ("b_noise", "B_noise = tr(HΣ)/GᵀHG (exact)"))):
        style = series_style(i)
        ax.plot(steps, [r[key] for r in exact], marker=style["marker"], color=style["color"], ls=style["ls"], ms=4,
                label=name)
    pairs = sorted({(r["b_small"], r["b_big"]) for r in records if "b_small" in r})
    for j, (small, big) in enumerate(pairs):
        style = series_style(2 + j)
        rows = [r for r in records if r.get("b_small") == small and r.get("b_big") == big]
        x = np.array([r["step"] for r in rows], float) * (1.0 + 0.04 * (j + 1))  # dodged beside the exact point
        est = np.array([r["b_simple_estimate"] for r in rows], float)
        lo = est - np.array([r["b_simple_estimate_lo"] for r in rows], float)
        hi = np.array([r["b_simple_estimate_hi"] for r in rows], float) - est
        ax.errorbar(x, est, yerr=[lo, hi], fmt=style["marker"], mfc="none", color=style["color"], ms=4, lw=0.8,
                    label=f"two-batch estimate of B_simple, B = {small}:{big}")
    ax.set(yscale="log", ylabel="batch size", title="Gradient noise scales along training")
    _steps_axis(ax, steps)
    ax.grid(alpha=0.25, which="major")
    legend_below(fig, [ax])
    return save(fig, Path(base), pdf=pdf, caption=caption_text(
        f"Settings: {noise_text(results).splitlines()[0]}",
        "Exact: over all training examples in float64 (McCandlish et al. 2018); open markers: the two-batch "
        "estimates of B_simple from nested batches (their appendix A.1), bars their 16–84% interval over draws, "
        "dodged in x"))


def _presenter(text_of, figure_of):
    def present(results, *, text: bool = True, figure_base=None, pdf: bool = False) -> tuple[str, list]:
        files = figure_of(results, Path(figure_base), pdf=pdf) if figure_base is not None else []
        return (text_of(results) if text else ""), files

    return present


#: Results kind (``meta["kind"]``) → presenter.
MEASUREMENTS = {"curvature": _presenter(curvature_text, curvature_figure),
                "curvature-model": _presenter(curvature_text, curvature_figure),
                "noise-scale-net": _presenter(noise_text, noise_figure),
                "noise-scale-model": _presenter(noise_text, noise_figure)}
