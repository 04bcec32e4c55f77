"""A joint D × P grid through the command line (`otod.nets.sweep.grid`): ``otod sweep net --examples D1,D2 --width
W1,W2 --regime finite`` runs every cell as one sweep and prints each cell's critical batch and the joint law; the
printed law is the least-squares plane through the printed cells, and both are what `otod.core.joint_law` reads
from the stored records."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest


ROW = re.compile(r"^\s+(\d+)\s+(\d+)\s+(\S+)")
LAW = re.compile(r"McCandlish \(S\(B\) = S_min·\(1 \+ B_crit/B\)\): a = (\S+) .*, b = (\S+) ")


def printed(text: str) -> tuple[dict, float, float]:
    """The printed per-cell McCandlish B_crit {(D, P): value or None (a bound)} and the printed a, b."""
    section = text[text.index("joint law over the D × P grid"):]
    cells = {}
    for line in section.splitlines()[3:7]:
        d, p, value = ROW.match(line).groups()
        cells[float(d), float(p)] = None if value in "<>—" else float(value)
    a, b = (float(v) for v in LAW.search(section).groups())
    return cells, a, b


@pytest.fixture
def grid_run(smallest_grid):
    """The smallest grid's report and file (tests/nets/conftest.py)."""
    return smallest_grid


def test_the_printed_joint_law_is_the_plane_through_the_printed_cells(grid_run):
    """log B_crit = c + a·log D + b·log P by least squares over the cells printed inside their batches (at least
    three, off one line) gives the printed a and b to the 3 significant digits printed (±0.5 in the last: 2e-3
    absolute at |a| < 1), and joint_law on the stored records gives the same cells and the same a, b."""
    from otod.core import analysis as core
    from otod.core.joint_law import analyse_grid
    from otod.core.results import load

    text, path = grid_run
    cells, a, b = printed(text)
    inside = {k: v for k, v in cells.items() if v is not None}
    assert len(inside) >= 3
    design = np.array([[1.0, math.log(d), math.log(p)] for d, p in inside])
    c_hand, a_hand, b_hand = np.linalg.lstsq(design, np.log(list(inside.values())), rcond=None)[0]
    tolerance = 0.5e-3 * 10 ** math.floor(math.log10(max(abs(a), abs(b), 1e-3)) + 1)
    assert a_hand == pytest.approx(a, abs=3 * tolerance)
    assert b_hand == pytest.approx(b, abs=3 * tolerance)

    (cube,) = core.cubes(load(path).to_pandas(), ("examples", "dim", "batch"))
    grid = analyse_grid(cube, n_boot=20)
    for cell in grid.cells:
        value = cells[cell.data, cell.params]
        if value is None:
            assert cell.places["mccandlish"] != "inside"
        else:
            assert cell.values["mccandlish"] == pytest.approx(value, rel=5e-3)
    assert grid.mccandlish.a == pytest.approx(a, abs=tolerance)
    assert grid.mccandlish.b == pytest.approx(b, abs=tolerance)


def test_every_cell_is_stopped_at_its_reference_target(grid_run):
    """Each record carries its cell's D and held-out target, the table's (`otod.nets.model.reference`), and a
    converged lane's last loss read (held-out loss ÷ target) is ≤ 1."""
    from otod.core.config import read_config
    from otod.core.results import load
    from otod.nets.model.reference import parse_table

    _, path = grid_run
    results = load(path)
    config = read_config(results.meta)
    table = parse_table(config.problem.held_out_targets)
    frame = results.to_pandas()
    assert set(zip(frame["examples"], frame["width"])) == {(float(d), float(w)) for d, w in table}
    for (d, w), (target, _) in table.items():
        at = frame[(frame["examples"] == d) & (frame["width"] == w)]
        assert np.all(at["held_out_target"].to_numpy() == target)
    converged = frame[frame["status"] == "converged"]
    assert len(converged) and np.all(converged["final_loss"].to_numpy(float) <= 1.0)


def test_the_cells_at_one_width_share_one_program(grid_run):
    """A finite grid's cells at one width differ in D (their training set and target) and B only, which one program
    switches between (`otod.nets.model.family.variant_fields`): 2 widths, 2 programs compiled or loaded for the
    4 cells × 3 batches (one per cell compiled 4; the records the same, tests/nets/sweep/test_programs.py)."""
    from otod.core.results import load

    _, path = grid_run
    meta = load(path).meta
    assert meta["compile_count"] + meta["cache_loads"] == 2


def test_a_reference_lr_on_an_edge_of_the_lr_grid_is_warned_by_cell():
    """The reference's lr is tuned only where it is interior: a cell whose reference lr is the grid's smallest (or
    largest) is named, one line per edge; interior ones are not."""
    from otod.nets.sweep.grid import reference_edge_lines

    targets = {(256.0, 73.0): (0.5, 0.03), (1024.0, 73.0): (0.4, 0.3), (256.0, 2305.0): (0.6, 3.0)}
    lines = reference_edge_lines(targets, (0.03, 0.1, 0.3, 1.0, 3.0))
    assert len(lines) == 2
    assert "smallest of --lr-grid (0.03) at D = 256, P = 73:" in lines[0]
    assert "largest of --lr-grid (3) at D = 256, P = 2305:" in lines[1]
    assert reference_edge_lines({(1024.0, 73.0): (0.4, 0.3)}, (0.03, 0.3, 3.0)) == []
    assert reference_edge_lines({}, (0.03, 3.0)) == []


def test_the_side_by_side_summary_prints_each_grids_law_as_its_report_does(grid_run):
    """`regimes_side_by_side` of two labels on one file: two McCandlish rows with the same a and b, each the
    report's printed a and b (3 significant digits), and the report's verdict."""
    from otod.nets.sweep.grid import regimes_side_by_side

    text, path = grid_run
    _, a, b = printed(text)
    summary = regimes_side_by_side({"finite": path, "again": path}, n_boot=500)
    rows = [line for line in summary.splitlines() if "McCandlish" in line and line.split()[0] in ("finite", "again")]
    assert len(rows) == 2
    numbers = [re.findall(r"(-?[\d.]+(?:e-?\d+)?) \[", row)[:2] for row in rows]
    assert numbers[0] == numbers[1]
    assert float(numbers[0][0]) == pytest.approx(a, rel=1e-9) and float(numbers[0][1]) == pytest.approx(b, rel=1e-9)
    verdict = re.search(r"verdict: (.+)", text[text.index("McCandlish (S(B)"):]).group(1).strip()
    assert rows[0].split("  ")[-1].startswith(verdict)


@pytest.mark.parametrize("regime, a_printed, b_printed, cells_inside",
                         [("stream", 0.348, -0.125, 23), ("finite", 0.267, -0.0815, 16)])
def test_the_committed_full_grids_law_is_the_plane_through_its_stored_cells(regime, a_printed, b_printed,
                                                                          cells_inside):
    """Issue 52's full grid (results/net-grid-full-*.parquet, D = 256..65,536 × P = 73..7,201, read by the figure
    and the claims): each cell's McCandlish B_crit re-read from the stored records, refit by hand (least squares
    of log B_crit on 1, log D, log P over the cells inside their batches) gives the law's a and b to 1e-9, and those
    are the numbers the docs print (3 significant digits: ±0.5 in the last)."""
    from pathlib import Path

    from otod.core import analysis as core
    from otod.core.joint_law import analyse_grid
    from otod.core.results import load

    path = Path(__file__).resolve().parents[3] / "results" / f"net-grid-full-{regime}.parquet"
    (cube,) = core.cubes(load(path).to_pandas(), ("examples", "dim", "batch"))
    grid = analyse_grid(cube, n_boot=20)
    inside = [c for c in grid.cells if c.places["mccandlish"] == "inside"]
    assert len(grid.cells) == 25 and len(inside) == cells_inside
    assert len({c.data for c in grid.cells}) == 5 and len({c.params for c in grid.cells}) == 5
    design = np.array([[1.0, math.log(c.data), math.log(c.params)] for c in inside])
    _, a_hand, b_hand = np.linalg.lstsq(design, np.log([c.values["mccandlish"] for c in inside]), rcond=None)[0]
    assert grid.mccandlish.a == pytest.approx(a_hand, abs=1e-9)
    assert grid.mccandlish.b == pytest.approx(b_hand, abs=1e-9)
    assert a_hand == pytest.approx(a_printed, abs=5e-4)
    assert b_hand == pytest.approx(b_printed, abs=5e-4 if abs(b_printed) >= 0.1 else 5e-5)


def test_the_smallest_grid_ran_once_in_this_test_run(smallest_grid_runs):
    """One run of the grid across every worker (tests/nets/conftest.py's file lock): 1 line in its runs record.
    tests/nets/figures/test_grid.py asks the same, so whichever of the two modules' workers ran it second sees 2."""
    assert len(smallest_grid_runs) == 1, smallest_grid_runs
