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

This module runs a sweep; the rest of the runner is split by job: the config and its digest
(`otod.core.config`), the plan, estimate and shares (`otod.core.plan`), the results file written from the chunks
and the parts merged (`otod.core.finish`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import platform
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
from otod.core.config import NOT_IN_DIGEST, SweepConfig, default_path, lane_rates
from otod.core.errors import Abandoned, Interrupted, OtodError, ShareDone, ShareWritten
from otod.core.finish import finish
from otod.core.plan import (Chunk, check_estimate, chunk_seconds_predicted, compacted_programs, eta_seconds,
                             expected_seconds, next_chunk, plan, predicted_costs, share_of, spans_devices)
from otod.core.precision import exact_float32
from otod.core.stopping import STATUS_NAMES, Status


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
    own = (journal_io.journal_path(path) if count == 1 and share is None
           else journal_io.part_path(path, index, count))
    started = time.perf_counter()
    with contextlib.ExitStack() as held:
        for locked in ([path] if merges else []) + ([own] if own != journal_io.journal_path(path) else []):
            held.enter_context(journal_io.lock(locked))
        if path.exists():
            existing = results_io.load(path)
            if existing.meta.get("digest") not in (digest, config.legacy_digest()):
                raise OtodError(f"results file {path}: holds another sweep (config {existing.meta.get('digest')}, "
                                f"this one is {digest}); choose another --out or move it away")
            return results_io.Results({**existing.meta, "read_back": True}, path=existing.path,
                                      _rows=existing._rows, _table=existing._table)
        guess = check_estimate(config, yes, processes=count)
        header, _ = journal_io.read_journal(own, digest)
        journal_chunking = None if header is None else header["config"].get("chunk_seconds")
        if journal_chunking is not None and journal_chunking != config.chunk_seconds:
            # The chunk keys name their points: resume with the chunking the journal was written under.
            sys.stderr.write(f"otod: resuming {own} with its --chunk-seconds {journal_chunking:g} (the records do "
                             f"not depend on it; {config.chunk_seconds:g} applies to new sweeps)\n")
            config = dataclasses.replace(config, chunk_seconds=journal_chunking)
        if header is None:
            journal_io.start_journal(own, {"digest": digest, "config": config.to_dict(), "process": index,
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
                done[key] = {**journal_io.append_chunk(own, key, records, work), "records": records, **work}
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
