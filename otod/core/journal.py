"""The journal and lock of a running sweep: what makes sure a sweep never loses finished work, and that two runs
never write one results file (the finished file itself is `otod.core.results`).

While a sweep runs, each finished chunk is appended to a *journal* beside its results file (``<file>.partial``,
one JSON line per chunk with its records and their SHA-256; the header line holds the sweep's digest and config)
and flushed to disk: a chunk is written once, never re-serialized, and an interrupted sweep keeps every finished
chunk. A share of a distributed or job-array sweep writes its own journal, ``<file>.part-I-of-N``: a *part file*,
which ``otod merge`` joins (`read_part`, and `not_a_part` to name anything else it is given).

A journal with a damaged line is refused by name (only a last line cut short by a kill is dropped: that chunk
never finished). A `lock` (``<file>.lock``, an exclusive ``flock``) stops two runs from writing one file.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import platform
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from otod.core.errors import OtodError
from otod.core.plain import jsonable
from otod.core.results import load, plain_checksum, records_checksum, write_atomic

JOURNAL_FORMAT = "otod-journal/2"


def journal_path(path: Path) -> Path:
    """The journal of a sweep run by one process: ``<file>.partial``."""
    return path.with_name(path.name + ".partial")


def part_path(path: Path, index: int, count: int) -> Path:
    """The journal of process ``index`` of ``count`` in a distributed sweep: ``<file>.part-<index>-of-<count>``.
    It is a journal like ``<file>.partial`` (header, then one line per finished chunk), and so a *part file*:
    `otod merge` joins part files copied from several hosts."""
    return path.with_name(f"{path.name}.part-{index}-of-{count}")


def journals(path: Path) -> list[Path]:
    """Every journal beside ``path`` (``.partial`` and any ``.part-I-of-N``), in name order."""
    pattern = re.compile(re.escape(path.name) + r"\.part-\d+-of-\d+")
    names = sorted(p for p in path.parent.iterdir() if pattern.fullmatch(p.name)) if path.parent.is_dir() else []
    return [p for p in [journal_path(path), *names] if p.is_file()]


def read_journal(jpath: Path, expected_digest: str | None, repair: bool = True) -> tuple[dict | None, list[dict]]:
    """(header, finished chunks) of the journal ``jpath``, or (None, []) when there is none.

    A last line cut short (a kill during the write) is dropped, and with ``repair`` cut from the file (only the
    journal's own writer repairs: another process's journal may be mid-write). Any other damage, a checksum or
    lane-count mismatch, or a journal of another config (``expected_digest``; None accepts any) raises `OtodError`
    naming the journal."""
    if not jpath.exists():
        return None, []
    raw = jpath.read_bytes()
    lines = raw.split(b"\n")
    complete_end = raw.rfind(b"\n") + 1
    if lines and lines[-1] == b"":
        lines.pop()
    entries = []
    for i, line in enumerate(lines):
        try:
            entries.append(json.loads(line))
        except (json.JSONDecodeError, UnicodeDecodeError):  # bytes that are not text are damage too
            last = i == len(lines) - 1 and not raw.endswith(b"\n")
            if last:
                if repair:
                    with open(jpath, "r+b") as f:
                        f.truncate(complete_end)
                break
            raise OtodError(f"results journal {jpath}: line {i + 1} is damaged; it is not trusted or overwritten: "
                            "move it away (or delete it) to run the sweep again") from None
    if not entries or entries[0].get("format") != JOURNAL_FORMAT:
        raise OtodError(f"results journal {jpath}: not an otod journal; move it away (or delete it) to start over")
    header, chunks = entries[0], entries[1:]
    if expected_digest is not None and header.get("digest") != expected_digest:
        raise OtodError(f"results journal {jpath}: belongs to another sweep config (digest {header.get('digest')}"
                        f", expected {expected_digest}); move it away to run this one")
    for i, chunk in enumerate(chunks):
        if len(chunk.get("records", [])) != chunk.get("lanes") or records_checksum(
                chunk["records"]) != chunk.get("sha256"):
            raise OtodError(f"results journal {jpath}: chunk {chunk.get('key')} (line {i + 2}) does not match its "
                            "checksum or lane count; it is not trusted: move the journal away to start over")
    return header, chunks


#: How many bytes of a file `not_a_part` reads to tell what it is.
HEAD_BYTES = 4096


def read_part(path: Path) -> tuple[dict, list[dict]]:
    """(header, finished chunks) of a part file for ``otod merge``: a share's journal. Anything else raises
    `OtodError` naming what it got (`not_a_part`): a results file gave a UnicodeDecodeError traceback."""
    what = not_a_part(path)
    if what is not None:
        raise OtodError(f"part file {path}: {what}")
    header, chunks = read_journal(path, None, repair=False)
    if header is None or "config" not in header:
        raise OtodError(f"part file {path}: not an otod part file (a journal with its sweep's config)")
    return header, chunks


def not_a_part(path: Path) -> str | None:
    """What ``path`` is, when it is not a journal (None when it starts as one): missing, a folder, an empty file, a
    finished results file (with what to do with it: it is merged already), another JSON file, a binary or text
    file. Reads the first `HEAD_BYTES` only, except to verify a results file."""
    hint = "a part file is a share's journal, e.g. results/condition-0123456789.parquet.part-0-of-2"
    if path.is_dir():
        return f"a folder; give the part files in it, e.g. otod merge {path / '*.part-*'}"
    if not path.is_file():
        return "no such file"
    with open(path, "rb") as f:
        head = f.read(HEAD_BYTES)
    if not head:
        return f"an empty file, not a part file ({hint})"
    if re.match(rb'\s*\{\s*"format"\s*:\s*"otod-journal/', head):  # a journal: `read_journal` checks the rest
        return None
    kind = results_kind(path, head)
    if kind is not None and not kind.startswith("a "):
        return (f"a finished results file ({kind}), not a part file: it is merged already; read it with "
                f"otod fit {path}, or merge the .part-I-of-N files that made it")
    if kind is not None:
        return f"{kind}, not a part file ({hint})"
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as e:  # text whose last character the read cut is still text
        text = head[:e.start].decode("utf-8") if e.start >= len(head) - 3 else None
    if text is None or "\x00" in text:
        return f"a binary file, not a part file ({hint})"
    what = "a JSON file" if text.lstrip()[:1] in ("{", "[") else "a text file"
    return f"{what} that is not an otod journal, not a part file ({hint})"


def results_kind(path: Path, head: bytes) -> str | None:
    """``"<sweep> sweep, N records"`` when ``path`` is a results file otod reads (Parquet, npz or JSON, told by its
    first bytes); ``"a <format> file ..."`` where it looks like one but is named otherwise or does not load; None
    when it is none of them."""
    if head.startswith(b"PAR1"):
        name = "Parquet"
    elif head.startswith(b"PK\x03\x04"):
        name = "npz"
    elif re.match(rb'\s*\{\s*"format"\s*:\s*"otod-results/', head):
        name = "JSON"
    else:
        return None
    suffix = {"Parquet": ".parquet", "npz": ".npz", "JSON": ".json"}[name]
    if path.suffix != suffix:
        return f"a {name} file (a results file named {path.suffix or 'without a suffix'}, not {suffix}?)"
    try:
        meta = load(path).meta
    except OtodError:
        return f"a {name} file that is not an otod results file, or a damaged one"
    return f"{meta.get('sweep', meta.get('kind'))} sweep, {meta.get('record_count')} records"


def start_journal(jpath: Path, header: dict) -> None:
    """Write a new journal ``jpath`` atomically: its header line (`JOURNAL_FORMAT`, the sweep's digest, config and
    share), before any chunk is appended."""
    write_atomic(jpath, json.dumps(jsonable({"format": JOURNAL_FORMAT, **header}), separators=(",", ":"),
                                   allow_nan=False) + "\n")


def append_chunk(jpath: Path, key: str, records: list[dict], extra: dict | None = None) -> dict:
    """Append one finished chunk to the journal ``jpath`` and fsync; return its metadata entry (key, lanes,
    sha256)."""
    plain = jsonable(records)  # once, for the checksum and the line
    entry = {"key": key, "lanes": len(records), "sha256": plain_checksum(plain)}
    line = json.dumps({**jsonable({**entry, **(extra or {})}), "records": plain}, separators=(",", ":"),
                      allow_nan=False)
    with open(jpath, "a") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())
    return entry


# -- one writer per results file ---------------------------------------------------------------------------------


@contextmanager
def lock(path: Path) -> Iterator[Path]:
    """Hold ``<file>.lock`` (an exclusive ``flock``, released by the kernel if the process dies) while a sweep
    writes ``path``; a second run raises `OtodError` at once instead of doing the same work twice."""
    lpath = path.with_name(path.name + ".lock")
    try:
        lpath.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OtodError(f"cannot write results to {lpath.parent}: {e.strerror or e}; choose another folder, "
                        "e.g. --out results/") from None
    while True:
        try:
            fd = os.open(lpath, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise OtodError(f"cannot write results to {lpath.parent}: {e.strerror or e}; choose another folder, "
                            "e.g. --out results/") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip()
            os.close(fd)
            if e.errno in (errno.EAGAIN, errno.EACCES):
                raise OtodError(f"results file {path}: another otod run is writing it ({holder or 'pid unknown'}); "
                                "wait for it to finish, or use another --out") from None
            raise
        try:  # the file we locked must still be the one at lpath (a finishing run unlinks it)
            same = os.fstat(fd).st_ino == os.stat(lpath).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {platform.node()}".encode(), 0)
        yield lpath
    finally:
        try:
            os.unlink(lpath)
        except FileNotFoundError:
            pass
        os.close(fd)
