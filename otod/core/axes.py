"""Sweep axes: the named quantities a sweep varies.

An axis is *traced* (its values vary inside one compiled program: κ, a learning rate, a batch size where shapes
do not change) or *static* (one program per value: a dimension, a depth, a width: a field of the problem spec).
Records carry every axis by its ``name``; tables, fits and figures take the symbol and label from the axis.

A *coded* axis (``labels``) sweeps named choices (an init: identity, xavier, ...) as a traced axis: the engine
vmaps over the integer code (the index into ``labels``), while records, tables, fits and figures carry the name.
Results files written before an axis had labels hold the code; `named_records` maps it to the name on load.
"""

from __future__ import annotations

from dataclasses import dataclass

from otod.core.errors import OtodError
from otod.core.ranges import parse_range


@dataclass(frozen=True)
class Axis:
    """A named sweep axis: record field ``name``, ``symbol`` for tables (κ), ``label`` for figure axes, the CLI
    ``option`` that sets it, whether it is ``traced``, and the bounds its values must respect."""

    name: str
    symbol: str
    label: str
    option: str
    traced: bool = True
    minimum: float | None = None
    maximum: float | None = None
    integer: bool = False
    what: str = "values"
    example: str = "1..100"
    why_maximum: str = ""
    labels: tuple[str, ...] = ()
    #: The maximum itself is excluded (a half-open range such as β ∈ [0, 1)).
    open_maximum: bool = False

    def record_value(self, value) -> float | str:
        """What a record carries for one value: the name of a coded axis's code, else the value as a float. A
        name passes through, so records already carrying names are left as they are."""
        if not self.labels or isinstance(value, str):
            return value if isinstance(value, str) else float(value)
        return self.labels[int(round(float(value)))]

    def code(self, value) -> float:
        """The engine's value for a record's: a coded axis's name back to its code, anything else as a float."""
        if self.labels and isinstance(value, str):
            return float(self._code_of(value))
        return float(value)

    def _code_of(self, name: str) -> int:
        try:
            return self.labels.index(name)
        except ValueError:
            raise OtodError(f"{self.option} {name}: unknown {self.label}; choose from {', '.join(self.labels)}, "
                            f"e.g. {self.option} {self.example}") from None

    def check(self, values) -> tuple[float, ...]:
        """The values as a sorted tuple of floats, or `OtodError` naming the option, the bound and an example."""
        values = tuple(sorted({float(v) for v in values}))
        if not values:
            raise OtodError(f"{self.option}: no values to sweep; e.g. {self.option} {self.example}")
        if self.minimum is not None and values[0] < self.minimum:
            raise OtodError(f"{self.option}: {self.what} must be ≥ {self.minimum:g} (got {values[0]:g}), "
                            f"e.g. {self.option} {self.example}")
        if self.maximum is not None and (values[-1] >= self.maximum if self.open_maximum else
                                         values[-1] > self.maximum):
            raise OtodError(f"{self.option}: {self.what} must be {'<' if self.open_maximum else '≤'} "
                            f"{self.maximum:g} (got {values[-1]:g}){self.why_maximum}; e.g. {self.option} "
                            f"{self.example}")
        if self.integer and any(v != int(v) for v in values):
            raise OtodError(f"{self.option}: {self.what} must be whole numbers, e.g. {self.option} {self.example}")
        return values

    def parse(self, text) -> tuple[float, ...]:
        """Values from the shared range syntax (`otod.core.ranges`), checked against the bounds; for a coded axis,
        a comma list of names (or a TOML list), as their codes in the order given, duplicates dropped."""
        if not self.labels:
            return self.check(parse_range(text, self.option, what=self.what))
        names = text if isinstance(text, (list, tuple)) else [t.strip() for t in str(text).split(",")]
        if not names or any(not str(n) for n in names):
            raise OtodError(f"{self.option} {text}: give a comma list of {self.what}, e.g. {self.option} "
                            f"{self.example}")
        return self.check(self._code_of(str(n)) for n in names)


def named_records(axes: list[dict], records: list[dict]) -> list[dict]:
    """Records with every coded axis's value as its name (``axes``: a results file's ``meta["axes"]``, each with
    its ``labels`` where it has them). Files written before the axis had labels carry codes: this maps them."""
    labels = {a["name"]: tuple(a["labels"]) for a in axes if a.get("labels")}
    if not labels:
        return records
    if all(isinstance(r.get(n), str) for r in records for n in labels if n in r):
        return records  # named already (every file otod writes now): the same list, so its columns stay valid
    return [r if all(isinstance(r.get(n), str) for n in labels if n in r) else
            {**r, **{n: labels[n][int(round(float(r[n])))] for n in labels if n in r and not isinstance(r[n], str)}}
            for r in records]
