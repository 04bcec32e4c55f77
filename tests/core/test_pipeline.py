"""The one pipeline after the engine (`otod.core.pipeline`): every sweep command selects each record's setting
once and turns its records into columns once, and its figure runs no search of its own.

The counting test runs each sweep command in-process (a small grid, with its figure) and counts, on the sweep's
own records: the records that pass through a selection (`otod.core.analysis.cubes`, where every selection starts,
by their row: a second analysis, or a selection outside it, would pass a row again), the calls of the one choice
(`otod.core.analysis.chosen`), the analyses (`otod.core.pipeline.analyse`), the column builds
(`otod.core.columns.table_of`) and the frames made from them (`Results.to_pandas`). Each is looked up at call
time, so the counts do not depend on which module imported what first. The exact NQM's curve that a
simulated noise figure draws beside the measurement is the analysis's theory, counted apart. The bracket
(`otod.core.bracket`: the rate in condition and depth, β in the simulated noise sweeps) is a stage of the
pipeline that runs before the analysis and makes no choice of its own: each of its rounds reads the analysis's
choices on the point estimates only (`otod.core.analysis.placements`, its presentation's ``place``: the one rule,
`chosen`, on every seed, with no bootstrap and no fit), and the full analysis (choice, bootstrap, fits) is made
once per sweep, on the records the last round leaves, however many rounds ran. No command calls `select` or
`mark_selection`, the selection outside an analysis."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from click.testing import CliRunner

import otod.core.analysis as analysis_module
import otod.core.bracket as bracket_module
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
    # the bracket stage with a round: two rates, so every choice is on an edge, one step beyond each end
    "condition-bracketed": (["sweep", "condition", "--k", "1,10", "--dim", "8", "--seeds", "2", "--lr", "tuned",
                             "--lr-grid", "0.5,1", "--lr-extend", "1", "--method", "gd"], False),
}

#: The modes that run several sweeps through the pipeline, with the sweeps each runs: ``--branch-at`` one per
#: checkpoint (its predictors' joint CIs read the core's bootstrap of each, `otod.nets.along.predictors`),
#: ``--batch-schedule`` the constant sweep and one per phase (its comparison reads each sweep's choice,
#: `otod.nets.schedule.stats`). The smallest grids that still choose: two rates, two seeds, 40 steps, three batches
#: (the fewest --branch-at's fit of S(B) takes). Both modes run the same constant sweep, so its program (the
#: engine's one program over the batches, its trace length set by --max-iters) is compiled once and the second
#: mode reuses it: 14.4 CPU-s for the two against 17.4 with the schedule's own grid (batches 8 and 16, 60 steps).
SMALL_NET = ["sweep", "net", "--data", "teacher", "--width", "8", "--examples", "64", "--seeds", "2", "--lr-grid",
             "0.3,1"]
SWEEPS = {
    "net-branch-at": (SMALL_NET + ["--batch", "8,16,32", "--max-iters", "40", "--branch-at", "0,5",
                                   "--branch-batch", "16"], 2),
    "net-batch-schedule": (SMALL_NET + ["--batch", "8,16,32", "--max-iters", "40", "--batch-schedule",
                                        "8@0.5,16@0.3"], 3),
    # SLOT (issue 51, Deliver 2): the D × P grid mode joins here, with the number of its cells' sweeps, e.g.
    # "net-grid": (SMALL_NET + ["--grid", ...], cells),
}


class Counts(collections.Counter):
    """The counts, and ``kept``: what each of the bracket's reads returned (``placed``) and each analysis
    (``analysed``), in order."""

    def __init__(self):
        super().__init__()
        self.kept = {"placed": [], "analysed": []}


def counted(monkeypatch, simulated: bool) -> Counts:
    """Count the passes named in the module docstring; on a simulated sweep, frames and records of the exact path
    (mode "exact") are the theory's, counted under ``theory``. A sweep is each call from outside the pipeline of
    `otod.core.pipeline.made` (which `sweep` calls), or of `present` without an analysis (``otod fit``, ``otod
    plot``); each call of its `analyse` numbers an analysis, each call of the bracket's read of the choices (the
    ``place`` `otod.core.bracket.bracketed` is given) a placement. Rows are counted per sweep and analysis:
    ``("row", sweep, analysis, row)`` for a selection, ``("chosen", sweep, analysis, row)`` for a call of the
    choice (``"placed row"`` and ``"placed chosen"`` per sweep and placement within a placement, whose choices
    are "placement choices" and whose bootstraps and resampled choices, of which there must be none, "... in a
    placement"); a choice outside every sweep is counted under "choices after the sweeps" (a mode that chose
    again after its sweeps returned), one on a cube no selection made under "unknown choices"."""
    counts = Counts()
    cubes, table_of, choice = analysis_module.cubes, columns_module.table_of, analysis_module.chosen
    to_pandas, analyse = results_module.Results.to_pandas, pipeline_module.analyse
    bracketed, bootstrap, rechosen = bracket_module.bracketed, analysis_module.bootstrap, analysis_module.rechosen
    made = {}  # id(cube) → (the cube, kept alive so its id is not reused; its kind; its records' rows)
    depth = [0]
    inside = {"placement": 0}  # within a read of the bracket's (the kind's ``place``)

    def theory_frame(frame) -> bool:
        return simulated and "mode" in frame and len(frame) > 0 and bool((frame["mode"] == "exact").all())

    def counting_cubes(frame, *args, **kwargs):
        kind = "search" if frame.attrs.get("search") else "theory" if theory_frame(frame) else "sweep"
        if kind == "sweep" and inside["placement"]:
            counts.update(("placed row", counts["sweeps"], counts["placements"], int(i)) for i in frame.index)
        elif kind == "sweep":
            counts.update(("row", counts["sweeps"], counts["analyses"], int(i)) for i in frame.index)
        counts[f"{kind} records selected".replace("sweep ", "")] += len(frame)
        out = cubes(frame, *args, **kwargs)
        for cube in out:
            made[id(cube)] = (cube, kind, frame.index.to_numpy()[cube.row[cube.row >= 0]])
        return out

    def counting_chosen(cube, *args, **kwargs):
        _, kind, rows = made.get(id(cube), (cube, "unknown", ()))
        if depth[0] == 0:
            counts["choices after the sweeps"] += 1
        elif kind == "sweep" and inside["placement"]:
            counts.update(("placed chosen", counts["sweeps"], counts["placements"], int(i)) for i in rows)
            kind = "placement"
        elif kind == "sweep":
            counts.update(("chosen", counts["sweeps"], counts["analyses"], int(i)) for i in rows)
        counts[f"{kind} choices"] += 1
        return choice(cube, *args, **kwargs)

    def counting_analyse(*args, **kwargs):
        counts["analyses"] += 1
        counts[("analyses", counts["sweeps"])] += 1
        out = analyse(*args, **kwargs)
        counts.kept["analysed"].append(out)
        return out

    def counting_bootstrap(cube, *args, **kwargs):
        _, kind, _ = made.get(id(cube), (cube, "unknown", ()))
        counts[f"{kind} bootstraps" + " in a placement" * bool(inside["placement"])] += 1
        return bootstrap(cube, *args, **kwargs)

    def counting_rechosen(*args, **kwargs):  # the choice redone on resampled seeds
        counts["resampled choices" + " in a placement" * bool(inside["placement"])] += 1
        return rechosen(*args, **kwargs)

    def one_sweep(function, given: str | None = None):
        def call(*args, **kwargs):
            counts["sweeps"] += depth[0] == 0 and (given is None or kwargs.get(given) is None)
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
    monkeypatch.setattr(pipeline_module, "analyse", counting_analyse)
    monkeypatch.setattr(bracket_module, "bracketed", counting_reads(counts, inside, bracketed))
    monkeypatch.setattr(analysis_module, "bootstrap", counting_bootstrap)
    monkeypatch.setattr(analysis_module, "rechosen", counting_rechosen)
    monkeypatch.setattr(pipeline_module, "made", one_sweep(pipeline_module.made))
    monkeypatch.setattr(pipeline_module, "present", one_sweep(pipeline_module.present, given="analysis"))
    monkeypatch.setattr(columns_module, "table_of", counting_table_of)
    monkeypatch.setattr(results_module.Results, "to_pandas", counting_to_pandas)
    monkeypatch.setattr(analysis_module, "select", refused("select"))
    monkeypatch.setattr(analysis_module, "mark_selection", refused("mark_selection"))
    return counts


def counting_reads(counts: Counts, inside: dict, bracketed):
    """`otod.core.bracket.bracketed` with each of its reads of the choices (the ``place`` it is given, once per
    round and once more) counted as a placement of the sweep, ``inside["placement"]`` set while it runs."""

    def counting_bracketed(config, results, place, *args, **kwargs):
        def counting_place(*place_args, **place_kwargs):
            counts["placements"] += 1
            counts[("placements", counts["sweeps"])] += 1
            inside["placement"] += 1
            try:
                out = place(*place_args, **place_kwargs)
            finally:
                inside["placement"] -= 1
            counts.kept["placed"].append(out)
            return out

        return bracketed(config, results, counting_place, *args, **kwargs)

    return counting_bracketed


#: The commands whose grid the bracket stage extends (`otod.core.bracket`: it reads the choices once, and once
#: more after each round it runs), and the one whose choices sit on an edge, so that it runs a round.
BRACKETED = ("condition", "depth", "toy", "noise-simulate", "condition-bracketed")
#: The commands the fast suite runs: a plain sweep (the exact NQM, no lanes) and a bracketed one that runs a round
#: (with the two modes of several sweeps below, every mode of the pipeline); the others, 12-84 s each on a loaded
#: 2-core machine (load 15), run with ``python3 -m pytest -m slow tests/core/test_pipeline.py``.
FAST = ("noise-exact", "condition-bracketed")


@pytest.mark.parametrize("name", [n if n in FAST else pytest.param(n, marks=pytest.mark.slow) for n in sorted(COMMANDS)])
def test_a_sweep_command_selects_once_and_builds_columns_once(name, tmp_path, monkeypatch):
    """One full analysis per sweep (choice, bootstrap, fits), however many rounds the bracket ran: each round
    reads where the choices lie on the point estimates only (the kind's ``place``: `otod.core.analysis.chosen` on
    every seed, once per record, no bootstrap and no fit), and the last read, on the records the analysis then
    reads, makes the analysis's very choices."""
    args, simulated = COMMANDS[name]
    counts = counted(monkeypatch, simulated)
    result = CliRunner().invoke(main, args + ["--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "figure:" in result.output
    monkeypatch.undo()
    ran = rounds(tmp_path)
    assert_selected_once(counts)
    # the bracket's search chooses nothing of its own: it reads the choices of the analysis's rule
    assert counts["search choices"] == counts["search records selected"] == 0, counts
    assert ran > 0 or name != "condition-bracketed", "the bracketed command ran no round"
    assert_placed_on_point_estimates(counts, ran + 1 if name in BRACKETED else counts["placements"])
    # one build, one for each small sweep of the bracket's rounds (its own file) and one for each round merged into
    # the file (its records changed); one frame for the analysis and one for each read of the bracket's
    subs = sum(len((load(p).meta.get("bracket") or {}).get("runs", ())) for p in tmp_path.glob("*.parquet"))
    assert counts["column builds"] == 1 + subs + ran and counts["frames"] == 1 + counts["placements"], counts
    if simulated:  # the exact curve beside the measurement: the analysis's theory, made once
        assert counts["theory records selected"] > 0 and counts["theory column builds"] == 1, counts
    else:
        assert counts["theory records selected"] == 0, counts


def assert_placed_on_point_estimates(counts: Counts, placements: int) -> None:
    """The bracket read the choices ``placements`` times (a round's read, and the read that finds nothing left to
    run): in each, every record passed through one selection and one call of the choice, and no bootstrap or
    choice on resampled seeds ran; the analysis bootstrapped each of its series once; the last read's choices are
    the analysis's own (the same records chosen, with the same edge flags)."""
    assert counts["placements"] == placements, counts
    assert not any("in a placement" in k for k in counts if isinstance(k, str)), counts
    assert counts["sweep bootstraps"] == counts["sweep choices"], counts
    for what in ("placed row", "placed chosen"):
        rows = {k: v for k, v in counts.items() if isinstance(k, tuple) and k[0] == what}
        assert (bool(rows) == bool(placements)) and max(rows.values(), default=1) == 1, counts
    if not placements:
        return
    assert counts["placement choices"] > 0, counts
    (analysed,) = counts.kept["analysed"]
    flags = {}
    for group in counts.kept["placed"][-1]:
        for choice in group.choices:
            rows = choice.at_choice(choice.cube.row)
            labels = group.rows.index.to_numpy()[rows[rows >= 0]]
            edges = np.broadcast_to(choice.lr_on_edge[:, None], rows.shape)[rows >= 0]
            flags.update(zip(labels.tolist(), edges.tolist()))
    chosen = analysed.chosen
    assert flags == dict(zip(chosen.index.tolist(), chosen["lr_on_edge"].to_numpy(bool).tolist()))


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
    assert counts["search choices"] == counts["placements"] == 0 and counts["sweep choices"] >= sweeps, counts


def assert_selected_once(counts: collections.Counter, sweeps: int = 1) -> None:
    """``sweeps`` sweeps ran (or were read back), each with one analysis (however many rounds its bracket ran);
    in each analysis, every record passed through one selection and through one call of the choice
    (`otod.core.analysis.chosen`): none twice, none left out; no choice made after the sweeps returned, none
    outside a selection, and nothing selected outside an analysis."""
    assert counts["sweeps"] == sweeps, counts
    assert all(counts[("analyses", n)] == 1 for n in range(1, sweeps + 1)), counts
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
