"""Fixtures the nets tests share: the smallest joint D × P grid, run once per test run (across pytest-xdist's
workers too) and read by the grid's sweep tests (tests/nets/sweep/test_grid.py) and its figure's
(tests/nets/figures/test_grid.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

#: 2 × 2 cells × 3 batches, 5 seeds, 3 lrs: the smallest grid whose McCandlish B_crit lies inside its batches in
#: three cells (a plane through three points), on tiny nets.
SMALLEST_GRID = ["sweep", "net", "--data", "teacher", "--regime", "finite", "--examples", "64,256", "--width", "4,16",
                 "--batch", "2,8,32", "--seeds", "5", "--lr-grid", "0.1,0.3,1", "--max-iters", "2000", "--no-plot",
                 "--yes"]


def shared_folder(tmp_path_factory) -> Path:
    """The folder every process of this test run sees, new each run: under pytest-xdist the parent of the worker's
    base folder (the run's pytest-N, which holds every worker's popen-gwN), else the base folder itself (the
    pattern of pytest-xdist's docs, "Making session-scoped fixtures execute only once")."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def smallest_grid(tmp_path_factory):
    """(the printed report, the results file) of `SMALLEST_GRID`, run by the first process of the run that asks
    (under a file lock in `shared_folder`), whose report and file the others read. Each run appends its worker's
    name to ``smallest-grid.runs`` there (`smallest_grid_runs`). Under --dist loadscope the sweep's and the
    figure's test modules land on two workers, which each ran it: the two modules at -n 2 took 100 CPU-s, now 59."""
    from filelock import FileLock

    from otod.cli import main

    folder = shared_folder(tmp_path_factory)
    out, report = folder / "smallest-grid", folder / "smallest-grid.txt"
    with FileLock(str(folder / "smallest-grid.lock")):
        if not report.exists():
            with (folder / "smallest-grid.runs").open("a") as runs:
                runs.write(os.environ.get("PYTEST_XDIST_WORKER", "master") + "\n")
            out.mkdir(exist_ok=True)
            result = CliRunner().invoke(main, [*SMALLEST_GRID, "--out", str(out)])
            assert result.exit_code == 0, result.output
            report.write_text(result.output)
    (path,) = out.glob("net-*.parquet")
    return report.read_text(), path


@pytest.fixture
def smallest_grid_runs(smallest_grid, tmp_path_factory) -> list[str]:
    """The runs of `SMALLEST_GRID` in this test run so far, across workers: one line (the worker's name) each."""
    return (shared_folder(tmp_path_factory) / "smallest-grid.runs").read_text().splitlines()
