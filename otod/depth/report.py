"""What a depth or toy sweep prints: the depth × series table with the per-mode theory, the lanes that did not
converge with their final loss (stuck or slow), and the power-law-vs-exponential fits. A notebook can call every
function here."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np

from otod.core import results as results_io
from otod.core.fit import summarize
from otod.core.report import sweep_table
from otod.depth.laws import fit_laws, law_table
from otod.depth.overlays import theory_columns
from otod.depth.records import chosen_records, relabelled, static_groups
from otod.depth.toy import STOPPED_NOTE, stopped_breakdown


class Report(NamedTuple):
    results: results_io.Results
    text: str
    files: list[Path]


def main_axis(meta: dict) -> str:
    return "layers" if meta["sweep"] == "toy" else "depth"


def stuck_lines(records: list[dict], axis: str) -> list[str]:
    """Per series and axis value with lanes that did not converge: how many were censored (still moving at the
    cap) or stalled (at a fixed point of the iteration), and the median of their final loss: a loss near 1 is at
    or on the plateau around the saddle P = 0, a multiple of 1/Σs² that many singular modes not learned; for the
    toy, where its stopped lanes sit (`otod.depth.toy.stopped_breakdown`)."""
    lines = []
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        if r["status"] in ("censored", "stalled", "diverged"):
            groups.setdefault((r["method"], r[axis]), []).append(r)
    for (series, x), rows in sorted(groups.items()):
        key = "final_loss" if "final_loss" in rows[0] else "final_gap"
        finals = [r[key] for r in rows if r["status"] != "diverged" and np.isfinite(r[key])]
        counts = ", ".join(f"{sum(r['status'] == s for r in rows)} {s}" for s in ("censored", "stalled", "diverged")
                           if any(r["status"] == s for r in rows))
        final = f", median final {'loss' if key == 'final_loss' else 'gap'} {np.median(finals):.3g}" if finals else ""
        lines.append(f"  {series} at {axis} {x:g}: {counts}{final}{stopped_breakdown(rows)}")
    return lines


def text_report(results: results_io.Results, *, full: bool = False, tol: float | None = None) -> str:
    meta = results.meta
    config = meta["config"]
    tol = config["target"]["tol"] if tol is None else tol
    axis = main_axis(meta)
    symbol = "k" if axis == "layers" else "L"
    chosen = relabelled(chosen_records(meta, results.records, tol))
    notes = ["median iterations to a relative loss ≤ tol over seeds at the chosen (lr, β) (by the median over "
             "seeds, censored lanes worst); censored lanes count as ≥ the cap (≥N: the median is only a lower "
             "bound); Nc/Ns/Nd = lanes censored (still moving at the cap) / stalled (at a fixed point of the "
             "iteration: stuck for any cap; counted as ≥ the iteration it stopped at) / diverged"]
    parts = []
    for heading, rows in static_groups(meta, chosen):
        columns = theory_columns(meta, rows)
        if columns and (axis == "layers" or any(r["method"] == "gd·identity" for r in rows)):
            notes_here = notes + ["modes = the per-mode recursion u ← u + ηL·u^(2−2/L)(s − u) at the chosen step, "
                                  "first order in η (close for small steps only: up to 11% off the exact factor "
                                  "recursion at the reference step, 52% at 2×); "
                                  "flow = the gradient-flow time over η (Saxe et al. 2014; Arora et al. 2018)"
                                  if axis == "depth" else "theory = ⌈ln(1/tol)/(2 ln(1/|1 − η|))⌉ for the k = 1 "
                                  "quadratic (Hessian I)"]
        else:
            notes_here = notes
        table = sweep_table(summarize(rows, axis), value_name=symbol, max_rows=None if full else 16,
                            notes=notes_here, columns=columns or None)
        stuck = stuck_lines(rows, axis)
        fits = fit_laws(rows, axis)
        parts += ([heading, ""] if heading else []) + [table, ""]
        if stuck:
            parts += [STOPPED_NOTE if axis == "layers" else
                      "lanes that did not converge, with their median final relative loss (near 1: at or on the "
                      "plateau around the saddle P = 0; a multiple of 1/Σs²: that many singular modes of Φ not "
                      "learned, a saddle too; censored lanes may still escape: the Gaussian chain's do after up to "
                      "10⁷ iterations):"]
            parts += stuck + [""]
        parts += [f"which law in {symbol}: power T ≈ a·{symbol}^b or exponential T ≈ a·e^(c·{symbol}), chosen by AIC "
                  "over the medians (censored medians left out); 95% CI from a bootstrap over seeds:",
                  law_table(fits, symbol), ""]
    status = "  (read back from the finished results file: nothing recomputed)" if meta.get("read_back") else ""
    if meta.get("resumed_chunks"):
        status += f"  (resumed: {meta['resumed_chunks']} chunks came from the interrupted run)"
    head = (f"{meta['sweep']} sweep: {len(results.records)} lanes, {meta['precision']}, "
            f"{meta['compile_count']} compilations ({meta['compile_time_s']:.1f} s), "
            f"wall {meta['wall_time_s']:.1f} s on {meta['environment']['device']}{status}")
    return "\n".join([head, ""] + parts).rstrip()


def figure(results: results_io.Results, base: Path, *, quantity: str = "iterations", pdf: bool = True) -> list[Path]:
    from otod.depth.figures import sweep_figure

    return sweep_figure(results, Path(base), pdf=pdf)


def sweep_and_report(config, *, out_dir: str | Path = "results", plot: bool = True, full: bool = False,
                     progress=None, yes: bool = False, pdf: bool = False) -> Report:
    from otod.core.sweep import run_sweep

    results = run_sweep(config, out_dir=out_dir, progress=progress, yes=yes)
    files = [results.path]
    if plot:
        files += figure(results, results.path.with_suffix(""), pdf=pdf)
    text = text_report(results, full=full) + "\n\n" + "\n".join(
        [f"results: {files[0]}"] + [f"figure:  {f}" for f in files[1:]])
    return Report(results, text, files)
