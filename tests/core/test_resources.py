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


def test_the_command_line_has_pyarrow_allocate_through_malloc_unless_told_otherwise():
    """In a fresh process, the command line's entry point sets Arrow's pool to the system allocator before pyarrow
    loads (its default pool keeps what it frees); a pool the user chose is kept, and a process that loaded pyarrow
    first is left alone (`use_system_arrow_pool` says False)."""
    import os
    import subprocess

    probe = ("import sys\nfrom otod.cli import main\nsys.argv = ['otod', '--help']\ntry:\n    main()\n"
             "except SystemExit:\n    pass\nimport pyarrow\nprint('POOL', pyarrow.default_memory_pool().backend_name)")
    late = ("import pyarrow\nfrom otod.core.resources import use_system_arrow_pool\n"
            "print('POOL', use_system_arrow_pool(), pyarrow.default_memory_pool().backend_name)")
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}

    def pool(code, **extra):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**env, **extra},
                             timeout=120)
        return next(line for line in out.stdout.splitlines() if line.startswith("POOL")).split()[1:]

    assert pool(probe) == ["system"]
    assert pool(probe, ARROW_DEFAULT_MEMORY_POOL="mimalloc") == ["mimalloc"]
    said, loaded = pool(late)
    assert said == "False" and loaded != "system"
