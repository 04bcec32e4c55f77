"""What the CLI does, as functions a notebook can call: configure, run, report, plot."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, NamedTuple

from otod import results as results_io
from otod.cli_options import sweep_config_from_options
from otod.errors import OtodError
from otod.fit import fit_sweep, summarize
from otod.report import fit_table, sweep_table
from otod.sweep import SweepConfig, run_sweep


class Report(NamedTuple):
    """A finished sweep: its results, the printed text, and the files written (results file first)."""

    results: results_io.Results
    text: str
    files: list[Path]


def condition_config(**options) -> SweepConfig:
    """`SweepConfig` of ``otod sweep condition`` from its options as typed (see `otod.cli_options`)."""
    return sweep_config_from_options(**options)


def _config_of(results: results_io.Results) -> SweepConfig:
    """Rebuild the `SweepConfig` stored in a results file (for the FLOPs of its methods)."""
    from otod.methods import MethodOptions
    from otod.problems import KroneckerSpec, QuadraticSpec

    c = dict(results.meta["config"])
    p = dict(c.pop("problem"))
    kind = p.pop("kind")
    spec = QuadraticSpec(**p) if kind == "quadratic" else KroneckerSpec(**p)
    c.pop("resolved", None)
    return SweepConfig(**{**c, "values": tuple(c["values"]), "methods": tuple(c["methods"]), "problem": spec,
                          "lr_grid": tuple(c["lr_grid"]), "options": MethodOptions(**c["options"])})


def iteration_flops(results: results_io.Results) -> dict[str, float]:
    """FLOPs of one iteration per method, from the file's metadata or, for older files, counted now."""
    stored = results.meta.get("flops_per_iteration")
    if stored:
        return stored
    from otod.bill import flops_per_iteration

    config = _config_of(results)
    return flops_per_iteration(config.problem, config.methods, max(config.values), config.options,
                               config.resolved_x64)


def text_report(results: results_io.Results, *, full: bool = False) -> str:
    """The table (median iterations, theory, FLOPs to tolerance) and the fitted scaling laws of a sweep."""
    from otod.fit import best_over_learning_rates

    meta = results.meta
    from otod import theory

    tol = meta["config"]["tol"] if theory.applies_to(meta["config"]) else None
    records = best_over_learning_rates(results.records)
    perturbation = meta["config"]["problem"].get("perturbation", 0.0)
    table = sweep_table(summarize(records, tol, perturbation), max_rows=None if full else 16, flops=iteration_flops(results))
    fits = fit_table(fit_sweep(records, tol, select_best_lr=False))
    status = "" if meta.get("complete", True) else "  (INCOMPLETE: interrupted; rerun the same command to resume)"
    if meta.get("resumed_chunks"):
        status += f"  (resumed: {meta['resumed_chunks']} chunks came from the interrupted run)"
    head = (f"{meta['sweep']} sweep: {len(results.records)} lanes, {meta['precision']}, "
            f"{meta['compile_count']} compilations ({meta['compile_time_s']:.1f} s), "
            f"wall {meta['wall_time_s']:.1f} s on {meta['environment']['device']}{status}")
    return "\n".join([head, "", table, "", "fitted scaling laws (pairs-bootstrap 95% CI over seeds and κ):", fits])


def sweep_and_report(config: SweepConfig, *, out_dir: str | Path = "results", plot: bool = True,
                     full: bool = False, progress: Callable[[str], None] | None = None) -> Report:
    """Run (or resume) a sweep, count the FLOPs of one iteration of each method, save, plot and report."""
    from otod.bill import flops_per_iteration

    results = run_sweep(config, out_dir=out_dir, progress=progress)
    if "flops_per_iteration" not in results.meta:
        meta = dict(results.meta)
        meta["flops_per_iteration"] = flops_per_iteration(config.problem, config.methods, max(config.values),
                                                          config.options, config.resolved_x64)
        results_io.save(results.path, meta, results.records)
        results = results_io.load(results.path)
    files = [results.path]
    if plot:
        from otod.plots import condition_figure

        files += condition_figure(results, results.path.with_suffix(""))
    text = text_report(results, full=full) + "\n\n" + "\n".join(
        [f"results: {files[0]}"] + [f"figure:  {f}" for f in files[1:]])
    return Report(results, text, files)


def _load_sweep(path) -> results_io.Results:
    results = results_io.load(path)
    if results.meta.get("kind") != "sweep":
        raise OtodError(f"results file {path}: holds {results.meta.get('kind')!r} results, not a sweep")
    return results


def report_file(path, *, full: bool = False) -> str:
    """``otod fit FILE``: the table and fits of a saved sweep."""
    results = _load_sweep(path)
    return f"{path}\n" + text_report(results, full=full)


def plot_file(path, *, out_dir=None, quantity: str = "iterations") -> list[Path]:
    """``otod plot FILE``: the figure of a saved sweep, of iterations or of FLOPs to tolerance."""
    from otod.plots import condition_figure

    results = _load_sweep(path)
    base = Path(out_dir) / Path(path).stem if out_dir else Path(path).with_suffix("")
    if quantity == "flops":
        return condition_figure(results, base.with_name(base.name + "-flops"), flops=iteration_flops(results))
    return condition_figure(results, base)
