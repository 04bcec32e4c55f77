"""Fixtures the nets tests share: the smallest joint D × P grid, run once per test process and read by the grid's
sweep tests (tests/nets/sweep/test_grid.py) and its figure's (tests/nets/figures/test_grid.py)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

#: 2 × 2 cells × 3 batches, 5 seeds, 3 lrs: the smallest grid whose McCandlish B_crit lies inside its batches in
#: three cells (a plane through three points), on tiny nets.
SMALLEST_GRID = ["sweep", "net", "--data", "teacher", "--regime", "finite", "--examples", "64,256", "--width", "4,16",
                 "--batch", "2,8,32", "--seeds", "5", "--lr-grid", "0.1,0.3,1", "--max-iters", "2000", "--no-plot",
                 "--yes"]


@pytest.fixture(scope="session")
def smallest_grid(tmp_path_factory):
    """(the printed report, the results file) of `SMALLEST_GRID`."""
    from otod.cli import main

    out = tmp_path_factory.mktemp("grid")
    result = CliRunner().invoke(main, [*SMALLEST_GRID, "--out", str(out)])
    assert result.exit_code == 0, result.output
    (path,) = out.glob("net-*.parquet")
    return result.output, path
