"""The noise commands as a user meets them: a small sweep runs end to end and its records carry the named fields
(bad input: the real-process table of tests/test_bad_input_noise_cost.py)."""

import pandas as pd
from click.testing import CliRunner

from otod.cli import main


def test_an_exact_noise_sweep_prints_its_table_and_records_carry_the_named_fields(tmp_path):
    result = CliRunner().invoke(main, ["sweep", "noise", "--mode", "exact", "--dim", "200", "--batch", "1..64:7:log",
                                       "--method", "sgd,heavy-ball", "--beta", "0.5,0.9", "--target", "0.05",
                                       "--out", str(tmp_path), "--no-plot"])
    assert result.exit_code == 0, result.output
    assert "critical batch" in result.output and "perfect scaling up to B" in result.output
    path = next(tmp_path.glob("noise-exact-*.parquet"))
    records = pd.read_parquet(path)
    assert {"batch", "dim", "method", "beta", "learning_rate"} <= set(records.columns)
    assert set(records.loc[records["method"] == "heavy-ball", "beta"]) == {0.5, 0.9}


def test_records_carry_the_schedule_and_the_path_by_name(tmp_path):
    """A reader of the bare file (pandas) sees every record's schedule and mode (exact or simulate) by name, on
    both paths."""

    from otod.noise.options import noise_config
    from otod.noise.runner import run

    for mode, schedule in (("exact", "constant"), ("simulate", "cosine")):
        seeds = None if mode == "exact" else 2  # the exact path samples nothing: --seeds is refused there
        config, mode = noise_config(batch="1,4", method="sgd", mode=mode, dim=20, seeds=seeds, schedule=schedule,
                                    target="0.5", lr="1")
        path = run(config, mode, out=str(tmp_path / mode)).path
        assert path.suffix == ".parquet"
        records = pd.read_parquet(path).to_dict("records")
        assert records and {(r["schedule"], r["mode"]) for r in records} == {(schedule, mode)}


def test_a_chosen_lr_on_the_grid_edge_is_marked_and_warned_about(tmp_path):
    """Exact NQM, SGD: at B = 1024 the best lr of the default grid is its largest multiplier (1.41, below the
    stability limit 2): the table marks it with * and a warning names the method; at B = 1, 2 it is interior."""
    import subprocess
    import sys

    def run(batches):
        return subprocess.run([sys.executable, "-m", "otod", "sweep", "noise", "--batch", batches, "--method", "sgd",
                               "--no-plot", "--out", str(tmp_path / batches.replace(",", "_"))],
                              capture_output=True, text=True, timeout=300)

    edge, interior = run("512,1024"), run("1,2")
    assert edge.returncode == 0 and interior.returncode == 0, edge.stderr + interior.stderr
    assert "1.41*" in edge.stdout
    assert "warning: lr* lies on the edge of --lr-grid at 2 (B, method) points (sgd)" in edge.stdout
    assert "*" not in interior.stdout.split("steps: median")[0] and "warning: lr*" not in interior.stdout
