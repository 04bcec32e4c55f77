"""The obstacle packages the command line loads; each registers itself with `otod.core.registry` on import.

Importing a package is cheap (its ``__init__`` imports only the registry: its parts are imported when first used),
so they are imported here by name, in the order they register."""

from __future__ import annotations

from types import ModuleType

from otod import condition, depth, noise, cost, nets  # noqa: I001  (registration order)

OBSTACLES: tuple[ModuleType, ...] = (condition, depth, noise, cost, nets)


def load_all() -> tuple[ModuleType, ...]:
    """Every obstacle package, registered by importing this module (registration is idempotent)."""
    return OBSTACLES
