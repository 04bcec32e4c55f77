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
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None
