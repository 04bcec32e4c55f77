"""The obstacle packages the command line loads, and the paper's figures above them (`otod.paper`); each registers
itself with `otod.core.registry` on import.

Importing a package is cheap (its ``__init__`` imports only the registry: its parts are imported when first used),
so they are imported here by name, in the order they register."""

from __future__ import annotations

from types import ModuleType

from otod import condition, depth, noise, cost, nets, paper  # noqa: I001  (registration order)

OBSTACLES: tuple[ModuleType, ...] = (condition, depth, noise, cost, nets, paper)


def load_all() -> tuple[ModuleType, ...]:
    """Every obstacle package (and the paper's figures), registered by importing this module (registration is
    idempotent)."""
    return OBSTACLES
