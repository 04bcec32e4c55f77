"""The runner's inner loop: one sweep's pending chunks dealt to the local devices and saved as they end.

`ChunkRunner` holds what the loop shares: the plan and the chunks done (journalled or reused), the devices and
which programs each has compiled, the chunks running and the measured speed of those finished. It sends a chunk to
the device `otod.core.plan.next_chunk` chooses (the last one to every device, once they are free:
`spans_devices`), waits for the first to end, turns its lanes into records (`_records`), appends
them to the journal and reports progress. Ctrl-C stops sending and raises `Interrupted` once the running chunks
are saved (`deferred_interrupt`); an error while sending saves the chunks already running first.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, NamedTuple

import numpy as np

from otod.core import journal as journal_io
from otod.core import results as results_io
from otod.core.config import NOT_IN_DIGEST, SweepConfig, lane_rates
from otod.core.errors import Abandoned, Interrupted
from otod.core.stopping import STATUS_NAMES, Status
from otod.core.traces import trace_field, trace_lists
from otod.core.variants import program_groups
from otod.core.plan import (Chunk, chunk_seconds_predicted, compacted_programs, eta_seconds, expected_seconds,
                            next_chunk, plan, predicted_costs, share_of, spans_devices)


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
    fields = {p: named(config, point={**static_point, **points[p]})
              for p in dict.fromkeys(int(p) for p in idx[:n_real, 0])}
    traces = None if solution.trace is None else trace_lists(solution.trace[:n_real], solution.checkpoints,
                                                            solution.iterations[:n_real])
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
        if traces is not None:
            rows[-1][trace_field(config.target.kind)] = traces[i]
    rows = [rows[i] for i in sorted(range(n_real), key=lambda i: (idx[i, 0], idx[i, 1], idx[i, 2]))]
    config.kind.annotate(config, static_point, rows)
    return rows


def finished_chunks(path: Path, digest: str, own: Path | None = None) -> dict[str, dict]:
    """Every finished chunk of the sweep ``digest`` in the journals beside ``path`` (``.partial`` and the part
    files of distributed runs), by key. Only ``own`` (this process's journal) is repaired after a kill; the
    others are read as they are, since their writers may be running."""
    done = {}
    for jpath in journal_io.journals(path):
        _, chunks = journal_io.read_journal(jpath, digest, repair=jpath == own)
        done.update({c["key"]: c for c in chunks})
    return done


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
        done[chunk.key] = {**journal_io.append_chunk(own, chunk.key, records, extra), **extra, "records": records}
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


class ChunkRunner:
    """Run this process's share of a sweep's chunks (module docstring). ``run(guess)`` returns the run's metadata;
    ``done`` then holds every finished chunk by key, ``chunks`` the whole plan, ``pending`` those this run sent,
    ``lanes_run`` the lanes it ran."""

    def __init__(self, config: SweepConfig, path: Path, own: Path, index: int, count: int, *, reuse: bool,
                 progress: Callable[[dict], None] | None, started: float):
        self.config, self.path, self.own, self.progress, self.started = config, path, own, progress, started
        self.done = finished_chunks(path, config.digest(), own)
        self.costs = predicted_costs(config)
        self.chunks = plan(config, self.costs)
        self.mine = share_of(config, self.chunks, index, count, self.costs)
        self.points, self.statics = config.traced_points(), config.static_points()
        self.resumed = sum(c.key in self.done for c in self.chunks)
        self.partly = reuse_points(config, path, own, [c for c in self.mine if c.key not in self.done], self.points,
                                   self.statics, self.done) if reuse else {}
        rest_of = {p.key: p.rest for p in self.partly.values()}
        lanes_of = {c.key: c.n_points * config.seeds * len(config.rates_for(c.program[c.method_index]))
                    for c in self.chunks}
        self.total = sum(lanes_of[c.key] for c in self.mine)
        self.lanes_done = sum(lanes_of[c.key] for c in self.mine if c.key in self.done) + sum(
            len(rows) for part in self.partly.values() for rows in part.held.values())
        self.lanes_before = self.lanes_done
        self.pending = [rest_of.get(c.key, c) for c in self.mine if c.key not in self.done]
        self.compacting = compacted_programs(config, self.chunks, self.costs)
        specs = config.specs()
        self.groups = program_groups(self.statics, specs)  # static points that share one program (`variants`)
        self.predicted = {c.key: chunk_seconds_predicted(config, c, self.costs, specs[c.static_index])
                          for c in self.pending}
        self.draws_cache: dict = {}
        self.ran: list[tuple[float, float]] = []
        self.ratios: dict[str, list[float]] = {}  # by method: measured over predicted seconds of finished chunks
        self.compiled: dict = {}  # (first static point of its group, program) -> the slots it is compiled for
        self.compile_seconds: dict = {}  # (first static point of its group, program) -> its first compile's seconds
        self.running: list = []  # (chunk, idx, dispatched, sent at, slot)
        self.most_running = 0

    @property
    def lanes_run(self) -> int:
        return self.lanes_done - self.lanes_before

    def run(self, guess) -> dict:
        """Send every pending chunk and save each as it ends; the run's metadata (``guess``: the estimate)."""
        import jax

        from otod.core.compilation_cache import count_compilations

        self.devices = jax.local_devices()
        self.slots = list(range(len(self.devices))) if len(self.devices) > 1 else [None]
        self.waiting, self.free = list(self.pending), list(self.slots)
        self.per_slot = {("all" if slot is None else str(slot)): 0 for slot in self.slots + [None]}
        loads: list = []  # programs loaded from the persistent compilation cache instead of compiled
        with count_compilations(loads) as compiles, deferred_interrupt() as stop:
            self.compiles = compiles
            while self.waiting or self.running:
                self.send_while_free(stop)
                if not self.running:
                    break
                self.save_first()
            if stop["count"] and self.lanes_done < self.total:
                raise Interrupted(self.path, self.lanes_done, self.total)
        finished = [self.done[c.key] for c in self.mine if c.key in self.done]
        return {"wall_time_s": time.perf_counter() - self.started, "compile_count": len(compiles),
                "cache_loads": len(loads),
                **({"reused": reused_summary(finished)} if any("reused" in e for e in finished) else {}),
                "chunks_per_device": self.per_slot if self.slots != [None] else None,
                "most_running": self.most_running, "compile_time_s": float(sum(compiles)),
                "resumed_chunks": self.resumed, "estimate": guess._asdict()}

    def send_while_free(self, stop: dict) -> None:
        """Send waiting chunks while a device is free (none once Ctrl-C was pressed): to the device whose
        compiled programs `next_chunk` prefers; a chunk whose program is compiled only for busy devices waits."""
        while self.free and self.waiting and not stop["count"]:
            expected = expected_seconds(self.waiting, self.predicted, self.ratios)
            choice = None
            for slot in self.free:
                i = next_chunk(self.waiting, slot, self.compiled, self.compile_seconds, expected, self.program_of)
                if i is not None:
                    choice = (i, slot)
                    break
            if choice is None:
                if self.running:
                    return  # the waiting chunks' programs are compiled for busy devices: wait for one
                first = self.waiting[0]
                where = self.compiled.get(self.program_of(first), set()) & set(self.free)
                choice = (0, sorted(where, key=str)[0] if where else self.free[0])
            i, slot = choice
            chunk = self.waiting.pop(i)
            self.free.remove(slot)
            if not self.waiting and spans_devices(chunk, self.compile_seconds, expected[chunk.key], self.program_of):
                slot, self.free[:] = None, []  # the last chunk: on every device, once they are free
            self.start(chunk, slot)

    def start(self, chunk: Chunk, slot) -> None:
        """Dispatch ``chunk`` to ``slot``'s device (None: every device; a spanning chunk goes first to the
        devices its program is compiled for, which start while the others compile)."""
        key = self.program_of(chunk)
        before = float(sum(self.compiles))
        targets = [self.devices[slot]] if slot is not None else sorted(
            self.devices[:len(self.slots)], key=lambda d: self.devices.index(d) not in self.compiled.get(key, ()))
        try:
            idx, sent = self.send(chunk, targets)
        except Exception:
            while self.running:  # a chunk sent already is saved before the error goes up
                self.save_first()
            raise
        self.compile_seconds.setdefault(key, float(sum(self.compiles)) - before)
        self.compiled.setdefault(key, set()).update(self.slots if slot is None else [slot])
        self.running.append((chunk, idx, sent, time.perf_counter(), slot))
        self.most_running = max(self.most_running, len(self.running))

    def program_of(self, chunk: Chunk) -> tuple:
        """What keys a chunk's compiled program: its group's first static point (`program_groups`), its methods."""
        return self.groups[chunk.static_index][0], chunk.program

    def send(self, chunk: Chunk, targets: list):
        """Dispatch ``chunk`` to the ``targets`` devices (several: its blocks dealt among them, each device's
        program of the one-device shape); (lane index, the dispatched run)."""
        import jax

        from otod.core.engine import dispatch, seed_draws

        config = self.config
        spec = config.spec_at(self.statics[chunk.static_index])
        if spec not in self.draws_cache:
            dtype = np.float64 if config.resolved_x64 else np.float32
            self.draws_cache[spec] = seed_draws(spec, config.seed, config.seeds, dtype)
        for other in list(self.draws_cache)[:-len(self.slots) - 1]:  # keep the draws of the static points running
            del self.draws_cache[other]
        idx, axis_values, seed_idx, lrs = _lanes(config, self.points, chunk)
        name = chunk.program[chunk.method_index]
        members = tuple(config.kind.methods[m] for m in chunk.program)
        group = (len(config.rates_for(name)), config.seeds)
        with jax.enable_x64(config.resolved_x64):
            return idx, dispatch(
                spec, members, axis_values, seed_idx, lrs,
                method_indices=np.full(len(seed_idx), chunk.method_index), seed=config.seed,
                target=config.target, max_iters=config.resolved_max_iters, relative_lr=config.relative_lr,
                options=config.options, group=group, draws=self.draws_cache[spec],
                block_lanes=chunk.block_points * group[0] * group[1],
                active=np.arange(len(seed_idx)) < chunk.n_points * group[0] * group[1],
                costs=np.asarray(self.costs[name])[idx[:, 0]],
                compact=(chunk.static_index, chunk.program) in self.compacting,
                program=f"{config.sweep} program {'+'.join(chunk.program)} (chunk {chunk.key})",
                devices=targets, one_device_shape=True,
                variants=[config.spec_at(self.statics[i]) for i in self.groups[chunk.static_index]])

    def save_first(self) -> None:
        """Wait for the first running chunk to end, and save it (journal, progress)."""
        from otod.core.engine import collect, first_ready
        from otod.core.reuse import in_point_order

        try:
            chunk, idx, sent, sent_at, slot = self.running.pop(
                first_ready([r[2].outputs for r in self.running], [r[2].name for r in self.running]))
            solution = collect(sent)
        except Abandoned as e:
            raise Abandoned(f"{e}; {self.lanes_done} of {self.total} lanes are saved in the journal of {self.path}, "
                            "and the same command resumes the sweep", e.interrupted) from None
        self.free.append(slot)
        seconds = time.perf_counter() - sent_at
        records = _records(self.config, self.points, self.statics[chunk.static_index], chunk, idx, solution)
        work = {"seconds": seconds, "lane_iterations": solution.lane_iterations,
                "iterations_needed": int(sum(r["iterations"] for r in records))}
        key, ran_lanes = chunk.key, len(records)
        if key in self.partly:  # the points run join those read, under the planned chunk's key
            part = self.partly[key]
            key = part.key
            held = sum(len(rows) for rows in part.held.values())
            records = in_point_order(chunk, records, part.held, len(records) // chunk.n_points)
            work.update(reused=list(part.sources), reused_lanes=held)
        self.done[key] = {**journal_io.append_chunk(self.own, key, records, work), "records": records, **work}
        self.lanes_done += ran_lanes
        self.per_slot["all" if slot is None else str(slot)] += 1
        self.ran.append((self.predicted[chunk.key], seconds))
        self.ratios.setdefault(chunk.program[chunk.method_index], []).append(
            seconds / max(self.predicted[chunk.key], 1e-9))
        if self.progress:
            self.report_progress(chunk)

    def report_progress(self, chunk: Chunk) -> None:
        """Lanes done and total, seconds so far, the rate and the predicted seconds left, after ``chunk``."""
        programs_left = {(c.static_index, c.program) for c in self.waiting} - set(self.compiled)
        eta = eta_seconds(self.ran, [self.predicted[c.key] for c in self.waiting + [r[0] for r in self.running]],
                          float(sum(self.compiles)) / max(len(self.compiled), 1), len(programs_left))
        elapsed = time.perf_counter() - self.started
        rate = (self.lanes_done - self.lanes_before) / max(elapsed, 1e-9)
        self.progress({"lanes_done": self.lanes_done, "lanes_total": self.total, "elapsed": elapsed,
                       "lanes_per_second": rate, "eta": eta / len(self.slots), "chunk": chunk.key})
