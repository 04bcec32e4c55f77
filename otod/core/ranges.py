"""The one range syntax shared by every sweep option.

Accepted forms (numbers may use scientific notation, ``1e4``):

- ``A..B``          the integers A, A+1, ..., B (inclusive; A and B must be integers)
- ``A..B:N``        N points linearly spaced from A to B (inclusive)
- ``A..B:N:log``    N points log-spaced from A to B (inclusive; A > 0)
- ``a,b,c``         a comma list of numbers (each item may itself be a range)
"""

from __future__ import annotations

import math

import numpy as np

from otod.core.errors import OtodError

FORMS = "A..B, A..B:N, A..B:N:log or a comma list, e.g. 1..100, 1..1e4:25:log, 1,2,5,10"


def _number(text: str, option: str, whole: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise OtodError(f"{option} {whole}: {text!r} is not a number; accepted: {FORMS}") from None
    if not math.isfinite(value):
        raise OtodError(f"{option} {whole}: {text!r} is not a finite number; accepted: {FORMS}")
    return value


def _one_range(item: str, option: str, whole: str) -> list[float]:
    start_text, _, rest = item.partition("..")
    parts = rest.split(":")
    start = _number(start_text, option, whole)
    end = _number(parts[0], option, whole)
    if start > end:
        raise OtodError(f"{option} {whole}: range start {start_text} exceeds its end {parts[0]}; "
                        f"write A..B with A ≤ B; accepted: {FORMS}")
    if len(parts) == 1:
        if start != int(start) or end != int(end):
            raise OtodError(f"{option} {whole}: A..B needs integer ends (use A..B:N for N points between "
                            f"non-integers); accepted: {FORMS}")
        if end - start > 1_000_000:
            raise OtodError(f"{option} {whole}: more than a million values; use A..B:N:log")
        return [float(v) for v in range(int(start), int(end) + 1)]
    if len(parts) > 3 or (len(parts) == 3 and parts[2] != "log"):
        raise OtodError(f"{option} {whole}: the part after the count must be 'log'; accepted: {FORMS}")
    count = _number(parts[1], option, whole)
    if count != int(count) or count < 1 or count > 1_000_000:
        raise OtodError(f"{option} {whole}: the point count N must be an integer from 1 to 10^6; accepted: {FORMS}")
    count = int(count)
    if len(parts) == 3:
        if start <= 0:
            raise OtodError(f"{option} {whole}: log spacing needs a positive start; accepted: {FORMS}")
        values = np.geomspace(start, end, count)
    else:
        values = np.linspace(start, end, count)
    values[0], values[-1] = start, end if count > 1 else start
    return [float(v) for v in values]


def parse_range(text: str | int | float, option: str = "--values", *, minimum: float | None = None,
                integer: bool = False, what: str = "values") -> tuple[float, ...]:
    """Parse a range expression into its sorted, de-duplicated values.

    ``minimum`` rejects values below it, ``integer`` values that are not whole numbers; ``what`` names the values in
    the error (``"condition numbers κ"``). Every failure raises `OtodError` with the option, the text and the
    accepted forms.
    """
    whole = str(text).strip()
    if not whole:
        raise OtodError(f"{option}: empty; accepted: {FORMS}")
    values: list[float] = []
    for item in whole.split(","):
        item = item.strip()
        if not item:
            raise OtodError(f"{option} {whole}: empty item in the comma list; accepted: {FORMS}")
        values.extend(_one_range(item, option, whole) if ".." in item else [_number(item, option, whole)])
    if minimum is not None and min(values) < minimum:
        raise OtodError(f"{option} {whole}: {what} must be ≥ {minimum:g} (got {min(values):g})")
    if integer and any(v != int(v) for v in values):
        raise OtodError(f"{option} {whole}: {what} must be whole numbers")
    return tuple(sorted(set(values)))
