"""The command-line reference, docs/cli.md, written from click's own help of every otod command.

``python3 -m otod.docs_cli`` rewrites docs/cli.md; ``python3 -m otod.docs_cli --check`` exits 1, naming the file,
when the committed page differs from what the commands' help says now (tests/test_docs.py runs the same
comparison). The help is rendered at a fixed width (`WIDTH`, the width the CLI itself asks for), so the page does
not depend on the terminal it was generated in.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

#: The help's line width: the CLI's own ``max_content_width``, fixed here so the terminal does not change the page.
WIDTH = 110
#: The width click wraps at in a terminal at least `WIDTH` wide (it keeps two columns free), so the page shows what
#: ``otod ... --help`` prints there.
WRAP = WIDTH - 2
#: Where the page lives: docs/cli.md beside the package.
PAGE = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
HEADER = """# Command-line reference

Every otod command's `--help`, as the commands print it. This page is generated: `python3 -m otod.docs_cli`
rewrites it from the commands themselves, and `tests/test_docs.py` fails when it differs from them, so edit the
help in the code, not here. Ranges everywhere use one syntax: `A..B` (integers, inclusive), `A..B:N` (N points),
`A..B:N:log` (log-spaced), comma lists, scientific notation (`1..1e4:25:log`).
"""


def command_tree(command: click.Command, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], click.Command]]:
    """Every command under ``command`` with the words that call it (``("otod", "sweep", "condition")``), depth
    first, a group before its subcommands, subcommands in name order."""
    found = [(path, command)]
    if isinstance(command, click.Group):
        for name in sorted(command.commands):
            found += command_tree(command.commands[name], (*path, name))
    return found


def help_text(path: tuple[str, ...], root: click.Command) -> str:
    """The ``--help`` text of the command ``path`` names, wrapped as a terminal at least `WIDTH` wide wraps it, with its full usage line; each
    command's own context settings apply (the root's ``-h, --help``, which its subcommands inherit)."""
    command, context = root, None
    for name in path:
        command = command.commands[name] if context is not None else root
        settings = {**command.context_settings, "terminal_width": WRAP, "max_content_width": WIDTH}
        context = click.Context(command, info_name=name, parent=context, **settings)
    return command.get_help(context)


def reference() -> str:
    """The whole page: the header, then one section per command with its help in a text block."""
    from otod.cli import main

    sections = [HEADER]
    for path, _ in command_tree(main, ("otod",)):
        sections.append(f"## `{' '.join(path)}`\n\n```text\n{help_text(path, main).rstrip()}\n```\n")
    return "\n".join(sections)


def main(argv: list[str] | None = None) -> int:
    """Write docs/cli.md, or with ``--check`` compare it with the commands' help: 0 when equal, 1 otherwise."""
    argv = sys.argv[1:] if argv is None else argv
    text = reference()
    if argv == ["--check"]:
        if PAGE.exists() and PAGE.read_text() == text:
            return 0
        print(f"{PAGE} differs from the commands' --help: run python3 -m otod.docs_cli", file=sys.stderr)
        return 1
    if argv:
        print("usage: python3 -m otod.docs_cli [--check]", file=sys.stderr)
        return 2
    PAGE.write_text(text)
    print(f"{PAGE}: {len(text.splitlines())} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
