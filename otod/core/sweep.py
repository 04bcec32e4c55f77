"""Sweeps: a declared grid (axis values × seeds × learning rates × methods) that the runner executes, chunks,
stores and resumes, in the manner of benchopt's runner.

``run_sweep(config)`` compiles one vmapped program per (static point, group of methods sharing a transformation
shape), runs the grid in equal-shaped chunks (each of one method and a run of traced points, sized for about
``chunk_seconds`` of work so that progress is visible and an interrupt loses little), appends each finished chunk
to the journal, and writes the results file when the last one is in. Before allocating anything it estimates
memory and lane-iterations and refuses what cannot fit or would take more than an hour (unless ``yes``).

Never losing work: a lock stops a second run on the same file; Ctrl-C is honoured when the current chunk ends
(every finished chunk is saved, and the `Interrupted` error says how many lanes); the same command resumes from
the journal; a finished file is read back instead of recomputed; a damaged file or journal is refused by name.

Many processes (``--distributed``, `otod.core.distributed`): each runs its share of the chunks into its own part
file, and process 0 merges the parts into the file one process would write; `merge` joins parts copied from
hosts that share no file system. ``--share I/N`` runs one share the same way with no other process (the tasks of
a job array, at any times): it writes its part file and ends, and `merge` joins the parts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import itertools
import math
import platform
import re
import signal
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, NamedTuple

import numpy as np

from otod.core import results as results_io
from otod.core.axes import named_records
from otod.core.errors import Abandoned, Interrupted, OtodError, ShareDone, ShareWritten
from otod.core.methods import check_admits, lookup, programs
from otod.core.precision import MATMUL_PRECISION, exact_float32
from otod.core.registry import SweepKind, sweep_kind
from otod.core.resources import release_free_memory
from otod.core.stopping import STATUS_NAMES, Status, Target

#: The default multipliers of the reference step for ``--lr tuned``: 12 log-spaced from 0.1 to 3, and 1 itself,
#: so tuned is never worse than the reference step.
DEFAULT_LR_GRID = tuple(sorted({float(v) for v in np.geomspace(0.1, 3.0, 12)} | {1.0}))
#: The iteration cap's upper limit (an int32 counter; ~10⁸ iterations would run for hours anyway).
MAX_ITERS_LIMIT = 100_000_000
CHUNK_SECONDS = 5.0
#: A program's blocks are compacted (`compacted_programs`) when its chunks are predicted to run at least this many
#: lane-iterations: at the 1–10 µs a depth or toy lane-iteration costs on the development machine, 5–50 s of
#: work, against the 0.8 s of compile time the compacting loop added to a depth program (measured: 2 programs,
#: 1.9 s → 3.5 s). Below it (`otod sweep depth --depth 4,8 --init xavier`, 2.1·10⁶ a program) compaction saved 3%
#: of the lane-iterations, less than it cost to compile.
COMPACT_LANE_ITERATIONS = 5e6
#: A program's backend compile, in seconds, before the sweep has measured one (`spans_devices`): measured on the
#: 2-core development machine, 0.5–0.7 s a default condition program, 1.3–1.4 s a depth-5 adam one.
FIRST_COMPILE_SECONDS = 1.0
#: Seconds per float of lane state per lane-iteration, measured on the 2-core development machine (65 ns per
#: lane-iteration at d = 64 in the eigen basis, 3.1 µs at d = 100 rotated: both ~0.15 ns per float).
SECONDS_PER_FLOAT_ITERATION = 1.5e-10
#: Longer estimated sweeps are refused unless ``yes``.
MAX_SECONDS = 3600.0
#: At most this fraction of the free memory may be planned for.
MEMORY_FRACTION = 0.7


@dataclass(frozen=True)
class SweepConfig:
    """Everything that determines a sweep's numbers (and so its results file name).

    sweep: the registered sweep kind ("condition"); axes: (axis name, values) pairs, traced or static as the kind
    declares; problem: the problem spec (a static axis replaces the spec field of its name); methods; target (tol,
    ladder, check_every); max_iters None: the kind's automatic cap; lr: "theory" (each method's reference step),
    "tuned" (one multiplier of it per point from ``lr_grid``, by the median over seeds) or a number (one absolute
    step); x64 None: the kind's precision rule; options: the method options; chunk_seconds: planned work per
    chunk.
    """

    sweep: str
    axes: tuple
    problem: Any
    methods: tuple[str, ...]
    target: Target = field(default_factory=Target)
    max_iters: int | None = None
    seeds: int = 8
    seed: int = 0
    lr: str | float = "theory"
    lr_grid: tuple[float, ...] = DEFAULT_LR_GRID
    x64: bool | None = None
    options: Any = None
    chunk_seconds: float = CHUNK_SECONDS

    def __post_init__(self):
        kind = self.kind
        axes = dict(self.axes)
        checked = tuple((a.name, a.check(axes.pop(a.name))) for a in kind.axes if a.name in axes)
        if axes:
            raise OtodError(f"{self.sweep} sweeps have no axis {next(iter(axes))!r}; axes: "
                            f"{', '.join(a.name for a in kind.axes)}")
        if not any(kind.axis(n).traced for n, _ in checked):
            raise OtodError(f"a {self.sweep} sweep needs values for {kind.axes[0].option}, e.g. "
                            f"{kind.axes[0].option} {kind.axes[0].example}")
        object.__setattr__(self, "axes", checked)
        object.__setattr__(self, "methods", tuple(self.methods))
        object.__setattr__(self, "lr_grid", tuple(float(v) for v in self.lr_grid))
        if self.options is None:
            object.__setattr__(self, "options", kind.options())
        if not isinstance(self.seeds, int) or self.seeds < 1:
            raise OtodError(f"--seeds {self.seeds}: need an integer ≥ 1, e.g. --seeds 8")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise OtodError(f"--seed {self.seed}: need an integer ≥ 0, e.g. --seed 1")
        if self.max_iters is not None and (not isinstance(self.max_iters, int)
                                           or not 1 <= self.max_iters <= MAX_ITERS_LIMIT):
            raise OtodError(f"--max-iters {self.max_iters}: need an integer from 1 to {MAX_ITERS_LIMIT:.0e}, "
                            "e.g. --max-iters 10000")
        if not self.methods:
            raise OtodError("--method: no methods given, e.g. --method gd,heavy-ball")
        for spec in self.specs():
            family = spec.family()
            for name in self.methods:
                check_admits(family.provides, lookup(kind.methods, name, self.sweep), name, spec.kind)
        if isinstance(self.lr, str) and self.lr not in ("theory", "tuned"):
            raise OtodError(f"--lr {self.lr}: use theory, tuned or a positive number, e.g. --lr 0.01")
        if not isinstance(self.lr, str) and not (self.lr > 0 and math.isfinite(self.lr)):
            raise OtodError(f"--lr {self.lr}: a learning rate must be a positive number, e.g. --lr 0.01")
        if not self.lr_grid or min(self.lr_grid) <= 0:
            raise OtodError("--lr-grid: multipliers must be positive, e.g. --lr-grid 0.1..3:12:log")
        if not self.chunk_seconds > 0:
            raise OtodError(f"--chunk-seconds {self.chunk_seconds}: must be positive, e.g. --chunk-seconds 5")
        kind.validate(self)

    @property
    def kind(self) -> SweepKind:
        return sweep_kind(self.sweep)

    def values(self, name: str) -> tuple[float, ...]:
        return dict(self.axes)[name]

    @property
    def main_axis(self) -> str:
        """The axis fits and figures put on x: the kind's first axis that this sweep varies."""
        names = dict(self.axes)
        return next(a.name for a in self.kind.axes if a.name in names)

    @property
    def traced_axes(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.axes if self.kind.axis(n).traced)

    @property
    def static_axes(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.axes if not self.kind.axis(n).traced)

    def traced_points(self) -> list[dict[str, float]]:
        names = self.traced_axes
        return [dict(zip(names, combo)) for combo in itertools.product(*(self.values(n) for n in names))]

    def static_points(self) -> list[dict[str, float]]:
        names = self.static_axes
        return [dict(zip(names, combo)) for combo in itertools.product(*(self.values(n) for n in names))]

    def spec_at(self, static_point: dict[str, float]):
        """The problem spec at one static point (its fields replaced by the static axis values)."""
        return dataclasses.replace(self.problem, **{k: int(v) for k, v in static_point.items()})

    def specs(self) -> list:
        return [self.spec_at(p) for p in self.static_points()]

    @property
    def resolved_max_iters(self) -> int:
        return self.max_iters if self.max_iters is not None else int(self.kind.max_iters(self))

    @property
    def resolved_x64(self) -> bool:
        return bool(self.x64) if self.x64 is not None else bool(self.kind.x64(self))

    @property
    def relative_lr(self) -> bool:
        return isinstance(self.lr, str)

    def tuned(self, method: str) -> bool:
        """Whether a method's learning rate is tuned: under ``--lr tuned``, and under ``--lr theory`` for a method
        whose reference step is no theory (``Method.tuned_by_default``: Adam's 1e-2 is scale-dependent)."""
        return self.lr == "tuned" or (self.lr == "theory" and self.kind.methods[method].tuned_by_default)

    def rates_for(self, method: str) -> tuple[float, ...]:
        """The per-lane lr values of one method: the grid where it is tuned, else `learning_rates`."""
        return self.lr_grid if self.tuned(method) else self.learning_rates

    @property
    def learning_rates(self) -> tuple[float, ...]:
        """The per-lane lr values: multipliers of the reference step (theory, tuned) or the absolute step."""
        if self.lr == "theory":
            return (1.0,)
        if self.lr == "tuned":
            return self.lr_grid
        return (float(self.lr),)

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["axes"] = {n: list(v) for n, v in self.axes}
        # A spec field left at None (an optional setting not given) is left out, so adding such a field to a
        # problem keeps the digests, and so the results files, of the configs written before it.
        d["problem"] = {"kind": self.problem.kind,
                        **{k: v for k, v in dataclasses.asdict(self.problem).items() if v is not None}}
        d["target"] = dataclasses.asdict(self.target)
        d["options"] = dataclasses.asdict(self.options)
        d["resolved"] = {"max_iters": self.resolved_max_iters, "x64": self.resolved_x64,
                         "learning_rates": list(self.learning_rates)}
        return results_io.jsonable(d)

    def digest(self) -> str:
        """A short hash of the config: the results file's name and the key for resuming (`config_digest`)."""
        return config_digest(self.to_dict())

    def legacy_digest(self) -> str:
        """The digest otod wrote before `config_digest` left out what does not change the records: a finished
        file of that version still reads back."""
        return results_io.digest(self.to_dict())

    def rung(self, tol: float | None) -> int | None:
        """The ladder rung a report at ``tol`` reads (None: the sweep's own tol, whose counts the records hold);
        a tol the run did not record raises `OtodError` listing the recorded ones."""
        if tol is None or tol == self.target.tol:
            return None
        return self.target.index(tol)

    @classmethod
    def from_dict(cls, d: dict) -> "SweepConfig":
        """Rebuild a config stored in a results file (or a journal): the one typed reading of
        ``meta["config"]`` for every report."""
        kind = sweep_kind(d["sweep"])
        p = dict(d["problem"])
        spec = kind.problems[p.pop("kind")](**p)
        t = d["target"]
        return cls(sweep=d["sweep"], axes=tuple((n, tuple(v)) for n, v in d["axes"].items()), problem=spec,
                   methods=tuple(d["methods"]),
                   target=Target(tol=t["tol"], kind=t["kind"], ladder=tuple(t["ladder"]),
                                 check_every=t["check_every"]),
                   max_iters=d["max_iters"], seeds=d["seeds"], seed=d["seed"], lr=d["lr"],
                   lr_grid=tuple(d["lr_grid"]), x64=d["x64"], options=kind.options(**d["options"]),
                   chunk_seconds=d.get("chunk_seconds", CHUNK_SECONDS))


def lane_count(config: SweepConfig) -> int:
    """The sweep's lanes (records), from the grid's sizes alone: static points × the method's traced points ×
    seeds × rates, summed over methods."""
    statics = math.prod(len(config.values(n)) for n in config.static_axes)
    return statics * config.seeds * sum(len(method_points(config, m)) * len(config.rates_for(m))
                                        for m in config.methods)


def method_points(config: SweepConfig, method: str) -> list[int]:
    """Indices (into `SweepConfig.traced_points`) of the traced points a method runs at: all of them, except that
    a method which ignores an axis (``SweepKind.ignores``: SGD has no momentum β) runs only at its first value."""
    points = config.traced_points()
    ignored = [a for a in (config.kind.ignores(method) if config.kind.ignores else ()) if a in config.traced_axes]
    if not ignored:
        return list(range(len(points)))
    first = {a: config.values(a)[0] for a in ignored}
    return [i for i, p in enumerate(points) if all(p[a] == v for a, v in first.items())]


def lane_rates(config: SweepConfig, method: str, points: list[dict], point_indices, rate_indices) -> np.ndarray:
    """Each lane's lr value: the method's grid value (`SweepConfig.rates_for`) times the kind's ``lr_scale`` at the
    lane's traced point (1 without one, and for an absolute --lr)."""
    rates = np.asarray(config.rates_for(method), float)[np.asarray(rate_indices, int)]
    if config.kind.lr_scale is None or not config.relative_lr:
        return rates
    scale = {i: float(config.kind.lr_scale(config, method, points[i])) for i in set(int(i) for i in point_indices)}
    return rates * np.asarray([scale[int(i)] for i in point_indices])


#: Config fields that do not change a single record (tested): left out of the digest, so changing them neither
#: renames the results file nor orphans a journal.
NOT_IN_DIGEST = ("chunk_seconds",)


def config_digest(config: dict) -> str:
    """A short hash of a config dict without `NOT_IN_DIGEST`: two configs share it exactly when their records
    are the same."""
    return results_io.digest({k: v for k, v in config.items() if k not in NOT_IN_DIGEST})


def default_path(config: SweepConfig, out_dir: str | Path = "results") -> Path:
    """``<out>/<sweep>-<digest>.parquet``: one file per distinct config, so the same command resumes the same
    file. A file of the same name in a format otod wrote by default before (``.json``, ``.npz``) is kept, where it
    or its journal exists: the same command reads it back or resumes it (`existing_default`)."""
    return existing_default(Path(out_dir) / f"{config.sweep}-{config.digest()}")


def existing_default(stem: Path) -> Path:
    """``stem`` with the first results suffix (`otod.core.results.SUFFIXES`, the default first) whose file or
    journal exists beside it, else with the default ``.parquet``."""
    for suffix in results_io.SUFFIXES:
        path = stem.with_name(stem.name + suffix)
        if path.exists() or results_io.journals(path):
            return path
    return stem.with_name(stem.name + results_io.SUFFIXES[0])


# -- the plan: chunks of whole points, and estimates before anything is allocated ------------------------------


class Chunk(NamedTuple):
    """One compiled call: one method (of its program) at one static point, over a run of traced points (padded to
    the common chunk length by repeating the last one), in order of predicted cost, ``block_points`` points per
    block of lanes (the same for every chunk of a program, so it compiles once)."""

    key: str
    static_index: int
    program: tuple[str, ...]
    method_index: int
    point_indices: tuple[int, ...]
    n_points: int
    block_points: int = 1


def predicted_iterations(config: SweepConfig, point: dict, method: str) -> float:
    """The theory's count at a point where it has one (capped), else the cap: the cost model of planning."""
    cap = config.resolved_max_iters
    theory = config.kind.theory
    guess = None
    if theory is not None and config.relative_lr:
        guess = theory.iterations(config, point, method)
    return float(min(cap, guess)) if guess is not None and math.isfinite(guess) else float(cap)


def predicted_costs(config: SweepConfig) -> dict[str, list[float]]:
    """`predicted_iterations` of every traced point (in `SweepConfig.traced_points` order), by method."""
    points = config.traced_points()
    return {name: [predicted_iterations(config, p, name) for p in points] for name in config.methods}


def lane_seconds(spec) -> float:
    """Predicted seconds of one lane-iteration of a problem spec on this machine."""
    return max(64, spec.family().floats_per_lane) * SECONDS_PER_FLOAT_ITERATION


def plan(config: SweepConfig, costs: dict[str, list[float]] | None = None) -> list[Chunk]:
    """The chunks of a sweep, in run order.

    Each method's points run in order of predicted cost (`predicted_iterations`: the theory's count where there
    is one), so the lanes that share a block, and a chunk, finish at about the same iteration instead of waiting
    for a slow neighbour. The block size comes from the engine's cost model
    (`otod.core.engine.choose_points_per_block`) on those predictions, one per (static point, program). Chunk
    lengths are equal per (static point, program) so each program compiles once, a multiple of the block where
    possible (``costs``: `predicted_costs`, computed here when not given); the length is the number of points whose predicted work, at the program's heaviest point, is about
    ``chunk_seconds`` (at most 1000 chunks per method). A chunk's key names its points, so a journal written under
    another plan is never mistaken for this one's.
    """
    from otod.core.engine import choose_points_per_block

    points = config.traced_points()
    costs = predicted_costs(config) if costs is None else costs
    chunks = []
    for si, spec in enumerate(config.specs()):
        seconds = lane_seconds(spec)
        for program in programs(config.kind.methods, config.methods):
            per_point_lanes = config.seeds * max(len(config.rates_for(name)) for name in program)
            orders = {name: sorted(method_points(config, name), key=lambda i, c=costs[name]: (c[i], i))
                      for name in program}
            heaviest = max(max(costs[name]) for name in program)
            per_chunk = max(1, min(len(points), int(config.chunk_seconds // max(heaviest * per_point_lanes
                                                                                  * seconds, 1e-12))))
            per_chunk = max(per_chunk, -(-len(points) // 1000))
            block = max(choose_points_per_block([costs[name][i] for i in orders[name]], per_point_lanes, seconds)
                        for name in program)
            if per_chunk >= block:
                per_chunk -= per_chunk % block
            block = min(block, per_chunk)
            for mi, name in enumerate(program):
                order = orders[name]
                for c, start in enumerate(range(0, len(order), per_chunk)):
                    idx = order[start:start + per_chunk]
                    n = len(idx)
                    idx += [idx[-1]] * (per_chunk - n)
                    tag = hashlib.sha256(repr(idx).encode()).hexdigest()[:8]
                    chunks.append(Chunk(f"{si}/{name}/{c}/{tag}", si, program, mi, tuple(idx), n, block))
    return chunks


class Estimate(NamedTuple):
    lanes: int
    lane_iterations: float
    seconds: float
    bytes: float


def estimate(config: SweepConfig) -> Estimate:
    """Lanes, predicted lane-iterations and seconds, and peak bytes (per-seed draws + one block's lane state +
    a chunk's outputs) of a sweep, from the families' declared sizes: nothing is drawn or allocated."""
    from otod.core.engine import BLOCK_LANES

    itemsize = 8 if config.resolved_x64 else 4
    points = config.traced_points()
    lanes, work, seconds, peak = 0, 0.0, 0.0, 0.0
    for spec in config.specs():
        family = spec.family()
        seconds += config.seeds * family.seconds_per_seed
        for name in config.methods:
            per_point = config.seeds * len(config.rates_for(name))
            block = max(BLOCK_LANES, per_point)
            peak = max(peak, itemsize * (config.seeds * family.floats_per_seed + 2 * block * family.floats_per_lane)
                       + 64 * per_point * len(points))
            run = [points[i] for i in method_points(config, name)]
            its = sum(predicted_iterations(config, p, name) for p in run) * per_point
            lanes += per_point * len(run)
            work += its
            seconds += its * lane_seconds(spec)
    return Estimate(lanes, work, seconds, peak)


def check_estimate(config: SweepConfig, yes: bool = False, available: int | None = None,
                   processes: int = 1, smaller: str | None = None,
                   estimated: Estimate | None = None) -> Estimate:
    """Refuse with one line what cannot fit in memory, or would take longer than an hour (shared among
    ``processes``) without ``yes``. ``smaller`` names the options that shrink this sweep (the command's own);
    ``estimated`` is an estimate made already (the command line's, from a sample of a long axis), else
    `estimate`."""
    from otod.core.resources import memory_available

    e = estimate(config) if estimated is None else estimated
    hint = smaller or "a smaller problem (--dim, --shape, --basis eigen) or fewer seeds"
    available = memory_available() if available is None else available
    if available is not None and e.bytes > MEMORY_FRACTION * available:
        raise OtodError(f"{config.sweep} sweep: needs about {e.bytes / 2**30:.3g} GiB of memory and "
                        f"{available / 2**30:.3g} GiB is free; use {hint}")
    if e.seconds / processes > MAX_SECONDS and not yes:
        where = "this machine" if processes == 1 else f"each of {processes} processes"
        raise OtodError(f"{config.sweep} sweep: about {e.lane_iterations:.3g} lane-iterations, an estimated "
                        f"{e.seconds / processes / 3600:.1f} h on {where}; use {smaller or 'a narrower grid'}, "
                        "lower --max-iters, or pass --yes")
    return e


# -- running ------------------------------------------------------------------------------------------------------


@contextmanager
def deferred_interrupt() -> Iterator[dict]:
    """While a sweep runs, Ctrl-C sets a flag the runner reads when the current chunk ends, and says so on stderr;
    a second Ctrl-C interrupts at once (the engine's wait turns it into `Abandoned`). Only in the main thread; elsewhere signals are left alone."""
    flag = {"count": 0}
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return

    def handler(signum, frame):
        flag["count"] += 1
        if flag["count"] > 1:
            raise KeyboardInterrupt
        sys.stderr.write("\notod: stopping once the running chunks are saved; Ctrl-C again stops at once, losing them\n")
        sys.stderr.flush()

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield flag
    finally:
        signal.signal(signal.SIGINT, previous)


def _lanes(config: SweepConfig, points: list[dict], chunk: Chunk):
    """Per-lane arrays of a chunk, ordered [point, rate, seed]: traced axis values, seeds, rates, method index."""
    rates = config.rates_for(chunk.program[chunk.method_index])
    grid = [(p, r, s) for p in chunk.point_indices for r in range(len(rates)) for s in range(config.seeds)]
    idx = np.asarray(grid, dtype=np.int64).reshape(-1, 3)
    axis_values = {n: np.asarray([points[i][n] for i in idx[:, 0]], float) for n in config.traced_axes}
    name = chunk.program[chunk.method_index]
    return idx, axis_values, idx[:, 2], lane_rates(config, name, points, idx[:, 0], idx[:, 1])


def _records(config: SweepConfig, points, static_point, chunk: Chunk, idx, solution) -> list[dict]:
    primary = config.target.index(config.target.tol)
    gap_name = "final_gap" if config.target.kind == "relative" else "final_loss"
    name = chunk.program[chunk.method_index]
    rates = config.rates_for(name)
    n_real = chunk.n_points * config.seeds * len(rates)
    multipliers = lane_rates(config, name, points, idx[:n_real, 0], idx[:n_real, 1])
    named = config.kind.record_fields  # the kind's own named fields, per point (a batch from B/d·d)
    fields = {p: named(config, point={**static_point, **points[p]}) if named else {}
              for p in dict.fromkeys(int(p) for p in idx[:n_real, 0])}
    rows = []
    for i in range(n_real):
        hits = [int(h) if h >= 0 else None for h in solution.hits[i]]
        hit = hits[primary]
        status = int(solution.status[i])
        rows.append({
            "sweep": config.sweep, **{k: float(v) for k, v in static_point.items()},
            **{k: config.kind.axis(k).record_value(v) for k, v in points[idx[i, 0]].items()},
            "method": name, "seed": int(idx[i, 2]),
            "lr_multiplier": float(multipliers[i]) if config.relative_lr else None,
            "learning_rate": float(solution.learning_rate[i]),
            "iterations": hit if hit is not None else int(solution.iterations[i]),
            "status": "converged" if hit is not None else STATUS_NAMES[status if status != Status.CONVERGED
                                                                       else int(Status.CENSORED)],
            gap_name: float(solution.final_metric[i]), "hits": hits, **fields[int(idx[i, 0])],
        })
    rows = [rows[i] for i in sorted(range(n_real), key=lambda i: (idx[i, 0], idx[i, 1], idx[i, 2]))]
    if config.kind.annotate:
        config.kind.annotate(config, static_point, rows)
    if chooses_settings(config) and marks_per_chunk(config):
        mark_selection(config, rows)
    return rows


def chooses_settings(config: SweepConfig) -> bool:
    """Whether some point of the sweep has more than one setting to choose from: a tuned method's lr grid, or
    several β (a traced ``beta`` axis)."""
    return len(dict(config.axes).get("beta", ())) > 1 or any(len(config.rates_for(m)) > 1 for m in config.methods)


def marks_per_chunk(config: SweepConfig) -> bool:
    """Whether every chunk holds all the settings of its points, so that it can be marked as it is journalled:
    a point's rates are lanes of one chunk, but several β are several traced points, which chunks may split
    (those sweeps are marked once every chunk is in, by `finish`)."""
    return len(dict(config.axes).get("beta", ())) <= 1


def mark_selection(config: SweepConfig, records: list[dict], point: tuple[str, ...] | None = None) -> None:
    """Write ``selected``, ``lr_on_edge`` and ``beta_on_edge`` into every record of whole points (a chunk's, or
    the sweep's), in place, by `otod.core.analysis.mark_selection`, and drop the ``lr_selected`` of journals
    written before (the same marks under their old name, lr only). ``point``: the fields naming a point (default:
    the config's axes; ``beta`` among them is a setting, not a point)."""
    from otod.core.analysis import frame_of
    from otod.core.analysis import mark_selection as marked

    point = tuple(config.static_axes) + tuple(config.traced_axes) if point is None else point
    fields = point + ("method", "seed", "lr_multiplier", "learning_rate", "status", "iterations")
    marks = marked(frame_of(records, fields), point)[["selected", "lr_on_edge", "beta_on_edge"]].to_numpy()
    for r, (chosen, lr_edge, beta_edge) in zip(records, marks.tolist()):
        r.pop("lr_selected", None)
        r.update(selected=chosen, lr_on_edge=lr_edge, beta_on_edge=beta_edge)


def lane_work(chunks: list[dict]) -> dict:
    """Lane-iterations executed by the while loops (every lane of a block runs until the block's slowest lane
    stops) against those the lanes needed (their own counts): ``ratio`` 1 means no lane waited. Chunks journalled
    before this was recorded are left out of both sums."""
    known = [c for c in chunks if "lane_iterations" in c]
    executed = sum(c["lane_iterations"] for c in known)
    needed = sum(c["iterations_needed"] for c in known)
    return {"executed": executed, "needed": needed, "ratio": executed / needed if needed else None}


def chunk_lane_iterations_predicted(config: SweepConfig, chunk: Chunk, costs: dict[str, list[float]]) -> float:
    """A chunk's predicted lane-iterations: its points' predicted counts (`predicted_iterations`) × their lanes."""
    name = chunk.program[chunk.method_index]
    lanes = config.seeds * len(config.rates_for(name))
    return sum(costs[name][i] for i in chunk.point_indices[:chunk.n_points]) * lanes


def chunk_seconds_predicted(config: SweepConfig, chunk: Chunk, costs: dict[str, list[float]], spec) -> float:
    """A chunk's predicted seconds (its points' theory counts × lanes × a lane-iteration's time): what the
    processes of a distributed sweep balance."""
    return chunk_lane_iterations_predicted(config, chunk, costs) * lane_seconds(spec)


def compacted_programs(config: SweepConfig, chunks: list[Chunk], costs: dict[str, list[float]]) -> set:
    """The (static point, program) pairs whose engine calls compact their blocks' last running lanes
    (`otod.core.engine.compact_width`): those whose chunks are predicted to run at least
    `COMPACT_LANE_ITERATIONS` together. Decided per program, so that each compiles once. Compaction only removes
    waiting, and its second loop costs compile time: a short program, or one whose counts theory predicts (the
    condition sweeps: blocks formed by the predicted counts finish together), would not pay it back."""
    work: dict = {}
    for c in chunks:
        key = (c.static_index, c.program)
        work[key] = work.get(key, 0.0) + chunk_lane_iterations_predicted(config, c, costs)
    return {key for key, predicted in work.items() if predicted >= COMPACT_LANE_ITERATIONS}


def eta_seconds(done: list[tuple[float, float]], left: list[float], compile_seconds: float = 0.0,
                programs_left: int = 0) -> float:
    """Seconds left, from the cost model. ``done`` holds (predicted, measured) seconds of the chunks run so far
    (measured without compiling), ``left`` the predicted seconds of those to come. A chunk costs a·predicted + b:
    b is its fixed cost (dispatch, records, the journal's write), fitted with a by least squares on ``done``
    (a ≥ 0, b ≥ 0); each of the ``programs_left`` programs not compiled yet adds ``compile_seconds``.

    Measured on ``otod sweep condition --k 1..100 --lr tuned`` (41,600 lanes, 8 s): the 0.006-0.02 s predicted
    heavy-ball chunks each took about 0.2 s, and the last program's compile 3 s. With 2.1 s left this ETA said
    2.8 s, counting lanes done said 1.9 s; on ``--k 1..1e4:25:log`` with 2.4 s left, 1.7 s against 0.9 s. Fewer
    than two chunks run: infinite (unknown)."""
    if not left:
        return 0.0
    if len(done) < 2:  # one chunk cannot tell the fixed cost from the scale: "ETA ?"
        return math.inf
    from otod.core.analysis import fit_line

    x, y = np.asarray(done, float).T
    if np.ptp(x) > 0:
        a, b = (float(v) for v in fit_line(x, y)[:2])
        if b < 0:
            a, b = float(y.sum() / max(x.sum(), 1e-12)), 0.0
        elif a < 0:
            a, b = 0.0, float(y.mean())
    else:  # equal predictions cannot separate the two: trust the cost model's proportions
        a, b = float(y.sum() / max(x.sum(), 1e-12)), 0.0
    return float(a * np.sum(left) + b * len(left) + compile_seconds * programs_left)


def share_owners(config: SweepConfig, chunks: list[Chunk], count: int,
                 costs: dict[str, list[float]] | None = None) -> list[int]:
    """The share (0 to ``count`` − 1) that runs each chunk: `otod.core.distributed.share` of the whole plan by
    predicted cost. It depends on the plan alone, not on what is done, so a rerun gives each process the same
    share and it finishes only its missing chunks."""
    from otod.core.distributed import share

    if count == 1:
        return [0] * len(chunks)
    costs, specs = predicted_costs(config) if costs is None else costs, config.specs()
    return share([chunk_seconds_predicted(config, c, costs, specs[c.static_index]) for c in chunks], count)


def share_of(config: SweepConfig, chunks: list[Chunk], index: int, count: int,
             costs: dict[str, list[float]] | None = None) -> list[Chunk]:
    """The chunks process (or ``--share``) ``index`` of ``count`` runs (`share_owners`)."""
    return [c for c, p in zip(chunks, share_owners(config, chunks, count, costs)) if p == index]


def missing_shares(config: SweepConfig, chunks: list[Chunk], done: dict, count: int) -> list[tuple[int, int, int]]:
    """(share index, its chunks absent from ``done``, its chunks) for each of ``count`` shares of the plan
    ``chunks`` that misses a chunk, in share order."""
    owner = share_owners(config, chunks, count)
    size = [owner.count(i) for i in range(count)]
    lost = [sum(c.key not in done for c, p in zip(chunks, owner) if p == i) for i in range(count)]
    return [(i, lost[i], size[i]) for i in range(count) if lost[i]]


def finished_chunks(path: Path, digest: str, own: Path | None = None) -> dict[str, dict]:
    """Every finished chunk of the sweep ``digest`` in the journals beside ``path`` (``.partial`` and the part
    files of distributed runs), by key. Only ``own`` (this process's journal) is repaired after a kill; the
    others are read as they are, since their writers may be running."""
    done = {}
    for jpath in results_io.journals(path):
        _, chunks = results_io.read_journal(jpath, digest, repair=jpath == own)
        done.update({c["key"]: c for c in chunks})
    return done


def next_chunk(waiting: list[Chunk], slot, compiled: dict, compile_seconds: dict,
               expected: dict[str, float]) -> int | None:
    """Which of the ``waiting`` chunks (in plan order) the free device ``slot`` runs next: the first whose
    program is compiled for it; else the first of a program compiled nowhere yet; else the first of a program
    compiled for another device whose waiting chunks are expected (`expected_seconds`) to take longer than that
    compile took (a program compiles once per device). None: the device waits for a chunk compiled elsewhere to
    end."""
    def key(c: Chunk):
        return c.static_index, c.program

    for i, c in enumerate(waiting):
        if slot in compiled.get(key(c), ()):
            return i
    for i, c in enumerate(waiting):
        if key(c) not in compiled:
            return i
    left: dict = {}
    for c in waiting:
        left[key(c)] = left.get(key(c), 0.0) + expected[c.key]
    for i, c in enumerate(waiting):
        if left[key(c)] > compile_seconds.get(key(c), 0.0):
            return i
    return None


def expected_seconds(chunks: list[Chunk], predicted: dict[str, float],
                     ratios: dict[str, list[float]]) -> dict[str, float]:
    """Each chunk's predicted seconds scaled by the median of measured over predicted seconds of the sweep's
    finished chunks of its method (``ratios``, by method name), else of every finished chunk, else as predicted;
    the medians once per call, not per chunk. The cost model counts a method's iterations from theory, which
    adam's and the momentum methods' tuned rates do not follow (measured on ``otod sweep depth --depth 5,6 --init
    xavier --method heavy-ball,adam``: adam chunks predicted at 1.8–4.6 s took 9.8–21 s)."""
    every = [r for rs in ratios.values() for r in rs]
    fallback = float(np.median(every)) if every else 1.0
    scale = {name: float(np.median(rs)) for name, rs in ratios.items() if rs}
    return {c.key: predicted[c.key] * scale.get(c.program[c.method_index], fallback) for c in chunks}


def spans_devices(chunk: Chunk, compile_seconds: dict, seconds: float) -> bool:
    """Whether a sweep's last chunk has its blocks dealt among every device rather than run on one beside the others.
    On one device it takes ``seconds``, W (`expected_seconds`); on two, about W/2 after one more compile c (each
    device's program has the one-device shape, `otod.core.engine.dispatch`'s ``one_device_shape``, so it compiles
    only for a device it has not run on), so it spans when it has two blocks or more and W > 2c. c is its program's
    measured compile, else the slowest compile of the sweep so far, else `FIRST_COMPILE_SECONDS`. Side by side the
    last chunk would run alone on one device while the others idle (measured on ``otod sweep depth --depth 5,6
    --init xavier --method heavy-ball,adam``: the last adam chunk, 18 s, ran alone)."""
    blocks = -(-chunk.n_points // chunk.block_points)
    c = compile_seconds.get((chunk.static_index, chunk.program),
                            max(compile_seconds.values(), default=FIRST_COMPILE_SECONDS))
    return blocks > 1 and seconds > 2 * c


def points_settings(config: SweepConfig) -> dict:
    """The config less its points (`otod.core.reuse.settings_of`): equal for two sweeps exactly when they give
    every point they share the same records, on the same arithmetic."""
    from otod.core.reuse import settings_of

    return settings_of(config.to_dict(), NOT_IN_DIGEST)


class Partly(NamedTuple):
    """A chunk some of whose points were read (`reuse_points`): ``rest`` runs the others, and its records join
    ``held`` (point index: records) under the chunk's own ``key``."""

    key: str
    rest: Chunk
    held: dict[int, list[dict]]
    sources: tuple[str, ...]


def reuse_points(config: SweepConfig, path: Path, own: Path, pending: list[Chunk], points: list[dict],
                 statics: list[dict], done: dict) -> dict[str, Partly]:
    """Read what the finished results files beside ``path`` hold of the ``pending`` chunks' points
    (`otod.core.reuse`): a chunk held whole goes into ``done`` (and the journal ``own``); one held in part is
    returned as a `Partly`, by the key of its ``rest``, a chunk of the same length (so the same program) over
    the points left. Says on stderr how many lanes came from which files."""
    from otod.core.reuse import gather, held_points, in_point_order, matching_files

    if not pending or not path.parent.is_dir():
        return {}
    files = matching_files(path.parent, config.sweep, points_settings(config), results_io.environment(),
                           NOT_IN_DIGEST, path)
    if not files:
        return {}
    pool = gather(config, files)
    partly, lanes, sources = {}, 0, set()
    for chunk in pending:
        name = chunk.program[chunk.method_index]
        held = held_points(config, points, statics[chunk.static_index], chunk, pool,
                           lambda p, r, name=name: lane_rates(config, name, points, [p] * len(r), r))
        if not held:
            continue
        names = tuple(sorted({f.name for _, f in held.values()}))
        rows = {p: got for p, (got, _) in held.items()}
        lanes += sum(len(got) for got in rows.values())
        sources |= set(names)
        left = [p for p in chunk.point_indices[:chunk.n_points] if p not in held]
        if left:
            idx = left + [left[-1]] * (len(chunk.point_indices) - len(left))
            rest = chunk._replace(key=f"{chunk.key}+rest", point_indices=tuple(idx), n_points=len(left))
            partly[rest.key] = Partly(chunk.key, rest, rows, names)
            continue
        records = in_point_order(chunk, [], rows, 0)
        extra = {"reused": list(names), "reused_lanes": len(records)}
        done[chunk.key] = {**results_io.append_chunk(own, chunk.key, records, extra), **extra, "records": records}
    if lanes:
        sys.stderr.write(f"otod: {lanes} lanes read from {', '.join(sorted(sources))}: measured there under the "
                         "same settings\n")
    return partly


def reused_summary(entries: list[dict]) -> dict:
    """``meta["reused"]``: the chunks and lanes of ``entries`` (finished chunks) read, whole or in part, from
    other results files (`reuse_points`), and those files' names."""
    taken = [e for e in entries if "reused" in e]
    return {"chunks": len(taken), "lanes": sum(e.get("reused_lanes", e["lanes"]) for e in taken),
            "from": sorted({name for e in taken for name in e["reused"]})}


@exact_float32()
def run_sweep(config: SweepConfig, path: str | Path | None = None, out_dir: str | Path = "results",
              progress: Callable[[dict], None] | None = None, yes: bool = False,
              extra_meta: Callable[[], dict] | None = None,
              processes: tuple[int, int] | None = None,
              share: tuple[int, int] | None = None, reuse: bool = True) -> results_io.Results:
    """Run, resume or read back a sweep; return its `Results`.

    The file is ``path``, or ``out_dir`` where it names a ``.parquet``, ``.json`` or ``.npz`` file, else
    `default_path` in the folder ``out_dir``; its suffix chooses the format.

    ``progress`` receives a dict after each chunk (lanes done and total, seconds so far, predicted seconds left).
    A complete file of the same config is read back (``meta["read_back"]`` is True in the returned object);
    a file of another config, or a damaged one, is refused. On several local devices (a CPU's cores,
    `otod.core.devices`) each runs a chunk of its own, side by side (`next_chunk` chooses which; one chunk alone
    runs on all of them); a chunk is saved as soon as it ends. Ctrl-C raises `Interrupted` once the running chunks
    are saved. ``extra_meta()`` is called once the last chunk is in, and its entries join the metadata, so the
    results file is written once.

    Distributed (``processes`` = (index, count), by default JAX's own after ``jax.distributed.initialize``):
    process ``index`` runs its `share_of` the plan into its part file ``<file>.part-<index>-of-<count>``, then
    every process meets at a barrier and process 0 merges the parts into the results file; the others raise
    `ShareDone` once it has. A process that dies loses only its chunk in flight: the same command finishes the
    missing chunks of every share (a one-process run finishes them too, reading the parts).

    One share alone (``share`` = (index, count), by default `otod.core.distributed.current_share`, which
    ``--share I/N`` sets): the same share runs into the same part file, with no runtime, barrier or merge; it
    raises `ShareWritten` once its chunks are in (`merge` joins the parts when every share has run).

    Matrix products run in the arrays' own precision on every device (`otod.core.precision`: no TF32 on a GPU).

    Points measured already (``reuse``, `otod.core.reuse`): the records of every point that a finished results
    file in the same folder holds, under the same settings and arithmetic, come from there instead of running (a
    chunk held in part runs its other points only, and is journalled whole once they end); ``meta["reused"]``
    says how many chunks and lanes came from which files.
    """
    import jax

    from otod.core.compilation_cache import count_compilations
    from otod.core.distributed import barrier, current_share
    from otod.core.distributed import processes as jax_processes
    from otod.core.engine import collect, dispatch, first_ready, seed_draws, watchdog_seconds
    from otod.core.reuse import in_point_order

    watchdog_seconds()  # a bad OTOD_WATCHDOG_SECONDS is refused before any file is written

    if path is None and Path(out_dir).suffix in results_io.SUFFIXES:  # --out FILE.npz names the file itself
        path = out_dir
    path = Path(path) if path is not None else default_path(config, out_dir)
    results_io.check_suffix(path)
    digest = config.digest()
    if share is None and processes is None:
        share = current_share()
    index, count = share or processes or jax_processes()
    merges = share is None and index == 0  # the process that writes the results file
    own = (results_io.journal_path(path) if count == 1 and share is None
           else results_io.part_path(path, index, count))
    started = time.perf_counter()
    with contextlib.ExitStack() as held:
        for locked in ([path] if merges else []) + ([own] if own != results_io.journal_path(path) else []):
            held.enter_context(results_io.lock(locked))
        if path.exists():
            existing = results_io.load(path)
            if existing.meta.get("digest") not in (digest, config.legacy_digest()):
                raise OtodError(f"results file {path}: holds another sweep (config {existing.meta.get('digest')}, "
                                f"this one is {digest}); choose another --out or move it away")
            return results_io.Results({**existing.meta, "read_back": True}, path=existing.path,
                                      _rows=existing._rows, _table=existing._table)
        guess = check_estimate(config, yes, processes=count)
        header, _ = results_io.read_journal(own, digest)
        journal_chunking = None if header is None else header["config"].get("chunk_seconds")
        if journal_chunking is not None and journal_chunking != config.chunk_seconds:
            # The chunk keys name their points: resume with the chunking the journal was written under.
            sys.stderr.write(f"otod: resuming {own} with its --chunk-seconds {journal_chunking:g} (the records do "
                             f"not depend on it; {config.chunk_seconds:g} applies to new sweeps)\n")
            config = dataclasses.replace(config, chunk_seconds=journal_chunking)
        if header is None:
            results_io.start_journal(own, {"digest": digest, "config": config.to_dict(), "process": index,
                                           "processes": count, "host": platform.node()})
        done = finished_chunks(path, digest, own)
        costs = predicted_costs(config)
        chunks = plan(config, costs)
        mine = share_of(config, chunks, index, count, costs)
        points, statics = config.traced_points(), config.static_points()
        resumed = sum(c.key in done for c in chunks)
        partly = reuse_points(config, path, own, [c for c in mine if c.key not in done], points, statics,
                              done) if reuse else {}
        rest_of = {p.key: p.rest for p in partly.values()}
        lanes_of = {c.key: c.n_points * config.seeds * len(config.rates_for(c.program[c.method_index]))
                    for c in chunks}
        total = sum(lanes_of[c.key] for c in mine)
        lanes_done = sum(lanes_of[c.key] for c in mine if c.key in done) + sum(
            len(rows) for part in partly.values() for rows in part.held.values())
        lanes_before = lanes_done
        draws_cache: dict = {}
        kind = config.kind
        dtype = np.float64 if config.resolved_x64 else np.float32

        def send(chunk: Chunk, targets: list):
            """Dispatch ``chunk`` to the ``targets`` devices (several: its blocks dealt among them, each device's
            program of the one-device shape)."""
            spec = config.spec_at(statics[chunk.static_index])
            if spec not in draws_cache:
                draws_cache[spec] = seed_draws(spec, config.seed, config.seeds, dtype)
            for other in list(draws_cache)[:-len(slots) - 1]:  # keep the draws of the static points running
                del draws_cache[other]
            idx, axis_values, seed_idx, lrs = _lanes(config, points, chunk)
            name = chunk.program[chunk.method_index]
            members = tuple(kind.methods[m] for m in chunk.program)
            group = (len(config.rates_for(chunk.program[chunk.method_index])), config.seeds)
            with jax.enable_x64(config.resolved_x64):
                return idx, dispatch(
                    spec, members, axis_values, seed_idx, lrs,
                    method_indices=np.full(len(seed_idx), chunk.method_index), seed=config.seed,
                    target=config.target, max_iters=config.resolved_max_iters, relative_lr=config.relative_lr,
                    options=config.options, group=group, draws=draws_cache[spec],
                    block_lanes=chunk.block_points * group[0] * group[1],
                    active=np.arange(len(seed_idx)) < chunk.n_points * group[0] * group[1],
                    costs=np.asarray(costs[name])[idx[:, 0]],
                    compact=(chunk.static_index, chunk.program) in compacting,
                    program=f"{config.sweep} program {'+'.join(chunk.program)} (chunk {chunk.key})",
                    devices=targets, one_device_shape=True)

        pending = [rest_of.get(c.key, c) for c in mine if c.key not in done]
        specs = config.specs()
        compacting = compacted_programs(config, chunks, costs)
        predicted = {c.key: chunk_seconds_predicted(config, c, costs, specs[c.static_index]) for c in pending}
        devices = jax.local_devices()
        slots = list(range(len(devices))) if len(devices) > 1 else [None]
        ran: list[tuple[float, float]] = []
        ratios: dict[str, list[float]] = {}  # by method: measured over predicted seconds of its finished chunks
        compiled: dict = {}  # (static point, program) -> the slots it is compiled for
        compile_seconds: dict = {}  # (static point, program) -> its first compile's seconds
        running: list = []  # (chunk, idx, dispatched, sent at, slot)
        waiting, free = list(pending), list(slots)
        per_slot = {("all" if slot is None else str(slot)): 0 for slot in slots + [None]}
        most_running = 0
        loads: list = []  # programs loaded from the persistent compilation cache instead of compiled
        with count_compilations(loads) as compiles, deferred_interrupt() as stop:

            def save_first():
                """Wait for the first running chunk to end, and save it."""
                nonlocal lanes_done
                try:
                    chunk, idx, sent, sent_at, slot = running.pop(
                        first_ready([r[2].outputs for r in running], [r[2].name for r in running]))
                    solution = collect(sent)
                except Abandoned as e:
                    raise Abandoned(f"{e}; {lanes_done} of {total} lanes are saved in the journal of {path}, and "
                                    "the same command resumes the sweep", e.interrupted) from None
                free.append(slot)
                seconds = time.perf_counter() - sent_at
                records = _records(config, points, statics[chunk.static_index], chunk, idx, solution)
                work = {"seconds": seconds, "lane_iterations": solution.lane_iterations,
                        "iterations_needed": int(sum(r["iterations"] for r in records))}
                key, ran_lanes = chunk.key, len(records)
                if key in partly:  # the points run join those read, under the planned chunk's key
                    part = partly[key]
                    key = part.key
                    held = sum(len(rows) for rows in part.held.values())
                    records = in_point_order(chunk, records, part.held, len(records) // chunk.n_points)
                    work.update(reused=list(part.sources), reused_lanes=held)
                done[key] = {**results_io.append_chunk(own, key, records, work), "records": records, **work}
                lanes_done += ran_lanes
                per_slot["all" if slot is None else str(slot)] += 1
                ran.append((predicted[chunk.key], seconds))
                ratios.setdefault(chunk.program[chunk.method_index], []).append(
                    seconds / max(predicted[chunk.key], 1e-9))
                if progress:
                    programs_left = {(c.static_index, c.program) for c in waiting} - set(compiled)
                    eta = eta_seconds(ran, [predicted[c.key] for c in waiting + [r[0] for r in running]],
                                      float(sum(compiles)) / max(len(compiled), 1), len(programs_left))
                    elapsed = time.perf_counter() - started
                    rate = (lanes_done - lanes_before) / max(elapsed, 1e-9)
                    progress({"lanes_done": lanes_done, "lanes_total": total, "elapsed": elapsed,
                              "lanes_per_second": rate, "eta": eta / len(slots), "chunk": chunk.key})


            while waiting or running:
                while free and waiting and not stop["count"]:
                    expected = expected_seconds(waiting, predicted, ratios)
                    choice = None
                    for slot in free:
                        i = next_chunk(waiting, slot, compiled, compile_seconds, expected)
                        if i is not None:
                            choice = (i, slot)
                            break
                    if choice is None:
                        if running:
                            break  # the waiting chunks' programs are compiled for busy devices: wait for one
                        where = compiled.get((waiting[0].static_index, waiting[0].program), set()) & set(free)
                        choice = (0, sorted(where, key=str)[0] if where else free[0])
                    i, slot = choice
                    chunk = waiting.pop(i)
                    free.remove(slot)
                    if not waiting and spans_devices(chunk, compile_seconds, expected[chunk.key]):
                        slot, free[:] = None, []  # the last chunk: on every device, once they are free
                    key = (chunk.static_index, chunk.program)
                    before = float(sum(compiles))
                    try:
                        # a spanning chunk goes first to the devices its program is compiled for: they start
                        # while the others compile
                        idx, sent = send(chunk, [devices[slot]] if slot is not None else sorted(
                            devices[:len(slots)], key=lambda d: devices.index(d) not in compiled.get(key, ())))
                    except Exception:
                        while running:  # a chunk sent already is saved before the error goes up
                            save_first()
                        raise
                    compile_seconds.setdefault(key, float(sum(compiles)) - before)
                    compiled.setdefault(key, set()).update(slots if slot is None else [slot])
                    running.append((chunk, idx, sent, time.perf_counter(), slot))
                    most_running = max(most_running, len(running))
                if not running:
                    break
                save_first()
            if stop["count"] and lanes_done < total:
                raise Interrupted(path, lanes_done, total)
        run = {"wall_time_s": time.perf_counter() - started, "compile_count": len(compiles), "cache_loads": len(loads),
               **({"reused": reused_summary([done[c.key] for c in mine if c.key in done])}
                  if any("reused" in done[c.key] for c in mine if c.key in done) else {}),
               "chunks_per_device": per_slot if slots != [None] else None, "most_running": most_running,
               "compile_time_s": float(sum(compiles)), "resumed_chunks": resumed, "estimate": guess._asdict()}
        if share is not None:
            raise ShareWritten(path, own, index, count, len(pending), lanes_done - lanes_before)
        if count == 1:
            return finish(config, path, chunks, done, run, extra_meta)
        barrier(f"otod/{digest}/ran")
        failure = None
        if index == 0:
            try:
                merged = finish(config, path, chunks, finished_chunks(path, digest), {**run, "processes": count},
                                extra_meta)
            except OtodError as e:
                failure = e
        barrier(f"otod/{digest}/merged")
        if failure is not None:
            raise failure
        if index != 0:
            raise ShareDone(path, index, count, len(pending), lanes_done - lanes_before)
        return merged


def finish(config: SweepConfig, path: Path, chunks: list[Chunk], done: dict[str, dict], run: dict,
           extra_meta: Callable[[], dict] | None = None, remove_journals: bool = True) -> results_io.Results:
    """Write the results file of a sweep whose every chunk is in ``done`` (records in plan order, metadata from
    the config, the run, the chunks' own work and this process's environment), then (``remove_journals``) remove
    the journals beside it. A missing chunk is refused in one line: the same sweep command finishes it."""
    missing = [c.key for c in chunks if c.key not in done]
    if missing:
        raise OtodError(f"results file {path}: {len(missing)} of {len(chunks)} chunks are in no journal or part "
                        f"file (first: {missing[0]}); run the same sweep command to finish them")
    release_free_memory()  # what the compiles and runs freed, before the metadata's theory allocates its own
    kind = config.kind
    records = [r for c in chunks for r in done[c.key]["records"]]
    sha256 = {c.key: done[c.key]["sha256"] for c in chunks}
    if chooses_settings(config) and not all("selected" in r for r in records):  # β split over chunks, or old journals
        mark_selection(config, records)
        sha256 = {c.key: results_io.records_checksum(done[c.key]["records"]) for c in chunks}
    meta = {
        "kind": "sweep", "sweep": config.sweep, "digest": config.digest(), "config": config.to_dict(),
        "axes": [{"name": n, "symbol": kind.axis(n).symbol, "label": kind.axis(n).label,
                  "traced": kind.axis(n).traced, **({"labels": list(kind.axis(n).labels)} if kind.axis(n).labels
                                                    else {})} for n, _ in config.axes],
        "environment": results_io.environment(),
        "precision": "float64" if config.resolved_x64 else "float32",
        "matmul_precision": MATMUL_PRECISION,
        **run,
        "run_time_s": float(sum(done[c.key].get("seconds", 0.0) for c in chunks)),
        "lane_iterations": lane_work([done[c.key] for c in chunks]),
        "blocks": {f"{c.static_index}/{'+'.join(c.program)}": c.block_points * config.seeds
                   * max(len(config.rates_for(n)) for n in c.program) for c in chunks},
        "complete": True,
        "chunks": [{"key": c.key, "lanes": done[c.key]["lanes"], "sha256": sha256[c.key]} for c in chunks],
        "record_count": len(records),
    }
    if extra_meta is not None:
        meta.update(extra_meta())
    results_io.save(path, meta, records)
    for jpath in results_io.journals(path) if remove_journals else []:
        jpath.unlink(missing_ok=True)
    meta = results_io.jsonable(meta)
    return results_io.Results(meta=meta, records=named_records(meta["axes"], records), path=path)


def merge(parts: list[str | Path], path: str | Path | None = None) -> results_io.Results:
    """Join part files (journals of one sweep, from one or many hosts or ``--share`` runs) into its results file:
    ``otod merge``.

    Every part must hold the same config, by hash: a part whose config is another sweep's (`foreign_parts`), or
    whose stored config does not hash to its digest (edited), is refused by name. Every chunk of the plan must be
    in some part: a share whose chunks are missing is named, with the part file it writes (`missing_shares`). The
    results file defaults to the parts' name less ``.part-I-of-N``. The parts are left where they are."""
    parts = [Path(p) for p in parts]
    if not parts:
        raise OtodError("otod merge: no part files given, e.g. otod merge results/condition-*.parquet.part-*")
    headers, done = {}, {}
    for part in parts:
        header, chunks = results_io.read_part(part)  # anything else is named: a results file, a folder, ...
        if header.get("digest") not in (config_digest(header["config"]), results_io.digest(header["config"])):
            raise OtodError(f"part file {part}: its config does not hash to its digest {header.get('digest')} "
                            "(edited or damaged); it is not merged")
        headers[part] = header
        done.update({c["key"]: c for c in chunks})
    digests = {p: h["digest"] for p, h in headers.items()}
    main, foreign = foreign_parts(digests)
    if foreign:
        raise OtodError("otod merge: the part files come from different sweep configs: "
                        + "; ".join(f"{p} is a share of config {digests[p]}" for p in foreign)
                        + f", while the other {len(parts) - len(foreign)} hold config {main}; merge one sweep's parts")
    config = SweepConfig.from_dict(headers[parts[0]]["config"])
    if config.digest() != main:
        raise OtodError(f"part file {parts[0]}: written by another otod version (its config now hashes to "
                        f"{config.digest()}, not {main}); merge it with the version that wrote it")
    if path is None:
        path = results_name(parts[0])
        if path == parts[0]:
            raise OtodError(f"otod merge: cannot name the results file from {parts[0]}; give --out FILE")
    path = Path(path)
    results_io.check_suffix(path)
    with results_io.lock(path):
        if path.exists():
            raise OtodError(f"results file {path}: already exists; move it away to merge again")
        chunks = plan(config)
        refuse_missing_shares(config, chunks, done, headers)
        run = {"merged_from": [{"file": p.name, **{k: h.get(k) for k in ("process", "processes", "host")}}
                               for p, h in headers.items()], "processes": max(h.get("processes", 1) for h in headers.values()),
               "compile_count": 0, "cache_loads": 0, "compile_time_s": 0.0, "resumed_chunks": len(chunks)}
        return finish(config, path, chunks, done, run, remove_journals=False)


def results_name(part: Path) -> Path:
    """The results file a journal or part file belongs to: its name less ``.partial`` or ``.part-I-of-N``."""
    return part.with_name(re.sub(r"\.(part-\d+-of-\d+|partial)$", "", part.name))


def foreign_parts(digests: dict[Path, str]) -> tuple[str, list[Path]]:
    """(the sweep's config digest, the parts of other configs) among parts given with their digests: the sweep is
    the config most parts hold (on a tie, the first part's)."""
    held = list(digests.values())
    main = max(dict.fromkeys(held), key=held.count)  # first-seen order breaks ties
    return main, [p for p, d in digests.items() if d != main]


def refuse_missing_shares(config: SweepConfig, chunks: list[Chunk], done: dict, headers: dict[Path, dict]) -> None:
    """Refuse in one line a merge whose parts, shares of one count N (``.part-I-of-N``), miss a chunk of the
    plan: name each share that is absent (with the part file it writes) or unfinished. Parts of mixed counts, or
    journals of one process, are left to `finish`'s count of missing chunks."""
    lost = sum(c.key not in done for c in chunks)
    counts = {h.get("processes") for h in headers.values()}
    named = all(re.search(rf"\.part-{h.get('process')}-of-{h.get('processes')}$", p.name) for p, h in headers.items())
    if not lost or len(counts) != 1 or not named:
        return
    count = counts.pop()
    given = {h["process"]: p for p, h in headers.items()}
    base = results_name(next(iter(headers)))
    shares = missing_shares(config, chunks, done, count)
    said = [f"share {i} of {count} ({given[i]}) lacks {absent} of its {size} chunks" if i in given
            else f"share {i} of {count} ({results_io.part_path(base, i, count)}) is missing"
            for i, absent, size in shares]
    again = " and ".join(f"--share {i}/{count}" for i, _, _ in shares)
    raise OtodError(f"otod merge: {'; '.join(said)} ({lost} of {len(chunks)} chunks are in no part file); run the "
                    f"sweep command with {again} (an unfinished share resumes), then merge again")
