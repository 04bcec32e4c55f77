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
