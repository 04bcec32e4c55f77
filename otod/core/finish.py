"""Finishing a sweep: the results file written from its journalled chunks (`finish`; which setting each point
chooses is the analysis's, `otod.core.pipeline`, not written here), and `merge`, which joins the part files of a shared sweep (``otod merge``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

from otod.core import journal as journal_io
from otod.core import results as results_io
from otod.core.axes import named_records
from otod.core.config import SweepConfig, config_digest, read_config
from otod.core.errors import OtodError
from otod.core.plan import Chunk, missing_shares, plan
from otod.core.precision import MATMUL_PRECISION
from otod.core.resources import release_free_memory
from otod.core.traces import TRACE_ITERATIONS, trace_field


#: The selection marks sweeps wrote into their records before the selection moved into the one analysis
#: (`otod.core.pipeline`): records journalled or read back from such files lose them, since their choice was
#: made among other records than this sweep's.
SELECTION_MARKS = ("selected", "lr_on_edge", "beta_on_edge", "lr_selected")


def drop_selection_marks(records: list[dict]) -> bool:
    """Remove `SELECTION_MARKS` from every record, in place; whether any record had one."""
    found = False
    for r in records:
        for name in SELECTION_MARKS:
            if name in r:
                del r[name]
                found = True
    return found


def lane_work(chunks: list[dict]) -> dict:
    """Lane-iterations executed by the while loops (every lane of a block runs until the block's slowest lane
    stops) against those the lanes needed (their own counts): ``ratio`` 1 means no lane waited. Chunks journalled
    before this was recorded are left out of both sums."""
    known = [c for c in chunks if "lane_iterations" in c]
    executed = sum(c["lane_iterations"] for c in known)
    needed = sum(c["iterations_needed"] for c in known)
    return {"executed": executed, "needed": needed, "ratio": executed / needed if needed else None}


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
    if drop_selection_marks(records):  # journals or reused files of an otod that marked its choices
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
    if records and trace_field(config.target.kind) in records[0]:  # the iterations of every trace's slots
        meta[TRACE_ITERATIONS] = trace_iterations(config)
    if extra_meta is not None:
        meta.update(extra_meta())
    from otod.core.columns import table_of

    table = table_of(records)  # the records' columns, built once: the file's and the analysis's (`Results.table`)
    release_free_memory()  # what the metadata's theory freed, before the file is written
    results_io.save(path, meta, records, table=table)
    release_free_memory()  # what writing it freed, before the analysis and report allocate theirs
    for jpath in journal_io.journals(path) if remove_journals else []:
        jpath.unlink(missing_ok=True)
    meta = results_io.jsonable(meta)
    named = named_records(meta["axes"], records)
    return results_io.Results(meta=meta, records=named, path=path, table=table if named is records else None)


def trace_iterations(config: SweepConfig) -> list[int]:
    """The iterations at which a sweep's lanes read their metric (`otod.core.traces.checkpoints`): the slots of
    every record's trace (the engine reads on the same schedule for every method of a family)."""
    from otod.core.engine import trace_checkpoints

    member = config.kind.methods[config.methods[0]]
    found = trace_checkpoints(config.specs()[0], (member,), config.options, config.relative_lr,
                              config.target.check_every, config.resolved_max_iters)
    return [] if found is None else found.tolist()


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
        header, chunks = journal_io.read_part(part)  # anything else is named: a results file, a folder, ...
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
    config = read_config(headers[parts[0]])
    if config.digest() != main:
        raise OtodError(f"part file {parts[0]}: written by another otod version (its config now hashes to "
                        f"{config.digest()}, not {main}); merge it with the version that wrote it")
    if path is None:
        path = results_name(parts[0])
        if path == parts[0]:
            raise OtodError(f"otod merge: cannot name the results file from {parts[0]}; give --out FILE")
    path = Path(path)
    results_io.check_suffix(path)
    with journal_io.lock(path):
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
            else f"share {i} of {count} ({journal_io.part_path(base, i, count)}) is missing"
            for i, absent, size in shares]
    again = " and ".join(f"--share {i}/{count}" for i, _, _ in shares)
    raise OtodError(f"otod merge: {'; '.join(said)} ({lost} of {len(chunks)} chunks are in no part file); run the "
                    f"sweep command with {again} (an unfinished share resumes), then merge again")
