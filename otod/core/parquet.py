"""Results as a Parquet file: the records in typed columns that ``pandas.read_parquet(path)`` reads in one line,
and otod's header (format, metadata, record count, column specs, data checksum) as JSON in the file's schema
metadata under the key ``otod``, readable without otod: ``json.loads(pyarrow.parquet.read_schema(path)
.metadata[b"otod"])["meta"]``.

One record field is one Arrow column (through `otod.core.columns.Table`, as for ``.npz``): ints as int64, floats
as float64 (None and non-finite floats as null, as in the JSON format), bools as bool, strings as strings, a field
that is None everywhere as Arrow's null type, and anything else (dicts, ragged or mixed lists, ints beyond int64,
mixed types) as its JSON text. A list of a fixed length of ints or floats, such as ``hits``, is one column per
position, ``hits[0]`` … ``hits[k-1]`` (int64 or float64, null where the item is None): pandas's numeric
operations, group-bys and medians work on them at once, and they are the columns `Results.columns` gives, where a
list column would reach pandas as an object column of arrays.

What a column cannot say itself goes in its spec in the header, so the records read back are exactly the records
saved: which records lack the field (``absent``, a mask: ``lr_on_edge`` is on some records only; null alone
cannot tell a missing field from None), which lists are None as a whole (``null``), and the kind (JSON text, a
split list). Masks are stored as zlib-compressed bitmaps in base64.

Integrity: the header's ``sha256`` covers the record count, the column specs and every column's canonical content
(name, Arrow type, validity, values; strings by their codes in order of first appearance and their labels), so
it does not depend on how Parquet chunks or encodes the data; the metadata has its own ``meta_sha256``
(`otod.core.results.meta_checksum`). A truncated, damaged, edited or foreign file is refused in one line, and
checking costs a pass over the columns, never the records as dicts.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from otod.core.columns import Column, Table
from otod.core.errors import OtodError

FORMAT = "otod-parquet/1"
#: The schema-metadata key of otod's header.
KEY = b"otod"
#: zstd, as measured against npz's deflate in benchmarks/RESULTS.md (issues 11 and 18): about the npz size.
COMPRESSION = "zstd"
LIST_KINDS = ("int-list", "float-list")


def _arrow():
    """pyarrow, or one line saying how to get it (it is a dependency, but an install may lack it)."""
    try:
        import pyarrow
        import pyarrow.compute
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise OtodError("Parquet results (.parquet) need pyarrow: pip install 'pyarrow>=14', or name a .json or "
                        ".npz file") from None
    return pyarrow


# -- masks in the header ---------------------------------------------------------------------------------------


def pack_mask(mask: np.ndarray) -> str:
    """A boolean mask as text for the JSON header: its bits, zlib-compressed, in base64."""
    return base64.b64encode(zlib.compress(np.packbits(mask).tobytes(), 6)).decode()


def unpack_mask(text: str, n: int) -> np.ndarray:
    """The inverse of `pack_mask` for a mask of ``n`` values; damaged text raises ValueError."""
    bits = np.frombuffer(zlib.decompress(base64.b64decode(text, validate=True)), np.uint8)
    if len(bits) != (n + 7) // 8:
        raise ValueError("mask of the wrong length")
    return np.unpackbits(bits, count=n).astype(bool)


# -- Table → Arrow -----------------------------------------------------------------------------------------------


def _absent(c: Column) -> np.ndarray | None:
    return None if c.present is None or c.present.all() else ~c.present


def _missing(c: Column) -> np.ndarray | None:
    """Where the column has no value: None or absent (`otod.core.columns.table_of` counts absent as null)."""
    absent = _absent(c)
    if c.null is None:
        return absent
    return c.null if absent is None else c.null | absent


def _text_array(pa, codes: np.ndarray, labels: list[str]):
    """Strings from codes into labels (code −1: null), without a Python object per record."""
    indices = pa.array(codes.astype(np.int64), mask=codes < 0)
    return pa.array(labels, pa.string()).take(indices)


def _json_texts(c: Column, n: int) -> tuple[np.ndarray, list[str]]:
    """(codes, labels) of a column written as JSON text: its own for a json column, else built from its values."""
    if c.kind == "json":
        return c.values, c.labels.tolist()
    index: dict[str, int] = {}
    texts = [None if v is None else json.dumps(v, sort_keys=True, separators=(",", ":"), allow_nan=False)
             for v in c.python_values(n)]
    codes = np.fromiter((-1 if t is None else index.setdefault(t, len(index)) for t in texts), np.int64, n)
    return codes, list(index)


def arrays_of(c: Column, n: int, split: bool) -> list[tuple[str, Any]]:
    """(name, Arrow array) of one column: one for a field, ``k`` for a list of length ``k`` when ``split`` (else
    the list as JSON text)."""
    pa = _arrow()
    missing = _missing(c)
    if c.kind == "none":
        return [(c.name, pa.nulls(n))]
    if c.kind in ("int", "float", "bool"):
        dtype = {"int": np.int64, "float": np.float64, "bool": bool}[c.kind]
        return [(c.name, pa.array(c.values.astype(dtype, copy=False), mask=missing))]
    if c.kind == "str":
        return [(c.name, _text_array(pa, c.values, c.labels.tolist()))]
    if c.kind in LIST_KINDS and split:
        dtype = np.int64 if c.kind == "int-list" else np.float64
        out = []
        for j in range(c.values.shape[1]):
            gone = c.item_null[:, j] if c.item_null is not None else None
            gone = missing if gone is None else (gone if missing is None else gone | missing)
            out.append((f"{c.name}[{j}]", pa.array(c.values[:, j].astype(dtype), mask=gone)))
        return out
    return [(c.name, _text_array(pa, *_json_texts(c, n)))]


def spec_of(c: Column, kind: str) -> dict[str, Any]:
    """What the header says of one column beyond its Arrow data: its kind, list width, absent and None masks."""
    spec: dict[str, Any] = {"name": c.name, "kind": kind}
    if kind in LIST_KINDS:
        spec["width"] = int(c.values.shape[1])
    absent = _absent(c)
    if absent is not None:
        spec["absent"] = pack_mask(absent)
    if kind in LIST_KINDS and c.null is not None:
        whole = c.null if absent is None else c.null & ~absent
        if whole.any():
            spec["null"] = pack_mask(whole)
    return spec


def arrow_table(table: Table):
    """(Arrow table, column specs) of a `Table`: the columns a Parquet file of these records holds."""
    pa = _arrow()
    names = {c.name for c in table.columns}
    arrays, specs = [], []
    for c in table.columns:
        split = c.kind in LIST_KINDS and not any(f"{c.name}[{j}]" in names for j in range(c.values.shape[1]))
        kind = c.kind if split or c.kind not in LIST_KINDS else "json"
        arrays += arrays_of(c, table.length, split)
        specs.append(spec_of(c, kind))
    return pa.table(dict(arrays)), specs


# -- the data checksum: over each column's canonical content, which the Columns are built from ----------------


@dataclass(frozen=True)
class Canonical:
    """One Arrow column as NumPy, whatever its chunks and encodings: ``nulls`` (None where there are none) and
    ``values`` (nulls filled with 0, NaN or False; for strings the codes in order of first appearance, −1 where
    null, with their ``labels``; None for the null type)."""

    name: str
    type: str
    length: int
    nulls: np.ndarray | None
    values: np.ndarray | None
    labels: list[str] | None = None


def canonical(pa, name: str, column) -> Canonical:
    """The `Canonical` form of one Arrow column (a ChunkedArray)."""
    pc = pa.compute
    nulls = column.is_null().to_numpy(zero_copy_only=False) if column.null_count else None
    kind = column.type
    if pa.types.is_null(kind):
        return Canonical(name, str(kind), len(column), nulls, None)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        encoded = pc.dictionary_encode(column.combine_chunks())
        indices = pc.fill_null(encoded.indices, -1) if nulls is not None else encoded.indices
        return Canonical(name, str(kind), len(column), nulls, indices.to_numpy(zero_copy_only=False).astype(np.int64),
                         encoded.dictionary.to_pylist())
    filler = False if pa.types.is_boolean(kind) else float("nan") if pa.types.is_floating(kind) else 0
    filled = pc.fill_null(column, filler) if nulls is not None else column
    return Canonical(name, str(kind), len(column), nulls, filled.to_numpy(zero_copy_only=False))


def canonical_columns(arrow) -> dict[str, Canonical]:
    pa = _arrow()
    return {name: canonical(pa, name, column) for name, column in zip(arrow.column_names, arrow.columns)}


def data_checksum(length: int, specs: list[dict], columns: dict[str, Canonical]) -> str:
    """SHA-256 of the record count, the column specs and every column's canonical content (`Canonical`): the
    same whatever Parquet's chunks, encodings or bytes under nulls."""
    h = hashlib.sha256(json.dumps([length, specs], sort_keys=True, separators=(",", ":")).encode())
    for c in columns.values():
        h.update(json.dumps([c.name, c.type, c.length, c.nulls is not None, c.labels]).encode())
        for part in (c.nulls if c.nulls is None else np.packbits(c.nulls), c.values):
            if part is not None:
                h.update(np.ascontiguousarray(part).data)
    return h.hexdigest()


# -- the file ----------------------------------------------------------------------------------------------------


def write_table(file, meta: dict, table: Table) -> None:
    """Write ``meta`` and ``table`` to the open binary ``file`` as Parquet (zstd), the header in the schema
    metadata."""
    pa = _arrow()
    arrow, specs = arrow_table(table)
    header = {"format": FORMAT, "meta": meta, "length": table.length, "columns": specs,
              "sha256": data_checksum(table.length, specs, canonical_columns(arrow))}
    text = json.dumps(header, separators=(",", ":"), allow_nan=False)
    arrow = arrow.replace_schema_metadata({KEY: text.encode()})
    pa.parquet.write_table(arrow, file, compression=COMPRESSION)


def read_header(path: Path) -> dict | None:
    """otod's header of a Parquet file (from its footer alone), or None when it has none (a foreign file)."""
    pa = _arrow()
    metadata = pa.parquet.read_schema(path).metadata or {}
    return json.loads(metadata[KEY]) if KEY in metadata else None


def _mask(c: Canonical, n: int) -> np.ndarray:
    return np.zeros(n, bool) if c.nulls is None else c.nulls


def column_of(spec: dict, columns: dict[str, Canonical], n: int) -> Column:
    """The `Column` of one spec from the canonical columns (absent records null, as
    `otod.core.columns.table_of` has them)."""
    name, kind = spec["name"], spec["kind"]
    absent = unpack_mask(spec["absent"], n) if "absent" in spec else None
    present = None if absent is None else ~absent
    if kind in LIST_KINDS:
        parts = [columns[f"{name}[{j}]"] for j in range(spec["width"])]
        whole = unpack_mask(spec["null"], n) if "null" in spec else np.zeros(n, bool)
        null = whole if absent is None else whole | absent
        gone = np.stack([_mask(p, n) for p in parts], axis=1) & ~null[:, None]
        values = np.stack([p.values for p in parts], axis=1)
        return Column(name, kind, values, null=null if null.any() else None, present=present,
                      item_null=gone if gone.any() else None)
    c = columns[name]
    if kind == "none":
        return Column(name, kind, null=c.nulls, present=present)
    if kind in ("str", "json"):
        labels = np.asarray(c.labels, dtype=str) if c.labels else np.zeros(0, dtype="<U1")
        return Column(name, kind, c.values, labels, null=c.nulls, present=present)
    return Column(name, kind, c.values, null=c.nulls, present=present)


def _expected_type(pa, kind: str):
    return {"none": pa.null(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(), "str": pa.string(),
            "json": pa.string(), "int-list": pa.int64(), "float-list": pa.float64()}.get(kind)


def check_shape(pa, header: dict, arrow, refuse) -> None:
    """Refuse a table whose columns are not the ones the specs name, of their types, each ``length`` long."""
    expected = []
    for spec in header["columns"]:
        names = [f"{spec['name']}[{j}]" for j in range(spec["width"])] if spec["kind"] in LIST_KINDS \
            else [spec["name"]]
        expected += [(n, _expected_type(pa, spec["kind"])) for n in names]
    found = [(f.name, f.type) for f in arrow.schema]
    if [n for n, _ in found] != [n for n, _ in expected]:
        raise refuse("its columns are not the ones its header names (edited or damaged)")
    for (name, found_type), (_, wanted) in zip(found, expected):
        if found_type != wanted:
            raise refuse(f"column {name!r} is {found_type}, its header says {wanted} (edited or damaged)")
    if arrow.num_columns and arrow.num_rows != header["length"]:
        raise refuse(f"its columns hold {arrow.num_rows} values for {header['length']} records")


def load_table(path: Path, refuse) -> tuple[dict, Table]:
    """(header, `Table`) of a Parquet results file, checked against its header's data checksum; ``refuse(what)``
    makes the error to raise. A Parquet file without otod's header is refused as foreign."""
    pa = _arrow()
    try:
        # one open for the footer's header and the columns: `pyarrow.parquet.ParquetFile.read` takes 1.1-2.1 ms of
        # CPU on a results file of 15-74 kB where `read_schema` and then `read_table` (the datasets layer) took
        # 2.5-3.0 (pyarrow 26, the same table and metadata)
        with pa.parquet.ParquetFile(path) as parquet:
            metadata = parquet.schema_arrow.metadata or {}
            header = json.loads(metadata[KEY]) if KEY in metadata else None
            if header is None:
                raise OtodError(f"results file {path}: a Parquet file without otod's header (schema metadata "
                                f"{KEY.decode()!r}); not an otod results file")
            if not isinstance(header, dict) or not isinstance(header.get("meta"), dict):
                raise refuse(f"its header (schema metadata {KEY.decode()!r}) is not otod's")
            if header.get("format") != FORMAT:
                raise OtodError(f"results file {path}: format {header.get('format')!r} is not one this otod reads "
                                f"({FORMAT!r}); it was written by another version of otod")
            arrow = parquet.read()
        check_shape(pa, header, arrow, refuse)
        canon = canonical_columns(arrow)
        if data_checksum(header["length"], header["columns"], canon) != header.get("sha256"):
            raise refuse("its records do not match their checksum (edited or damaged)")
        columns = tuple(column_of(spec, canon, header["length"]) for spec in header["columns"])
    except OtodError:
        raise
    except (OSError, ValueError, KeyError, TypeError, AttributeError, zlib.error, pa.ArrowException) as e:
        raise refuse(f"not readable as an otod Parquet file ({e.__class__.__name__}: truncated or damaged?)") \
            from None
    return header, Table(header["length"], columns)


def is_parquet(path: str | Path) -> bool:
    return Path(path).suffix == ".parquet"
