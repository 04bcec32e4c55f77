"""The one path after the engine, for every sweep: run (or read back) → **one** analysis (the kind's
``analyse``: an `otod.core.analysis.Analysis`, each series' ``fit`` holding the obstacle's reading: a power law,
a depth law, the critical batch) → the text report and the figure, which read only that analysis → one `Report`.

Every sweep command is parse → config → `sweep`; ``otod fit`` and ``otod plot`` are `present` on a file read
back. So a command selects each point's setting once (in the analysis: `otod.core.analysis.analyse`), turns the
records into columns once (the results' table, kept from the write: `otod.core.finish.finish`), and its figure
never re-runs a search (what theory a figure draws beside the measurement is the analysis's ``theory``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from otod.core.registry import sweep_kind
from otod.core.report import Report


def analyse(results, tol: float | None = None) -> Any:
    """The sweep's one analysis at ``tol`` (default: its own target), by its kind's ``analyse``."""
    return sweep_kind(results.meta["sweep"]).presented.analyse(results, tol)


def present(results, *, tol: float | None = None, full: bool = False, text: bool = True,
            figure_base: str | Path | None = None, pdf: bool = False, quantity: str = "iterations",
            analysis: Any = None) -> Report:
    """A results object's report from one analysis (made here unless given): the kind's text (``text``) and,
    with ``figure_base``, its figure there (PNG, and PDF with ``pdf``; ``quantity`` iterations or flops)."""
    shown = sweep_kind(results.meta["sweep"]).presented
    analysis = analyse(results, tol) if analysis is None else analysis
    body = shown.report(results, full=full, tol=tol, analysis=analysis) if text else ""
    files = []
    if figure_base is not None:
        files = shown.figure(results, Path(figure_base), quantity=quantity, pdf=pdf, analysis=analysis)
    return Report(results, body, files, analysis)


def marked_records(report: Report) -> list[dict]:
    """The records as ``--json`` prints them: each with ``selected`` (at its point's chosen setting),
    ``lr_on_edge`` and ``beta_on_edge``, and at a chosen setting where it lies (``lr_place``, ``beta_place``:
    interior, limit, list end or grid end, `otod.core.analysis.lr_places`), read off the one analysis (its
    chosen records, by their row in the results), so the marks are written once, from the analysis, and never by
    the sweep."""
    records = report.results.records
    chosen = getattr(report.analysis, "chosen", None)
    if chosen is None:
        return records
    flags = {int(i): (bool(lr), bool(beta)) for i, lr, beta in
             zip(chosen.index, chosen["lr_on_edge"].to_numpy(bool), chosen["beta_on_edge"].to_numpy(bool))}
    places = ({int(i): {"lr_place": lr, "beta_place": beta} for i, lr, beta in
               zip(chosen.index, chosen["lr_place"], chosen["beta_place"])} if "lr_place" in chosen else {})
    return [{**r, "selected": i in flags, "lr_on_edge": flags.get(i, (False, False))[0],
             "beta_on_edge": flags.get(i, (False, False))[1], **places.get(i, {})} for i, r in enumerate(records)]


def made(config, *, out_dir: str | Path = "results", progress: Callable[[dict], None] | None = None,
         yes: bool = False, extra_meta: Callable[[], dict] | None = None, lr_extend: int | None = None,
         run: Callable[..., Any] | None = None) -> tuple[Any, Any]:
    """A sweep's results and its one analysis: the core's run (`otod.core.sweep.run_sweep`: run, resume or read
    back), the stages the kind declares on them, and then the analysis, made once on the records they leave: the
    bracket (``kind.bracket``, a `otod.core.registry.Bracketing`: `otod.core.bracket.bracketed`, with
    ``lr_extend`` steps, None: its `otod.core.bracket.default_steps`), whose rounds read the analysis's choices on
    the point estimates alone (the kind's ``presentation.place``: no bootstrap, no fit), so a sweep that brackets
    over several rounds still bootstraps and fits once. ``run(config, out_dir, progress, yes, extra_meta)`` replaces the
    core's run where a kind answers a sweep without lanes (the noise obstacle's exact path,
    `otod.noise.exact.run_exact`, whose mode is no field of the config); it searches its own lattice to its
    limits, so no stage brackets it."""
    from otod.core.sweep import run_sweep

    if run is None:
        results = run_sweep(config, out_dir=out_dir, progress=progress, yes=yes, extra_meta=extra_meta)
    else:
        results = run(config, out_dir, progress, yes, extra_meta)
    rule = config.kind.bracket
    if rule is not None and run is None:
        from otod.core.bracket import bracketed, default_steps

        steps = (default_steps(config) if lr_extend is None else lr_extend) if rule.lr else 0
        results = bracketed(config, results, config.kind.presented.place, steps, betas=rule.betas(config),
                            progress=progress, yes=yes)
    return results, analyse(results)


def sweep(config, *, out_dir: str | Path = "results", plot: bool = True, full: bool = False,
          progress: Callable[[dict], None] | None = None, yes: bool = False, pdf: bool = False,
          extra_meta: Callable[[], dict] | None = None, lr_extend: int | None = None,
          run: Callable[..., Any] | None = None) -> Report:
    """Run (resume, or read back) a sweep and present it (`made`, then `present` on its one analysis): the text,
    then ``results:`` and ``figure:`` lines, the files written (the results file first)."""
    from otod.core.preflight import refuse_unwritable

    refuse_unwritable(out_dir)  # before the work: the results are saved after it
    results, analysis = made(config, out_dir=out_dir, progress=progress, yes=yes, extra_meta=extra_meta,
                             lr_extend=lr_extend, run=run)
    base = results.path.with_suffix("") if plot and results.path is not None else None
    shown = present(results, full=full, figure_base=base, pdf=pdf, analysis=analysis)
    files = ([results.path] if results.path is not None else []) + list(shown.files)
    lines = [f"results: {results.path}"] if results.path is not None else []
    text = shown.text + ("\n\n" if lines else "") + "\n".join(lines + [f"figure:  {f}" for f in shown.files])
    return Report(results, text, files, shown.analysis)
