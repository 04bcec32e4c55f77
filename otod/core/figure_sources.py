"""Where a figure's results come from (issue 53 item 4): read back from ``results/`` as found, read from the
committed results alone, or re-measured from nothing.

Three ways a figure of ``otod figures`` gets its numbers:

- As found (every figure by default): each sweep reads back its finished file in ``results/`` (the store names a
  file by its config's hash, `otod.core.config.default_path`), else runs.
- Committed (a table of ``experiments/<group>.toml`` with ``committed = true``): the figures whose sweeps are too
  heavy for the ``otod figures`` budget read the results files committed with the code, and never sweep by
  default. A file missing is refused before any figure runs (from the figure's recorded sources, `MANIFEST`), and a
  sweep that would run all the same (its config changed since the files were committed) is refused where it would
  start (`otod.core.figure_guard.refuse_to_measure`, called by `otod.core.sweep.run_sweep` and where a curvature,
  the exact NQM or a branch's predictors would be measured): one line naming the file and the command that
  re-measures, exit code 2, never a silent half hour. Its caption says so, with the date and machine of the files
  (`committed_note`).
- Re-measured (``otod figures --remeasure``, any figure): every sweep of the figure runs from nothing in a
  workspace, ``results/remeasure/`` (the figure's relative ``results/`` paths resolve there, `remeasuring`), so
  neither the committed files nor points of other files in ``results/`` are reused; each finished chunk is in the
  workspace's journals, so an interrupted re-measure resumes with the same command; only when the figure has
  drawn are its files copied over those in ``results/`` (each atomically, `publish`), and the workspace is removed
  when the whole run has ended.

Which files a figure read or wrote is observed as it runs (`otod.core.figure_guard.drawing`: the store's load and
save report each path) and, for a committed figure, recorded in ``experiments/figure-results.json`` (`MANIFEST`),
which the check before any figure and the cold benchmark (``benchmarks/bench_figures_cold.sh``: it keeps those
files and removes the rest of ``results/``) read.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

from otod.core.errors import OtodError
from otod.core.figure_guard import REMEASURE_FLAG, drawing, missing_line

#: The key of a figure's table that makes it read its committed results by default.
COMMITTED_KEY = "committed"
#: The figures' sources as last observed, ``{"group/name": [file, ...]}`` (names in ``results/``), beside the specs.
MANIFEST = "figure-results.json"
#: The re-measure's workspace, inside the results folder (ignored by git with the rest of ``results/``).
WORKSPACE = "remeasure"
#: Files kept beside a results file that belong to it (`otod.nets.along.branching.cached_predictors`).
SIDECARS = (".predictors.json",)


def split_source(table: dict[str, Any], where: str) -> tuple[dict[str, Any], bool]:
    """``table`` without `COMMITTED_KEY`, and whether it was set true; anything but true or false refused."""
    value = table.get(COMMITTED_KEY, False)
    if not isinstance(value, bool):
        raise OtodError(f"{where}: {COMMITTED_KEY} = {value!r}; give true (read the committed results by default) "
                        "or false")
    return {k: v for k, v in table.items() if k != COMMITTED_KEY}, value


def sources(seen: set[str], results_dir: Path) -> list[str]:
    """The names, in ``results_dir``, of the files in ``seen`` that lie there, with their sidecars (`SIDECARS`)
    where they exist."""
    root = results_dir.resolve()
    names = {Path(p).name for p in seen if Path(p).parent == root}
    names |= {n + s for n in names for s in SIDECARS if (root / (n + s)).is_file()}
    return sorted(names)


def read_manifest(experiments_dir: Path) -> dict[str, list[str]]:
    """The recorded sources (`MANIFEST`; {} without the file)."""
    try:
        data = json.loads((experiments_dir / MANIFEST).read_text())
        return {str(k): [str(n) for n in v] for k, v in data.items()}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def record_sources(experiments_dir: Path, figure: str, names: list[str]) -> None:
    """Keep ``figure``'s sources in `MANIFEST`, written only when they changed (a figure with none is left out);
    a folder that cannot be written is skipped (the record only feeds the check and the benchmark)."""
    manifest = read_manifest(experiments_dir)
    if manifest.get(figure, []) == names:
        return
    manifest = {k: v for k, v in manifest.items() if k != figure} | ({figure: names} if names else {})
    try:
        (experiments_dir / MANIFEST).write_text(json.dumps(dict(sorted(manifest.items())), indent=1) + "\n")
    except OSError:
        pass


def check_committed(figures: list[str], experiments_dir: Path, results_dir: Path) -> None:
    """Before any figure runs: every recorded source (`MANIFEST`) of each committed figure is in ``results_dir``,
    else `OtodError` with `missing_line` for the first one missing."""
    manifest = read_manifest(experiments_dir)
    for figure in figures:
        for name in manifest.get(figure, []):
            if not (results_dir / name).is_file():
                raise OtodError(missing_line(figure, os.path.relpath(results_dir / name)))


def committed_note(figure: str, names: list[str], results_dir: Path) -> str:
    """The caption's sentence for a committed figure: the files it read, when and on what they were measured
    (each file's ``meta.environment``: its UTC date and CPU), and the command that re-measures."""
    from otod.core.results import load

    dates, machines, files = set(), set(), []
    for name in names:
        if any(name.endswith(s) for s in SIDECARS):
            continue
        files.append(f"results/{name}")
        env = load(results_dir / name).meta.get("environment") or {}
        if env.get("utc_time"):
            dates.add(str(env["utc_time"])[:10])
        if env.get("cpu"):
            machines.add(str(env["cpu"]))
    when = " to ".join(sorted(dates)[::max(len(dates) - 1, 1)]) if dates else "an unrecorded date"
    where = "; ".join(sorted(machines)) or "an unrecorded machine"
    return (f"Drawn from the committed results ({', '.join(files)}; measured {when} on {where}), which otod "
            f"figures reads by default instead of sweeping again; otod figures {REMEASURE_FLAG} {figure} "
            "measures them again from nothing.")


def add_to_captions(files: list[Path], sentence: str) -> None:
    """Append ``sentence`` to the caption (``<figure>.caption.txt``, `otod.core.plotting.save`) of each drawn PNG
    in ``files``; the drawn files are not touched."""
    for f in files:
        caption = f.with_name(f.stem + ".caption.txt")
        if f.suffix == ".png" and caption.is_file():
            caption.write_text(caption.read_text().rstrip("\n") + " " + sentence + "\n")


@contextlib.contextmanager
def remeasuring(results_dir: Path) -> Iterator[Path]:
    """While the block runs, the working folder is the workspace ``<results_dir>/remeasure`` (made if need be),
    so a figure's relative ``results/`` paths are the workspace's ``results/`` (yielded); the working folder is
    restored however the block ends, and the workspace is kept (its journals resume an interrupted re-measure)."""
    workspace = results_dir.resolve() / WORKSPACE
    (workspace / "results").mkdir(parents=True, exist_ok=True)
    before = Path.cwd()
    os.chdir(workspace)
    try:
        yield workspace / "results"
    finally:
        os.chdir(before)


def publish(names: list[str], measured_dir: Path, results_dir: Path) -> list[Path]:
    """Copy the files ``names`` from ``measured_dir`` (the workspace) over those of ``results_dir``, each through a
    temporary file and `os.replace`, so a file in ``results_dir`` is either the old one or the new one whole."""
    written = []
    for name in names:
        target = results_dir / name
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=results_dir)
        os.close(fd)
        try:
            shutil.copyfile(measured_dir / name, tmp)
            os.chmod(tmp, 0o644)
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        written.append(target)
    return written


def end_remeasure(results_dir: Path) -> None:
    """The whole re-measure has ended: the workspace's files already copied to ``results_dir`` (the same bytes) go,
    and so does the workspace once empty; anything else (the journal of another figure's interrupted re-measure)
    stays, to be resumed."""
    import filecmp

    measured_dir = results_dir / WORKSPACE / "results"
    for f in sorted(measured_dir.glob("*")) if measured_dir.is_dir() else []:
        if f.is_file() and (results_dir / f.name).is_file() and filecmp.cmp(f, results_dir / f.name, shallow=False):
            f.unlink()
    for folder in (measured_dir, measured_dir.parent):
        with contextlib.suppress(OSError):
            folder.rmdir()


@dataclasses.dataclass(frozen=True)
class Sources:
    """How one figure gets its results: ``figure`` ("group/name"), ``committed`` (its table's `COMMITTED_KEY`),
    ``remeasure`` (`REMEASURE_FLAG` given), and the checkout's ``experiments_dir`` and ``results_dir``."""

    figure: str
    committed: bool
    remeasure: bool
    experiments_dir: Path
    results_dir: Path


def draw_from_sources(draw_figure: Callable[[], list[Path]], how: Sources) -> list[Path]:
    """Run ``draw_figure`` (which draws one figure and returns its files) with its results from where ``how``
    says (module docstring): re-measured in the workspace and then copied over ``results/`` (`publish`), or read as
    found, only from the committed files when ``how.committed``. A committed figure's sources are recorded
    (`record_sources`; the others' are not, so that a plain run leaves the checkout's record as it was) and its
    captions say where its numbers come from (`committed_note`)."""
    if how.remeasure:
        with remeasuring(how.results_dir) as measured_dir, drawing(how.figure, committed=False) as seen:
            files = draw_figure()
        names = sources(seen.seen, measured_dir)
        publish(names, measured_dir, how.results_dir)
    else:
        with drawing(how.figure, committed=how.committed) as seen:
            files = draw_figure()
        names = sources(seen.seen, how.results_dir)
    if how.committed:
        record_sources(how.experiments_dir, how.figure, names)
        add_to_captions(files, committed_note(how.figure, names, how.results_dir))
    return files
