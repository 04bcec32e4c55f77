"""What every obstacle's commands share: bad input as one line and exit code 2, a progress line on a terminal."""

from __future__ import annotations

import functools
import math
import sys
from typing import Callable, TextIO

import click

from otod.core.errors import Abandoned, Interrupted, OtodError, ShareDone


def end_now(message: str, code: int) -> None:
    """Print ``message`` as one line on stderr and end the process at once with ``code``, without waiting for
    the threads of a device program that is still running (XLA cannot cancel it; a normal exit would wait for
    it forever if it is wedged). Every finished chunk is already in the sweep's journal."""
    import os

    click.echo(f"otod: {message}", err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def user_errors(fn):
    """Run a command body; bad input (`OtodError`) ends as one line on stderr and exit code 2, an interrupted
    sweep as one line saying what is saved and exit code 130; a device program left running (`Abandoned`: the
    watchdog, or a second Ctrl-C) as one line and exit code 1 (130 for Ctrl-C), at once (`end_now`)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except OtodError as e:
            click.echo(f"otod: error: {e}", err=True)
            sys.exit(2)
        except Interrupted as e:
            click.echo(f"otod: {e}", err=True)
            sys.exit(130)
        except Abandoned as e:
            end_now(str(e), 130 if e.interrupted else 1)
        except ShareDone as e:
            click.echo(f"otod: {e}", err=True)

    return wrapper


def terminal_progress(stream: TextIO | None = None, after: float = 2.0) -> Callable[[dict], None]:
    """A progress callback for `otod.core.sweep.run_sweep`: 'lanes done/total, lanes/s, ETA' on one rewritten
    line of ``stream`` (stderr), once the sweep has run ``after`` seconds; silent when ``stream`` is not a
    terminal, so logs and pipes stay clean."""
    stream = stream or sys.stderr
    interactive = hasattr(stream, "isatty") and stream.isatty()

    def report(p: dict) -> None:
        if not interactive or p["elapsed"] < after:
            return
        eta = "?" if not math.isfinite(p["eta"]) else f"{p['eta']:.0f} s"
        end = "\n" if p["lanes_done"] >= p["lanes_total"] else ""
        stream.write(f"\r{p['lanes_done']}/{p['lanes_total']} lanes, {p['lanes_per_second']:.0f} lanes/s, "
                     f"ETA {eta}   {end}")
        stream.flush()

    return report


def count_progress(what: str, stream: TextIO | None = None, after: float = 2.0,
                   clock: Callable[[], float] | None = None) -> Callable[[int, int], None]:
    """A progress callback for a measurement done in parts (the checkpoints of `otod curvature` and `otod
    noise-scale`): called with (parts done, parts in all) after each part, it writes 'WHAT: done/total, elapsed,
    ETA' on one rewritten line of ``stream`` (stderr) once ``after`` seconds have passed, the ETA the mean time of
    a part so far times the parts left; silent when ``stream`` is not a terminal."""
    import time

    stream = stream or sys.stderr
    interactive = hasattr(stream, "isatty") and stream.isatty()
    clock = clock or time.perf_counter
    start = clock()

    def report(done: int, total: int) -> None:
        elapsed = clock() - start
        if not interactive or elapsed < after or done < 1:
            return
        eta = elapsed / done * (total - done)
        end = "\n" if done >= total else ""
        stream.write(f"\r{what}: {done}/{total}, {elapsed:.0f} s, ETA {eta:.0f} s   {end}")
        stream.flush()

    return report


def echo_report(report, as_json: bool) -> None:
    """Print a sweep's report: the text on stdout, or with ``as_json`` the records as JSON on stdout, each marked
    with the analysis's choice (`otod.core.pipeline.marked_records`), and the text on stderr (so
    ``otod sweep ... --json | jq`` reads clean JSON)."""
    if as_json:
        import json

        from otod.core.pipeline import marked_records

        click.echo(report.text, err=True)
        click.echo(json.dumps(marked_records(report)))
    else:
        click.echo(report.text)


from otod.core.options import positive_int, positive_seconds, precision, seed_value  # noqa: E402
from otod.core.preflight import refuse_memory, refuse_time, refuse_unwritable, results_out  # noqa: E402,F401


#: The options `common_sweep_options` declares, in the order ``--help`` lists them.
COMMON_SWEEP_OPTIONS = (
    click.Option(["--seeds"], default=None,
                 help="Seeds (random problem instances) per point. Default 8. E.g. --seeds 16"),
    click.Option(["--seed"], default=None, help="Base random seed, 0 to 2^31 − 1. Default 0. E.g. --seed 1"),
    click.Option(["--x64"], is_flag=True, help="Compute in float64 (not with --x32). Default: the sweep's own "
                                               "precision rule. E.g. --x64"),
    click.Option(["--x32"], is_flag=True, help="Compute in float32 (not with --x64). E.g. --x32"),
    click.Option(["--out"], default="results", show_default=True,
                 help="Folder for the results file and figure, or the results file itself: .parquet (the default; "
                      "pandas.read_parquet reads it), .json or .npz (NumPy columns). E.g. --out runs/ or "
                      "--out runs/k.json"),
    click.Option(["--json", "as_json"], is_flag=True,
                 help="Print the records as JSON to stdout (tables go to stderr). E.g. --json | jq"),
    click.Option(["--no-plot"], is_flag=True, help="Skip the figure. E.g. --no-plot"),
    click.Option(["--pdf"], is_flag=True, help="Also write the figure as PDF (PNG always; not with --no-plot). "
                                               "E.g. --pdf"),
    click.Option(["--yes"], is_flag=True,
                 help="Run even when the estimate says it takes more than an hour. E.g. --yes"),
    click.Option(["--chunk-seconds"], default=None,
                 help="Planned seconds of work per chunk: each finished chunk is saved, so Ctrl-C loses at most one; "
                      "the records do not depend on it. Default 5. E.g. --chunk-seconds 2"),
)


def common_sweep_options(command_fn=None, *, default_seeds: int = 8):
    """Declare, once, the options every sweep command shares (`COMMON_SWEEP_OPTIONS`): ``--seeds --seed --x64
    --x32 --out --json --no-plot --pdf --yes --chunk-seconds`` (the distributed options come from
    `with_distributed_options`). Use it under ``@click.command`` and the command's own options::

        @click.command("noise")
        @click.option("--batch", ...)
        @common_sweep_options
        def sweep_noise(batch, seeds, seed, x64, out, as_json, no_plot, pdf, yes, chunk_seconds): ...

    The body receives them checked, or None where not given, so that it can refuse what its mode ignores:
    ``seeds`` (int ≥ 1 or None), ``seed`` (0..2^31 − 1 or None), ``x64`` (True for --x64, False for --x32, None
    for neither), ``out`` (a folder or a .parquet/.json/.npz file), ``as_json``, ``no_plot``, ``pdf``, ``yes`` and
    ``chunk_seconds`` (seconds > 0 or None); the defaults each help text states are the body's to apply.
    Contradictions end as one line and exit code 2 before the body runs: --x64 with --x32, --pdf with --no-plot,
    an --out with another extension or one this process cannot write (`otod.core.preflight.refuse_unwritable`).
    ``@common_sweep_options(default_seeds=5)``: a sweep whose body applies another default than 8 seeds says so in
    its --seeds help."""
    if command_fn is None:
        return functools.partial(common_sweep_options, default_seeds=default_seeds)

    @functools.wraps(command_fn)
    def wrapper(*args, seeds, seed, x64, x32, out, as_json, no_plot, pdf, yes, chunk_seconds, **kwargs):
        x64 = precision(x64, x32)
        if pdf and no_plot:
            raise OtodError("--pdf --no-plot: --pdf asks for a figure that --no-plot skips; drop one, e.g. --pdf")
        refuse_unwritable(results_out(out))  # first: the results are saved only after the work
        return command_fn(*args, seeds=None if seeds is None else positive_int(seeds, "--seeds", "8"),
                          seed=None if seed is None else seed_value(seed), x64=x64, out=results_out(out),
                          as_json=as_json, no_plot=no_plot, pdf=pdf, yes=yes,
                          chunk_seconds=None if chunk_seconds is None
                          else positive_seconds(chunk_seconds, "--chunk-seconds", "5"), **kwargs)

    checked = user_errors(wrapper)
    options = [_copy_option(o) for o in COMMON_SWEEP_OPTIONS]
    options[0].help = options[0].help.replace("Default 8.", f"Default {default_seeds}.")
    checked.__click_params__ = list(getattr(command_fn, "__click_params__", [])) + list(reversed(options))
    return checked


def _copy_option(option: click.Option) -> click.Option:
    """A fresh copy of a declared option, so two commands never share one `click.Option` object."""
    import copy

    return copy.copy(option)


def with_distributed_options(command: click.Command) -> click.Command:
    """Give a sweep command ``--distributed`` (with ``--coordinator HOST:PORT --num-processes N --process-id I``,
    or none of them to read the cluster environment): the process joins JAX's distributed runtime before the
    command runs, and `otod.core.sweep.run_sweep` then runs this process's share. Also ``--share I/N``: no
    runtime; the command runs share I of N alone into its part file and ends (`otod.core.distributed.running_share`),
    for the tasks of a job array. Added to every command of the ``sweep`` group, so each obstacle's command gets
    them without declaring them.

    A command whose callback has a ``refuse_distributed(options) -> str | None`` attribute is asked first: where
    it returns a reason (a path that runs in one process, such as the noise sweeps' exact recursions),
    ``--distributed`` or ``--share`` is refused with that reason before any process joins the runtime or any file
    is written."""
    if any(p.name == "distributed" for p in command.params):
        return command
    callback = command.callback
    command.params += [
        click.Option(["--distributed"], is_flag=True,
                     help="Share the sweep among processes on one or many hosts (jax.distributed); each writes a "
                          "part file and process 0 merges them. E.g. --distributed"),
        click.Option(["--coordinator"], default=None,
                     help="HOST:PORT of process 0, for --distributed outside a cluster manager. "
                          "E.g. --coordinator node0:12345"),
        click.Option(["--num-processes"], type=int, default=None,
                     help="How many processes share the sweep (--distributed). E.g. --num-processes 2"),
        click.Option(["--process-id"], type=int, default=None,
                     help="This process's index, 0 to N−1 (--distributed). E.g. --process-id 0"),
        click.Option(["--share"], default=None, metavar="I/N",
                     help="Run share I of N of the sweep (0 ≤ I < N) into its part file and exit, with no distributed "
                          "runtime and no waiting: the tasks of a job array run the shares at any times, and otod "
                          "merge joins the parts. E.g. --share $SLURM_ARRAY_TASK_ID/4"),
    ]

    def refuse(flag: str, options: dict) -> None:
        reason = getattr(callback, "refuse_distributed", lambda options: None)(options)
        if reason:
            raise OtodError(f"{flag}: {reason}")

    @functools.wraps(callback)
    def run(*args, distributed, coordinator, num_processes, process_id, share, **kwargs):
        if share is not None:
            from otod.core.distributed import parse_share, running_share

            if distributed:
                raise OtodError(f"--share {share} --distributed: --share runs one share alone, with no distributed "
                                "runtime; --distributed runs every share at once under it; give one, e.g. --share 0/4")
            if any(v is not None for v in (coordinator, num_processes, process_id)):
                raise OtodError(f"--share {share}: --coordinator, --num-processes and --process-id belong to a "
                                "--distributed run, and a share joins no runtime; drop them")
            index, count = parse_share(share)
            refuse("--share", kwargs)
            with running_share(index, count):
                return callback(*args, **kwargs)
        if distributed:
            from otod.core.distributed import JOIN_SECONDS, check_options, initialize

            check_options(coordinator, num_processes, process_id)
            refuse("--distributed", kwargs)  # before joining: the others would wait for one that never comes
            if coordinator:
                click.echo(f"otod: process {process_id} of {num_processes} joining the coordinator at "
                           f"{coordinator} (waits up to {JOIN_SECONDS} s for every process)", err=True)
            initialize(coordinator, num_processes, process_id)
        elif any(v is not None for v in (coordinator, num_processes, process_id)):
            raise OtodError("--coordinator, --num-processes and --process-id belong to a --distributed run; add "
                            "--distributed")
        return callback(*args, **kwargs)

    command.callback = user_errors(run)
    return command
