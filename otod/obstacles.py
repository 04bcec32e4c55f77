"""The obstacle packages the command line loads, and the paper's figures above them (`otod.paper`); each registers
itself with `otod.core.registry` on import."""

from __future__ import annotations

import importlib

OBSTACLES = ("otod.condition", "otod.depth", "otod.noise", "otod.cost", "otod.nets", "otod.paper")


def load_all() -> None:
    """Import every obstacle package (registration is idempotent)."""
    for name in OBSTACLES:
        importlib.import_module(name)
