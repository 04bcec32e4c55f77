"""B_crit along training with the cheap predictors (``otod figures nets/critical_batch_along_training``, issue 37
item 4's first figure).

(a) the measured B_crit(t) with its 95% seed-bootstrap CI (`otod.nets.along.branching`: S(B) = S_min(1 + B_crit/B) fitted
per checkpoint to the milestone target(t) = r · L̄(t)) against the checkpoint step, beside the exact noise scales
B_simple = tr Σ/|G|² and B_noise = tr(HΣ)/GᵀHG (McCandlish et al. 2018) at the same checkpoints, median over seeds
with the seeds' range as bars; (b) each predictor's ratio to the measured B_crit, its bar from B_crit's CI, with
a line at 1. The step axis is symlog (linear below 10) so that the checkpoint at step 0 is drawn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from otod.core.api import FigureSpec, TypedMaker
from otod.nets.along.branching import BRANCH_BATCH, BRANCH_LR, BRANCH_TO
from otod.nets.sweep.options import net_config


@dataclass(frozen=True, kw_only=True)
class BranchingSpec(FigureSpec):
    """A figure of B_crit along training (`otod.critical_batch_along_training`): the ``checkpoints`` (steps) of
    each seed's reference run (SGD at ``branch_batch``, ``branch_lr``), each branch's milestone ``fraction`` × the
    training loss there; ``options``: the net sweeps' options (`otod.nets.sweep.options.net_config`'s keys: batch,
    width, data, seeds, …)."""

    checkpoints: tuple[int, ...]
    branch_batch: int = BRANCH_BATCH
    branch_lr: float = BRANCH_LR
    fraction: float = BRANCH_TO
    options: Mapping[str, Any] = field(default_factory=dict)


#: The predictors drawn: (row column, label).
PREDICTORS = (("b_simple", "B_simple = tr Σ / |G|²"), ("b_noise", "B_noise = tr(HΣ) / GᵀHG"))
#: symlog's linear range: steps 0..LINTHRESH drawn linearly, so step 0 sits on the axis.
LINTHRESH = 10


def measured(spec: BranchingSpec, **more):
    """The along-training result for the spec (read back from results/ where its sweeps are stored); ``more``:
    other keywords of `otod.critical_batch_along_training` (``nqm``)."""
    from otod.nets.along.branching import critical_batch_along_training

    return critical_batch_along_training(tuple(int(s) for s in spec.checkpoints), branch_batch=spec.branch_batch,
                                         branch_lr=spec.branch_lr, fraction=spec.fraction, **more, **spec.options)


def series(rows: list[dict]) -> dict[str, dict[str, np.ndarray]]:
    """The figure's series from `AlongTrainingResult.rows` (the first method's rows, by step): per name, step,
    value, and lower/upper ends (B_crit's and S_min's CIs; the predictors' least and largest seed; the ratios'
    ends from B_crit's CI: predictor / B_crit_hi, predictor / B_crit_lo)."""
    method = rows[0]["method"]
    rs = sorted((r for r in rows if r["method"] == method), key=lambda r: r["step"])
    col = lambda k: np.array([r[k] for r in rs], float)  # noqa: E731
    step = col("step")
    out = {"b_crit": dict(step=step, y=col("b_crit"), lo=col("b_crit_lo"), hi=col("b_crit_hi")),
           "s_min": dict(step=step, y=col("s_min"), lo=col("s_min_lo"), hi=col("s_min_hi"))}
    for name, _ in PREDICTORS:
        out[name] = dict(step=step, y=col(name), lo=col(f"{name}_min"), hi=col(f"{name}_max"))
        with np.errstate(divide="ignore", invalid="ignore"):
            out[f"{name}_ratio"] = dict(step=step, y=col(name) / col("b_crit"), lo=col(name) / col("b_crit_hi"),
                                        hi=col(name) / col("b_crit_lo"))
    return out


def _bars(s: dict) -> np.ndarray:
    """Asymmetric error bars (below, above) from a series' ends; none where an end is not finite."""
    y, lo, hi = s["y"], s["lo"], s["hi"]
    below = np.where(np.isfinite(lo), y - lo, 0.0)
    above = np.where(np.isfinite(hi), hi - y, 0.0)
    return np.clip(np.vstack([below, above]), 0, None)


def draw(rows: list[dict], axes) -> None:
    """Panel (a) on ``axes[0]``: B_crit(t) [CI], B_simple(t) and B_noise(t) [seed range]; panel (b) on
    ``axes[1]``: each predictor's ratio to B_crit [from B_crit's CI] and a line at 1."""
    from otod.core.api import series_style

    left, right = axes
    got = series(rows)
    named = (("b_crit", "B_crit measured (95% CI)"),) + PREDICTORS
    for i, (name, label) in enumerate(named):
        st, s = series_style(i), got[name]
        left.errorbar(s["step"], s["y"], yerr=_bars(s), marker=st["marker"], ls=st["ls"], color=st["color"],
                      capsize=2, label=label)
    for i, (name, label) in enumerate(PREDICTORS, start=1):
        st, s = series_style(i), got[f"{name}_ratio"]
        right.errorbar(s["step"], s["y"], yerr=_bars(s), marker=st["marker"], ls=st["ls"], color=st["color"],
                       capsize=2, label=label.split(" =")[0] + " / B_crit")
    right.axhline(1.0, color="0.3", lw=0.8, ls=":")
    for ax, what in ((left, "batch size (examples)"), (right, "predictor / measured B_crit")):
        ax.set_xscale("symlog", linthresh=LINTHRESH, linscale=0.5)
        ax.set_yscale("log")
        ax.set(xlabel="checkpoint step t of the reference run", ylabel=what)
        ax.grid(alpha=0.25, which="major")
        ax.set_xlim(-0.5, 1.6 * float(np.max(got["b_crit"]["step"])))   # from step 0, no negative steps
    left.set_title("B_crit(t) and the noise scales")
    right.set_title("ratio to the measured B_crit")


def make_along(spec: BranchingSpec, out_dir: Path) -> list[Path]:
    """The figure (module docstring) for the spec's net at its ``checkpoints``."""
    from otod.core.api import caption_text, figure, legend_below, save

    result = measured(spec)
    rows = result.rows()
    fig, axes = figure(columns=2, cols=2, height=2.6)
    draw(rows, axes)
    legend_below(fig, axes=[axes[0]], ncol=3)
    b, config = result.branching, result.config
    seeds = config.get("seeds", "?") if isinstance(config, dict) else "?"
    steps = ", ".join(str(c.step) for c in result.checkpoints)
    return save(fig, out_dir / f"nets_{spec.name}", caption=caption_text(
        f"Reference run per seed: plain SGD at B_ref = {b.batch}, lr_ref = {b.lr:g} from the seed's own start; "
        f"checkpoints t = {steps}; {seeds} seeds. At each checkpoint an S(B) sweep (lr tuned per B) runs to the "
        f"milestone target(t) = {b.fraction:g} × the mean training loss at the checkpoint, and S(B) = "
        "S_min(1 + B_crit/B) is fitted with the seed bootstrap that re-chooses the lr (otod.nets.along.branching)",
        "(a) measured B_crit with its 95% bootstrap CI; B_simple and B_noise (exact, over all training examples) "
        "at the same checkpoints, median over seeds, bars the least and largest seed. (b) each predictor's median "
        "over measured B_crit, bars from B_crit's CI only; dotted line at 1. Step axis symlog, linear below "
        f"{LINTHRESH}, so t = 0 is drawn"))


MAKERS = {"nets-along": TypedMaker(BranchingSpec, make_along, net_config)}
