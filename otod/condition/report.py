"""What a condition sweep prints and draws: the κ × method table with theory and FLOPs to tolerance, the fitted
exponents, and the figure. Everything the CLI does is a function here a notebook can call."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from otod.condition.bill import iteration_flops, setup_costs
from otod.condition.records import condition_analysis, coordinate_wise_note
from otod.core.api import Analysis, Report, Results, fit_table, place_lines, sweep_header, sweep_table


def text_report(results: Results, *, full: bool = False, tol: float | None = None,
                analysis: Analysis | None = None) -> str:
    """The table (median iterations, theory, FLOPs to tolerance) and the fitted scaling laws of a sweep, at its
    own tol or at another recorded rung of its ladder; ``analysis``: the sweep's `condition_analysis` at that
    tol, where the caller has it."""
    analysis = condition_analysis(results, tol) if analysis is None else analysis
    config, preds = analysis.config, analysis.theory
    flops = iteration_flops(results) if len(analysis.groups) == 1 else None
    setup = setup_costs(results) if flops else None
    notes = ["median iterations to tolerance over seeds, censored lanes counted as ≥ the cap (≥N: more than half "
             "censored, so the median is only a lower bound); Nc/Ns/Nd = lanes censored at --max-iters / stalled / "
             "diverged"]
    if preds:
        notes.append("exact = the lanes' own counts in exact arithmetic (residual polynomials on their spectra and "
                     "starts, median over seeds); bound = the worst case over every spectrum in [μ, L] and start, "
                     "in exact arithmetic: no lane at the method's own step needs more in exact arithmetic (a float32 "
                     "run can pass it by rounding, by a few iterations in the cases docs/condition.md measures); "
                     "rate = ⌈ln(1/ε)/(2 ln(1/ρ))⌉ from the asymptotic rate ρ alone, which undercounts heavy-ball and nesterov (a double root) and bounds "
                     "nothing")
    tuned = [m for m in config.methods if config.tuned(m)]
    if tuned:
        why = "" if config.lr == "tuned" else " (its reference step is a scale-dependent constant, no theory)"
        notes.append(f"tuned: {', '.join(tuned)}{why}: one multiplier of the reference step per κ from --lr-grid, "
                     "the best by the median over seeds (censored lanes count as worst)")
    parts = []
    for group in analysis.groups:
        columns = {"exact": preds.exact, "bound": preds.bound, "rate": preds.rate} if preds else None
        table = sweep_table(group.summary, value_name="κ", max_rows=None if full else 16,
                            flops=flops, setup=setup, notes=notes, columns=columns)
        low = group.statistic.min_x
        fit_head = (f"fitted scaling laws over κ ≥ {low:g} (the asymptotic range); 95% CI from a bootstrap over "
                    "seeds that re-chooses the rate in every resample:" if low else "fitted scaling laws over every "
                    "κ (fewer than 3 values ≥ 10); 95% CI from a bootstrap over seeds that re-chooses the rate in "
                    "every resample:")
        tuned_rows = group.summary[group.summary["method"].isin(tuned)] if tuned else group.summary.iloc[:0]
        warn = place_lines(tuned_rows, "κ", results.meta)
        warn += [""] if warn else []
        note = coordinate_wise_note(config)
        parts += ([group.heading, ""] if group.heading else []) + [table, ""] + warn + ([note, ""] if note else []) + [
            fit_head, fit_table(group.fits, "κ", preds.slope_of if preds else "theory"), ""]
    return "\n".join([sweep_header(results, analysis.tol), ""] + parts).rstrip()


def figure(results: Results, base: Path, *, quantity: str = "iterations", pdf: bool = True,
           analysis: Analysis | None = None) -> list[Path]:
    """The sweep's figure: iterations (or FLOPs) to tolerance against κ, as PNG and, with ``pdf``, PDF, from
    ``analysis`` (default: the sweep's `condition_analysis` at its own tol)."""
    from otod.condition.figures import condition_figure

    base = Path(base)
    analysis = condition_analysis(results) if analysis is None else analysis
    if quantity == "flops":
        return condition_figure(results, base.with_name(base.name + "-flops"), flops=iteration_flops(results),
                                setup=setup_costs(results), pdf=pdf, analysis=analysis)
    return condition_figure(results, base, pdf=pdf, analysis=analysis)


def sweep_and_report(config, *, out_dir: str | Path = "results", plot: bool = True, full: bool = False,
                     progress: Callable[[dict], None] | None = None, yes: bool = False, pdf: bool = False,
                     lr_extend: int | None = None) -> Report:
    """Run (resume, or read back) a sweep through the one pipeline (`otod.core.pipeline.sweep`), with the FLOPs of
    one iteration of each method and the theory's exact counts stored in the file (so a later ``otod fit`` reads
    them), then report and plot. A tuned rate is bracketed (the kind's stage, `otod.core.bracket`: ``lr_extend``
    steps beyond each end of the grid; None: the default grid's `otod.core.bracket.DEFAULT_STEPS`, 0 for a given
    --lr-grid)."""
    from otod.condition.bill import flops_per_iteration, setup_flops
    from otod.core.api import sweep

    def bill() -> dict:
        if config.static_axes:
            return {}
        from otod.condition.predictions import exact_medians

        exact = exact_medians(config, "float64" if config.resolved_x64 else "float32",
                              list(config.static_axes))
        return {"flops_per_iteration": flops_per_iteration(config.problem, config.methods,
                                                           max(config.values("kappa")), config.options,
                                                           config.resolved_x64),
                "setup_flops": {m: setup_flops(config.problem, m) for m in config.methods},
                **({"exact_medians": exact} if exact else {})}

    return sweep(config, out_dir=out_dir, plot=plot, full=full, progress=progress, yes=yes, pdf=pdf,
                 extra_meta=bill, lr_extend=lr_extend)
