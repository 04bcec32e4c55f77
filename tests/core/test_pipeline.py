"""The one pipeline after the engine (`otod.core.pipeline`): every sweep command selects each record's setting
once and turns its records into columns once, and its figure runs no search of its own.

The counting test runs each sweep command in-process (a small grid, with its figure) and counts, on the sweep's
own records: the records that pass through a selection (`otod.core.analysis.cubes`, where every selection starts,
by their row: a second analysis, or a selection outside it, would pass a row again), the column builds
(`otod.core.columns.table_of`) and the frames made from them (`Results.to_pandas`). Each is looked up at call
time, so the counts do not depend on which module imported what first. The exact NQM's curve that a
simulated noise figure draws beside the measurement is the analysis's theory, counted apart; so is the search
of the bracket (`otod.core.bracket`: the rate in condition and depth, β in the simulated noise sweeps), which
decides which lanes to run before the
analysis (its frame is marked ``attrs["search"]`` and holds only the fields it reads); and no command calls
`select` or `mark_selection`, the selection outside an analysis."""

from __future__ import annotations

import collections

import pytest
from click.testing import CliRunner

import otod.core.analysis as analysis_module
import otod.core.columns as columns_module
import otod.core.pipeline as pipeline_module
import otod.core.results as results_module
from otod.cli import main
from otod.core.results import load

COMMANDS = {
    "condition": (["sweep", "condition", "--k", "1..100:4:log", "--seeds", "2", "--lr", "tuned"], False),
    "depth": (["sweep", "depth", "--depth", "1..3", "--seeds", "2"], False),
    "toy": (["sweep", "toy", "--layers", "1..2", "--seeds", "2"], False),
    "noise-exact": (["sweep", "noise", "--batch", "1..16:3:log", "--dim", "100", "--method", "sgd,heavy-ball"], False),
    "noise-simulate": (["sweep", "noise", "--mode", "simulate", "--batch", "1..16:3:log", "--dim", "100", "--seeds",
                        "2", "--method", "sgd,heavy-ball"], True),
    "params": (["sweep", "params", "--dim", "10..100:3:log", "--batch-rule", "fixed:8", "--seeds", "2"], False),
    "net-batch": (["sweep", "net", "--batch", "32,128", "--seeds", "2", "--no-predict"], False),
    "net-depth": (["sweep", "net", "--depth", "2,3", "--batch", "64", "--seeds", "2"], False),
}

#: The modes that run several sweeps through the pipeline, with the sweeps each runs: ``--branch-at`` one per
#: checkpoint (its predictors' joint CIs read the core's bootstrap of each, `otod.nets.along.predictors`),
#: ``--batch-schedule`` the constant sweep and one per phase (its comparison reads each sweep's choice,
#: `otod.nets.schedule.stats`). The smallest grids that still choose (two rates, three batches, two seeds; a schedule's milestones near its start).
#: The D × P grid (issue 51) joins here with its cells' sweeps.
SMALL_NET = ["sweep", "net", "--data", "teacher", "--width", "8", "--examples", "64", "--seeds", "2", "--lr-grid",
             "0.3,1", "--batch", "8,16,32"]
SWEEPS = {
    "net-branch-at": (SMALL_NET + ["--max-iters", "200", "--branch-at", "0,10", "--branch-batch", "16"], 2),
    "net-batch-schedule": (SMALL_NET + ["--max-iters", "400", "--batch-schedule", "8@0.5,16@0.3"], 3),
}


def counted(monkeypatch, simulated: bool) -> collections.Counter:
    """Count the passes named in the module docstring; on a simulated sweep, frames and records of the exact path
    (mode "exact") are the theory's, counted under ``theory``. The calls of the one choice
    (`otod.core.analysis.chosen`) are counted per sweep (each call of the pipeline's `sweep` or `present` from
    outside it is one) and per record: ``("chosen", sweep, row)``; a call outside every sweep is counted under
    "choices after the sweeps" (a mode that chose again after its sweeps returned)."""
    counts = collections.Counter()
    cubes, table_of, choice = analysis_module.cubes, columns_module.table_of, analysis_module.chosen
    to_pandas = results_module.Results.to_pandas
    made = {}  # id(cube) → (the cube, kept alive so its id is not reused; its kind; its records' rows)
    depth = [0]

    def theory_frame(frame) -> bool:
        return simulated and "mode" in frame and len(frame) > 0 and bool((frame["mode"] == "exact").all())

    def counting_cubes(frame, *args, **kwargs):
        kind = "search" if frame.attrs.get("search") else "theory" if theory_frame(frame) else "sweep"
        if kind == "sweep":
            counts.update(("row", counts["sweeps"], int(i)) for i in frame.index)
        counts[f"{kind} records selected".replace("sweep ", "")] += len(frame)
        out = cubes(frame, *args, **kwargs)
        for cube in out:
            made[id(cube)] = (cube, kind, frame.index.to_numpy()[cube.row[cube.row >= 0]])
        return out

    def counting_chosen(cube, *args, **kwargs):
        _, kind, rows = made.get(id(cube), (cube, "unknown", ()))
        if depth[0] == 0:
            counts["choices after the sweeps"] += 1
        elif kind == "sweep":
            counts.update(("chosen", counts["sweeps"], int(i)) for i in rows)
        counts[f"{kind} choices"] += 1
        return choice(cube, *args, **kwargs)

    def one_sweep(function):
        def call(*args, **kwargs):
            counts["sweeps"] += depth[0] == 0
            depth[0] += 1
            try:
                return function(*args, **kwargs)
            finally:
                depth[0] -= 1
        return call

    def counting_table_of(records):
        theory = simulated and bool(records) and all(r.get("mode") == "exact" for r in records)
        counts["theory column builds" if theory else "column builds"] += 1
        return table_of(records)

    def counting_to_pandas(self):
        counts["theory frames" if simulated and self.meta.get("mode") == "exact" else "frames"] += 1
        return to_pandas(self)

    def refused(name):
        def call(*args, **kwargs):
            counts[name] += 1
            raise AssertionError(f"{name} called outside the one analysis")
        return call

    monkeypatch.setattr(analysis_module, "cubes", counting_cubes)
    monkeypatch.setattr(analysis_module, "chosen", counting_chosen)
    monkeypatch.setattr(pipeline_module, "sweep", one_sweep(pipeline_module.sweep))
    monkeypatch.setattr(pipeline_module, "present", one_sweep(pipeline_module.present))
    monkeypatch.setattr(columns_module, "table_of", counting_table_of)
    monkeypatch.setattr(results_module.Results, "to_pandas", counting_to_pandas)
    monkeypatch.setattr(analysis_module, "select", refused("select"))
    monkeypatch.setattr(analysis_module, "mark_selection", refused("mark_selection"))
    return counts


#: The commands whose tuned rate is bracketed (`otod.core.bracket`).
BRACKETED = ("condition", "depth", "noise-simulate")
#: The command the fast suite runs (the cheapest: about 3 s on 2 quiet cores); the others, 4-130 s each (on a loaded
#: 2-core machine at the top), run with ``python3 -m pytest -m slow tests/core/test_pipeline.py``.
FAST = ("noise-exact",)


@pytest.mark.parametrize("name", [n if n in FAST else pytest.param(n, marks=pytest.mark.slow) for n in sorted(COMMANDS)])
def test_a_sweep_command_selects_once_and_builds_columns_once(name, tmp_path, monkeypatch):
    args, simulated = COMMANDS[name]
    counts = counted(monkeypatch, simulated)
    result = CliRunner().invoke(main, args + ["--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "figure:" in result.output
    assert_selected_once(counts)
    # the bracket's search, a stage before the analysis, chooses once per round and once on the final records
    assert counts["search choices"] == (counts["search records selected"] > 0) * (1 + rounds(tmp_path)), counts
    # one build; a second where the bracket merged lanes beyond the grid into the file (its records changed)
    monkeypatch.undo()
    merged = any((load(p).meta.get("bracket") or {}).get("lanes") for p in tmp_path.glob("*.parquet"))
    assert counts["column builds"] == 1 + merged and counts["frames"] == 1, counts
    # the bracket's search (condition and depth) reads the sweep's records once when no choice is on an edge
    assert (counts["search records selected"] > 0) == (name in BRACKETED), counts
    if simulated:  # the exact curve beside the measurement: the analysis's theory, made once
        assert counts["theory records selected"] > 0 and counts["theory column builds"] == 1, counts
    else:
        assert counts["theory records selected"] == 0, counts


def rounds(folder) -> int:
    """The bracket's rounds in the results files under ``folder`` (0 where it ran none)."""
    return sum((load(p).meta.get("bracket") or {}).get("rounds", 0) for p in folder.glob("*.parquet"))


@pytest.mark.parametrize("name", sorted(SWEEPS))
def test_a_mode_of_several_sweeps_chooses_once_per_sweep(name, tmp_path, monkeypatch):
    """``--branch-at`` and ``--batch-schedule``: each sweep's records pass through one call of the choice, in
    its analysis, and the mode's own numbers (the predictors' ratios, the schedule against the constant batches)
    choose nothing again after the sweeps."""
    args, sweeps = SWEEPS[name]
    counts = counted(monkeypatch, False)
    result = CliRunner().invoke(main, args + ["--out", str(tmp_path / "run.parquet")])
    assert result.exit_code == 0, result.output
    assert_selected_once(counts, sweeps)
    assert counts["search choices"] == 0 and counts["sweep choices"] >= sweeps, counts


def assert_selected_once(counts: collections.Counter, sweeps: int = 1) -> None:
    """``sweeps`` sweeps ran (or were read back); in each, every record passed through one selection and through
    one call of the choice (`otod.core.analysis.chosen`): none twice, none left out; no choice made after the
    sweeps returned, and nothing selected outside an analysis."""
    assert counts["sweeps"] == sweeps, counts
    for what in ("row", "chosen"):
        rows = {k: v for k, v in counts.items() if isinstance(k, tuple) and k[0] == what}
        assert rows and max(rows.values()) == 1, {k: v for k, v in rows.items() if v > 1} or f"no record {what}"
    selected = {k[1:] for k in counts if isinstance(k, tuple) and k[0] == "row"}
    chosen = {k[1:] for k in counts if isinstance(k, tuple) and k[0] == "chosen"}
    assert chosen == selected, sorted(selected ^ chosen)[:5]
    assert counts["choices after the sweeps"] == counts["unknown choices"] == 0, counts
    assert counts["select"] == counts["mark_selection"] == 0, counts


def test_a_read_back_report_and_figure_share_one_analysis(tmp_path, monkeypatch):
    """``otod fit`` and ``otod plot`` are the pipeline's `present` on a file read back: one analysis each, no
    column build (the file's columns are read as they are)."""
    args, _ = COMMANDS["noise-exact"]
    assert CliRunner().invoke(main, args + ["--no-plot", "--out", str(tmp_path / "c.parquet")]).exit_code == 0
    for command in (["fit"], ["plot"]):
        counts = counted(monkeypatch, False)
        result = CliRunner().invoke(main, command + [str(tmp_path / "c.parquet")])
        assert result.exit_code == 0, result.output
        assert_selected_once(counts)
        assert counts["column builds"] == 0 and counts["frames"] == 1, counts
        monkeypatch.undo()
