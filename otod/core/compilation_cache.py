"""JAX's persistent compilation cache for the command line: a program compiled once is loaded, not recompiled,
by later ``otod`` processes (JAX's own mechanism, keyed on the program, the JAX version and the device).

The CLI turns it on at start; a notebook calls `enable` if it wants the same. ``OTOD_COMPILATION_CACHE`` chooses
the folder (default ``~/.cache/otod/xla``); ``OTOD_COMPILATION_CACHE=off`` turns it off. Results never depend on
it: a cache hit returns the same executable the compile would. A folder the user chose that cannot be used (a
path under ``/proc``, an existing file) is refused (`OtodError`); the default folder failing is not the user's
doing: the process runs without a cache and says so once on stderr.

The folder is bounded (`MAX_BYTES`, least recently used programs evicted first) and, with that, JAX locks it
(``filelock``) around every read and write. Unlocked, JAX writes an entry in place, so another process sharing
the folder (a job array's shares on one node, the test suite's workers) can read it half written: JAX then warns
("Error reading persistent compilation cache entry") and compiles again.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator

from otod.core.errors import OtodError

ENV = "OTOD_COMPILATION_CACHE"

#: The cache folder's bound: 2 GiB. The largest sweep programs take about 400 KB each (compressed); two days of
#: this project's sweeps and benchmarks left 1,582 programs in 116 MB.
MAX_BYTES = 2 * 1024 ** 3


def cache_dir() -> Path | None:
    """The cache folder the environment asks for, or None when it is turned off."""
    value = os.environ.get(ENV, "").strip()
    if value.lower() in ("off", "0", "false", "no"):
        return None
    return Path(value).expanduser() if value else Path.home() / ".cache" / "otod" / "xla"


def enable(path: str | os.PathLike | None = None) -> Path | None:
    """Point JAX's persistent compilation cache at ``path`` (default `cache_dir`); return the folder used, or None
    when turned off or the default folder cannot be made (said once on stderr, `say_no_cache`: the cache is an
    optimisation). A folder the user chose (``path``, or ``OTOD_COMPILATION_CACHE``) that cannot be made or
    written raises `OtodError` naming it, before anything is written: ignored, the programs went uncached without
    a word, and with a file named the side caches wrote ``<file>-*.json`` beside it.

    Before JAX is imported this only sets JAX's own environment variables (read when it is imported), so a command
    that never compiles (``otod --help``, a bad option) does not pay for importing JAX."""
    import sys

    chosen = path is not None or bool(os.environ.get(ENV, "").strip())
    folder = Path(path) if path is not None else cache_dir()
    if folder is None:
        return None
    problem = unusable_folder(folder)
    if problem is not None:
        if chosen:
            name = f"{ENV}={os.environ.get(ENV, '').strip()}" if path is None else f"compilation cache {folder}"
            raise OtodError(f"{name}: {problem}; give a folder otod may create and write, e.g. "
                            f"{ENV}=~/.cache/otod/xla, or {ENV}=off")
        say_no_cache(folder, problem)
        return None
    settings = {"jax_compilation_cache_dir": str(folder), "jax_persistent_cache_min_compile_time_secs": 0.05,
                "jax_persistent_cache_min_entry_size_bytes": 0}
    try:
        import filelock  # noqa: F401  (JAX's bounded cache locks with it; without it the cache stays unbounded)

        settings["jax_compilation_cache_max_size"] = MAX_BYTES
        stamp_unstamped(folder)
    except ImportError:
        pass
    if "jax" in sys.modules:
        import jax

        for name, value in settings.items():
            jax.config.update(name, value)
    else:
        for name, value in settings.items():
            os.environ[name.upper()] = str(value)
    return folder


def unusable_folder(folder: Path) -> str | None:
    """Why ``folder`` cannot hold the cache (None when it can): made (with its parents) if missing, then probed
    with a file created and removed at once, so a folder JAX could not write (a read-only one, even for root) is
    found now, not as a warning at every compile. Leaves nothing behind but the folder itself."""
    from otod.core.preflight import cannot_write_in

    if folder.exists() and not folder.is_dir():
        return "a file, not a folder"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return f"cannot be made a folder ({e.strerror or e})"
    why = cannot_write_in(folder)
    return None if why is None else f"a folder otod cannot write in ({why})"


#: Whether this process has said it runs without the default cache (`say_no_cache`): once is enough.
_SAID_NO_CACHE = []


def say_no_cache(folder: Path, problem: str) -> None:
    """Say once per process, in one line on stderr, that the default cache folder cannot be used and the
    process compiles without it (the user chose nothing, so this is no error)."""
    import sys

    if not _SAID_NO_CACHE:
        _SAID_NO_CACHE.append(folder)
        print(f"otod: no compilation cache: {folder} (the default) {problem}; compiling without it "
              f"(set {ENV}=DIR to keep one, or {ENV}=off to say nothing)", file=sys.stderr)


def stamp_unstamped(folder: Path) -> int:
    """Give every program in ``folder`` that has no last-use stamp (JAX's ``<key>-atime`` beside ``<key>-cache``)
    one, its file's modification time; return how many were stamped.

    Why: a bounded cache looks up every entry's stamp before it adds one (to evict the least recently used), and an
    entry without one, written by an unbounded cache (otod before the bound) or by a process killed between the
    two writes, makes that lookup fail: JAX then warns "Error writing persistent compilation cache entry" at
    every compile and stores nothing (measured on this project's 1,582-entry folder)."""
    stamped = 0
    try:
        names = {p.name for p in folder.iterdir()}
        for name in names:
            if name.endswith("-cache") and name[:-len("-cache")] + "-atime" not in names:
                path = folder / name
                (folder / (name[:-len("-cache")] + "-atime")).write_bytes(
                    path.stat().st_mtime_ns.to_bytes(8, "little"))
                stamped += 1
    except OSError:  # evicted meanwhile, or a read-only folder: JAX's own handling applies
        pass
    return stamped


@contextlib.contextmanager
def count_compilations(loads: list | None = None) -> Iterator[list[float]]:
    """Count XLA compilations inside the block: yields a list that holds one entry (seconds) per program compiled.
    While the block runs it holds every program got from the backend as it comes (a persistent-cache load among
    them, at milliseconds); when the block ends, exactly the compilations. ``loads``, if given, gets one entry per
    program loaded from the persistent cache instead: compilations + loads is the number of programs the block
    needed, whatever the cache held.

    JAX records '/jax/core/compile/backend_compile_duration' for every program it gets from the backend, compiled
    or loaded from the persistent cache; a load also records the cache-hit event. So the compilations are the
    durations less one per cache hit (the shortest: a load takes milliseconds).
    """
    import jax

    durations: list[float] = []
    hits: list[str] = []

    def on_duration(event: str, seconds: float, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            durations.append(seconds)
            compiled.append(seconds)

    def on_event(event: str, **kwargs):
        if event == CACHE_HIT_EVENT:
            hits.append(event)

    compiled: list[float] = []
    jax.monitoring.register_event_duration_secs_listener(on_duration)
    jax.monitoring.register_event_listener(on_event)
    try:
        yield compiled
    finally:
        jax.monitoring.unregister_event_duration_listener(on_duration)
        jax.monitoring.unregister_event_listener(on_event)
        compiled[:] = sorted(durations)[len(hits):]
        if loads is not None:
            loads.extend(hits)


CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"


@contextlib.contextmanager
def count_cache_hits() -> Iterator[list[str]]:
    """Count persistent-cache hits inside the block: JAX records the event ``/jax/compilation_cache/cache_hits``
    each time it loads a compiled program from the cache instead of compiling it."""
    import jax

    hits: list[str] = []

    def listener(event: str, **kwargs):
        if event == CACHE_HIT_EVENT:
            hits.append(event)

    jax.monitoring.register_event_listener(listener)
    try:
        yield hits
    finally:
        jax.monitoring.unregister_event_listener(listener)


@contextlib.contextmanager
def side_cache(name: str) -> Iterator[dict]:
    """A small JSON dict kept beside the compilation cache (``<cache>-<name>.json``), for numbers as costly to
    recompute as a compile (XLA's FLOP count of a method's step): yields the dict and writes it back, atomically,
    if it changed. With the cache turned off (or named a file), or an unreadable file, it is an empty dict that is not
    kept."""
    import json

    folder = cache_dir()
    kept = folder is not None and not (folder.exists() and not folder.is_dir())  # a file named: nothing beside it
    path = folder.with_name(f"{folder.name}-{name}.json") if kept else None
    try:
        stored = json.loads(path.read_text()) if path is not None and path.exists() else {}
    except (OSError, ValueError):
        stored = {}
    table = dict(stored)
    yield table
    if path is not None and table != stored:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(table, sort_keys=True))
            os.replace(tmp, path)
        except OSError:
            pass


#: Side caches read once by this process (`remembered`), by name.
_REMEMBERED: dict[str, dict] = {}


def remembered(name: str, key: str, compute):
    """``compute()``, or the value an earlier process (or this one) stored under ``key`` in the side cache
    ``name`` (`side_cache`): for numbers that cost as much as a compile to recompute and that a later process
    asks for again (the certified iteration bounds and the exact counts a condition sweep's report reads). The
    file is read once per process; each new value is written back at once, merged with what other processes
    wrote meanwhile. The value must survive JSON unchanged (ints, floats, None, lists, str-keyed dicts); the key
    must name everything the value depends on, the code's version included. With the cache turned off it is
    ``compute()``."""
    if cache_dir() is None:
        return compute()
    table = _REMEMBERED.get(name)
    if table is None:
        with side_cache(name) as stored:
            table = _REMEMBERED[name] = dict(stored)
    if key in table:
        return table[key]
    value = compute()
    with side_cache(name) as stored:
        stored[key] = value
        table.update(stored)
    return value
