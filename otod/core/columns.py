"""Results as typed NumPy columns in one ``.npz`` file: what a sweep of 10⁵–10⁶ lanes saves, loads and fits in
seconds, where JSON takes tens of seconds (measured in ``benchmarks/bench_results.py``).

One record field is one `Column`: bool, int (stored in the smallest signed type that holds its range), float
(float64), str (int codes into a table of labels), a list of a fixed length of ints or floats (a 2-D array, e.g.
``hits``: one column per ladder rung), or anything else as JSON text (codes into labels). Each column may carry a
``null`` mask (the value is None; non-finite floats are None too, as in the JSON format, which has no NaN), a
``present`` mask (records that lack the field, such as ``lr_on_edge``), and for lists an ``item_null`` mask. So
the records rebuilt from the columns are exactly the records saved, in both formats.

The file is a zip of ``.npy`` members (readable by ``numpy.load`` without otod, no pickle): ``header`` (JSON:
format, meta, record count, the columns and their members, and every member's SHA-256 over its dtype, shape and
bytes) and ``header.sha256`` (the header's own digest). `load_table` checks both and refuses a truncated,
damaged or edited file in one line.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from otod.core.errors import OtodError
from otod.core.plain import jsonable

FORMAT = "otod-columns/1"
#: Zip compression of the members, by the numbers in benchmarks/RESULTS.md ("Issue 11: results at scale"): at 10⁶
#: records deflate level 1 makes the file 5× smaller than stored members (14 MB against 71) for ~0.45 s more
#: written (turning the dicts into columns costs 2.2 s either way) and ~0.1 s more to load; level 6
#: (``numpy.savez_compressed``) writes 2.3× slower than level 1 for 20% less.
COMPRESSION = zipfile.ZIP_DEFLATED
COMPRESSLEVEL = 1
#: Integers above this are kept exactly only as JSON text (lists of ints pass through float64 on the way in).
EXACT_INT = 2 ** 53
#: Fields whose lists vary in length by nature (a lane's trace: `otod.core.traces`), kept as JSON text even where
#: every record's has one length, so that a file's columns do not depend on where its lanes happened to stop.
RAGGED_LISTS = ("loss_trace", "gap_trace")


@dataclass(frozen=True)
class Column:
    """One record field over all records. ``kind``: none, bool, int, float, str, json, int-list, float-list.
    ``values``: the array (codes for str and json); ``labels``: the strings the codes index (code −1: None);
    ``null``/``present``/``item_null``: masks, None when no record needs them."""

    name: str
    kind: str
    values: np.ndarray | None = None
    labels: np.ndarray | None = None
    null: np.ndarray | None = None
    present: np.ndarray | None = None
    item_null: np.ndarray | None = None

    def members(self) -> dict[str, np.ndarray]:
        return {part: getattr(self, part) for part in ("values", "labels", "null", "present", "item_null")
                if getattr(self, part) is not None}

    def python_values(self, n: int) -> list:
        """The field's values as Python objects, None where null or absent (absent ones are dropped later)."""
        if self.kind == "none":
            return [None] * n
        if self.kind in ("str", "json"):
            labels = [json.loads(s) for s in self.labels.tolist()] if self.kind == "json" else self.labels.tolist()
            table = labels + [None]  # code -1 picks the last: None
            return [table[c] for c in self.values.tolist()]
        if self.kind in ("int-list", "float-list"):
            rows = self.values.tolist()
            if self.item_null is not None:
                for i, j in np.argwhere(self.item_null).tolist():
                    rows[i][j] = None
        else:
            rows = self.values.tolist()
        if self.null is not None:
            for i in np.flatnonzero(self.null).tolist():
                rows[i] = None
        return rows

    def arrays(self) -> dict[str, np.ndarray]:
        """The column as 1-D arrays for a data frame: NaN (numbers) or None (objects) where null or absent; a list
        of fixed length k becomes k columns ``name[0]`` … ``name[k-1]``."""
        missing = self.null if self.present is None else (~self.present if self.null is None
                                                          else self.null | ~self.present)
        if self.kind in ("int-list", "float-list"):
            out = {}
            for j in range(self.values.shape[1]):
                gone = self.item_null[:, j] if self.item_null is not None else None
                gone = missing if gone is None else (gone if missing is None else gone | missing)
                out[f"{self.name}[{j}]"] = _numbers(self.values[:, j], gone)
            return out
        if self.kind in ("int", "float"):
            return {self.name: _numbers(self.values, missing)}
        if self.kind == "bool" and missing is None:
            return {self.name: self.values}
        values = np.empty(len(missing if self.values is None else self.values), object)
        values[:] = self.python_values(len(values))
        if missing is not None:
            values[missing] = None
        return {self.name: values}


def _numbers(values: np.ndarray, missing: np.ndarray | None) -> np.ndarray:
    if missing is None or not missing.any():
        return values.astype(np.int64) if values.dtype.kind == "i" else values
    out = values.astype(np.float64)
    out[missing] = np.nan
    return out


@dataclass(frozen=True)
class Table:
    """Records as columns: ``length`` records, ``columns`` in the order their fields first appear."""

    length: int
    columns: tuple[Column, ...]

    def column(self, name: str) -> Column | None:
        return next((c for c in self.columns if c.name == name), None)

    def records(self) -> list[dict[str, Any]]:
        """The records as dicts, exactly as saved (absent fields absent, None where None)."""
        names = [c.name for c in self.columns]
        values = [c.python_values(self.length) for c in self.columns]
        records = [dict(zip(names, row)) for row in zip(*values)] if names else [{} for _ in range(self.length)]
        for c in self.columns:
            if c.present is not None:
                for i in np.flatnonzero(~c.present).tolist():
                    del records[i][c.name]
        return records

    def arrays(self) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for c in self.columns:
            out.update(c.arrays())
        return out


def _smallest_int(values: np.ndarray) -> np.ndarray:
    if values.size == 0:
        return values.astype(np.int8)
    low, high = int(values.min()), int(values.max())
    for dtype in (np.int8, np.int16, np.int32):
        info = np.iinfo(dtype)
        if info.min <= low and high <= info.max:
            return values.astype(dtype)
    return values.astype(np.int64)


def _codes(values: list) -> tuple[np.ndarray, np.ndarray]:
    index: dict[str, int] = {}
    codes = np.fromiter((-1 if v is None else index.setdefault(v, len(index)) for v in values), np.int64,
                        len(values))
    labels = np.asarray(list(index), dtype=str) if index else np.zeros(0, dtype="<U1")
    return _smallest_int(codes), labels


def column_of(name: str, values: list, present: np.ndarray | None) -> Column:
    """The `Column` of one field's values (None where null or absent), by the types it holds."""
    n = len(values)
    types = set(map(type, values))
    if not types <= {bool, int, float, str, list, dict, type(None)}:  # numpy scalars, tuples, paths
        values = [jsonable(v) for v in values]
        types = set(map(type, values))
    nulls = type(None) in types
    types.discard(type(None))
    null = np.fromiter((v is None for v in values), bool, n) if nulls else None
    if not types:
        return Column(name, "none", null=null, present=present)
    if types == {bool}:
        return Column(name, "bool", np.array(values, dtype=bool), null=null, present=present)
    if types == {int}:
        try:
            array = np.array([0 if v is None else v for v in values] if nulls else values, dtype=np.int64)
        except OverflowError:
            return _json_column(name, values, null, present)
        return Column(name, "int", _smallest_int(array), null=null, present=present)
    if types == {float}:
        array = np.array(values, dtype=np.float64)  # None → NaN
        bad = ~np.isfinite(array)
        array[bad] = np.nan
        return Column(name, "float", array, null=bad if bad.any() else None, present=present)
    if types == {str}:
        codes, labels = _codes(values)
        return Column(name, "str", codes, labels, null=null, present=present)
    if types == {list} and name not in RAGGED_LISTS:
        listed = _list_column(name, values, null, present)
        if listed is not None:
            return listed
    return _json_column(name, values, null, present)


def _list_column(name: str, values: list, null, present) -> Column | None:
    """A 2-D column of lists of one length holding ints (and None) or floats (and None); None otherwise."""
    rows = [v for v in values if v is not None]
    lengths = set(map(len, rows))
    if len(lengths) != 1:
        return None
    k = lengths.pop()
    items = {type(x) for v in rows for x in v}
    items.discard(type(None))
    if k == 0 or not (items == {int} or items == {float}):
        return None
    filler = [None] * k
    array = np.array([filler if v is None else v for v in values], dtype=np.float64)  # None → NaN
    gone = np.isnan(array) if items == {int} else ~np.isfinite(array)
    if items == {int}:
        if np.abs(np.where(gone, 0, array)).max(initial=0) >= EXACT_INT:
            return None
        stored = _smallest_int(np.where(gone, 0, array).astype(np.int64))
    else:
        stored = np.where(gone, np.nan, array)
    if null is not None:
        gone = gone & ~null[:, None]  # a None record is the record's null, not its items'
    return Column(name, "int-list" if items == {int} else "float-list", stored, null=null, present=present,
                  item_null=gone if gone.any() else None)


def _json_column(name: str, values: list, null, present) -> Column:
    text = [None if v is None else json.dumps(v, sort_keys=True, separators=(",", ":"), allow_nan=False)
            for v in values]
    codes, labels = _codes(text)
    return Column(name, "json", codes, labels, null=null, present=present)


def table_of(records: list[dict[str, Any]]) -> Table:
    """Records → `Table` (fields in order of first appearance; a field some records lack gets a present mask)."""
    shapes = dict.fromkeys(tuple(r) for r in records)
    names = list(dict.fromkeys(k for shape in shapes for k in shape))
    everywhere = set(names).intersection(*map(set, shapes)) if shapes else set()
    columns = []
    for name in names:
        present = None if name in everywhere else np.fromiter((name in r for r in records), bool, len(records))
        columns.append(column_of(name, [r.get(name) for r in records], present))
    return Table(len(records), tuple(columns))


# -- the file ----------------------------------------------------------------------------------------------------


def _sha256(array: np.ndarray) -> str:
    h = hashlib.sha256(f"{array.dtype.str}{array.shape}".encode())
    h.update(np.ascontiguousarray(array).data)
    return h.hexdigest()


def write_table(file, meta: dict, table: Table, compression: int = COMPRESSION,
                compresslevel: int | None = COMPRESSLEVEL) -> None:
    """Write ``meta`` and ``table`` to the open binary ``file`` as an npz (a zip of .npy members)."""
    members, columns = {}, []
    for i, c in enumerate(table.columns):
        names = {part: f"c{i}.{part}" for part in c.members()}
        members.update({names[part]: array for part, array in c.members().items()})
        columns.append({"name": c.name, "kind": c.kind, "members": names})
    header = json.dumps({"format": FORMAT, "meta": meta, "length": table.length, "columns": columns,
                         "sha256": {k: _sha256(v) for k, v in members.items()}}, separators=(",", ":"),
                        allow_nan=False)
    members = {"header": np.asarray(header), "header.sha256": np.asarray(hashlib.sha256(header.encode()).hexdigest()),
               **members}
    with zipfile.ZipFile(file, "w", compression=compression, compresslevel=compresslevel, allowZip64=True) as zf:
        for key, array in members.items():
            with zf.open(key + ".npy", "w", force_zip64=True) as out:
                np.lib.format.write_array(out, np.asanyarray(array), allow_pickle=False)


def load_table(path: Path, refuse) -> tuple[dict, Table]:
    """(header, `Table`) of an npz results file, every member checked against its SHA-256; ``refuse(what)``
    makes the error to raise."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            header_text = str(npz["header"][()])
            if hashlib.sha256(header_text.encode()).hexdigest() != str(npz["header.sha256"][()]):
                raise refuse("its header does not match its checksum (edited or damaged)")
            header = json.loads(header_text)
            if header.get("format") != FORMAT:
                raise OtodError(f"results file {path}: format {header.get('format')!r} is not one this otod reads "
                                f"({FORMAT!r}); it was written by another version of otod")
            columns = []
            for spec in header["columns"]:
                parts = {}
                for part, key in spec["members"].items():
                    array = npz[key]
                    if _sha256(array) != header["sha256"].get(key):
                        raise refuse(f"column {spec['name']!r} does not match its checksum (edited or damaged)")
                    if len(array) != header["length"] and part != "labels":
                        raise refuse(f"column {spec['name']!r} holds {len(array)} values for "
                                     f"{header['length']} records")
                    parts[part] = array
                columns.append(Column(spec["name"], spec["kind"], **parts))
    except OtodError:
        raise
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, json.JSONDecodeError, TypeError) as e:
        raise refuse(f"not readable as an otod npz file ({e.__class__.__name__}: truncated or damaged?)") from None
    return header, Table(header["length"], tuple(columns))


def is_npz(path: str | Path) -> bool:
    return Path(path).suffix == ".npz"
