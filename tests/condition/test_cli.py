"""The command line as a user meets it: the documented commands work, bad input gets one line and exit code 2."""

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from otod.cli import main


def run(args, tmp_path):
    """Run `otod ARGS` as a user would (a real process: exit code and stderr exactly as seen)."""
    return subprocess.run([sys.executable, "-m", "otod", *args], capture_output=True, text=True, cwd=tmp_path,
                          timeout=300)


@pytest.mark.parametrize("args,fragment", [
    (["sweep", "condition", "--k", "0..5"], "κ must be ≥ 1"),
    (["sweep", "condition", "--k", "5..1"], "exceeds its end"),
    (["sweep", "condition", "--k", "abc"], "not a number"),
    (["sweep", "condition", "--tol", "0"], "strictly between 0 and 1"),
    (["sweep", "condition", "--tol", "2"], "strictly between 0 and 1"),
    (["sweep", "condition", "--dim", "0"], "must be ≥ 2"),
    (["sweep", "condition", "--dim", "2.5"], "whole numbers"),
    (["sweep", "condition", "--dim", "1e9"], "GiB of memory"),
    (["sweep", "condition", "--dim", "1e5", "--basis", "rotated"], "GiB of memory"),
    (["sweep", "condition", "--problem", "kronecker", "--shape", "2000x2000"], "GiB of memory"),
    (["sweep", "condition", "--k", "1..1e8:60:log", "--seeds", "64", "--dim", "10000", "--method", "gd"],
     "pass --yes"),
    (["sweep", "condition", "--ladder", "2"], "strictly between 0 and 1"),
    (["sweep", "condition", "--check-every", "0"], "integer ≥ 1"),
    (["fit", "missing.json", "--tol", "1e-3"], "no such file"),
    (["sweep", "condition", "--method", "sgdx"], "unknown method"),
    (["sweep", "condition", "--method", "kfac"], "--problem kronecker"),
    (["sweep", "condition", "--seeds", "0"], "integer ≥ 1"),
    (["sweep", "condition", "--lr", "-1"], "positive number"),
    (["sweep", "condition", "--spectrum", "flat"], "Invalid value for '--spectrum'"),
    (["sweep", "condition", "--k", "1..1e30:3:log"], "≤ 1e+12"),
    (["sweep", "condition", "--max-iters", "99999999999"], "from 1 to 1e+08"),
    (["sweep", "condition", "--k", "2", "--out", "/proc/otod"], "cannot write results"),
    (["fit", "missing.json"], "no such file"),
    (["fit", "corrupt.json"], "not readable as JSON"),
    (["fit", "corrupt.json", "--tol", "0"], "positive number"),
    (["fit", "corrupt.json", "--tol", "-1e-3"], "positive number"),
    (["plot", "corrupt.json"], "not readable as JSON"),
])
def test_bad_input_is_one_line_and_exit_code_2(tmp_path, args, fragment):
    (tmp_path / "corrupt.json").write_text("{ this is not json")
    proc = run(args, tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and fragment in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("otod: error: ")


def test_sweep_prints_table_fits_and_paths_and_fit_plot_reread_the_file(tmp_path):
    runner = CliRunner()
    out = tmp_path / "res"
    r = runner.invoke(main, ["sweep", "condition", "--k", "1..30:6:log", "--dim", "10", "--seeds", "3",
                             "--method", "gd,newton", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "fitted scaling laws" in r.output and "bound" in r.output and "exact" in r.output and "results:" in r.output
    path = next(out.glob("condition-*.json"))
    assert path.with_suffix(".png").exists() and not path.with_suffix(".pdf").exists()  # PNG unless --pdf
    r2 = runner.invoke(main, ["fit", str(path)])
    assert r2.exit_code == 0 and "newton" in r2.output
    r3 = runner.invoke(main, ["plot", str(path), "--x-axis", "flops", "--pdf", "--out", str(tmp_path / "figs")])
    assert r3.exit_code == 0
    assert {p.name for p in (tmp_path / "figs").iterdir()} == {path.stem + "-flops.png", path.stem + "-flops.pdf"}


def test_json_output_is_the_records(tmp_path):
    r = CliRunner().invoke(main, ["sweep", "condition", "--k", "2,4", "--dim", "6", "--seeds", "2",
                                  "--method", "gd", "--no-plot", "--json", "--out", str(tmp_path)])
    assert r.exit_code == 0
    records = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(records) == 4 and {"kappa", "method", "seed", "iterations", "status", "hits"} <= set(records[0])


def test_every_option_help_has_an_example():
    import click

    command = main.commands["sweep"].commands["condition"]
    for param in command.params:
        if isinstance(param, click.Option) and param.help:
            assert "E.g." in param.help, param.name
