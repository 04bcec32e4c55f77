"""A table inside a figure's table (``experiments/nets.toml``: a schedule figure's ``[[…workloads]]``, a depth
figure's ``deep_linear``) parsed into its frozen dataclass, as `otod.core.figures.parse_figure` parses the figure's
own table: an unknown or missing key refused in one line (`OtodError`, which the figure's parse prefixes with the
file and the table). The one place such a table is read by its keys."""

from __future__ import annotations

import inspect
from dataclasses import MISSING, fields
from typing import Any, Callable, Mapping

from otod.core.api import OtodError


def parse_table(cls: type, table: Any, where: str, options_of: Callable[..., Any] | None = None):
    """``table`` as ``cls``: each field from the key ``field.metadata["key"]`` (default: its name); with
    ``options_of``, every other key goes to the field ``options``, checked against ``options_of``'s keyword
    parameters. Not a table, a key neither knows, or a field without default that the table lacks: `OtodError`
    naming ``where``."""
    if isinstance(table, cls):
        return table
    if not isinstance(table, Mapping):
        raise OtodError(f"{where}: a table of keys expected, got {table!r}")
    keys = {f.metadata.get("key", f.name): f for f in fields(cls) if f.name != "options" or options_of is None}
    allowed = set(inspect.signature(options_of).parameters) if options_of is not None else set()
    unknown = sorted(k for k in table if k not in keys and k not in allowed)
    if unknown:
        raise OtodError(f"{where}: unknown key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; known: "
                        f"{', '.join(sorted(set(keys) | allowed))}")
    missing = [k for k, f in keys.items() if k not in table and f.default is MISSING
               and f.default_factory is MISSING]
    if missing:
        raise OtodError(f"{where}: missing key{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    kwargs = {f.name: table[k] for k, f in keys.items() if k in table}
    if options_of is not None:
        kwargs["options"] = {k: v for k, v in table.items() if k not in keys}
    return cls(**kwargs)
