"""Every core of the machine as a JAX device, so that a sweep's blocks run on all of them.

XLA:CPU runs one program on one device, and the engine's while loops are too small for its intra-op threads to
help, so a single CPU device leaves the other cores idle. Split into one host device per core
(``--xla_force_host_platform_device_count``), the engine deals a call's blocks to the devices, one single-device
program per device (`otod.core.engine.dispatch`), and the sweep keeps a chunk running on each. The flag must be set before JAX is imported: the
command line calls `use_every_core` first; a notebook may call it before importing JAX. ``OTOD_CPU_DEVICES=N``
chooses the count (1 turns the split off; from 1 to `MAX_DEVICES`, anything else is refused); an ``XLA_FLAGS``
that already sets it is left alone, unless it sets fewer than 1 or another count than ``OTOD_CPU_DEVICES``
(refused: one of the two would be ignored). On a GPU or TPU the flag changes nothing: the local devices are the
accelerators.

The watchdog's time (``OTOD_WATCHDOG_SECONDS``, read by `otod.core.engine.wait_for_devices`) is read here too, beside
the device count, so that the command line refuses a bad value before it imports JAX (0.3 s, not the 3.5 s of CPU
that importing JAX and the obstacle took first).
"""

from __future__ import annotations

import math
import os
import sys

from otod.core.errors import OtodError

ENV = "OTOD_CPU_DEVICES"
FLAG = "--xla_force_host_platform_device_count"

#: The most host devices ``OTOD_CPU_DEVICES`` may ask for (and the most the default of one per core sets). JAX
#: starts every host device before the first program runs, and that start grows with the count. Measured on this
#: project's 2-core machine, ``OTOD_CPU_DEVICES=N otod sweep condition --k 1..10:3 --seeds 2 --no-plot`` end to
#: end, warm compilation cache (first a quiet run; then the median of 3 with the machine shared, load 5):
#: N = 2: 5.6 s (6.5 s); 16: 5.6 s (7.6 s); 64: 5.4 s (6.8 s); 256: 5.8 s (7.1 s); 1024: 8.0 s (8.1 s). Above
#: it the start dominates: N = 2048: 17.7 s, 4096: 21 s (28 s); JAX's device start alone (``import jax;
#: jax.devices()``) took 2.1 s at N = 256 and 1024, 15 s at 4096, and at 16384 was still starting after 11 min
#: (killed; ``=100000`` hung the same way). 1024 starts within seconds and is above common servers' core counts.
MAX_DEVICES = 1024


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def requested_devices(value: str) -> int | None:
    """The device count an ``OTOD_CPU_DEVICES`` value asks for: None when empty (unset), else an integer from 1 to
    `MAX_DEVICES`. Anything else raises `OtodError` rather than being ignored: a count of 0, -1, 2.5 or ``abc``
    was silently replaced by the default, and 100000 hung while JAX started its devices."""
    value = value.strip()
    if not value:
        return None
    try:
        count = int(value)
    except ValueError:
        count = 0
    if not 1 <= count <= MAX_DEVICES:
        raise OtodError(f"{ENV}={value}: need an integer from 1 to {MAX_DEVICES} (JAX host devices; 1 keeps one, "
                        f"unset gives one per core: {min(cores(), MAX_DEVICES)} here), e.g. {ENV}=4")
    return count


#: The ``XLA_FLAGS`` this process wrote (`use_every_core`), not the user's: its count is never a conflict with a later
#: ``OTOD_CPU_DEVICES`` (a notebook, the tests' many command lines in one process).
_written: str | None = None


def flag_devices(xla_flags: str) -> int | None:
    """The host device count ``XLA_FLAGS`` sets with `FLAG` (the last one given, as XLA reads it), or None where it
    sets none. A count below 1 or not a whole number raises `OtodError`: ``=0`` ended in a traceback from JAX's
    start."""
    values = [item.split("=", 1)[1] if "=" in item else "" for item in xla_flags.split()
              if item.split("=", 1)[0] == FLAG]
    if not values:
        return None
    try:
        count = int(values[-1])
    except ValueError:
        count = 0
    if count < 1:
        raise OtodError(f"XLA_FLAGS={FLAG}={values[-1]}: need a whole number of host devices ≥ 1, e.g. "
                        f"{FLAG}=4, or drop it (otod sets one per core; {ENV}=N chooses)")
    return count


def use_every_core() -> int | None:
    """Ask XLA for one host device per core (at most `MAX_DEVICES`), or ``OTOD_CPU_DEVICES``; return the count set,
    or None when JAX is already imported or ``XLA_FLAGS`` already says. A bad ``OTOD_CPU_DEVICES`` raises
    `OtodError` in every case, checked before those early returns: the command line may run many times in one
    process (a notebook, the tests), and a value refused once is refused every time."""
    global _written
    asked = requested_devices(os.environ.get(ENV, ""))
    flags = os.environ.get("XLA_FLAGS", "")
    flagged = flag_devices(flags)
    if flagged is not None and asked is not None and flagged != asked and flags != _written:
        raise OtodError(f"{ENV}={asked} beside XLA_FLAGS={FLAG}={flagged}: two device counts; give one of them, "
                        f"e.g. unset XLA_FLAGS's {FLAG} and keep {ENV}={asked}")
    if "jax" in sys.modules or flagged is not None:
        return None
    count = asked if asked is not None else min(cores(), MAX_DEVICES)
    if count > 1:
        os.environ["XLA_FLAGS"] = _written = f"{os.environ.get('XLA_FLAGS', '')} {FLAG}={count}".strip()
    return count


#: The watchdog's default: seconds without progress after which a CPU device program is taken to be wedged.
WATCHDOG_SECONDS = 30.0

#: The shortest watchdog time: 20 ms polls and CPU time in scheduler ticks cannot judge less (``=1e-9`` never fired).
MIN_WATCHDOG_SECONDS = 1.0


def watchdog_seconds() -> float | None:
    """The watchdog's time: ``OTOD_WATCHDOG_SECONDS`` (a number of seconds ≥ `MIN_WATCHDOG_SECONDS`, or ``off``:
    None), else `WATCHDOG_SECONDS`; anything else raises `OtodError`."""
    value = os.environ.get("OTOD_WATCHDOG_SECONDS", "").strip().lower()
    if not value:
        return WATCHDOG_SECONDS
    if value == "off":
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds >= MIN_WATCHDOG_SECONDS):
        raise OtodError(f"OTOD_WATCHDOG_SECONDS={value}: give a number of seconds ≥ 1 (the shortest idle time the "
                        "watchdog can judge) or off, e.g. OTOD_WATCHDOG_SECONDS=120")
    return seconds
