"""What this machine has: free memory, so that the core can refuse what will not fit before allocating it."""

from __future__ import annotations


def memory_available() -> int | None:
    """Free bytes on the default device: ``memory_stats()`` on an accelerator, MemAvailable on a CPU host; None
    where neither is known."""
    import jax

    device = jax.devices()[0]
    try:
        stats = device.memory_stats()
    except Exception:  # backends without memory stats
        stats = None
    if stats and "bytes_limit" in stats:
        return int(stats["bytes_limit"] - stats.get("bytes_in_use", 0))
    return host_memory_available()


def host_memory_available() -> int | None:
    """Free host memory in bytes (MemAvailable), read without importing JAX, so a command can refuse a plan
    before its heavy imports. None where unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def libc_function(name: str):
    """The C library's function ``name`` through ctypes, or None where there is no such library or function."""
    import ctypes
    import ctypes.util

    library = ctypes.util.find_library("c")
    try:
        return getattr(ctypes.CDLL(library), name) if library else None
    except (OSError, AttributeError):
        return None


def release_free_memory() -> bool:
    """Give the heap pages that freed objects left behind back to the operating system (glibc's ``malloc_trim``);
    False where the C library has no such call.

    glibc keeps freed memory in the process for reuse, so what XLA's compiles and a sweep's runs allocated and freed
    stays in the resident set while the report then builds its theory on top of it: the peak a machine must hold is
    the sum. A sweep calls this once its last chunk is in, again once its metadata is built, and once its results
    file is written. Measured on the 1e4 × 64-seed condition sweep (51,200 lanes, float64): peak resident memory
    429 → 371 MiB (the first call, 2026-11); on 2026-11-28, 476–491 MiB with the first call alone, when the
    metadata's theory left 46 MiB of freed heap and the file's writing 27 MiB in Arrow's pool.

    Where pyarrow is loaded, its memory pool (mimalloc or jemalloc, which keep what Arrow frees) gives its unused
    memory back too; pyarrow is not imported for it."""
    import sys

    arrow = sys.modules.get("pyarrow")
    if arrow is not None:
        arrow.default_memory_pool().release_unused()
    trim = libc_function("malloc_trim")
    if trim is None:
        return False
    trim(0)
    return True


def use_system_arrow_pool() -> bool:
    """Have pyarrow allocate through the C library's malloc, not its own pool, for the rest of the process, unless
    the user chose a pool (``ARROW_DEFAULT_MEMORY_POOL`` set) or pyarrow is already loaded (then False).

    Why: Arrow's default pools (mimalloc, jemalloc) keep what Arrow frees, and a sweep's results file and its
    analysis (pandas columns backed by Arrow, turned into NumPy arrays) go through it, so the resident set only
    grows: on the 1e4 × 64-seed condition sweep the analysis added 54 MiB of which tracemalloc saw 18. With the
    system pool the command's peak fell from 443–458 to 428 MiB (two runs each, 2026-11-28, with the trims of
    `release_free_memory` after the metadata and the file in both). The command line calls this before anything
    imports pyarrow; a notebook keeps whatever pool it has."""
    import os
    import sys

    if "pyarrow" in sys.modules or "ARROW_DEFAULT_MEMORY_POOL" in os.environ:
        return False
    os.environ["ARROW_DEFAULT_MEMORY_POOL"] = "system"
    return True


#: glibc's mallopt parameters: M_TRIM_THRESHOLD and M_MMAP_THRESHOLD.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def hold_freed_memory(mmap_bytes: int = 32 * 2 ** 20, trim_bytes: int = 256 * 2 ** 20) -> bool:
    """Keep freed heap memory in the process for reuse, for the rest of it (glibc's mallopt; False where the C
    library has none): arrays up to ``mmap_bytes`` come from the heap, and up to ``trim_bytes`` of free heap top is
    kept. A NumPy loop that allocates and frees the same few-MB arrays thousands of times (the noise sweeps' exact
    recursions) otherwise gets fresh pages from the system at every allocation and faults each one in: measured on
    26 heavy-ball lanes (d = 10⁴), 0.37 s of system time against 0.01 s once held. glibc cannot return to its
    dynamic thresholds afterwards; `release_free_memory` still gives the pages back."""
    mallopt = libc_function("mallopt")
    if mallopt is None:
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, int(mmap_bytes))) and bool(mallopt(_M_TRIM_THRESHOLD, int(trim_bytes)))
