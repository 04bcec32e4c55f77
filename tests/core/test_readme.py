"""The README's examples name the files its commands write: the notebook example loads the results file of the
README's main job (``otod sweep condition --k 1..100``), named by its config's hash. A README that named another
hash (``condition-d79b8b7cb1``, which no README command wrote) gave a traceback pasted as written; this test fails
when the README (or a docs page that loads the same file) and the code disagree on the name. The README stays a
page a newcomer reads top to bottom (`README_LINES`), and no published text holds a placeholder word."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
#: The README's length at most (issue 51: what otod answers, the set-up, one example per obstacle, where to go
#: next; the rest lives in docs/).
README_LINES = 150
#: The README's main job, shown at its top.
MAIN_JOB = ["sweep", "condition", "--k", "1..100"]


class _Built(Exception):
    """Carries the config and output folder the command line built, in place of running the sweep."""

    def __init__(self, config, out_dir):
        self.config, self.out_dir = config, out_dir
        super().__init__("built")


def main_job_path(monkeypatch) -> Path:
    """The results file the main job writes by default: its config as ``otod sweep condition`` builds it from the
    command line (the sweep replaced by a stub that hands the config back), through `default_path`."""
    from otod.cli import main
    from otod.core.config import default_path

    def built(config, out_dir, **kwargs):
        raise _Built(config, out_dir)

    monkeypatch.setattr("otod.condition.report.sweep_and_report", built)
    with pytest.raises(_Built) as caught:
        main(MAIN_JOB, prog_name="otod")
    return default_path(caught.value.config, caught.value.out_dir)


def test_the_notebook_example_loads_the_file_the_main_job_writes(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # default_path looks for an earlier file of the same name here: there is none
    text = README.read_text()
    assert f"otod {' '.join(MAIN_JOB)}\n" in text
    expected = main_job_path(monkeypatch)
    assert expected.parent == Path("results") and expected.suffix == ".parquet"
    pattern = r'otod\.load\("(results/condition-[0-9a-f]{10}\.parquet)"\)'
    assert re.findall(pattern, text), "the README's load example names no results/condition-XXXXXXXXXX.parquet"
    docs = "\n".join(path.read_text() for path in published_texts(ROOT))  # the README and the pages it moved to
    loaded = re.findall(pattern, docs)
    assert set(loaded) == {str(expected)}, f"the README and docs load {loaded}; the main job writes {expected}"
    shown = re.findall(r"^results: (results/condition-[0-9a-f]{10}\.parquet)$", docs, re.M)
    assert shown and set(shown) <= {str(expected)}, f"the tour shows {shown}; the main job writes {expected}"


def test_the_readme_is_short():
    """A newcomer reads it top to bottom: at most `README_LINES` lines, and the set-up commands first."""
    lines = README.read_text().splitlines()
    assert len(lines) <= README_LINES, f"README.md has {len(lines)} lines, more than {README_LINES}: move text to docs/"
    assert lines[2:6] == ["```bash", f"pip install . && otod {' '.join(MAIN_JOB)}",
                          "python3 -m pip install -e '.[test]' && python3 -m pytest -q -p no:cacheprovider -n auto",
                          "```"], "the README no longer opens with the two set-up commands .ci/run runs"


ROOT = README.parent
#: Words that stand in for text not yet written. Upper-case ones are matched as written (so "todo" in prose is not
#: one); any word containing PLACEHOLDER is one (TIMEPLACEHOLDER stood in the README for a run's time), and lorem in
#: any case.
PLACEHOLDER = re.compile(r"\b(?:\w*PLACEHOLDER\w*|TODO|TBD|XXX+|FIXME)\b|(?i:\blorem\b)")


def published_texts(root: Path) -> list[Path]:
    """The prose a reader is handed: the README, every page under docs/ and every figure's caption."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md")),
            *sorted((root / "figures").glob("*.caption.txt"))]


def placeholders(paths: list[Path]) -> list[str]:
    """``path:line: word`` for every placeholder word in ``paths``."""
    return [f"{path.name}:{number}: {match.group(0)}"
            for path in paths
            for number, line in enumerate(path.read_text().splitlines(), 1)
            for match in PLACEHOLDER.finditer(line)]


def test_the_published_text_holds_no_placeholder():
    paths = published_texts(ROOT)
    assert len(paths) > 30, f"only {len(paths)} texts found: the README, docs and captions moved?"
    assert {"running.md", "cli.md", "nets.md"} <= {path.name for path in paths}, "docs/ pages not read"
    assert placeholders(paths) == []


@pytest.mark.parametrize("where", ["docs/running.md", "docs/deeper/page.md", "figures/x.caption.txt"])
def test_a_placeholder_in_a_docs_page_or_caption_is_found(tmp_path, where):
    """A copy of the published tree with one placeholder inserted into a docs page (top-level or nested) or a
    caption: the scan that passes on the real tree finds it there, by file and line."""
    for path in published_texts(ROOT)[:3]:  # a README and two pages without one
        copy = tmp_path / path.relative_to(ROOT)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(path.read_text())
    target = tmp_path / where
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("a page\nthe sweep took TIMEPLACEHOLDER on 2 cores\n")
    assert placeholders(published_texts(tmp_path)) == [f"{target.name}:2: TIMEPLACEHOLDER"]


@pytest.mark.parametrize("word", ["TIMEPLACEHOLDER", "TODO", "TBD", "XXX", "FIXME", "Lorem"])
def test_an_inserted_placeholder_is_found(tmp_path, word):
    text = tmp_path / "README.md"
    text.write_text(f"first line\nthe run took {word} on 2 cores; todo and xxxl are words\n")
    assert placeholders([text]) == [f"README.md:2: {word}"]
