"""Sweep axes: the named quantities a sweep varies.

An axis is *traced* (its values vary inside one compiled program: κ, a learning rate, a batch size where shapes
do not change) or *static* (one program per value: a dimension, a depth, a width: a field of the problem spec).
Records carry every axis by its ``name``; tables, fits and figures take the symbol and label from the axis.
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

    def check(self, values) -> tuple[float, ...]:
        """The values as a sorted tuple of floats, or `OtodError` naming the option, the bound and an example."""
        values = tuple(sorted({float(v) for v in values}))
        if not values:
            raise OtodError(f"{self.option}: no values to sweep; e.g. {self.option} {self.example}")
        if self.minimum is not None and values[0] < self.minimum:
            raise OtodError(f"{self.option}: {self.what} must be ≥ {self.minimum:g} (got {values[0]:g}), "
                            f"e.g. {self.option} {self.example}")
        if self.maximum is not None and values[-1] > self.maximum:
            raise OtodError(f"{self.option}: {self.what} must be ≤ {self.maximum:g} (got {values[-1]:g})"
                            f"{self.why_maximum}; e.g. {self.option} {self.example}")
        if self.integer and any(v != int(v) for v in values):
            raise OtodError(f"{self.option}: {self.what} must be whole numbers, e.g. {self.option} {self.example}")
        return values

    def parse(self, text) -> tuple[float, ...]:
        """Values from the shared range syntax (`otod.core.ranges`), checked against the bounds."""
        return self.check(parse_range(text, self.option, what=self.what))
