"""JAX's persistent compilation cache for the command line: a program compiled once is loaded, not recompiled,
by later ``otod`` processes (JAX's own mechanism, keyed on the program, the JAX version and the device).

The CLI turns it on at start; a notebook calls `enable` if it wants the same. ``OTOD_COMPILATION_CACHE`` chooses
the folder (default ``~/.cache/otod/xla``); ``OTOD_COMPILATION_CACHE=off`` turns it off. Results never depend on
it: a cache hit returns the same executable the compile would.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV = "OTOD_COMPILATION_CACHE"


def cache_dir() -> Path | None:
    """The cache folder the environment asks for, or None when it is turned off."""
    value = os.environ.get(ENV, "").strip()
    if value.lower() in ("off", "0", "false", "no"):
        return None
    return Path(value).expanduser() if value else Path.home() / ".cache" / "otod" / "xla"


def enable(path: str | os.PathLike | None = None) -> Path | None:
    """Point JAX's persistent compilation cache at ``path`` (default `cache_dir`); return the folder used, or None
    when turned off or the folder cannot be created (the cache is an optimisation: never an error)."""
    import jax

    folder = Path(path) if path is not None else cache_dir()
    if folder is None:
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.05)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return folder
