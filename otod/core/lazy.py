"""Modules imported on first use, so that what never computes (``otod --help``, a bad option) never imports JAX.

``jnp = lazy("jax.numpy")`` behaves like the module once an attribute is read; the import happens then, once
(Python caches it), and costs nothing afterwards beyond one attribute lookup at trace time.
"""

from __future__ import annotations

import importlib
from typing import Any


class LazyModule:
    """A stand-in for a module that imports it when one of its attributes is first read."""

    def __init__(self, name: str):
        self._lazy_name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._lazy_name), attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._lazy_name}>"


def lazy(name: str) -> LazyModule:
    return LazyModule(name)
