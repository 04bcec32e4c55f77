"""Sweeps across processes and hosts, through JAX's own distributed runtime (no scheduler of otod's).

``otod sweep ... --distributed`` calls `initialize`, which starts ``jax.distributed`` from the given coordinator,
process count and id, or from the cluster environment JAX detects itself (SLURM, Open MPI, Kubernetes, TPU pods).
Each process then runs its `share` of a sweep's chunks on its own local devices (`otod.core.engine` deals a
chunk's blocks among them), appending each finished chunk to its own part file; at the end all processes meet
at a `barrier` and process 0 merges the part files into the results file (`otod.core.sweep`). Processes exchange
no data through JAX: only the barrier, so the part files must be on a file system every process sees (or copied
together and joined with ``otod merge``).

``otod sweep ... --share I/N`` runs the same share with no runtime at all (`parse_share`, `running_share`): share
``I`` of ``N`` runs into its part file and ends, waiting for no other share and merging nothing, so the shares can
run at any times, as the tasks of a job array (SLURM's ``--array``, submitit); ``otod merge`` then joins the parts.
"""

from __future__ import annotations

import heapq
import re
from contextlib import contextmanager
from typing import Iterator, Sequence

from otod.core.errors import OtodError

#: Seconds to wait for every process to join before giving up with one line (JAX's default is 300).
JOIN_SECONDS = 300


def check_options(coordinator: str | None, num_processes: int | None, process_id: int | None) -> None:
    """Refuse, in one line, a coordinator that is not HOST:PORT, a count below 1, an id outside [0, count), or
    a partial set of the three (all three, or none to let JAX read the cluster environment)."""
    given = [v is not None for v in (coordinator, num_processes, process_id)]
    if any(given) and not all(given):
        raise OtodError("--distributed: give all of --coordinator HOST:PORT --num-processes N --process-id I, or "
                        "none of them to read the cluster environment (SLURM, Open MPI), e.g. --coordinator "
                        "node0:12345 --num-processes 2 --process-id 0")
    if coordinator is not None and not re.fullmatch(r"\[?[\w.:-]+\]?:\d{1,5}", coordinator):
        raise OtodError(f"--coordinator {coordinator}: need HOST:PORT, e.g. --coordinator node0:12345")
    if num_processes is not None and num_processes < 1:
        raise OtodError(f"--num-processes {num_processes}: need an integer ≥ 1, e.g. --num-processes 2")
    if process_id is not None and not 0 <= process_id < num_processes:
        raise OtodError(f"--process-id {process_id}: need 0 ≤ id < --num-processes ({num_processes}), "
                        "e.g. --process-id 0")


def initialize(coordinator: str | None = None, num_processes: int | None = None, process_id: int | None = None,
               timeout: int = JOIN_SECONDS) -> tuple[int, int]:
    """Join the distributed runtime (``jax.distributed.initialize``) and return (process index, process count).

    Must run before any JAX computation. A process that cannot join (no cluster environment, an unreachable
    coordinator, peers that never come within ``timeout`` seconds) gets `OtodError` in one line."""
    check_options(coordinator, num_processes, process_id)
    import jax

    # Processes share no arrays (each runs whole chunks on its own devices), so they need no cross-process
    # collectives; JAX's CPU default, Gloo, would start with the first multi-device program and print to stdout.
    jax.config.update("jax_cpu_collectives_implementation", None)
    try:
        jax.distributed.initialize(coordinator_address=coordinator, num_processes=num_processes,
                                   process_id=process_id, initialization_timeout=timeout)
    except (ValueError, RuntimeError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else e.__class__.__name__
        raise OtodError(f"--distributed: could not join the distributed runtime ({first[:200]}); give "
                        "--coordinator HOST:PORT --num-processes N --process-id I, or run under a cluster "
                        "manager JAX detects (SLURM, Open MPI)") from None
    return jax.process_index(), jax.process_count()


def parse_share(text: str) -> tuple[int, int]:
    """``--share I/N`` as (index, count): this process runs share I of N, 0 ≤ I < N. Anything else is refused in
    one line with the accepted form."""
    found = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(text))
    if found is None:
        raise OtodError(f"--share {text}: need I/N, share I of N shares, e.g. --share 0/4 (in a job array: "
                        "--share $SLURM_ARRAY_TASK_ID/4)")
    index, count = int(found[1]), int(found[2])
    if count < 1:
        raise OtodError(f"--share {text}: need N ≥ 1 shares, e.g. --share 0/4")
    if index >= count:
        raise OtodError(f"--share {text}: shares are numbered from 0, so I must lie in 0..{count - 1}, "
                        f"e.g. --share {count - 1}/{count}")
    return index, count


#: The share (index, count) that ``--share I/N`` gave this process while its command runs; None otherwise.
_share: tuple[int, int] | None = None


@contextmanager
def running_share(index: int, count: int) -> Iterator[None]:
    """While the block runs, `current_share` is (index, count): `otod.core.sweep.run_sweep` then runs that share
    alone (no runtime, no barrier, no merge)."""
    global _share
    before, _share = _share, (index, count)
    try:
        yield
    finally:
        _share = before


def current_share() -> tuple[int, int] | None:
    """The share ``--share I/N`` gave this process's running command, or None."""
    return _share


def processes() -> tuple[int, int]:
    """(this process's index, the process count): (0, 1) unless the distributed runtime was initialized."""
    import jax

    return jax.process_index(), jax.process_count()


#: How long a process waits at a barrier for the others to finish their shares (JAX's heartbeats end the wait
#: sooner when a process dies).
BARRIER_SECONDS = 7 * 24 * 3600


def barrier(name: str) -> None:
    """Wait until every process reaches the barrier ``name`` (a no-op for one process).

    It uses the distributed runtime's coordination service (its key-value barrier), so it moves no data and
    needs no cross-process collectives; ``multihost_utils.sync_global_devices`` would do (a psum over every
    device), but on CPU it starts Gloo, which prints to standard output and so would corrupt ``--json``."""
    import jax

    if jax.process_count() == 1:
        return
    from jax._src import distributed as runtime  # the client has no public accessor in JAX

    client = getattr(getattr(runtime, "global_state", None), "client", None)
    if client is None or not hasattr(client, "wait_at_barrier"):
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)
        return
    client.wait_at_barrier(name, BARRIER_SECONDS * 1000)


def share(costs: Sequence[float], count: int) -> list[int]:
    """The process that runs each item, balancing predicted cost: longest first, each to the least-loaded process
    (Graham's LPT rule, within 4/3 of the best makespan). Deterministic (ties go to the lower index), so every
    process computes the same split from the same plan without talking to the others."""
    owner = [0] * len(costs)
    loads = [(0.0, p) for p in range(count)]
    for i in sorted(range(len(costs)), key=lambda i: (-costs[i], i)):
        load, p = heapq.heappop(loads)
        owner[i] = p
        heapq.heappush(loads, (load + costs[i], p))
    return owner
