"""`otod flops` and `otod profile`: tables, results files, --json, and one-line errors with exit code 2."""

import json

import pytest
from click.testing import CliRunner

from otod.core import results
from otod.cli import main


@pytest.fixture
def run():
    runner = CliRunner()
    return lambda *args: runner.invoke(main, list(args))


def test_flops_mlp_table_and_results_file(run, tmp_path):
    res = run("flops", "--model", "mlp", "--widths", "784,512,10", "--batch", "1,64", "--out", str(tmp_path))
    assert res.exit_code == 0, res.output
    assert "ratio xla" in res.output and "where XLA differs" in res.output
    files = list(tmp_path.glob("flops-*.json"))
    assert len(files) == 1 and str(files[0]) in res.output
    loaded = results.load(files[0])
    assert loaded.meta["kind"] == "flops" and loaded.meta["config"]["batches"] == [1, 64]
    assert [r["batch"] for r in loaded.records] == [1, 64]
    # the MLP at batch 64: formula ratio (FIRST + 2·OTHER + 2P)/(FIRST + OTHER) ≈ 1.028
    assert loaded.records[1]["ratio_formula"] == pytest.approx(1.028, abs=0.002)


def test_flops_json_and_model_list(run, tmp_path):
    res = run("flops", "--model", "onenet,mlp", "--widths", "20,10", "--batch", "4", "--optimizer", "sgd,adam",
              "--out", str(tmp_path), "--json")
    assert res.exit_code == 0, res.output
    records = json.loads(res.output)
    assert [(r["model"], r["optimizer"]) for r in records] == [("onenet", "sgd"), ("onenet", "adam"),
                                                               ("mlp", "sgd"), ("mlp", "adam")]


@pytest.mark.parametrize("args, word", [
    (["flops", "--model", "nope"], "--model nope"),
    (["flops", "--batch", "0"], "--batch 0"),
    (["flops", "--batch", "1,,4"], "--batch"),
    (["flops", "--model", "mlp", "--widths", "7,,x"], "--widths 7,,x"),
    (["flops", "--optimizer", "lion"], "--optimizer lion"),
    (["profile", "--model", "nope"], "--model nope"),
    (["profile", "--batch", "-2"], "--batch -2"),
    (["profile", "--precision", "fp8"], "--precision fp8"),
])
def test_bad_input_is_one_line_exit_2(run, args, word):
    res = run(*args)
    assert res.exit_code == 2
    assert "Traceback" not in res.output
    lines = [l for l in res.output.splitlines() if l.strip()]
    assert len(lines) == 1 and word in lines[0]


def test_profile_refuses_model_too_large(run, tmp_path, monkeypatch):
    monkeypatch.setattr("otod.cost.profile.memory_available", lambda: 2**30)
    res = run("profile", "--model", "linearnet", "--batch", "1", "--out", str(tmp_path))
    assert res.exit_code == 2
    assert "too large to time in memory" in res.output and "otod flops" in res.output


@pytest.mark.slow
def test_profile_table(run, tmp_path):
    res = run("profile", "--model", "mlp", "--widths", "32,16,10", "--batch", "4", "--repeats", "3",
              "--warmup", "1", "--out", str(tmp_path))
    assert res.exit_code == 0, res.output
    assert "float32" in res.output and "bfloat16" in res.output and "FLOP ratio" in res.output
    loaded = results.load(next(tmp_path.glob("profile-*.json")))
    assert loaded.meta["kind"] == "profile" and len(loaded.records) == 2
    assert all(r["forward_s"] > 0 and r["flop_ratio_xla"] > 1 for r in loaded.records)


def test_the_names_checked_before_jax_match_the_tables():
    """The CLI checks --optimizer and --precision against lists it can import without JAX; they must be the
    tables' own keys, or a valid name would be refused (or a bad one reach a traceback)."""
    from otod.cost.names import OPTIMIZER_NAMES, PRECISION_NAMES
    from otod.cost.optimizers import OPTIMIZERS
    from otod.cost.profile import PRECISIONS

    assert tuple(OPTIMIZERS) == OPTIMIZER_NAMES and tuple(PRECISIONS) == PRECISION_NAMES


def test_an_estimate_refuses_a_deep_compile_without_allocating(monkeypatch):
    """`check_compile` grows with the layers: DeeperConvNet at depth 10⁵ is refused on memory, a long compile
    that fits is refused on time unless --yes."""
    from otod.core.errors import OtodError
    from otod.cost import cli

    shape = cli.shape_options(["deeperconvnet"], widths=None, depth="100000", unshared=False, image=None,
                              tokens=None, width=None, heads=None, blocks=None)
    with pytest.raises(OtodError, match="GiB of memory"):
        cli.check_compile(["deeperconvnet"], shape, 11, 2, yes=False)
    monkeypatch.setattr("otod.core.resources.host_memory_available", lambda: 2 ** 50)
    with pytest.raises(OtodError, match="pass --yes"):
        cli.check_compile(["deeperconvnet"], shape, 11, 2, yes=False)
    cli.check_compile(["deeperconvnet"], shape, 11, 2, yes=True)
    small = cli.shape_options(["deeperconvnet"], widths=None, depth=None, unshared=False, image=None, tokens=None,
                              width=None, heads=None, blocks=None)
    cli.check_compile(["deeperconvnet"], small, 11, 2, yes=False)
