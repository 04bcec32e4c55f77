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
    the sum. A sweep calls this once its last chunk is in. Measured on the 1e4 × 64-seed condition sweep (51,200
    lanes, float64): peak resident memory 429 → 371 MiB."""
    trim = libc_function("malloc_trim")
    if trim is None:
        return False
    trim(0)
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
