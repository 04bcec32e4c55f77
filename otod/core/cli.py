"""What every obstacle's commands share: bad input as one line and exit code 2, a progress line on a terminal."""

from __future__ import annotations

import functools
import math
import sys
from typing import Callable, TextIO

import click

from otod.core.errors import Interrupted, OtodError


def user_errors(fn):
    """Run a command body; bad input (`OtodError`) ends as one line on stderr and exit code 2, an interrupted
    sweep as one line saying what is saved and exit code 130."""

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
