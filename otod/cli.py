"""The `otod` command line: a thin layer that parses options and calls the library.

Every command's work is a library function (``otod.sweep``, ``otod.fit``, ``otod.plots``, ``otod.cost``) usable
from a notebook; this module only parses, prints and turns `OtodError` into one line on stderr and exit code 2.
"""

from __future__ import annotations

import functools
import sys

import click

from otod.errors import OtodError


def user_errors(fn):
    """Run a command body; bad input (`OtodError`, `click.BadParameter`) ends as one line and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except OtodError as e:
            click.echo(f"otod: error: {e}", err=True)
            sys.exit(2)

    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(package_name="otod")
def main():
    """otod: measure why training takes so many sequential iterations, and what would take fewer.

    \b
    Examples:
      otod sweep condition --k 1..100
      otod fit results/condition-*.json
      otod figures condition
    """


def _register_package_commands() -> None:
    """Attach the commands that live beside their package (the cost package's `flops` and `profile`)."""
    from otod.cost.cli import COMMANDS

    for command in COMMANDS:
        main.add_command(command)


_register_package_commands()
