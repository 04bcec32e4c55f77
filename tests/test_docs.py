"""The docs say what the code does: docs/cli.md is the commands' own `--help` (regenerated and compared); every
`otod ...` command the README and docs/ show in a code block is one the command line accepts as written (its
words parsed by click, options and types checked, nothing run); the cheap ones, run, print the lines the page
shows; every relative link and anchor resolves from the page that holds it; every repository path and every
`otod.` name the pages mention exists."""

from __future__ import annotations

import importlib
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest

from otod.cli import main
from otod.docs_cli import PAGE, reference

ROOT = Path(__file__).resolve().parents[1]


def pages() -> list[Path]:
    """The README and every page under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


# --- the CLI reference ---------------------------------------------------------------------------------------------

def test_the_cli_reference_is_the_commands_help():
    """Compared in a fresh interpreter: click (8.1.8+) caches a command's help option on the command the first time
    it is built, so a test that ran a command on its own (whose help option is then ``--help`` alone, not the root's
    ``-h, --help``) earlier in the same process would change this process's page."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "otod.docs_cli", "--check"], capture_output=True, text=True,
                         timeout=120, cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr


def test_the_cli_reference_changes_with_a_commands_help(monkeypatch):
    """The comparison can fail: a help text edited in the code gives another page, with the new text in it."""
    monkeypatch.setattr(main.commands["fit"], "help", "Fit, said differently.")
    changed = reference()
    assert changed != PAGE.read_text() and "Fit, said differently." in changed


def test_the_cli_reference_covers_every_command():
    text = PAGE.read_text()
    assert re.findall(r"^## `otod sweep (\S+)`$", text, re.M) == sorted(main.commands["sweep"].commands)
    assert len(re.findall(r"^## `otod[^`]*`$", text, re.M)) == 1 + len(main.commands) + len(main.commands["sweep"].commands)


# --- the commands the pages show -------------------------------------------------------------------------------------

FENCE = re.compile(r"^```[\w-]*\n(.*?)^```", re.S | re.M)
#: Shell variables the pages' commands use, with a value for parsing.
VARIABLES = {"$SLURM_ARRAY_TASK_ID": "0"}


def shown_commands(text: str) -> list[str]:
    """Every ``otod ...`` command line in the fenced blocks of ``text``: a line that starts with ``otod`` (after a
    ``$ `` prompt, an ``srun`` or the indent of a help's example), continued over lines that end in ``\\``."""
    found = []
    for block in FENCE.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            words = line.strip().removeprefix("$ ").removeprefix("srun ")
            if words.startswith("otod "):
                found.append(words)
    return found


def parse_error(command: str) -> str | None:
    """Why the command line rejects ``command`` (parsed as otod's own `main` would, to the command it names, and
    that command's options and types checked), or None where it accepts it. Nothing runs: click's make_context
    parses without invoking the command."""
    for name, value in VARIABLES.items():
        command = command.replace(name, value)
    args = shlex.split(command, comments=True)
    args = args[:-1] if args and args[-1] == "&" else args
    assert args[0] == "otod"
    command_object, context, rest = main, click.Context(main, info_name="otod"), args[1:]
    try:
        while isinstance(command_object, click.Group):
            if not rest or rest[0].startswith("-"):
                return None if rest in ([], ["--help"], ["-h"], ["--version"]) else f"no command in {rest}"
            name, rest = rest[0], rest[1:]
            command_object = command_object.get_command(context, name)
            if command_object is None:
                return f"no command {name!r}"
            if isinstance(command_object, click.Group):
                context = click.Context(command_object, info_name=name, parent=context)
            else:
                command_object.make_context(name, list(rest), parent=context)
        return None
    except click.exceptions.Exit:  # --help
        return None
    except click.ClickException as error:
        return error.format_message()


def readme_commands(text: str) -> list[str]:
    """The README's examples, named in prose as code spans (``otod sweep depth --depth 1..6 ...``): every span
    that starts with ``otod`` and gives an option (a bare ``otod fit`` names a command, it does not run one)."""
    return [span for span in re.findall(r"`(otod [^`]*)`", FENCE.sub("", text)) if " -" in span]


def test_every_command_the_docs_show_parses():
    shown = {(path.relative_to(ROOT), command) for path in pages() for command in shown_commands(path.read_text())}
    shown |= {(Path("README.md"), command) for command in readme_commands((ROOT / "README.md").read_text())}
    assert len(shown) > 80, f"only {len(shown)} commands found in the pages"
    rejected = [f"{path}: {command}: {error}" for path, command in sorted(shown)
                if (error := parse_error(command)) is not None]
    assert rejected == []


@pytest.mark.parametrize("command, error", [
    ("otod sweep condition --k 1..100 --no-such-option", "No such option"),
    ("otod sweep nonesuch --k 1", "no command 'nonesuch'"),
    ("otod fit", "Missing argument"),
    ("otod plot results/x.parquet --x-axis time", "'time' is not one of"),
])
def test_a_command_otod_would_refuse_is_caught(command, error):
    assert error in (parse_error(command) or "")


def test_the_readmes_examples_are_found():
    assert readme_commands((ROOT / "README.md").read_text())[:2] == [
        "otod sweep condition --k 1..100", "otod sweep depth --depth 1..6 --init identity,orthogonal,xavier,small --seeds 8"]


def test_the_pages_commands_are_found():
    text = "```bash\notod sweep net --width 8  # a comment\n$ otod fit a.parquet \\\n    --tol 1e-3\n```\n" \
           "```\nsrun otod sweep toy &\n  otod figures depth\nnot otod\n```\n"
    assert shown_commands(text) == ["otod sweep net --width 8  # a comment", "otod fit a.parquet      --tol 1e-3",
                                    "otod sweep toy &", "otod figures depth"]


# --- the cheap commands, run ---------------------------------------------------------------------------------------

def shown_output(text: str, command: str) -> list[str]:
    """The output a page shows for ``command``: the lines after ``$ command`` in its block (up to the next
    prompt), or, where the command is named in prose, the next fenced block after it."""
    prompt = re.search(rf"^\$ {re.escape(command)}[^\n]*\n(.*?)(?=^\$ |^```)", text, re.S | re.M)
    if prompt:
        return prompt.group(1).splitlines()
    at = text.index(f"`{command}`")
    return FENCE.search(text, at).group(1).splitlines()


def unshown(expected: list[str], printed: str) -> list[str]:
    """The lines of ``expected`` that ``printed`` lacks: a line ending in ``...`` (trimmed by the page) must start a
    printed line; a line that states a time (``0.7 s``) or is only ``...`` is not compared; any other line must
    be printed as shown."""
    lines = [line.rstrip() for line in printed.splitlines()]
    missing = []
    for line in expected:
        if not line.strip() or line.strip() == "..." or re.search(r"\d s\b", line):
            continue
        if line.endswith("..."):
            head = line.removesuffix("...").rstrip()
            ok = any(printed_line.startswith(head) for printed_line in lines)
        else:
            ok = line.rstrip() in lines
        if not ok:
            missing.append(line)
    return missing


def run_otod(command: str, folder: Path) -> str:
    """``command`` run as a user runs it (``python3 -m otod``, this checkout first on the path), in ``folder``:
    stdout and stderr together."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "otod", *shlex.split(command)[1:]], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=600)
    return done.stdout + done.stderr


#: The commands that run in seconds, with the page that shows their output: run as written, every shown line printed.
FAST = [
    ("docs/running.md", "otod sweep condition --k 0..5"),
    ("README.md", "otod flops --model mlp --widths 784,512,10 --batch 1,64"),
    ("README.md", "otod sweep noise --batch 1..65536:17:log --method sgd,precond:0.5 --mode exact --no-plot"),
]
#: The README's other examples, 12 s and 73 s on 2 loaded cores. Their counts are float32 engine counts: the README
#: shows this machine's (AMD EPYC); the depth sweep's may move a little on another CPU (docs/depth.md).
SLOW = [
    ("README.md", "otod sweep condition --k 1..100"),
    ("README.md", "otod sweep depth --depth 1..6 --init identity,orthogonal,xavier,small --seeds 8"),
]


def check_shown_output(page: str, command: str, folder: Path) -> None:
    text = (ROOT / page).read_text()
    expected = shown_output(text, command)
    assert len([line for line in expected if line.strip() not in ("", "...")]) >= 1
    printed = run_otod(command, folder)
    assert unshown(expected, printed) == [], f"{page} shows lines `{command}` no longer prints:\n{printed}"


@pytest.mark.parametrize("page, command", FAST)
def test_the_cheap_commands_print_what_the_page_shows(page, command, tmp_path):
    check_shown_output(page, command, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("page, command", SLOW)
def test_the_readme_examples_print_what_the_readme_shows(page, command, tmp_path):
    check_shown_output(page, command, tmp_path)


def test_a_changed_output_is_caught():
    shown = ["model  ratio  ...", "mlp  1.515  ...", "2 rows in 0.7 s (compile included)", "...", "exact line"]
    assert unshown(shown, "model  ratio xla\nmlp  1.515  2.014\n2 rows in 9 s\nexact line\n") == []
    assert unshown(shown, "model  ratio xla\nmlp  1.6  2.014\nexact line, changed\n") == [
        "mlp  1.515  ...", "exact line"]


# --- links, paths and names ----------------------------------------------------------------------------------------

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchors(path: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation but hyphens and underscores dropped, spaces
    made hyphens."""
    text = FENCE.sub("", path.read_text())
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
            for heading in re.findall(r"^#+ (.*)$", text, re.M)}


def broken_links(path: Path, root: Path = ROOT) -> list[str]:
    """The relative links of a page whose file (from the page's folder) or heading anchor does not exist, named
    from ``root``."""
    broken = []
    for target in LINK.findall(FENCE.sub("", path.read_text())):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        resolved = (path.parent / file).resolve() if file else path
        if not resolved.exists() or (anchor and (resolved.is_dir() or anchor not in anchors(resolved))):
            broken.append(f"{path.relative_to(root)}: {target}")
    return broken


def test_every_link_resolves():
    """In the README, docs/ and the benchmarks' verdicts and logs (whose index links every section by anchor)."""
    results = [ROOT / "benchmarks" / name for name in ("RESULTS.md", "RESULTS-log.md", "README.md")]
    assert [broken for path in [*pages(), *results] for broken in broken_links(path)] == []


def test_a_broken_link_is_caught(tmp_path):
    page = tmp_path / "docs" / "page.md"
    page.parent.mkdir()
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "a.png").write_bytes(b"")
    page.write_text("# A title, with words\n[ok](#a-title-with-words) ![fig](../figures/a.png) [web](https://x.org)\n"
                    "[gone](figures/a.png) [no anchor](page.md#nowhere)\n")
    assert broken_links(page, tmp_path) == ["docs/page.md: figures/a.png", "docs/page.md: page.md#nowhere"]


PATH = re.compile(r"`((?:otod|tests|benchmarks|experiments|figures|docs|\.ci)/[^`\s*<]*)`")


def missing_paths(text: str) -> list[str]:
    """The repository paths in code spans of ``text`` (``otod/core/engine.py``, ``figures/zigzag``) that name no
    file or folder; a figure may be named without its suffix."""
    missing = []
    for path in PATH.findall(text):
        where = ROOT / path.rstrip("/")
        if not (where.exists() or any(where.parent.glob(where.name + ".*"))):
            missing.append(path)
    return missing


def test_every_repository_path_the_pages_name_exists():
    assert {path.name: missing_paths(path.read_text()) for path in pages() if missing_paths(path.read_text())} == {}
    assert missing_paths("`otod/core/no_such_module.py` `figures/no_such_figure`") == [
        "otod/core/no_such_module.py", "figures/no_such_figure"]


NAME = re.compile(r"(?<![\w./-])(otod(?:\.[A-Za-z_]\w*)+)")


def resolves(name: str) -> bool:
    """Whether a dotted name (``otod.core.pipeline.analyse``) is an importable module or an attribute of one."""
    parts = name.split(".")
    for split in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        try:
            for attribute in parts[split:]:
                found = getattr(found, attribute)
        except AttributeError:
            return False
        return True
    return False


def test_every_otod_name_the_pages_use_exists():
    names = {name for path in pages() for name in NAME.findall(path.read_text())}
    assert len(names) > 20
    assert sorted(name for name in names if not resolves(name)) == []
    assert not resolves("otod.core.pipeline.no_such_function") and not resolves("otod.no_such_module")
