"""The predictor-ratio table as a figure (``otod figures nets/predictor_ratios_digits``, issue 37 item 2): each
predictor's median over seeds divided by the measured B_crit(t), against the checkpoint step, with the 95% CI of
the joint seed bootstrap (`otod.nets.along.predictors`: the seeds resampled together for the predictor and the
re-selected, refitted B_crit), a line at 1, log ratio axis. A checkpoint whose B_crit lies off its batch grid has
no ratio and is not drawn. The step axis is symlog (linear below 10) so that step 0 is drawn.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from otod.core.api import TypedMaker
from otod.nets.figures import along
from otod.nets.figures.along import BranchingSpec
from otod.nets.sweep.options import net_config

#: symlog's linear range (as the along-training figure's).
LINTHRESH = 10


@dataclass(frozen=True, kw_only=True)
class PredictorRatiosSpec(BranchingSpec):
    """`make_predictor_ratios`'s table: the along-training figure's (`BranchingSpec`), the NQM built at each
    checkpoint too where ``nqm``, and the panel's ``title`` (None: the table's name)."""

    nqm: bool = False
    title: str | None = None


def measured(spec: PredictorRatiosSpec):
    """The along-training result of the spec (its sweeps read back from results/ where stored), with the NQM
    where ``nqm`` is true."""
    return along.measured(spec, nqm=bool(spec.nqm))


def ratio_series(rows: list[dict]) -> dict[str, dict[str, np.ndarray]]:
    """Per predictor shown (`otod.nets.along.predictors.LABELS`, the ablation's variants left out) of the first
    method's rows: step, ratio, and the joint CI's ends (NaN where none)."""
    from otod.nets.along.predictors import LABELS

    method = rows[0]["method"]
    rs = sorted((r for r in rows if r["method"] == method), key=lambda r: r["step"])
    col = lambda k: np.array([r.get(k, np.nan) for r in rs], float)  # noqa: E731
    return {name: dict(step=col("step"), y=col(f"{name}_ratio"), lo=col(f"{name}_ratio_lo"),
                       hi=col(f"{name}_ratio_hi"))
            for name in LABELS if any(f"{name}_ratio" in r for r in rs) and np.isfinite(col(f"{name}_ratio")).any()}


def draw(rows: list[dict], ax) -> list[str]:
    """Each predictor's ratio with its CI bars (none where the CI is missing), slightly offset in step so the bars
    do not hide each other, and the line at 1; returns the predictors drawn."""
    from otod.core.api import series_style
    from otod.nets.along.predictors import LABELS

    got = ratio_series(rows)
    for i, (name, s) in enumerate(got.items()):
        st = series_style(i)
        keep = np.isfinite(s["y"])
        y, lo, hi = s["y"][keep], s["lo"][keep], s["hi"][keep]
        with np.errstate(invalid="ignore"):
            bars = np.vstack([np.where(np.isfinite(lo), y - lo, 0.0), np.where(np.isfinite(hi), hi - y, 0.0)])
        step = s["step"][keep] * (1.0 + 0.06 * (i - len(got) / 2)) + 0.3 * (i - len(got) / 2)
        ax.errorbar(step, y, yerr=np.clip(bars, 0, None), marker=st["marker"], ls=st["ls"], color=st["color"],
                    capsize=2, ms=4, lw=1, label=LABELS[name])
    ax.axhline(1.0, color="0.3", lw=0.8, ls=":")
    ax.set_xscale("symlog", linthresh=LINTHRESH, linscale=0.5)
    steps = np.concatenate([s["step"][np.isfinite(s["y"])] for s in got.values()] or [np.zeros(1)])
    first, last = float(steps.min()), float(steps.max())
    ax.set_xlim(-2.0 if first <= 0 else 0.6 * first, 1.6 * max(last, 1.0))   # the offset points stay inside
    ticks = sorted({float(t) for t in steps})
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.minorticks_off()
    ax.set_yscale("log")
    ax.set(xlabel="checkpoint step t of the reference run", ylabel="predictor / measured B_crit")
    ax.grid(alpha=0.25, which="major")
    return list(got)


def make_predictor_ratios(spec: PredictorRatiosSpec, out_dir: Path) -> list[Path]:
    """The figure (module docstring) for the spec's net at its ``checkpoints``, titled ``title``."""
    from otod.core.api import figure, legend_below, save

    result = measured(spec)
    fig, ax = figure(columns=1, height=2.6)
    draw(result.rows(), ax)
    ax.set_title(spec.name if spec.title is None else spec.title)
    legend_below(fig, ncol=2)
    return save(fig, out_dir / f"nets_{spec.name}", caption=caption(result))


def caption(result) -> str:
    """The figure's caption: the run, what the bars are, and the best predictor with its typical miss."""
    from otod.core.api import caption_text
    from otod.nets.along.predictors import DRAWS, LABELS, is_predictor

    ranked = next(iter(result.best().values()), [])
    ranked = [r for r in ranked if is_predictor(r["predictor"])]
    best = (f"Best: {LABELS.get(ranked[0]['predictor'], ranked[0]['predictor'])}, typical miss "
            f"×{ranked[0]['factor']:.3g} (median |log ratio| over the checkpoints)") if ranked else ""
    b = result.branching
    steps = ", ".join(str(c.step) for c in result.checkpoints)
    return caption_text(
        f"Checkpoints t = {steps} of each seed's reference run (SGD, B_ref = {b.batch}, lr {b.lr:g}); at each, "
        f"B_crit measured by branching to {b.fraction:g} × the training loss there (otod.nets.along.branching)",
        "Each predictor's median over seeds divided by the measured B_crit; bars: 95% CI of the joint seed "
        "bootstrap (seeds resampled together for the predictor and for B_crit, whose lr is re-chosen and S(B) "
        f"refitted in every resample); two-batch: McCandlish's estimate from {DRAWS} nested draws per pair; NQM: "
        "built at the checkpoint from its exact Hessian spectrum (C ∝ H scaled to tr(HΣ), or Σ projected on the "
        "eigenvectors), run to the same milestone. Dotted line: ratio 1. Checkpoints where B_crit lies off the "
        "batch grid are not drawn; a bar running out of the bottom reaches below 0 (a two-batch |G|² estimate, "
        "a difference of two noisy norms, negative on some resampled seeds). Points offset slightly in step for "
        "legibility", best)


MAKERS = {"nets-predictor-ratios": TypedMaker(PredictorRatiosSpec, make_predictor_ratios, net_config)}
