"""What a depth or toy sweep prints: the depth × series table with the per-mode theory, the lanes that did not
converge with their final loss (stuck or slow), and the power-law-vs-exponential fits. A notebook can call every
function here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from otod.core.api import Analysis, Report, Results, applies, law_table, sweep_header, sweep_table
from otod.depth.overlays import theory_columns
from otod.depth.records import depth_analysis
from otod.depth.methods import USES_BETA
from otod.depth.toy import STOPPED_NOTE, stopped_breakdown


def stuck_lines(chosen: pd.DataFrame, axis: str) -> list[str]:
    """Per series and axis value with lanes that did not converge (``chosen``: a group's records at the chosen
    settings): how many were censored (still moving at the cap), stalled (at a fixed point of the iteration) or
    diverged, and the median of their final loss: a loss near 1 is at or on the plateau around the saddle P = 0, a
    multiple of 1/Σs² that many singular modes not learned; for the toy, where its stopped lanes sit
    (`otod.depth.toy.stopped_breakdown`)."""
    key = "final_loss" if "final_loss" in chosen else "final_gap"
    lines = []
    stuck = chosen[chosen["status"].isin(("censored", "stalled", "diverged"))]
    for (series, x), rows in sorted(stuck.groupby(["series", axis]), key=lambda item: item[0]):
        status = rows["status"].to_numpy(object)
        final = rows[key].to_numpy(float, na_value=np.nan)[status != "diverged"]
        final = final[np.isfinite(final)]
        counts = ", ".join(f"{int((status == s).sum())} {s}" for s in ("censored", "stalled", "diverged")
                           if (status == s).any())
        tail = f", median final {'loss' if key == 'final_loss' else 'gap'} {np.median(final):.3g}" if final.size else ""
        lines.append(f"  {series} at {axis} {x:g}: {counts}{tail}{stopped_breakdown(rows.to_dict('records'))}")
    return lines


def edge_lines(summary: pd.DataFrame, symbol: str, meta: dict | None = None, tuned: bool = True) -> list[str]:
    """Where a series' chosen lr (``tuned``), and for heavy-ball and adam, which read it, β, lies among the values
    tried (`otod.core.bracket.place_lines`): inside them, at a true limit, or on an end where the best setting may
    lie beyond (the lr grid is 0.1–3 × the reference step, bracketed beyond it, unless --lr-grid says otherwise;
    β is tuned over [0, 0.999])."""
    from otod.core.api import place_lines

    reads_beta = summary["method"].map(lambda s: s.split("·")[0] in USES_BETA).to_numpy(bool)
    return place_lines(summary, symbol, meta or {}, reads_beta, lr=tuned)


def text_report(results: Results, *, full: bool = False, tol: float | None = None,
                analysis: Analysis | None = None) -> str:
    """The depth × series table with the per-mode theory, the lanes that did not converge, and the laws, at the
    sweep's own tol or another recorded rung; ``analysis``: the sweep's `depth_analysis` there, where the caller
    has it."""
    meta = results.meta
    analysis = depth_analysis(results, tol) if analysis is None else analysis
    axis = analysis.axis
    symbol = "k" if axis == "layers" else "L"
    tuned = analysis.config is not None and applies(analysis.config)
    notes = ["median iterations to a relative loss ≤ tol over seeds at the chosen (lr, β) (by the median over "
             "seeds, censored lanes worst); censored lanes count as ≥ the cap (≥N: the median is only a lower "
             "bound); Nc/Ns/Nd = lanes censored (still moving at the cap) / stalled (at a fixed point of the "
             "iteration: stuck for any cap, so counted as ≥ the cap) / diverged"]
    parts = []
    for group in analysis.groups:
        columns = theory_columns(meta, group.chosen)
        if columns and (axis == "layers" or any(s.name == "gd·identity" for s in group.series)):
            notes_here = notes + ["modes = the per-mode recursion u ← u + ηL·u^(2−2/L)(s − u) at the chosen step, "
                                  "first order in η (close for small steps only: up to 11% off the exact factor "
                                  "recursion at the reference step, 52% at 2× from depth 3); "
                                  "flow = the gradient-flow time over η (Saxe et al. 2014; Arora et al. 2018)"
                                  if axis == "depth" else "theory = ⌈ln(1/tol)/(2 ln(1/|1 − η|))⌉ for the k = 1 "
                                  "quadratic (Hessian I)"]
        else:
            notes_here = notes
        table = sweep_table(group.summary, value_name=symbol, max_rows=None if full else 16,
                            notes=notes_here, columns=columns or None)
        stuck = stuck_lines(group.chosen, axis)
        table += "".join("\n" + line for line in edge_lines(group.summary, symbol, results.meta, tuned))
        parts += ([group.heading, ""] if group.heading else []) + [table, ""]
        if stuck:
            parts += [STOPPED_NOTE if axis == "layers" else
                      "lanes that did not converge, with their median final relative loss (near 1: at or on the "
                      "plateau around the saddle P = 0; a multiple of 1/Σs²: that many singular modes of Φ not "
                      "learned, a saddle too; censored lanes may still escape: the Gaussian chain's do after up to "
                      "10⁷ iterations):"]
            parts += stuck + [""]
        parts += [f"which law in {symbol}: power T ≈ a·{symbol}^b or exponential T ≈ a·e^(c·{symbol}), chosen by AIC "
                  "over the medians (censored medians left out); 95% CI from a bootstrap over seeds that re-chooses "
                  "(lr, β) in every resample:", law_table(group.fits, symbol), ""]
    return "\n".join([sweep_header(results, analysis.tol), ""] + parts).rstrip()


def figure(results: Results, base: Path, *, quantity: str = "iterations", pdf: bool = True,
           analysis: Analysis | None = None) -> list[Path]:
    from otod.depth.figures import sweep_figure

    return sweep_figure(results, Path(base), pdf=pdf, analysis=analysis)


def sweep_and_report(config, *, out_dir: str | Path = "results", plot: bool = True, full: bool = False,
                     progress=None, yes: bool = False, pdf: bool = False, lr_extend: int | None = None) -> Report:
    """Run (resume, or read back) a depth or toy sweep through the one pipeline (`otod.core.pipeline.sweep`); its
    tuned rate is bracketed (the kind's stage, `otod.core.bracket`: ``lr_extend`` steps beyond each end of the
    grid, None: the default grid's `otod.core.bracket.DEFAULT_STEPS`, 0 for a given --lr-grid), and heavy-ball's
    and Adam's β, on the default list, beyond 0.999 towards 1 where the choice sits on it
    (`otod.depth.kind.depth_betas`)."""
    from otod.core.api import sweep

    return sweep(config, out_dir=out_dir, plot=plot, full=full, progress=progress, yes=yes, pdf=pdf,
                 lr_extend=lr_extend)
