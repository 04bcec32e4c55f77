"""Every core of the machine as a JAX device, so that a sweep's blocks run on all of them.

XLA:CPU runs one program on one device, and the engine's while loops are too small for its intra-op threads to
help, so a single CPU device leaves the other cores idle. Split into one host device per core
(``--xla_force_host_platform_device_count``), the engine deals a call's blocks to the devices, one single-device
program per device (`otod.core.engine.dispatch`), and the sweep keeps a chunk running on each. The flag must be set before JAX is imported: the
command line calls `use_every_core` first; a notebook may call it before importing JAX. ``OTOD_CPU_DEVICES=N``
chooses the count (1 turns the split off); an ``XLA_FLAGS`` that already sets it is left alone. On a GPU or TPU
the flag changes nothing: the local devices are the accelerators.
"""

from __future__ import annotations

import os
import sys

ENV = "OTOD_CPU_DEVICES"
FLAG = "--xla_force_host_platform_device_count"


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def use_every_core() -> int | None:
    """Ask XLA for one host device per core (or ``OTOD_CPU_DEVICES``); return the count set, or None when JAX is
    already imported or ``XLA_FLAGS`` already says."""
    if "jax" in sys.modules or FLAG in os.environ.get("XLA_FLAGS", ""):
        return None
    value = os.environ.get(ENV, "").strip()
    count = int(value) if value.isdigit() and int(value) >= 1 else cores()
    if count > 1:
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {FLAG}={count}".strip()
    return count
