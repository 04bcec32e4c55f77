"""Plain JSON values: what both results formats store (`otod.core.results`, `otod.core.columns`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any


def jsonable(value: Any) -> Any:
    """Plain JSON types; non-finite floats become None (JSON has no NaN), numpy scalars become Python numbers."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Path):
        return str(value)
    return value
