"""B_crit along training (`otod.nets.along.branching`): the options, the milestone, the table's ratios, a branch at step 0
against the plain sweep, a branch's lanes against the reference loop, and the whole run read back."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

import otod.nets  # noqa: F401  (registers the net sweep)
from otod.core.errors import OtodError
from otod.nets.along import branching as along
from otod.nets.sweep.reading import CriticalBatchPoint

jax = pytest.importorskip("jax")


def test_the_branch_options_parse_in_order_and_default():
    """Steps as typed, increasing ("1e3" is whole); the defaults are B_ref 32, lr 0.1, r 0.5."""
    b = along.parse_branching("0, 100,1e3")
    assert b == along.Branching((0, 100, 1000), 32, 0.1, 0.5)
    assert along.parse_branching("5", "64", "0.3", "0.7") == along.Branching((5,), 64, 0.3, 0.7)


def test_loss_levels_parse_sorted_from_the_highest():
    """``loss:`` levels: distinct, from the highest (the order training reaches them), no steps yet."""
    b = along.parse_branching("loss:0.1, 0.5,0.5,1e-1,2", "16")
    assert b == along.Branching((), 16, 0.1, 0.5, (2.0, 0.5, 0.1))


@pytest.mark.parametrize("args, says", [
    (("loss:",), "--branch-at loss:: a comma list of training-loss levels"), (("loss:0.5,,1",), "loss:0.5,,1"),
    (("loss:x",), "--branch-at loss:x: not a loss level"), (("loss:0",), "loss:0: a loss level must be"),
    (("loss:-1",), "loss:-1: a loss level must be"), (("loss:nan",), "loss:nan: a loss level must be"),
    (("loss:" + ",".join(str(i + 1) for i in range(33)),), "33 loss levels"),
    (("",), "--branch-at : a comma list"), (("0,,5",), "--branch-at 0,,5"), (("x",), "--branch-at x: not a step"),
    (("-1",), "--branch-at -1"), (("2.5",), "--branch-at 2.5"), (("inf",), "--branch-at inf"),
    ((",".join(str(i) for i in range(33)),), "33 checkpoints"), (("0", "0"), "--branch-batch 0"),
    (("100,30",), "--branch-at 100,30: give the checkpoints in increasing order, each once"),
    (("0,100,100",), "e.g. --branch-at 0,100"),
    (("0", None, "-1"), "--branch-lr -1"), (("0", None, None, "0"), "--branch-to 0"),
    (("0", None, None, "1.5"), "--branch-to 1.5"),
])
def test_bad_branch_options_are_refused_in_one_line(args, says):
    with pytest.raises(OtodError) as info:
        along.parse_branching(*args)
    assert says in str(info.value) and "\n" not in str(info.value)


def test_the_milestone_is_the_fraction_of_the_mean_loss_over_seeds():
    """target = r · mean: losses 1, 2, 3 at r = 0.5 give 1.0 exactly."""
    assert along.milestone((1.0, 2.0, 3.0), 0.5) == 1.0
    assert along.milestone((0.2,), 0.25) == 0.05


def point(b_crit, ci, batches=(8.0, 16.0, 32.0, 64.0)) -> CriticalBatchPoint:
    return CriticalBatchPoint("sgd", 50.0, (40.0, 60.0), b_crit, ci, 0.05, len(batches), 0, None, None, batches,
                              (100.0,) * len(batches), (False,) * len(batches), (0.1,) * len(batches),
                              (False,) * len(batches))


def test_a_predictor_ratio_is_none_off_the_grid_and_the_predictor_is_the_seeds_median():
    """B_simple 40 against B_crit 20: ratio 2; a B_crit below the smallest batch (an extrapolation) gets no ratio
    (NaN); the predictor is the median of the seeds' values (30, 40, 90 → 40) with their least and largest; with
    no joint CI given, the ratio's ends are NaN (the CI is the joint bootstrap's, `otod.nets.along.predictors`)."""
    assert along.ratio_value(40.0, point(20.0, (10.0, 40.0))) == 2.0
    assert math.isnan(along.ratio_value(40.0, point(2.0, (1.0, 4.0))))
    result = along.AlongTrainingResult((along.Checkpoint(100, 0.8, (0.7, 0.9), 0.4, (point(20.0, (10.0, 40.0)),),
                                                         None, (30.0, 40.0, 90.0), (10.0,)),),
                                         along.Branching((100,)), {}, "")
    row, = result.rows()
    assert (row["step"], row["b_crit"], row["b_simple_ratio"], row["b_noise_ratio"]) == (100, 20.0, 2.0, 0.5)
    assert (row["b_simple"], row["b_simple_min"], row["b_simple_max"]) == (40.0, 30.0, 90.0)
    assert math.isnan(row["b_simple_ratio_lo"]) and math.isnan(row["b_simple_ratio_hi"])
    assert along.predicted(40.0, (30.0, 40.0, 90.0)) == "40 [30, 90]"


def small_config(**kw):
    from otod.nets.sweep.options import net_config

    options = dict(batch="16,32,64", width="8", examples="256", seeds=2, lr="tuned", lr_grid="0.3,1",
                   max_iters="400", x64=True)
    options.update(kw)
    return net_config(**options)


TIMING = ("seconds", "time")


def strip(records, drop=()):
    return [{k: v for k, v in r.items() if not any(t in k for t in TIMING) and k not in drop} for r in records]


def check_branches_at_zero_and_later(config, branching, tmp_path) -> None:
    """The branch at step 0 equals the plain sweep record for record (checkpoint columns aside, 12 records); at the
    later step every seed's checkpoint loss is below its start's, the milestone is half their mean, the records
    carry the step, and every lane equals the reference loop's from the family's (branched) draws."""
    from otod.core.sweep import run_sweep
    from tests.nets.lanes import compare_with_reference

    later = branching.steps[-1]
    at_zero, losses0 = along.branch_config(config, branching, 0)
    plain = dataclasses.replace(config, target=at_zero.target)
    branched = run_sweep(at_zero, out_dir=tmp_path / "branch")
    reference = run_sweep(plain, out_dir=tmp_path / "plain")
    drop = ("checkpoint", "checkpoint_batch", "checkpoint_lr")
    assert len(branched.records) == 12 and all(r["checkpoint"] == 0.0 for r in branched.records)
    assert strip(branched.records, drop) == strip(reference.records)
    at_later, losses = along.branch_config(config, branching, later)
    assert at_later.target.tol == pytest.approx(0.5 * np.mean(losses), rel=1e-12)
    assert all(lt < l0 for lt, l0 in zip(losses, losses0))
    records = run_sweep(at_later, out_dir=tmp_path / "later").records
    assert all(r["checkpoint"] == float(later) for r in records)
    assert compare_with_reference(at_later, records) >= 6


@pytest.mark.slow
def test_a_branch_at_step_0_is_the_plain_sweep_and_a_later_branch_starts_from_its_checkpoint(tmp_path):
    """At step 0 the branched sweep's records equal the plain sweep's (same target) field for field, besides its
    checkpoint columns (float64, 3 batches × 2 seeds × 2 lrs); at step 10 every lane's count, status and final loss
    equal the reference loop's stepping from the family's (branched) draws, and its milestone is half the mean of
    the seeds' losses at their checkpoints, each below the start's."""
    check_branches_at_zero_and_later(small_config(), along.Branching((0, 10), batch=16, lr=0.3), tmp_path)


@pytest.mark.slow
def test_b_crit_along_training_runs_reads_back_and_repeats(tmp_path):
    """Two checkpoints, 5 seeds: one results file each, its records' checkpoint its step, its target the
    milestone; B_crit and S_min fitted with CIs that hold them; B_simple and B_noise measured (finite, > 0); the
    same call again reads the files back to the same numbers; ``otod fit`` reads a file back."""
    from click.testing import CliRunner

    import otod
    from otod.cli import main

    kw = dict(batch=(16, 32, 64), width=8, examples=256, seeds=5, lr_grid=(0.3, 1), max_iters=400)
    out = str(tmp_path / "along.parquet")  # one file per checkpoint beside it: along-step0.parquet, …
    result = along.critical_batch_along_training((0, 20), branch_batch=16, out=out, **kw)
    assert [c.step for c in result.checkpoints] == [0, 20]
    assert [Path(c.path).name for c in result.checkpoints] == ["along-step0.parquet", "along-step20.parquet"]
    for c in result.checkpoints:
        loaded = otod.load(c.path)
        assert {r["checkpoint"] for r in loaded.records} == {float(c.step)}
        assert loaded.meta["config"]["target"]["tol"] == c.milestone == pytest.approx(0.5 * np.mean(c.losses))
        p, = c.points
        assert p.s_min_ci[0] <= p.s_min <= p.s_min_ci[1] and p.b_crit_ci[0] <= p.b_crit <= p.b_crit_ci[1]
        assert c.b_simple > 0 and c.b_noise > 0 and len(c.b_simple_seeds) == len(c.b_noise_seeds) == 5
    again = along.critical_batch_along_training((0, 20), branch_batch=16, out=out, **kw)
    import pandas as pd

    pd.testing.assert_frame_equal(again.to_pandas(), result.to_pandas())   # NaN where a ratio has none
    assert "B_crit along training" in result.report and "predictor / measured B_crit" in result.report
    fitted = CliRunner().invoke(main, ["fit", result.checkpoints[1].path])
    assert fitted.exit_code == 0 and "B_crit" in fitted.output


MODEL = "tests/fixtures/models/plain_jax.py:mlp"


@pytest.mark.slow
def test_a_models_branch_at_step_0_is_its_plain_sweep_and_a_later_branch_steps_from_its_checkpoint(tmp_path):
    """A user's model (the plain-JAX fixture, 96 examples): at step 0 the branched sweep's records equal the plain
    model sweep's (same target) record for record, besides the checkpoint columns (float64, 3 batches × 2 seeds
    × 2 lrs); at step 8 every lane's count, status and final loss equal the reference loop's from the family's
    (branched) draws, and the milestone is half the mean of the seeds' checkpoint losses, each below the start's."""
    config = small_config(model=MODEL, width="32", examples=None, batch="8,16,32", lr_grid="0.03,0.1")
    check_branches_at_zero_and_later(config, along.Branching((0, 8), batch=16, lr=0.1), tmp_path)


@pytest.mark.slow
def test_the_same_model_command_twice_gives_identical_records(tmp_path):
    """``otod sweep net --model FILE.py:NAME --branch-at loss:…`` run twice into two folders: the same checkpoint
    steps (printed), the same table rows (JSON) and the same records in every results file, timings aside; each
    checkpoint's stored meta keeps its level."""
    import json

    from click.testing import CliRunner

    import otod
    from otod.cli import main

    args = ["sweep", "net", "--model", MODEL, "--branch-at", "loss:2,0.6", "--branch-batch", "16", "--batch",
            "8,16,32", "--seeds", "3", "--lr-grid", "0.03,0.1,0.3", "--max-iters", "500", "--no-plot", "--json"]
    runs = []
    for name in ("one", "two"):
        result = CliRunner().invoke(main, args + ["--out", str(tmp_path / name)])
        assert result.exit_code == 0, result.output
        runs.append(json.loads(result.stdout.strip().splitlines()[-1]))
    one, two = runs
    assert [r["step"] for r in one] == [r["step"] for r in two] and len(one) == 2
    assert [{k: v for k, v in r.items() if k != "path"} for r in one] == \
           [{k: v for k, v in r.items() if k != "path"} for r in two]
    for a, b in zip(one, two):
        ra, rb = otod.load(a["path"]), otod.load(b["path"])
        assert strip(ra.records) == strip(rb.records) and len(ra.records) == 3 * 3 * 3
        assert ra.meta["branch"]["levels"] and ra.meta["branch"]["step"] == a["step"]


def test_the_python_function_takes_loss_levels_or_steps_not_both():
    """``otod.critical_batch_along_training``: steps and losses together, and a bad level, are refused in one line
    before any model is loaded or run."""
    import otod

    with pytest.raises(OtodError, match="give the checkpoints as steps or as loss levels, not both"):
        otod.critical_batch_along_training((0, 10), losses=(0.5,))
    with pytest.raises(OtodError) as info:
        otod.critical_batch_along_training(losses=(0.5, "x"))
    assert str(info.value).startswith("--branch-at loss:x: not a loss level") and "\n" not in str(info.value)
    with pytest.raises(OtodError, match="loss:-1.0: a loss level must be a finite number > 0"):
        otod.critical_batch_along_training(losses=-1.0)


def test_predictor_values_are_kept_beside_the_results_file_and_read_back(tmp_path):
    """The first call measures and writes ``<file>.predictors.json``; the same key reads it back without measuring
    (NaN kept); another key (e.g. with the NQM) measures again and is added beside the first."""
    calls = []

    def measure(values):
        return lambda: calls.append(1) or values

    path = str(tmp_path / "net-x.parquet")
    first = along.cached_predictors(path, "nqm=False", measure({"b_simple": (1.0, math.nan)}))
    again = along.cached_predictors(path, "nqm=False", measure({"b_simple": (9.0, 9.0)}))
    other = along.cached_predictors(path, "nqm=True", measure({"nqm_scaled": (2.0, 3.0)}))
    assert len(calls) == 2 and first["b_simple"][0] == 1.0
    assert again["b_simple"][0] == 1.0 and math.isnan(again["b_simple"][1]) and other == {"nqm_scaled": (2.0, 3.0)}
    assert (tmp_path / "net-x.parquet.predictors.json").exists()
    assert along.cached_predictors(None, "k", measure({"a": (4.0,)})) == {"a": (4.0,)} and len(calls) == 3
