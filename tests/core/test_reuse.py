"""Points measured already (`otod.core.reuse`): a sweep whose points a finished file beside it holds, under the
same settings and arithmetic, reads their records from there, and its results file is the one a fresh run writes.

Crossed with the sweep kinds: each case runs sweep A, then sweep B (points partly A's) in A's folder and in a
fresh one; B beside A must say it read exactly the shared points' lanes, and hold every record of the fresh B."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from otod.cli import main
from otod.core import results as results_io
from otod.core.reuse import SAME_ARITHMETIC, matching_files
from otod.core.config import NOT_IN_DIGEST
from otod.core.scheduler import points_settings
from otod.core.sweep import run_sweep

#: kind: (A's options, B's options, the options both share, lanes per point of B, B's points that A holds).
CASES = {
    "condition": (["--k", "1,4,16"], ["--k", "4,16,64"],
                  ["sweep", "condition", "--dim", "16", "--method", "gd,heavy-ball", "--seeds", "2",
                   "--max-iters", "3000"], 2 * 2, 2),
    "depth": (["--depth", "1,2,3", "--init", "xavier,small"], ["--depth", "2,3,4", "--init", "small"],
              ["sweep", "depth", "--seeds", "2", "--width", "4"], 13 * 2, 2),
    "toy": (["--layers", "1,2"], ["--layers", "2,3"], ["sweep", "toy", "--seeds", "3"], 13 * 3, 1),
    "noise": (["--batch", "1,4,16"], ["--batch", "4,16,64"],
              ["sweep", "noise", "--mode", "simulate", "--dim", "20", "--seeds", "2", "--target", "0.1",
               "--max-iters", "4000", "--method", "sgd"], None, 2),
    "net": (["--batch", "16,64"], ["--batch", "64,256"],
            ["sweep", "net", "--width", "8", "--seeds", "2", "--max-iters", "300"], None, 1),
}
FAST = ("condition",)  # the others (static axes: depth, toy; noise, net) run with -m slow


def _run(args: list[str], out: Path) -> tuple[results_io.Results, str]:
    result = CliRunner().invoke(main, [*args, "--no-plot", "--out", str(out)])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("results: "))
    return results_io.load(line.removeprefix("results: ").strip()), result.output


@pytest.mark.parametrize("kind", [pytest.param(k, marks=() if k in FAST else pytest.mark.slow) for k in CASES])
def test_a_sweep_reads_the_points_a_finished_file_holds_and_writes_the_records_a_fresh_run_does(tmp_path, kind):
    a_args, b_args, shared, per_point, held = CASES[kind]
    a, _ = _run([*shared, *a_args], tmp_path / "together")
    beside, output = _run([*shared, *b_args], tmp_path / "together")
    fresh, _ = _run([*shared, *b_args], tmp_path / "fresh")
    assert "reused" not in fresh.meta and "reused" not in a.meta
    reused = beside.meta["reused"]
    lanes = per_point * held if per_point else len(fresh.records) * held // len(
        {tuple(r[n] for n in fresh.meta["config"]["axes"]) for r in fresh.records})
    assert reused["from"] == [a.path.name] and reused["lanes"] == lanes  # the cache hit, by its size
    assert f"{lanes} lanes" in output and a.path.name in output  # and said on the terminal
    assert beside.path.name == fresh.path.name  # the same config, so the same file name
    assert beside.records == fresh.records  # every field of every lane, in order


def _condition(tmp_path, values, **kw):
    from otod.condition.options import condition_sweep
    from tests.conftest import SMALL_RANDOM

    config = condition_sweep(values, methods=kw.pop("methods", ("gd",)), problem=SMALL_RANDOM,
                             max_iters=kw.pop("max_iters", 3000), **{"seeds": 2, **kw})
    return config, run_sweep(config, out_dir=tmp_path)


@pytest.mark.parametrize("change", ["seeds", "tol", "cap", "lr grid"])
def test_a_file_of_other_settings_gives_nothing(tmp_path, change):
    """Seeds, tolerance, cap and rates change a point's records: a file differing in one is not read."""
    _condition(tmp_path, (1.0, 4.0))
    other = {"seeds": dict(seeds=3), "tol": dict(tol=1e-4), "cap": dict(max_iters=2000),
             "lr grid": dict(lr="tuned", lr_grid=(0.5, 1.0))}[change]
    _, results = _condition(tmp_path, (4.0, 16.0), **other)
    assert "reused" not in results.meta


@pytest.mark.slow  # 12 s; the fast suite keeps the reuse tests of every other setting
def test_a_file_with_other_momentum_values_gives_nothing(tmp_path):
    """β is a setting a point chooses among (like its rates): the same k with other β values tried is another
    point, so only a file that tried the same β gives it."""
    shared = ["sweep", "toy", "--seeds", "2", "--method", "heavy-ball", "--max-iters", "2000"]
    _run([*shared, "--layers", "1,2", "--beta", "0,0.5"], tmp_path)
    other, _ = _run([*shared, "--layers", "2,3", "--beta", "0,0.9"], tmp_path)
    same, _ = _run([*shared, "--layers", "2,3", "--beta", "0,0.5"], tmp_path)
    assert "reused" not in other.meta
    assert same.meta["reused"]["lanes"] == 13 * 2 * 2  # k = 2: 13 rates × 2 seeds at each of 2 β


def test_other_arithmetic_gives_nothing_and_reuse_can_be_turned_off(tmp_path):
    """A file written by other code, JAX or device is not read (its float32 rounding may differ); and
    ``reuse=False`` runs every point."""
    _, first = _condition(tmp_path, (1.0, 4.0))
    config, _ = _condition(tmp_path / "elsewhere", (4.0, 16.0))
    env, settings = first.meta["environment"], points_settings(config)
    assert matching_files(tmp_path, "condition", settings, env, NOT_IN_DIGEST, tmp_path / "b.parquet") == [
        first.path]
    for field in SAME_ARITHMETIC:
        assert matching_files(tmp_path, "condition", settings, {**env, field: "other"}, NOT_IN_DIGEST,
                              tmp_path / "b.parquet") == [], field
    assert "reused" not in run_sweep(config, path=tmp_path / "off.parquet", reuse=False).meta
    assert run_sweep(config, path=tmp_path / "on.parquet").meta["reused"]["lanes"] == 2 * 1  # κ = 4: 2 seeds
