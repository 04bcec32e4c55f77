"""Sweeps: a declared grid (sweep values × seeds × learning rates × methods) that the runner executes, chunks,
times, stores and resumes, in the manner of benchopt's runner.

``run_sweep(config)`` compiles one vmapped program per group of methods that share a transformation shape
(gd, gd-opt, heavy-ball and nesterov are one; see `otod.methods.programs`), runs the grid in equal-shaped chunks,
each of one method and a run of sweep values (so the compilation count is the number of programs, whatever the
number of values and methods, and no lane waits for another method's slowest lane), writes the
results file atomically after every chunk, and returns the `Results`. A sweep interrupted part-way is resumed from
its file: finished chunks are not run again.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import jax
import numpy as np

from otod import results as results_io
from otod.engine import Status, count_compilations, iterations_to_tolerance
from otod.errors import OtodError
from otod.methods import MethodOptions, method as lookup_method, programs
from otod.problems import KroneckerSpec, QuadraticSpec

DEFAULT_METHODS = ("gd", "heavy-ball", "nesterov", "newton")
DEFAULT_LR_GRID = tuple(float(v) for v in np.geomspace(0.1, 3.0, 12))
FLOAT32_EPS = float(np.finfo(np.float32).eps)
#: Beyond this κ even float64 cannot resolve a useful gap: the reachable gap is about (κ·ε₆₄)² (see resolved_x64).
MAX_KAPPA = 1e12
#: The iteration cap's upper limit (an int32 counter; at ~10⁸ iterations a sweep would run for hours anyway), and
#: the automatic cap's.
MAX_ITERS_LIMIT = 100_000_000
AUTO_MAX_ITERS_LIMIT = 1_000_000


@dataclass(frozen=True)
class SweepConfig:
    """Everything that determines a sweep's numbers (and so its results file name).

    values: the swept condition numbers κ (the `condition` sweep). lr: "theory" (each method's reference step),
    "tuned" (the best of ``lr_grid`` multipliers of the reference step, per sweep value and seed) or a number
    (one absolute step for every method). max_iters None: 2·κ_max·ln(1/tol), at least 1000 and at most 10⁶,
    about four times what GD needs (lanes past the cap are censored, not lost). x64 None: float64 where float32 rounding would meet the tolerance, tol < 10·(κ_max·ε₃₂)²: an
    update of size η·μ·e is rounded away once e ≲ ε₃₂·|x|/(η·μ) ~ κ·ε₃₂ (η ~ 1/L), so the relative loss gap float32
    can reach bottoms out near (κ·ε₃₂)².
    """

    values: tuple[float, ...]
    sweep: str = "condition"
    methods: tuple[str, ...] = DEFAULT_METHODS
    problem: QuadraticSpec | KroneckerSpec = field(default_factory=QuadraticSpec)
    tol: float = 1e-6
    max_iters: int | None = None
    seeds: int = 8
    seed: int = 0
    lr: str | float = "theory"
    lr_grid: tuple[float, ...] = DEFAULT_LR_GRID
    x64: bool | None = None
    options: MethodOptions = field(default_factory=MethodOptions)
    chunk_lanes: int = 16384

    def __post_init__(self):
        object.__setattr__(self, "values", tuple(float(v) for v in self.values))
        object.__setattr__(self, "lr_grid", tuple(float(v) for v in self.lr_grid))
        if not self.values:
            raise OtodError("--k: no values to sweep; e.g. --k 1..100")
        if min(self.values) < 1:
            raise OtodError(f"--k: condition numbers κ must be ≥ 1 (got {min(self.values):g}), e.g. --k 1..100")
        if max(self.values) > MAX_KAPPA:
            raise OtodError(f"--k: condition numbers κ must be ≤ {MAX_KAPPA:g} (got {max(self.values):g}): beyond it "
                            "float64 rounding swamps any useful tolerance; e.g. --k 1..1e8:25:log")
        if not (0.0 < self.tol < 1.0):
            raise OtodError(f"--tol {self.tol:g}: the relative loss gap must lie strictly between 0 and 1, "
                            "e.g. --tol 1e-6")
        if not isinstance(self.seeds, int) or self.seeds < 1:
            raise OtodError(f"--seeds {self.seeds}: need an integer ≥ 1, e.g. --seeds 8")
        if self.max_iters is not None and (not isinstance(self.max_iters, int)
                                           or not 1 <= self.max_iters <= MAX_ITERS_LIMIT):
            raise OtodError(f"--max-iters {self.max_iters}: need an integer from 1 to {MAX_ITERS_LIMIT:.0e}, "
                            "e.g. --max-iters 10000")
        if not self.methods:
            raise OtodError("--method: no methods given, e.g. --method gd,heavy-ball")
        for name in self.methods:
            m = lookup_method(name)
            if m.needs == "kronecker" and not isinstance(self.problem, KroneckerSpec):
                raise OtodError(f"--method {name}: needs a Kronecker-structured problem; add --problem kronecker")
        if isinstance(self.lr, str) and self.lr not in ("theory", "tuned"):
            raise OtodError(f"--lr {self.lr}: use theory, tuned or a positive number, e.g. --lr 0.01")
        if not isinstance(self.lr, str) and not (self.lr > 0 and math.isfinite(self.lr)):
            raise OtodError(f"--lr {self.lr}: a learning rate must be a positive number, e.g. --lr 0.01")
        if not self.lr_grid or min(self.lr_grid) <= 0:
            raise OtodError("--lr-grid: multipliers must be positive, e.g. --lr-grid 0.1..3:12:log")
        if self.options.damping < 0:
            raise OtodError(f"--damping {self.options.damping}: must be ≥ 0, e.g. --damping 1e-4")

    @property
    def resolved_max_iters(self) -> int:
        if self.max_iters is not None:
            return self.max_iters
        return int(min(AUTO_MAX_ITERS_LIMIT, max(1000, math.ceil(2.0 * max(self.values) * math.log(1.0 / self.tol)))))

    @property
    def resolved_x64(self) -> bool:
        if self.x64 is not None:
            return self.x64
        return bool(self.tol < 10.0 * (max(self.values) * FLOAT32_EPS) ** 2)

    @property
    def learning_rates(self) -> tuple[float, ...]:
        """The per-lane lr values: multipliers of the reference step (theory, tuned) or the absolute step."""
        if self.lr == "theory":
            return (1.0,)
        if self.lr == "tuned":
            return self.lr_grid
        return (float(self.lr),)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["problem"] = {"kind": self.problem.kind, **asdict(self.problem)}
        d["resolved"] = {"max_iters": self.resolved_max_iters, "x64": self.resolved_x64,
                         "learning_rates": list(self.learning_rates)}
        return d

    def digest(self) -> str:
        """A short hash of the config: the results file's name and the key for resuming."""
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:10]


def default_path(config: SweepConfig, out_dir: str | Path = "results") -> Path:
    """``<out>/<sweep>-<digest>.json``: one file per distinct config, so the same command resumes the same file."""
    return Path(out_dir) / f"{config.sweep}-{config.digest()}.json"


def chunk_plan(n_values: int, lanes_per_value: int, chunk_lanes: int) -> list[list[int]]:
    """Split value indices into chunks of equal size (the last one padded by repeating its last index), so that
    every chunk has the same shape and compiles once."""
    per_chunk = max(1, min(n_values, chunk_lanes // max(1, lanes_per_value)))
    chunks = [list(range(i, min(i + per_chunk, n_values))) for i in range(0, n_values, per_chunk)]
    chunks[-1] += [chunks[-1][-1]] * (per_chunk - len(chunks[-1]))
    return chunks


def _lanes(config: SweepConfig, value_indices: list[int], method_index: int):
    """Lane arrays of one method for the given value indices, ordered value-major, then seed, learning rate.

    Returns the index table [value, seed, lr, method] and the per-lane values, seeds, lrs and method indices."""
    lrs = config.learning_rates
    grid = [(v, s, r, method_index) for v in value_indices for s in range(config.seeds) for r in range(len(lrs))]
    idx = np.asarray(grid, dtype=np.int64).reshape(-1, 4)
    values = np.asarray(config.values, float)[idx[:, 0]]
    return idx, values, idx[:, 1], np.asarray(lrs, float)[idx[:, 2]], idx[:, 3]


STATUS_NAMES = {int(s): s.name.lower() for s in Status}


def _chunk_records(config: SweepConfig, program: tuple[str, ...], idx, values, lrs, solution,
                   n_real: int) -> list[dict]:
    it, gap, status, step = (np.asarray(a) for a in solution)
    relative = isinstance(config.lr, str)
    rows = []
    for i in range(n_real):
        rows.append({
            "sweep": config.sweep, "sweep_value": float(values[i]), "method": program[idx[i, 3]],
            "seed": int(idx[i, 1]),
            "lr_multiplier": float(lrs[i]) if relative else None, "learning_rate": float(step[i]),
            "iterations": int(it[i]), "status": STATUS_NAMES[int(status[i])], "final_gap": float(gap[i]),
        })
    return rows


def run_sweep(config: SweepConfig, path: str | Path | None = None, out_dir: str | Path = "results",
              progress: Callable[[str], None] | None = None) -> results_io.Results:
    """Run (or resume) a sweep, saving after every chunk; return the loaded `Results`.

    ``progress`` receives one line per finished chunk (method, chunk i/n, lanes, seconds).
    """
    path = Path(path) if path is not None else default_path(config, out_dir)
    previous = _resumable(path, config)
    records = list(previous.records) if previous else []
    done = set(map(tuple, previous.meta.get("finished_chunks", []))) if previous else set()
    lanes_per_value = config.seeds * len(config.learning_rates)
    plan = chunk_plan(len(config.values), lanes_per_value, config.chunk_lanes)
    total_chunks = len(plan) * len(config.methods)
    started = time.perf_counter()
    run_seconds = 0.0
    with jax.enable_x64(config.resolved_x64), count_compilations() as compiles:
        for program, (m, name) in ((p, im) for p in programs(config.methods) for im in enumerate(p)):
            for c, value_indices in enumerate(plan):
                if (name, c) in done:
                    continue
                n_real = len(set(value_indices)) * lanes_per_value
                idx, values, seed_idx, lrs, method_idx = _lanes(config, value_indices, m)
                t0 = time.perf_counter()
                solution = iterations_to_tolerance(
                    config.problem, program, values, seed_idx, lrs, method_indices=method_idx, seed=config.seed,
                    tol=config.tol, max_iters=config.resolved_max_iters, relative_lr=isinstance(config.lr, str),
                    options=config.options)
                solution = jax.block_until_ready(solution)
                run_seconds += time.perf_counter() - t0
                records += _chunk_records(config, program, idx, values, lrs, solution, n_real)
                done.add((name, c))
                meta = _meta(config, compiles, time.perf_counter() - started, run_seconds, done,
                             complete=len(done) == total_chunks, previous=previous)
                results_io.save(path, meta, records)
                if progress:
                    progress(f"{name}: chunk {c + 1}/{len(plan)} ({n_real} lanes) "
                             f"{time.perf_counter() - t0:.2f} s")
    return results_io.load(path)


def _resumable(path: Path, config: SweepConfig) -> results_io.Results | None:
    """The partial results of the same config at ``path``, if any (a complete or foreign file is redone)."""
    if not path.exists():
        return None
    try:
        old = results_io.load(path)
    except OtodError:
        return None
    if old.meta.get("complete") or old.meta.get("digest") != config.digest():
        return None
    return old


def _meta(config, compiles, wall, run_seconds, done, complete, previous) -> dict:
    return {
        "kind": "sweep", "sweep": config.sweep, "digest": config.digest(), "config": config.to_dict(),
        "environment": results_io.environment(),
        "precision": "float64" if config.resolved_x64 else "float32",
        "wall_time_s": wall, "run_time_s": run_seconds,
        "compile_count": len(compiles), "compile_time_s": float(sum(compiles)),
        "complete": complete, "finished_chunks": sorted(done),
        "resumed_chunks": len(previous.meta.get("finished_chunks", [])) if previous else 0,
    }
