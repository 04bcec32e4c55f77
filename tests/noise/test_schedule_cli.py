"""``otod nqm-schedule`` (`otod.noise.schedule_cli`): the results file it writes reads back as the table it printed,
so that the claims table can re-read the printed numbers (issue 50)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import otod
from otod.cli import main
from otod.noise.schedule_cli import table_of


@pytest.mark.parametrize("args", [["--dim", "30", "--target", "0.05"],
                                  ["--dim", "30", "--target", "0.05", "--schedule", "doubling:2:16:20:1.5"]])
def test_the_results_file_reads_back_as_the_printed_table(tmp_path, args):
    """The search's and one schedule's record, loaded from the file the command names, make the very table it
    printed (every line but the file's own)."""
    result = CliRunner().invoke(main, ["nqm-schedule", *args, "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    *table, last = result.output.strip().splitlines()
    assert last.startswith("results: ")
    loaded = otod.load(last.removeprefix("results: "))
    assert loaded.meta["kind"] == "nqm-schedule" and len(loaded.records) == 1
    assert table_of(loaded.records[0]) == "\n".join(table)


def test_out_other_than_a_folder_or_json_is_refused(tmp_path):
    result = CliRunner().invoke(main, ["nqm-schedule", "--dim", "30", "--out", str(tmp_path / "x.csv")])
    assert result.exit_code == 2 and "--out" in result.output


@pytest.mark.slow  # a three-phase search evaluates ~10⁵ schedules: 15-30 CPU-s even on d = 4..10
def test_phases_three_searches_three_phase_schedules_in_a_file_of_their_own(tmp_path):
    """``--phases 3``: the lr and batch schedules of the record have three phases each, and the file is not the
    two-phase search's (the config names its phases; two, the default, leave the config as before so the files
    written before ``--phases`` still read back)."""
    runs = {}
    for phases in ("2", "3"):
        result = CliRunner().invoke(main, ["nqm-schedule", "--dim", "10", "--target", "0.05", "--phases", phases,
                                           "--out", str(tmp_path)])
        assert result.exit_code == 0, result.output
        runs[phases] = otod.load(result.output.strip().splitlines()[-1].removeprefix("results: "))
    three = runs["3"].records[0]
    assert len(three["lr-decay"]["schedule"]) == 3 and len(three["batch"]["schedule"]) == 3
    assert len(runs["2"].records[0]["batch"]["schedule"]) == 2
    assert runs["3"].meta["config"]["phases"] == 3 and "phases" not in runs["2"].meta["config"]
    assert runs["3"].path != runs["2"].path


@pytest.mark.parametrize("args, words", [(["--phases", "3", "--schedule", "64:1.9"], "--phases 3"),
                                         (["--phases", "5"], "--phases")])
def test_phases_beside_a_schedule_or_out_of_range_is_refused_in_one_line(args, words):
    refused = CliRunner().invoke(main, ["nqm-schedule", *args])
    assert refused.exit_code == 2 and refused.output.count("\n") == 1 and words in refused.output
