"""``otod noise-scale --model …``: bad input in one line with exit 2, and a small run's table and results file."""

from __future__ import annotations

import pytest


def cli(args, tmp_path):
    from click.testing import CliRunner

    from otod.cli import main

    return CliRunner().invoke(main, ["noise-scale", *args], catch_exceptions=False)


@pytest.mark.parametrize("args, words", [
    (["--model", "rnn"], "--model rnn: unknown"),
    (["--model", "mlp", "--data", "mnist"], "--data mnist: unknown"),
    (["--model", "mlp", "--width", "0"], "--width 0"),
    (["--model", "mlp", "--depth", "0"], "--depth 0"),
    (["--model", "mlp", "--batch", "5000"], "--batch 5000: larger than the data set"),
    (["--model", "mlp", "--pairs", "8:2000"], "B_big larger than the data set"),
    (["--model", "mlp", "--dim", "10"], "--dim"),
    (["--width", "8"], "only with --model"),
    (["--model", "mlp", "--steps", "0,1e9"], "pass --yes"),
])
def test_net_noise_scale_refuses_bad_input_in_one_line(args, words, tmp_path):
    result = cli(args, tmp_path)
    assert result.exit_code == 2
    assert words in result.output and len(result.output.strip().splitlines()) == 1


@pytest.mark.slow  # 9.5 s; the command's refusals stay fast (tests/test_bad_input_nets.py), its numbers in
# tests/nets/measure/test_noise_scale.py
def test_net_noise_scale_prints_a_table_per_checkpoint_and_writes_its_results(tmp_path):
    from otod.core import results as results_io

    out = tmp_path / "f.json"
    result = cli(["--model", "mlp", "--data", "teacher", "--examples", "64", "--width", "4", "--steps", "0,5",
                  "--pairs", "4:16", "--draws", "8", "--out", str(out)], tmp_path)
    assert result.exit_code == 0, result.output
    assert "step 0: training loss" in result.output and "step 5: training loss" in result.output
    assert "B_simple" in result.output and "B_noise" in result.output and "4:16" in result.output
    records = results_io.load(out).records
    assert [(r["step"], r["b_small"], r["b_big"]) for r in records] == [(0, 4, 16), (5, 4, 16)]
    assert all(r["b_simple"] > 0 and r["b_noise"] > 0 for r in records)


@pytest.mark.slow  # 6 s; the per-checkpoint CLI test below stays in the fast suite
def test_default_pairs_fit_a_small_data_set(tmp_path):
    """The default pairs (8:64, 32:256) keep those that fit n = 100 training examples; given pairs are checked."""
    from otod.core import results as results_io

    out = tmp_path / "g.json"
    result = cli(["--model", "mlp", "--data", "teacher", "--examples", "100", "--width", "3", "--steps", "0",
                  "--draws", "4", "--out", str(out)], tmp_path)
    assert result.exit_code == 0, result.output
    assert [(r["b_small"], r["b_big"]) for r in results_io.load(out).records] == [(8, 64)]
