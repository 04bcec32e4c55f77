"""The exact path (``--mode exact``): a noise or params sweep answered by the NQM's moment recursions
(`otod.noise.theory`) instead of the simulator, in the same record format, every (B, method, lr, β) lane's steps
to target in exact arithmetic (float64, no sampling: one 'seed')."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from otod.core import results as results_io
from otod.core.errors import OtodError
from otod.core.sweep import SweepConfig, existing_default
from otod.noise import theory
from otod.noise.kind import record_fields
from otod.noise.methods import power_of, theory_name

USES_BETA = ("heavy-ball", "ema")


def reference_lr(q: theory.Quadratic, method: str) -> float:
    """The methods' reference step on a quadratic, as `otod.noise.methods` defines it: 1/max h^{1−p}."""
    return float(1.0 / np.max(q.h ** (1.0 - power_of(method))))


def lane_batches(config: SweepConfig, dim: int) -> list[float]:
    axes = dict(config.axes)
    if "batch" in axes:
        return list(axes["batch"])
    return [max(1.0, float(round(r * dim))) for r in axes["batch_ratio"]]


def exact_records(config: SweepConfig) -> list[dict]:
    """One record per (static point, batch, method, β, lr)."""
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
            multipliers = np.asarray(config.rates_for(name) if config.relative_lr else config.learning_rates)
            lrs = multipliers * reference_lr(q, name) if config.relative_lr else multipliers
            betas = axes.get("beta", (0.0,)) if theory_name(name) in USES_BETA else (0.0,)
            for beta in betas:
                hitting = theory.method_hitting(theory_name(name), q, lrs, batches, tol, cap,
                                                power=power_of(name), beta=beta)
                steps, diverged = hitting.steps, hitting.diverged
                for i, b in enumerate(batches):
                    for j, lr in enumerate(lrs):
                        hit = int(steps[i, j])
                        status = "converged" if hit >= 0 else ("diverged" if diverged[i, j] else "censored")
                        row = {"sweep": config.sweep, "dim": float(spec.dim), "batch": float(b),
                               "beta": float(beta), "method": name, "seed": 0,
                               "lr_multiplier": float(multipliers[j]) if config.relative_lr else None,
                               "learning_rate": float(lr), "iterations": hit if hit >= 0 else cap,
                               "status": status, "final_loss": None, "hits": [hit if hit >= 0 else None],
                               **record_fields(config, "exact")}
                        if "batch_ratio" in axes:
                            row["batch_ratio"] = float(axes["batch_ratio"][0])
                        records.append(row)
    return records


def exact_path(config: SweepConfig, out_dir: str | Path = "results") -> Path:
    """``out_dir`` itself where it names a results file (.parquet, .json or .npz), else
    ``<out_dir>/<sweep>-exact-<digest>.parquet`` (or the .json an earlier otod wrote there: `existing_default`)."""
    if Path(out_dir).suffix in results_io.SUFFIXES:
        return Path(out_dir)
    return existing_default(Path(out_dir) / f"{config.sweep}-exact-{config.digest()}")


def run_exact(config: SweepConfig, out_dir: str | Path = "results") -> results_io.Results:
    """Answer a sweep from the exact recursions and write its results file (read back when it exists)."""
    path = exact_path(config, out_dir)
    if path.exists():
        existing = results_io.load(path)
        return results_io.Results(meta={**existing.meta, "read_back": True}, records=existing.records, path=path)
    started = time.perf_counter()
    records = exact_records(config)
    kind = config.kind
    meta = {"kind": "sweep", "sweep": config.sweep, "mode": "exact", "digest": config.digest(),
            "config": config.to_dict(),
            "axes": [{"name": n, "symbol": kind.axis(n).symbol, "label": kind.axis(n).label,
                      "traced": kind.axis(n).traced} for n, _ in config.axes],
            "environment": results_io.environment(), "precision": "float64 (NumPy, exact recursions)",
            "wall_time_s": time.perf_counter() - started, "compile_count": 0, "complete": True}
    results_io.save(path, meta, records)
    return results_io.Results(meta=results_io.jsonable(meta), records=records, path=path)
