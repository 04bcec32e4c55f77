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


def echo_report(report, as_json: bool) -> None:
    """Print a sweep's report: the text on stdout, or with ``as_json`` the records as JSON on stdout and the text on
    stderr (so ``otod sweep ... --json | jq`` reads clean JSON)."""
    if as_json:
        import json

        click.echo(report.text, err=True)
        click.echo(json.dumps(report.results.records))
    else:
        click.echo(report.text)


def with_distributed_options(command: click.Command) -> click.Command:
    """Give a sweep command ``--distributed`` (with ``--coordinator HOST:PORT --num-processes N --process-id I``,
    or none of them to read the cluster environment): the process joins JAX's distributed runtime before the
    command runs, and `otod.core.sweep.run_sweep` then runs this process's share. Added to every command of the
    ``sweep`` group, so each obstacle's command gets them without declaring them."""
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
    ]

    @functools.wraps(callback)
    def run(*args, distributed, coordinator, num_processes, process_id, **kwargs):
        if distributed:
            from otod.core.distributed import JOIN_SECONDS, check_options, initialize

            check_options(coordinator, num_processes, process_id)
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
