"""The exact path (``--mode exact``): a noise or params sweep answered by the NQM's moment recursions
(`otod.noise.theory`) instead of the simulator, in the same record format, every (B, method, lr, β) lane's steps
to target in exact arithmetic (float64, no sampling: one 'seed')."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from otod.core.api import (OtodError, Results, SUFFIXES, SweepConfig, environment, existing_default, jsonable,
                           load_results, save_results)
from otod.noise import search, theory
from otod.noise.kind import record_fields
from otod.core.api import power_of, theory_name

USES_BETA = ("heavy-ball", "ema")


def reference_lr(q: theory.Quadratic, method: str) -> float:
    """The methods' reference step on a quadratic, as `otod.core.stochastic` defines it: 1/max h^{1−p}."""
    return float(1.0 / np.max(q.h ** (1.0 - power_of(method))))


def lane_batches(config: SweepConfig, dim: int) -> list[float]:
    axes = dict(config.axes)
    if "batch" in axes:
        return list(axes["batch"])
    return [max(1.0, float(round(r * dim))) for r in axes["batch_ratio"]]


def search_axes(config: SweepConfig, name: str) -> tuple[search.Axis, search.Axis | None]:
    """(lr axis, β axis or None) of one method's exact search. The default lr grid (fractions of the stability
    limit, ``options.lr_unit == "limit"``) and the default β list (`search.DEFAULT_BETAS`) are lattices the search
    refines; a --lr-grid, an absolute --lr or --lr theory, and a --beta list are tried as given."""
    axes = dict(config.axes)
    if config.relative_lr and config.tuned(name) and config.options.lr_unit == "limit":
        indices = tuple(int(round(float(z) / search.LR_UNIT)) for z in search.coordinate(np.asarray(config.lr_grid)))
        lr_axis = search.Axis(True, indices[::search.EXACT_STRIDE])
    else:
        lr_axis = search.Axis(False, tuple(config.rates_for(name) if config.relative_lr else config.learning_rates))
    if theory_name(name) not in USES_BETA:
        return lr_axis, None
    betas = tuple(axes.get("beta", (0.0,)))
    if betas == search.DEFAULT_BETAS:
        return lr_axis, search.Axis(True, search.DEFAULT_BETA_INDICES[::search.EXACT_STRIDE])
    return lr_axis, search.Axis(False, betas)


def exact_records(config: SweepConfig) -> list[dict]:
    """One record per (static point, batch, method, lr, β) the search tried (`otod.noise.search.exact_search`).
    Which of them each point chooses, and where that choice lies among the values searched, is the one
    analysis's (`otod.noise.report.exact_choices`, `chosen_places`): the search answers every setting it tried."""
    if config.options.schedule != "constant":
        raise OtodError("--mode exact: constant steps only; use --mode simulate for schedules")
    cap, tol = config.resolved_max_iters, config.target.tol
    axes = dict(config.axes)
    records = []
    for spec in config.specs():
        if not hasattr(spec, "quadratic"):
            raise OtodError(f"--mode exact: the {spec.kind} problem has no exact recursion; use --mode simulate")
        q = spec.quadratic()
        batches = lane_batches(config, spec.dim)
        for name in config.methods:
            if name == "adam":
                raise OtodError("--method adam: no exact recursion for adam; use --mode simulate")
            reference = reference_lr(q, name) if config.relative_lr else 1.0
            lr_axis, beta_axis = search_axes(config, name)
            trials = search.exact_search(theory_name(name), q, batches, tol, cap, reference, power_of(name),
                                         lr_axis, beta_axis)
            for found in trial_records(name, trials, cap, reference, config.relative_lr):
                row = {"sweep": config.sweep, "dim": float(spec.dim), **found, **record_fields(config, "exact")}
                if "batch_ratio" in axes:
                    row["batch_ratio"] = float(axes["batch_ratio"][0])
                records.append(row)
    return records


def trial_records(method: str, trials, cap: int, reference: float, relative: bool = True) -> list[dict]:
    """The exact search's trials (`otod.noise.search.exact_search`) as records of one method, in the sweeps'
    format, sorted by (B, β, lr): the step count (``iterations``; the cap where the loss never reached the target)
    and status (converged, diverged or censored), the lr as a multiplier of ``reference`` (None where the lr was
    absolute, ``relative`` False) and as a step, one 'seed' (the recursions sample nothing). The one place trials
    become records: the exact sweeps' (`exact_records`) and the nets' NQM prediction
    (`otod.nets.measure.bridge.tuned_steps`) both read them, so both choose by the one analysis."""
    out = []
    for trial in sorted(trials, key=lambda t: (t.batch, t.beta, t.multiplier)):
        hit = trial.steps
        status = "converged" if hit >= 0 else ("diverged" if trial.diverged else "censored")
        out.append({"batch": trial.batch, "beta": trial.beta, "method": method, "seed": 0,
                    "lr_multiplier": trial.multiplier if relative else None,
                    "learning_rate": trial.multiplier * reference, "iterations": hit if hit >= 0 else cap,
                    "status": status, "final_loss": None, "hits": [hit if hit >= 0 else None]})
    return out


def exact_path(config: SweepConfig, out_dir: str | Path = "results") -> Path:
    """``out_dir`` itself where it names a results file (.parquet, .json or .npz), else
    ``<out_dir>/<sweep>-exact-<digest>.parquet`` (or the .json an earlier otod wrote there: `existing_default`)."""
    if Path(out_dir).suffix in SUFFIXES:
        return Path(out_dir)
    return existing_default(Path(out_dir) / f"{config.sweep}-exact-{config.digest()}")


def run_exact(config: SweepConfig, out_dir: str | Path = "results") -> Results:
    """Answer a sweep from the exact recursions and write its results file (read back when it exists and the same
    search, `search.VERSION`, wrote it)."""
    path = exact_path(config, out_dir)
    if path.exists():
        existing = load_results(path)
        if existing.meta.get("search") == search.VERSION:
            return Results(meta={**existing.meta, "read_back": True}, records=existing.records, path=path)
        # written by an earlier exact search (`search.VERSION`), whose choices may differ: computed again
    from otod.core.api import hold_freed_memory, refuse_to_measure, release_free_memory

    refuse_to_measure(path)  # a figure that reads committed results never measures (`otod.core.figure_sources`)

    started = time.perf_counter()
    hold_freed_memory()
    records = exact_records(config)
    release_free_memory()
    kind = config.kind
    meta = {"kind": "sweep", "sweep": config.sweep, "mode": "exact", "digest": config.digest(),
            "config": config.to_dict(),
            "axes": [{"name": n, "symbol": kind.axis(n).symbol, "label": kind.axis(n).label,
                      "traced": kind.axis(n).traced} for n, _ in config.axes],
            "environment": environment(), "precision": "float64 (NumPy, exact recursions)",
            "search": search.VERSION,
            "wall_time_s": time.perf_counter() - started, "compile_count": 0, "complete": True}
    from otod.core.api import table_of

    table = table_of(records)  # built once: the file's columns and the analysis's
    save_results(path, meta, records, table=table)
    return Results(meta=jsonable(meta), records=records, path=path, table=table)
