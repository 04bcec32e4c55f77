"""Results files: tidy records plus the metadata that makes them reproducible (the journal and lock that make
sure a sweep never loses finished work are `otod.core.journal`).

A finished sweep is one file, in the format its suffix names (`save` and `load` choose by it, `convert` rewrites
one as another): Parquet (``.parquet``, the default: typed columns that pandas reads in one line, the metadata in
the file's schema metadata; `otod.core.parquet`), JSON (``.json``, format ``otod-results/2``, one document) or
otod's NumPy columns (``.npz``, `otod.core.columns`)::

    {"format": "otod-results/2",
     "meta": {"kind": "sweep", "sweep": ..., "digest": ..., "config": {...}, "environment": {...},
              "chunks": [{"key": ..., "lanes": ..., "sha256": ...}, ...], "record_count": ..., ...},
     "records": [{"kappa": 10.0, "method": "gd", "seed": 0, "iterations": 118, "status": "converged", ...}]}

Read any of them with ``otod.load(path)`` (``.records``, ``.to_pandas()``), or without otod:
``pandas.read_parquet(path)`` and ``json.loads(pyarrow.parquet.read_schema(path).metadata[b"otod"])["meta"]``,
or ``json.load(open(path))["records"]``. Every format gives back exactly the records saved.

While a sweep runs, its finished chunks go to a journal beside it (`otod.core.journal`); when the last chunk is
in, the final file is written atomically (a temporary file, then ``os.replace``; mode 0644 under the usual umask)
and the journal removed.

Nothing is trusted blindly: `load` checks the record count, the metadata's checksum and the records' (every
chunk's, or the columns') against the metadata and refuses a file that does not match, by name, saying what is
wrong. Files of format 1 (otod 0.1) are migrated by their obstacle on load.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from otod.core.axes import named_records
from otod.core.errors import OtodError
from otod.core.figure_guard import note
from otod.core.plain import jsonable  # noqa: F401 (re-exported: results_io.jsonable)

FORMAT = "otod-results/2"
#: The results formats, by suffix: the default first.
SUFFIXES = (".parquet", ".json", ".npz")
FORMAT_V1 = "otod-results/1"


@dataclass(frozen=True, init=False, eq=False)
class Results:
    """A loaded results file: ``meta`` (config, environment, timings) and ``records`` (one dict per row).

    From a ``.parquet`` or ``.npz`` file the records are kept as columns (`otod.core.columns.Table`) and the dicts
    built on first use of ``records``; `to_pandas` and `columns` give a data frame or NumPy arrays without
    building them, e.g. ``otod.load(path).to_pandas()``."""

    meta: dict[str, Any]
    path: Path | None
    _rows: list[dict[str, Any]] | None = field(repr=False)
    _table: Any = field(repr=False)

    def __init__(self, meta: dict[str, Any], records: list[dict[str, Any]] | None = None, path: Path | None = None,
                 table=None, *, _rows=None, _table=None):
        object.__setattr__(self, "meta", meta)
        object.__setattr__(self, "path", path)
        rows = records if records is not None else _rows
        object.__setattr__(self, "_table", table if table is not None else _table)
        object.__setattr__(self, "_rows", rows if rows is not None or self._table is not None else [])

    @property
    def records(self) -> list[dict[str, Any]]:
        if self._rows is None:
            object.__setattr__(self, "_rows", self._table.records())
        return self._rows

    @property
    def table(self):
        """The records as an `otod.core.columns.Table` (built from the dicts once, where they came as dicts)."""
        if self._table is None:
            from otod.core.columns import table_of

            object.__setattr__(self, "_table", table_of(self._rows))
        return self._table

    def __len__(self) -> int:
        return self._table.length if self._rows is None else len(self._rows)

    def columns(self) -> dict[str, Any]:
        """Every record field as a 1-D NumPy array (NaN or None where a record has no value; a fixed-length list
        such as ``hits`` as one column per position, ``hits[0]`` …): one line to a data frame."""
        return self.table.arrays()

    def to_pandas(self):
        """The records as a pandas DataFrame, the same for every format: the frame ``pandas.read_parquet`` gives
        of the file's Parquet form (`otod.core.parquet`: a column per field, null where a record has no value,
        ``hits[0]`` … for a fixed-length list), built from the columns, never from the dicts."""
        from otod.core.parquet import arrow_table

        return arrow_table(self.table)[0].to_pandas()

    def column(self, name: str) -> list[Any]:
        """All values of one record field, in record order."""
        return [r.get(name) for r in self.records]


def digest(obj: Any) -> str:
    """A short, stable hash of a JSON-able object (a config): file names and resume keys."""
    return hashlib.sha256(json.dumps(jsonable(obj), sort_keys=True).encode()).hexdigest()[:10]


#: Metadata keys outside the metadata checksum: the checksum itself, and what `load` adds to a file read back.
NOT_CHECKSUMMED = ("meta_sha256", "read_back")


def meta_checksum(meta: dict[str, Any]) -> str:
    """SHA-256 of the metadata (sorted-key JSON, without `NOT_CHECKSUMMED`): what a re-run reads back and
    trusts (the config, the stored theory and FLOP counts, the chunks' checksums) is as verified as the records."""
    kept = {k: v for k, v in meta.items() if k not in NOT_CHECKSUMMED}
    return hashlib.sha256(json.dumps(jsonable(kept), sort_keys=True, allow_nan=False).encode()).hexdigest()


def verify_meta(path: Path, meta: dict[str, Any]) -> None:
    """Refuse a file whose metadata does not match its ``meta_sha256`` (edited or damaged). Files written before
    otod stored the checksum have none and are read as before."""
    if "meta_sha256" in meta and meta_checksum(meta) != meta["meta_sha256"]:
        raise _refuse(path, "its metadata does not match its checksum (edited or damaged)")


def records_checksum(records: list[dict[str, Any]]) -> str:
    """SHA-256 of a list of records in canonical JSON: what a chunk's entry in the metadata vouches for."""
    return plain_checksum(jsonable(records))


def plain_checksum(plain: list[dict[str, Any]]) -> str:
    """`records_checksum` of records already made plain by `jsonable` (a caller that needs them plain anyway)."""
    text = json.dumps(plain, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def cpu_model() -> str:
    """The CPU's model name (from /proc/cpuinfo on Linux), else what ``platform`` says."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def blas_kernels() -> str | None:
    """The kernel set the installed SciPy's OpenBLAS chose when it loaded (by the CPU it found, or by
    ``OPENBLAS_CORETYPE``), e.g. ``"OpenBLAS Haswell"``; None where it cannot be read (no SciPy wheel's OpenBLAS).
    jaxlib's CPU LAPACK kernels call that library, and each kernel set rounds differently (`otod.core.linalg`):
    a sweep whose programs call LAPACK (an eigh, an inv) has the bits of this kernel set."""
    import ctypes

    try:
        import scipy

        for path in sorted((Path(scipy.__file__).resolve().parent.parent / "scipy.libs").glob("*openblas*")):
            library = ctypes.CDLL(str(path))
            for name in ("scipy_openblas_get_corename", "openblas_get_corename"):
                corename = getattr(library, name, None)
                if corename is not None:
                    corename.restype = ctypes.c_char_p
                    return f"OpenBLAS {corename().decode()}"
    except Exception:  # noqa: BLE001 (provenance only: a library that cannot be read is recorded as unknown)
        return None
    return None


def git_commit() -> str | None:
    """The commit of the otod checkout this package runs from, or None (an installed wheel has none)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def installed_version(package: str) -> str | None:
    """The installed version of ``package`` from its metadata (without importing it), or None."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return None


def environment() -> dict[str, Any]:
    """Versions, device and provenance of this process: otod, jax, jaxlib, optax, numpy, pyarrow (the Parquet
    writer; None where it is not installed), python, backend, device, CPU model, the OpenBLAS kernel set that
    jaxlib's LAPACK calls run (`blas_kernels`), UTC time, command line and the otod git commit (where there is
    one)."""
    import jax
    import jaxlib
    import numpy
    import optax

    from otod.core.version import __version__

    device = jax.devices()[0]
    return {
        "otod": __version__,
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "optax": optax.__version__,
        "numpy": numpy.__version__,
        "pyarrow": installed_version("pyarrow"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "backend": jax.default_backend(),
        "device": getattr(device, "device_kind", str(device)),
        "device_count": jax.device_count(),
        "process_count": jax.process_count(),
        "cpu": cpu_model(),
        "blas": blas_kernels(),
        "utc_time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command_line": [Path(sys.argv[0]).name, *sys.argv[1:]] if sys.argv and sys.argv[0] else [],
        "git_commit": git_commit(),
    }


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_file(path: str | os.PathLike, mode: str = "w") -> Iterator[Any]:
    """A file object that becomes ``path`` atomically when the block ends (a temporary file in the same folder,
    fsync, rename), mode 0666 less the umask (0644 usually), creating parent folders; an unwritable folder raises
    `OtodError`. If the block raises, ``path`` is untouched."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise OtodError(f"cannot write results to {path.parent}: {e.strerror or e}; choose another folder, "
                        "e.g. --out results/") from None
    try:
        with os.fdopen(fd, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_atomic(path: str | os.PathLike, text: str | Iterable[str]) -> Path:
    """Write ``text`` (a string, or pieces of one written as they come) to ``path`` with `atomic_file`."""
    with atomic_file(path) as f:
        for piece in ([text] if isinstance(text, str) else text):
            f.write(piece)
    return Path(path)


def check_suffix(path: Path) -> str:
    """The format a results file's suffix names (`SUFFIXES`); any other raises `OtodError`."""
    suffix = Path(path).suffix
    if suffix not in SUFFIXES:
        raise OtodError(f"results file {path}: unknown format {suffix or '(no suffix)'!r}; name it .parquet "
                        "(columns pandas reads; the default), .json (one JSON document) or .npz (NumPy columns)")
    return suffix


def _columns_module(suffix: str):
    """The module that writes and reads a columnar format: `otod.core.parquet` or `otod.core.columns`."""
    if suffix == ".parquet":
        from otod.core import parquet

        return parquet
    from otod.core import columns

    return columns


def save(path: str | os.PathLike, meta: dict[str, Any], records: list[dict[str, Any]] | None = None,
         table=None) -> Path:
    """Write a results file atomically, in the format its suffix names (``.parquet``, ``.json`` or ``.npz``), and
    return its path. ``meta`` gets ``record_count``; if it lists ``chunks``, their lane counts must add up to the
    records (checked, so a bad file is never written). Give ``records`` (dicts) or ``table`` (columns)."""
    path = Path(path)
    suffix = check_suffix(path)
    note(path)  # the figure being drawn wrote it (`otod.core.figure_sources`)
    count = table.length if records is None else len(records)
    meta = dict(meta, record_count=count)
    if "chunks" in meta and sum(c["lanes"] for c in meta["chunks"]) != count:
        raise ValueError("chunk lane counts do not add up to the records")
    meta["meta_sha256"] = meta_checksum(meta)
    if suffix != ".json":
        from otod.core.columns import table_of

        table = table_of(records) if table is None else table
        with atomic_file(path, "wb") as f:
            _columns_module(suffix).write_table(f, jsonable(meta), table)
        return path
    return _save_json(path, meta, table.records() if records is None else records)


def _save_json(path: Path, meta: dict[str, Any], records: list[dict[str, Any]]) -> Path:
    """The JSON format: records serialised one at a time as they are written, so a million-record sweep never
    holds a second copy of them, or the whole text, in memory."""

    def pieces():
        yield json.dumps({"format": FORMAT, "meta": jsonable(meta)}, separators=(",", ":"), allow_nan=False)[:-1]
        yield ',"records":['
        for i, r in enumerate(records):
            yield ("," if i else "") + json.dumps(jsonable(r), separators=(",", ":"), allow_nan=False)
        yield "]}"

    return write_atomic(path, pieces())


def _refuse(path: Path, what: str) -> OtodError:
    return OtodError(f"results file {path}: {what}; it is not trusted or overwritten: move it away (or delete it) "
                     "to run the sweep again")


def verify(path: Path, meta: dict, records: list) -> None:
    """Check records against metadata: the record count, and each chunk's lane count and checksum, in order."""
    count = meta.get("record_count")
    if count is not None and count != len(records):
        raise _refuse(path, f"holds {len(records)} records but its metadata says {count}")
    start = 0
    for chunk in meta.get("chunks", []):
        part = records[start:start + chunk["lanes"]]
        if len(part) != chunk["lanes"]:
            raise _refuse(path, f"chunk {chunk['key']} should hold {chunk['lanes']} records, found {len(part)}")
        if records_checksum(part) != chunk["sha256"]:
            raise _refuse(path, f"the records of chunk {chunk['key']} do not match their checksum (edited or "
                                "damaged)")
        start += chunk["lanes"]
    if meta.get("chunks") is not None and start != len(records):
        raise _refuse(path, f"{len(records) - start} records belong to no chunk in the metadata")


def verify_counts(path: Path, meta: dict, count: int) -> None:
    """Check a record count against the metadata's ``record_count`` and its chunks' lane counts."""
    if meta.get("record_count") is not None and meta["record_count"] != count:
        raise _refuse(path, f"holds {count} records but its metadata says {meta['record_count']}")
    if meta.get("chunks") is not None and sum(c["lanes"] for c in meta["chunks"]) != count:
        raise _refuse(path, f"its chunks hold {sum(c['lanes'] for c in meta['chunks'])} records, it holds {count}")


def load(path: str | os.PathLike) -> Results:
    """Load and verify a results file, ``.parquet``, ``.json`` or ``.npz`` by its suffix; a missing, unreadable,
    foreign or inconsistent file raises `OtodError` naming the path and what is wrong. Format-1 files are migrated
    by their sweep's ``migrate``. A Parquet or npz file is verified by its columns' checksums (its chunks' JSON
    checksums are kept for the file's JSON twin, see `convert`)."""
    path = Path(path)
    if not path.is_file():
        raise OtodError(f"results file {path}: no such file (expected a .parquet, .json or .npz file written by "
                        "otod)")
    note(path)  # the figure being drawn read it (`otod.core.figure_sources`)
    if path.suffix in (".parquet", ".npz"):
        header, table = _columns_module(path.suffix).load_table(path, lambda what: _refuse(path, what))
        verify_meta(path, header["meta"])
        verify_counts(path, header["meta"], table.length)
        return Results(meta=header["meta"], path=path, table=table)
    try:
        payload = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _refuse(path, f"not readable as JSON ({e.__class__.__name__}: truncated or damaged?)") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("records"), list) or not isinstance(
            payload.get("meta"), dict):
        raise OtodError(f"results file {path}: not an otod results file (expected format {FORMAT!r})")
    if payload.get("format") == FORMAT_V1:
        payload = _migrate_v1(path, payload)
    elif payload.get("format") != FORMAT:
        raise OtodError(f"results file {path}: format {payload.get('format')!r} is not one this otod reads "
                        f"({FORMAT!r} or {FORMAT_V1!r}); it was written by another version of otod")
    verify_meta(path, payload["meta"])
    verify(path, payload["meta"], payload["records"])
    meta = with_axis_labels(payload["meta"])
    return Results(meta=meta, records=named_records(meta.get("axes", []), payload["records"]), path=path)


def kept(kind: str, config: dict[str, Any], measure: Callable[[], list[dict[str, Any]]],
         folder: str | os.PathLike = "results", suffix: str = ".json", precision: str = "float64") -> Results:
    """A measurement that is no sweep (a figure's own draws or runs) kept as a results file,
    ``<folder>/<kind>-<digest of config>.json``: read back where an earlier run of the same config wrote it, else
    ``measure()``'s records saved there with the metadata every results file carries (kind, config, environment,
    precision, wall time), and then read back, so the caller draws the same numbers either way. Where the figure
    being drawn reads committed results, a file that is not there is refused instead of measured
    (`otod.core.figure_guard.refuse_to_measure`)."""
    import time

    from otod.core.figure_guard import refuse_to_measure

    path = Path(folder) / f"{kind}-{digest(config)}{suffix}"
    if path.exists():
        return load(path)
    refuse_to_measure(path)
    started = time.perf_counter()
    records = measure()
    meta = {"kind": kind, "config": config, "digest": digest(config), "environment": environment(),
            "precision": precision, "wall_time_s": time.perf_counter() - started, "complete": True}
    path.parent.mkdir(parents=True, exist_ok=True)
    return load(save(path, meta, records))


def with_axis_labels(meta: dict) -> dict:
    """The metadata with each coded axis's ``labels`` (`otod.core.axes`): files written before an axis had labels
    lack them, so they come from the registered sweep (left out where that sweep is not registered)."""
    axes = meta.get("axes")
    if meta.get("kind") != "sweep" or not axes or any("labels" in a for a in axes):
        return meta
    from otod.core.registry import sweep_kind

    try:
        kind = sweep_kind(meta.get("sweep", "?"))
    except OtodError:
        return meta
    known = {a.name: a.labels for a in kind.axes}
    return {**meta, "axes": [{**a, "labels": list(known[a["name"]])} if known.get(a.get("name")) else a
                             for a in axes]}


def convert(source: str | os.PathLike, target: str | os.PathLike) -> Results:
    """Rewrite a results file in the format of ``target``'s suffix (``otod convert``): the source is loaded and
    verified first; converting to JSON re-checks every chunk's checksum on the rebuilt records, so a file that
    went through npz or Parquet and back is the file it was. An existing target is refused."""
    source, target = Path(source), Path(target)
    check_suffix(target)
    if target.exists():
        raise OtodError(f"results file {target}: already exists; move it away, or choose another target")
    loaded = load(source)
    if target.suffix == ".json":
        verify(target, loaded.meta, loaded.records)
        save(target, loaded.meta, loaded.records)
    else:
        save(target, loaded.meta, table=loaded.table)
    return Results(meta=loaded.meta, path=target, _rows=loaded._rows, _table=loaded._table)


def _migrate_v1(path: Path, payload: dict) -> dict:
    meta = payload["meta"]
    if meta.get("kind") != "sweep":
        return {**payload, "meta": {**meta, "migrated_from": FORMAT_V1}}
    if not meta.get("complete", False):
        raise _refuse(path, "an incomplete sweep written by otod 0.1 (format 1), which cannot be resumed")
    from otod.core.registry import sweep_kind

    kind = sweep_kind(meta.get("sweep", "?"))
    if kind.migrate is None:
        raise OtodError(f"results file {path}: format 1 and the {kind.name} sweep cannot migrate it")
    return kind.migrate(payload)
