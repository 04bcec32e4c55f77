"""Records as NumPy columns for tables and fits: what `otod fit` works on, so that a 10⁶-record sweep is grouped
and fitted by NumPy instead of by loops over a million dicts.

A `Frame` holds one array per record field: numbers as float64 (NaN where a record has None or lacks the field),
strings and other values as object arrays (None where missing), a fixed-length list such as ``hits`` as a 2-D
float64 array (NaN where an item is None). The functions of `otod.core.fit` and `otod.core.tuning` accept a Frame
wherever they accept a list of records, and give the same numbers (tested).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Frame:
    """Equal-length columns by field name (see the module's docstring for their types)."""

    data: dict

    def __len__(self) -> int:
        return len(next(iter(self.data.values()))) if self.data else 0

    def __contains__(self, name: str) -> bool:
        return name in self.data

    def __getitem__(self, name: str) -> np.ndarray:
        return self.data[name]

    def where(self, mask: np.ndarray) -> "Frame":
        """The rows where ``mask`` is True, in order."""
        return Frame({k: v[mask] for k, v in self.data.items()})

    @classmethod
    def of(cls, results) -> "Frame":
        """The Frame of a `Results` (from its columns as loaded, or built once from its dicts)."""
        return cls.of_table(results.table)

    @classmethod
    def of_records(cls, records: list[dict]) -> "Frame":
        from otod.core.columns import table_of

        return cls.of_table(table_of(records))

    @classmethod
    def of_table(cls, table) -> "Frame":
        data = {}
        for c in table.columns:
            missing = c.null if c.present is None else (~c.present if c.null is None else c.null | ~c.present)
            if c.kind in ("int", "float"):
                data[c.name] = _floats(c.values, missing)
            elif c.kind in ("int-list", "float-list"):
                gone = c.item_null if c.item_null is not None else np.zeros(c.values.shape, bool)
                data[c.name] = _floats(c.values, gone | (missing[:, None] if missing is not None else False))
            elif c.kind == "str":
                labels = np.empty(len(c.labels) + 1, object)
                labels[:-1] = c.labels.tolist()  # code −1 picks the last: None
                values = labels[c.values]
                if missing is not None:
                    values[missing] = None
                data[c.name] = values
            else:
                data[c.name] = next(iter(c.arrays().values()))
        return cls(data)


def _floats(values: np.ndarray, missing) -> np.ndarray:
    out = values.astype(np.float64)
    if missing is not None:
        out[missing] = np.nan
    return out


def first_seen(values: np.ndarray) -> list:
    """The distinct values in order of first appearance (as ``dict.fromkeys``)."""
    if len(values) == 0:
        return []
    _, index = np.unique(values.astype(str) if values.dtype == object else values, return_index=True)
    return [values[i] for i in sorted(index)]


def is_missing(values: np.ndarray) -> np.ndarray:
    """Where a column holds no value (None or NaN)."""
    if values.dtype == object:
        return np.fromiter((v is None for v in values), bool, len(values))
    return np.isnan(values) if values.dtype.kind == "f" else np.zeros(len(values), bool)
