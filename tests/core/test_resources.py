"""What the machine has and gives back (`otod.core.resources`)."""

import sys

import pytest

from otod.core.resources import release_free_memory


def resident_mib() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_freed_heap_memory_goes_back_to_the_system():
    """100,000 heap blocks of 2 kB (200 MB; each below glibc's mmap threshold, above Python's small-object
    allocator), of which every 50th stays alive, the last among them: free() alone cannot shrink a heap whose top
    is in use, so the 98 kB gaps stay resident until trimmed. After `release_free_memory` at least 150 MB of them
    are gone from the resident set."""
    blocks = [bytearray(2000) for _ in range(100_000)]
    kept = blocks[49::50]  # noqa: F841  (alive until the end of the test)
    del blocks
    before = resident_mib()
    if not release_free_memory():
        pytest.skip("this C library has no malloc_trim")
    assert before - resident_mib() >= 150
