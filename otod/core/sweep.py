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
(`otod.core.config`), the plan, estimate and shares (`otod.core.plan`), the chunks sent to the devices, saved as
they end and read from other files (`otod.core.scheduler`), the journal and lock (`otod.core.journal`), the
results file written from the chunks and the parts merged (`otod.core.finish`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import platform
import sys
import time
from pathlib import Path
from typing import Callable

from otod.core import journal as journal_io
from otod.core import results as results_io
from otod.core.config import SweepConfig, default_path, read_config
from otod.core.errors import OtodError, ShareDone, ShareWritten
from otod.core.figure_guard import refuse_to_measure
from otod.core.finish import finish
from otod.core.plan import check_estimate
from otod.core.precision import exact_float32
from otod.core.scheduler import ChunkRunner, finished_chunks


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
    from otod.core.distributed import current_share
    from otod.core.distributed import processes as jax_processes
    from otod.core.engine import watchdog_seconds

    watchdog_seconds()  # a bad OTOD_WATCHDOG_SECONDS is refused before any file is written
    if path is None and Path(out_dir).suffix in results_io.SUFFIXES:  # --out FILE.npz names the file itself
        path = out_dir
    path = Path(path) if path is not None else default_path(config, out_dir)
    results_io.check_suffix(path)
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
            return read_back(config, path)
        refuse_to_measure(path)  # a figure that reads committed results never sweeps (`otod.core.figure_sources`)
        guess = check_estimate(config, yes, processes=count)
        config = open_journal(config, own, index, count)
        runner = ChunkRunner(config, path, own, index, count, reuse=reuse, progress=progress, started=started)
        run = runner.run(guess)
        if share is not None:
            raise ShareWritten(path, own, index, count, len(runner.pending), runner.lanes_run)
        if count == 1:
            return finish(config, path, runner.chunks, runner.done, run, extra_meta)
        return merge_processes(config, path, runner, run, index, count, extra_meta)


def read_back(config: SweepConfig, path: Path) -> results_io.Results:
    """The finished results file of this sweep, read back (``meta["read_back"]``); one of another sweep is
    refused."""
    from otod.core.config import same_stored_settings

    existing = results_io.load(path)
    digest = config.digest()
    if existing.meta.get("digest") not in (digest, config.legacy_digest()) and not same_stored_settings(
            config, existing.meta):
        raise OtodError(f"results file {path}: holds another sweep (config {existing.meta.get('digest')}, "
                        f"this one is {digest}); choose another --out or move it away")
    return results_io.Results({**existing.meta, "read_back": True}, path=existing.path,
                              _rows=existing._rows, _table=existing._table)


def open_journal(config: SweepConfig, own: Path, index: int, count: int) -> SweepConfig:
    """Start this process's journal ``own``, or resume it: the config with the chunking the journal was written
    under (the chunk keys name their points; the records do not depend on it)."""
    header, _ = journal_io.read_journal(own, config.digest())
    journal_chunking = None if header is None else read_config(header).chunk_seconds
    if journal_chunking is not None and journal_chunking != config.chunk_seconds:
        sys.stderr.write(f"otod: resuming {own} with its --chunk-seconds {journal_chunking:g} (the records do "
                         f"not depend on it; {config.chunk_seconds:g} applies to new sweeps)\n")
        config = dataclasses.replace(config, chunk_seconds=journal_chunking)
    if header is None:
        journal_io.start_journal(own, {"digest": config.digest(), "config": config.to_dict(), "process": index,
                                       "processes": count, "host": platform.node()})
    return config


def merge_processes(config: SweepConfig, path: Path, runner, run: dict, index: int, count: int,
                    extra_meta: Callable[[], dict] | None) -> results_io.Results:
    """Distributed: every process meets at a barrier, process 0 merges the parts into the results file, and the
    others raise `ShareDone` once it has (an error of the merge reaches every process)."""
    from otod.core.distributed import barrier

    digest = config.digest()
    barrier(f"otod/{digest}/ran")
    failure = merged = None
    if index == 0:
        try:
            merged = finish(config, path, runner.chunks, finished_chunks(path, digest), {**run, "processes": count},
                            extra_meta)
        except OtodError as e:
            failure = e
    barrier(f"otod/{digest}/merged")
    if failure is not None:
        raise failure
    if index != 0:
        raise ShareDone(path, index, count, len(runner.pending), runner.lanes_run)
    return merged
