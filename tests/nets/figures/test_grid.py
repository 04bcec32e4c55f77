"""The joint grid's summary figure (`otod.nets.figures.grid`): drawn from a committed results file re-read (not
rerun), its caption's joint law the one the grid's analysis gives, its band the replicates' spread; a file holding
another grid is refused in one line."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from otod.core.errors import OtodError
from otod.nets.figures.grid import GridFigureSpec, law_band, law_text, make_grid, same_grid

#: The smallest grid's settings (tests/nets/conftest.py: 2 × 2 cells, 3 batches, 5 seeds, 3 lrs, finite regime).
SPEC = dict(examples="64,256", width="4,16", data="teacher", lr_grid="0.1,0.3,1", max_iters=2000, seeds=5)


@pytest.fixture
def grid_file(smallest_grid):
    """The smallest grid's results file (tests/nets/conftest.py)."""
    return smallest_grid[1]


def test_the_figure_rereads_the_file_and_its_caption_states_the_grids_law(grid_file, tmp_path, monkeypatch):
    """The maker reads the file (no sweep runs: `run_sweep` is made to fail), writes the PNG, and its caption
    holds the law `grid_analyses` gives for the same file."""
    import otod.core.sweep
    from otod.core.api import load_results
    from otod.nets.sweep.grid import grid_analyses

    monkeypatch.setattr(otod.core.sweep, "run_sweep", lambda *a, **k: pytest.fail("the sweep ran again"))
    spec = GridFigureSpec(name="grid_test", maker="nets-grid", **SPEC,
                          finite={"batch": "2,8,32", "results": str(grid_file)})
    paths = make_grid(spec, tmp_path)
    assert paths[0].name == "nets_grid_test.png" and paths[0].stat().st_size > 10_000
    law = grid_analyses(load_results(grid_file))["sgd"].mccandlish
    caption = (tmp_path / "nets_grid_test.caption.txt").read_text()
    assert f"finite: {law_text(law)}" in caption


@pytest.mark.filterwarnings("error")
def test_a_cell_whose_ci_has_no_upper_end_gets_an_arrow_and_no_warning(grid_file, tmp_path, saved):
    """The smallest grid's cell D = 64, P = 73 has the McCandlish CI (0, inf): it is drawn as an arrow up from its
    B_crit on both panels (an infinite bar made matplotlib warn of an overflow), the caption names the arrow, and
    the law's band stays within the panel's height."""
    from otod.core.api import load_results
    from otod.nets.figures.grid import OPEN_CI_LABEL
    from otod.nets.sweep.grid import grid_analyses

    cells = grid_analyses(load_results(grid_file))["sgd"].cells
    open_cells = [c for c in cells if c.places["mccandlish"] == "inside" and c.cis["mccandlish"][1] == np.inf]
    assert [(c.data, c.params) for c in open_cells] == [(64.0, 73.0)]
    spec = GridFigureSpec(name="grid_test", maker="nets-grid", **SPEC,
                          finite={"batch": "2,8,32", "results": str(grid_file)})
    make_grid(spec, tmp_path)
    ((fig, _, _),) = saved
    b_crit = open_cells[0].values["mccandlish"]
    for ax in fig.axes[:2]:
        arrows = [t for t in ax.texts if t.get_label() == OPEN_CI_LABEL]
        assert [a.xy[1] / b_crit for a in arrows] == [pytest.approx(3.0)]
        low, high = ax.get_ylim()
        for band in ax.collections:
            for path in band.get_paths():
                assert np.all(path.vertices[:, 1] <= high * (1 + 1e-9))
    assert "an arrow up: the CI has no upper end" in fig.otod_caption


def test_a_file_of_another_grid_is_refused(grid_file, tmp_path):
    from otod.core.api import load_results, read_config

    config = read_config(load_results(grid_file).meta)
    spec = GridFigureSpec(name="g", **SPEC, finite={"batch": "2,8,32", "results": str(grid_file)})
    assert same_grid(config, spec.options("finite")) is None
    other = dataclasses.replace(spec, examples="64,512")
    assert "examples" in same_grid(config, other.options("finite"))
    with pytest.raises(OtodError, match="holds another grid"):
        make_grid(other, tmp_path)


def test_the_laws_band_is_the_replicates_percentiles():
    """At (D, P) the band is the 2.5th and 97.5th percentiles of exp(c + a·log D + b·log P) over the replicate
    rows: for rows a ∈ {0.4, 0.5, 0.6} × 200 (b = 0, c = 0) at D = 100 the band is [100^0.4, 100^0.6]."""
    reps = np.array([[a, 0.0, 0.0] for a in (0.4, 0.5, 0.6) for _ in range(200)])
    law = type("Law", (), {"replicates": reps, "no_ci": None})()
    low, high = law_band(law, np.array([100.0]), np.array([50.0]))
    assert low[0] == pytest.approx(100 ** 0.4) and high[0] == pytest.approx(100 ** 0.6)


def test_the_smallest_grid_ran_once_in_this_test_run(smallest_grid_runs):
    """One run of the grid across every worker (tests/nets/conftest.py's file lock): 1 line in its runs record.
    tests/nets/sweep/test_grid.py asks the same, so whichever of the two modules' workers ran it second sees 2."""
    assert len(smallest_grid_runs) == 1, smallest_grid_runs
