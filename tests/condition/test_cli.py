"""The command line as a user meets it: the documented commands work (bad input: tests/test_bad_input.py)."""

import json

from click.testing import CliRunner

from otod.cli import main


def test_sweep_prints_table_fits_and_paths_and_fit_plot_reread_the_file(tmp_path):
    runner = CliRunner()
    out = tmp_path / "res"
    r = runner.invoke(main, ["sweep", "condition", "--k", "1..30:6:log", "--dim", "10", "--seeds", "3",
                             "--method", "gd,newton", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "fitted scaling laws" in r.output and "bound" in r.output and "exact" in r.output and "results:" in r.output
    path = next(out.glob("condition-*.parquet"))
    assert path.with_suffix(".png").exists() and not path.with_suffix(".pdf").exists()  # PNG unless --pdf
    r2 = runner.invoke(main, ["fit", str(path)])
    assert r2.exit_code == 0 and "newton" in r2.output
    r3 = runner.invoke(main, ["plot", str(path), "--x-axis", "flops", "--pdf", "--out", str(tmp_path / "figs")])
    assert r3.exit_code == 0
    assert {p.name for p in (tmp_path / "figs").iterdir()} == {path.stem + "-flops.png", path.stem + "-flops.pdf",
                                                               path.stem + "-flops.caption.txt"}  # its caption


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
