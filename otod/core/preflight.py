"""Checks a sweep, plot or figures command makes before it writes or allocates anything: which options the user
gave (so an option the rest of the line ignores is refused, but a default never is), whether ``--out`` names
something the command writes, whether the sweep fits this machine, and keeping NumPy's floating-point warnings
(an overflowing learning rate: the lanes are recorded as diverged) off the user's terminal."""

from __future__ import annotations

import contextlib
import warnings
from pathlib import Path

from otod.core.errors import OtodError

#: The results formats a sweep writes (`otod.core.results.SUFFIXES`, kept here so that checking options imports
#: nothing more).
RESULT_SUFFIXES = (".parquet", ".json", ".npz")


def given_options() -> frozenset[str]:
    """The parameter names of the running click command the user gave (command line or environment), not those
    left at their default: a deliberate default is never refused as ignored."""
    import click
    from click.core import ParameterSource

    ctx = click.get_current_context()
    return frozenset(name for name in ctx.params
                     if ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP,
                                                               None))


def results_out(out: str, option: str = "--out") -> str:
    """Check a sweep's ``--out``: a results file (``.parquet``, ``.json`` or ``.npz``) or a folder (a name without
    an extension, or an existing folder). Anything else (``x.csv``) is refused before a folder of that name is
    created; so is an empty name (``--out ''``, which `pathlib` reads as the working folder)."""
    refuse_empty(out, option, "runs/")
    path = Path(out)
    if path.suffix in RESULT_SUFFIXES or path.is_dir() or not path.suffix:
        if path.exists() and not path.is_dir() and path.suffix not in RESULT_SUFFIXES:
            raise OtodError(f"{option} {out}: a file that is not a results file; give a folder or a "
                            f".parquet/.json/.npz file, e.g. {option} runs/ or {option} runs/big.parquet")
        return out
    raise OtodError(f"{option} {out}: sweeps write .parquet, .json or .npz results (or into a folder named without "
                    f"an extension), not {path.suffix}; e.g. {option} runs/ or {option} runs/big.parquet")


def part_out(out: str | Path, name: str) -> str | Path:
    """Where one of several sweeps that a command runs (a batch schedule's constant batches and phases, the
    checkpoints of ``--branch-at``) writes, given the command's ``--out``: a folder is shared (each sweep's file is
    named by its own config, `otod.core.config.default_path`); a results file ``FILE.parquet`` becomes
    ``FILE-<name>.parquet`` beside it, one file per sweep, since one file holds one sweep (the same name for all
    of them made the second sweep refuse the first one's file as "another sweep")."""
    path = Path(out)
    if path.suffix not in RESULT_SUFFIXES:
        return out
    return str(path.with_name(f"{path.stem}-{name}{path.suffix}"))


def refuse_empty(out: str | Path, option: str, example: str) -> None:
    """Refuse an ``--out`` that is empty or only blanks: ``Path('')`` is the working folder, so ``--out ''`` (an
    unset shell variable, ``--out "$DIR"``) wrote there without a word."""
    if isinstance(out, str) and not out.strip():
        raise OtodError(f"{option} {out!r}: an empty name; give a folder or file to write, e.g. {option} {example}")


def make_folder(out: str | Path, option: str = "--out") -> Path:
    """Create the output folder ``out`` (and its parents), or refuse it in one line: a path that cannot be made
    (``/proc/x``), that names a file, or an empty name (``--out ''``: `pathlib` reads it as the working folder)."""
    refuse_empty(out, option, "figures/")
    path = Path(out)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise OtodError(f"{option} {out}: a file, not a folder; e.g. {option} figures/") from None
    except OSError as e:
        raise OtodError(f"{option} {out}: cannot create the folder ({e.strerror or e}); e.g. {option} figures/") \
            from None
    why = cannot_write_in(path)
    if why is not None:
        raise OtodError(f"{option} {out}: cannot write in the folder ({why}); e.g. {option} figures/")
    return path


def refuse_unwritable(out: str | Path, option: str = "--out") -> None:
    """Refuse, before any work and without creating anything, an ``--out`` (a folder, or a results file) this
    process could not write: the nearest folder that exists on its way is a file, or cannot be written in
    (`cannot_write_in`). An unwritable ``--out`` was found only when the results were saved, after the work
    (``curvature``: 25-60 s, ``sweep noise``: 21 s)."""
    refuse_empty(out, option, "runs/")
    path = Path(out)
    folder = path.parent if path.suffix in RESULT_SUFFIXES else path
    existing = next((p for p in (folder, *folder.parents) if p.exists()), Path("."))
    if not existing.is_dir():
        raise OtodError(f"{option} {out}: {existing} is a file, not a folder; e.g. {option} runs/")
    why = cannot_write_in(existing)
    if why is not None:
        raise OtodError(f"{option} {out}: cannot write in {existing} ({why}); e.g. {option} runs/")


#: Above this many values of the largest traced axis, `check_resources` estimates from an evenly spaced sample of
#: `SAMPLE_POINTS` of them: the estimate asks the theory for every point (about 0.27 ms per point and method,
#: measured: 10.6 s for ``--k 1..10000`` with 4 methods), so ``--k 1..1000000`` spent minutes before saying anything.
SAMPLE_ABOVE = 2000
SAMPLE_POINTS = 500
#: Bytes of output per lane, as `otod.core.plan.estimate` counts them (the one term of its peak that grows with
#: the number of points: the lanes of the method with the most learning rates).
BYTES_PER_LANE = 64


def thinned(config, keep: int = SAMPLE_POINTS):
    """``config`` with its largest traced axis thinned to ``keep`` evenly spaced values (ends kept), and the factor
    by which the full axis is longer; ``(config, 1.0)`` where the axis has at most `SAMPLE_ABOVE` values."""
    import dataclasses

    traced = [(name, values) for name, values in config.axes if name in config.traced_axes]
    name, values = max(traced, key=lambda axis: len(axis[1]))
    if len(values) <= SAMPLE_ABOVE:
        return config, 1.0
    step = (len(values) - 1) / (keep - 1)
    sample = tuple(values[round(i * step)] for i in range(keep))
    axes = tuple((n, sample if n == name else v) for n, v in config.axes)
    return dataclasses.replace(config, axes=axes), len(values) / keep


def full_estimate(config):
    """`otod.core.plan.estimate` of ``config`` in bounded time: lanes, lane-iterations and seconds scaled up from
    a sample of the points where there are many (`thinned`), memory as the sample's plus the output of the extra
    lanes; the seconds include the planner's own work per point (twice the time this estimate took per point: the
    sweep predicts every point's cost again before it runs)."""
    import time

    from otod.core.plan import Estimate, estimate

    sample, scale = thinned(config)
    start = time.perf_counter()
    e = estimate(sample)
    planning = 2 * (time.perf_counter() - start) * scale
    widest = sample.seeds * max(len(sample.rates_for(m)) for m in sample.methods)  # the peak's method
    extra_points = len(sample.traced_points()) * (scale - 1.0)
    return Estimate(round(e.lanes * scale), e.lane_iterations * scale, e.seconds * scale + planning,
                    e.bytes + BYTES_PER_LANE * widest * extra_points)


def check_resources(config, yes: bool, smaller: str) -> None:
    """Refuse before anything is written what will not fit in memory, or (without ``yes``) would take more than
    an hour: the core's `otod.core.plan.check_estimate` on `full_estimate` (the families' declared sizes;
    nothing is allocated); ``smaller`` names this sweep's options that shrink it."""
    from otod.core.plan import check_estimate

    check_estimate(config, yes, smaller=smaller, estimated=full_estimate(config))


def refuse_memory(need: float, what: str, hint: str, available: int | None = None) -> None:
    """Refuse with one line a plan of ``need`` bytes above the sweeps' share of the free host memory
    (`otod.core.plan.MEMORY_FRACTION`), before anything is allocated or JAX imported: ``what`` names the
    options, ``hint`` what to change."""
    from otod.core.resources import host_memory_available
    from otod.core.plan import MEMORY_FRACTION

    available = host_memory_available() if available is None else available
    if available is not None and need > MEMORY_FRACTION * available:
        raise OtodError(f"{what} needs about {need / 2**30:.3g} GiB of memory and {available / 2**30:.3g} GiB is "
                        f"free; {hint}")


def refuse_time(seconds: float, yes: bool, what: str, hint: str) -> None:
    """Refuse with one line a run estimated above `otod.core.plan.MAX_SECONDS` (an hour), unless ``yes``."""
    from otod.core.plan import MAX_SECONDS

    if seconds > MAX_SECONDS and not yes:
        raise OtodError(f"{what} takes an estimated {seconds / 3600:.1f} h on this machine; {hint}, or pass --yes")


@contextlib.contextmanager
def quiet_numerics():
    """Keep NumPy's floating-point RuntimeWarnings (overflow in a cast or a square, from a learning rate such as
    1e38) and matplotlib's "no positive values" for a figure of diverged lanes off stderr: those lanes are
    recorded as diverged and the table says so."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.filterwarnings("ignore", message="Data has no positive values")
        yield


def cannot_write_in(folder: Path) -> str | None:
    """Why this process cannot create a file in ``folder`` (its OS error), or None: probed with a file created and
    removed at once, so nothing stays; read-only folders are found even for root."""
    import tempfile

    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        return str(e.strerror or e)
    return None
