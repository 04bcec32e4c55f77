"""Results files: tidy records plus the metadata that makes them reproducible.

One JSON file per run::

    {"format": "otod-results/1",
     "meta": {"kind": ..., "config": {...}, "environment": {...}, "precision": ..., "wall_time_s": ...},
     "records": [{"sweep_value": 10.0, "method": "gd", "seed": 0, ...}, ...]}

Read it with ``otod.results.load(path)``, or without otod::

    import json, pandas as pd
    df = pd.DataFrame(json.load(open(path))["records"])

Files are written atomically (a temporary file in the same folder, then ``os.replace``), so a reader never sees
half a file and an interrupted sweep leaves the last complete chunk on disk.
"""

from __future__ import annotations

import json
import math
import os
import platform
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from otod.errors import OtodError

FORMAT = "otod-results/1"


@dataclass(frozen=True)
class Results:
    """A loaded results file: ``meta`` (config, environment, timings) and ``records`` (one dict per row)."""

    meta: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list)
    path: Path | None = None

    def column(self, name: str) -> list[Any]:
        """All values of one record field, in record order."""
        return [r.get(name) for r in self.records]


def environment() -> dict[str, Any]:
    """Versions and device of this process: otod, jax, jaxlib, optax, numpy, python, backend and device kind."""
    import jax
    import jaxlib
    import numpy
    import optax

    import otod

    device = jax.devices()[0]
    return {
        "otod": otod.__version__,
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "optax": optax.__version__,
        "numpy": numpy.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "backend": jax.default_backend(),
        "device": getattr(device, "device_kind", str(device)),
        "device_count": jax.device_count(),
    }


def _jsonable(value: Any) -> Any:
    """Plain JSON types; non-finite floats become None (JSON has no NaN), numpy scalars become Python numbers."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Path):
        return str(value)
    return value


def save(path: str | os.PathLike, meta: dict[str, Any], records: list[dict[str, Any]]) -> Path:
    """Write a results file atomically and return its path (parent folders are created)."""
    path = Path(path)
    payload = {"format": FORMAT, "meta": _jsonable(meta), "records": _jsonable(records)}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise OtodError(f"cannot write results to {path.parent}: {e.strerror or e}; choose another folder, "
                        "e.g. --out results/") from None
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(payload, f, separators=(",", ":"), allow_nan=False)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def load(path: str | os.PathLike) -> Results:
    """Load a results file; a missing, unreadable or foreign file raises `OtodError` naming the path."""
    path = Path(path)
    if not path.is_file():
        raise OtodError(f"results file {path}: no such file (expected a .json file written by otod)")
    try:
        payload = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise OtodError(f"results file {path}: not readable as JSON ({e.__class__.__name__}); "
                        "expected a file written by otod") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT or not isinstance(
            payload.get("records"), list) or not isinstance(payload.get("meta"), dict):
        raise OtodError(f"results file {path}: not an otod results file (expected format {FORMAT!r})")
    return Results(meta=payload["meta"], records=payload["records"], path=path)
