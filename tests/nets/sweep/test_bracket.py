"""``otod sweep net --lr-extend N``: the net kind's bracket stage (`otod.nets.sweep.kind.BRACKET`, run by the core's
`otod.core.bracket.bracketed`). On the 610-parameter MLP (digits, D = 256, width 8) to training loss 0.5, SGD's best
step is about 0.37 at B = 16 and 0.6 at B = 64 (a 0.05–1 grid: 57/68 steps at 0.37 against 66/112 at 0.61 for
B = 16), so a --lr-grid of 0.6,1 puts B = 16's choice on the grid's lower edge; three steps of its end ratio 0.6
(0.36, 0.216, 0.13) bring it inside the rates tried."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import otod.nets  # noqa: F401  (registers the net sweep)
from otod.cli import main
from otod.core.api import INTERIOR, LIMIT
from otod.core.results import load
from otod.nets.sweep.report import net_analysis

jax = pytest.importorskip("jax")

ARGS = ["sweep", "net", "--batch", "16,64", "--width", "8", "--examples", "256", "--seeds", "3", "--lr-grid", "0.6,1",
        "--target", "0.5", "--max-iters", "400", "--no-plot", "--no-predict"]


def _run(out, *extra):
    result = CliRunner().invoke(main, [*ARGS, "--out", str(out), *extra])
    assert result.exit_code == 0, result.output
    return result.output, load(next(out.glob("net-*.parquet")))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The sweep as given (no --lr-extend) and bracketed (--lr-extend 3), each in a folder of its own."""
    plain, extended = tmp_path_factory.mktemp("plain"), tmp_path_factory.mktemp("extended")
    return {"plain": (plain, *_run(plain)), "extended": (extended, *_run(extended, "--lr-extend", "3"))}


def _chosen(results):
    summary = net_analysis(results).groups[0].summary
    return dict(zip(summary["value"], zip(summary["rate"], summary["lr_place"])))


def test_without_lr_extend_the_grid_is_tried_as_given(runs):
    """The default adds no lanes: 2 batches × 2 rates × 3 seeds records, no ``bracket`` in the meta, B = 16's
    choice on the grid's lower edge, 0.6, and the report's warning says so."""
    folder, output, results = runs["plain"]
    assert len(results.records) == 2 * 2 * 3
    assert "bracket" not in results.meta
    assert _chosen(results)[16.0][0] == pytest.approx(0.6)
    assert "widen --lr-grid" in output and "lanes ran at rates beyond" not in output
    _, again = _run(folder)  # read back: still nothing added
    assert len(again.records) == 12 and "bracket" not in again.meta


def test_lr_extend_brings_the_choice_below_the_grid_inside_the_rates_tried(runs):
    """With --lr-extend 3 the first 12 records are the plain run's, byte for byte; the lanes added run at the
    ladder below the grid's end (0.6·0.6^k: 0.36, then 0.216); every chosen rate is interior or at the stability
    limit, B = 16's below the grid (0.36), and the report's place line says so. Read back, nothing runs again."""
    _, _, plain = runs["plain"]
    folder, output, results = runs["extended"]
    said = results.meta["bracket"]
    assert said["planned_records"] == 12 and said["lr_steps"] == 3
    assert results.records[:12] == plain.records
    added = {round(r["lr_multiplier"], 12) for r in results.records[12:]}
    assert added and added <= {0.36, 0.216, 0.1296}
    assert len(results.records) == 12 + said["lanes"]
    chosen = _chosen(results)
    assert all(place in (INTERIOR, LIMIT) for _, place in chosen.values())
    assert chosen[16.0][0] == pytest.approx(0.36)
    assert f"lies inside the rates tried at 2 of 2 points; {said['lanes']} lanes ran at rates beyond --lr-grid " \
           "(--lr-extend 3" in output
    assert "widen --lr-grid" not in output
    _, again = _run(folder, "--lr-extend", "3")
    assert len(again.records) == len(results.records) and again.meta["bracket"]["lanes"] == said["lanes"]


@pytest.mark.parametrize("args, says", [
    (["--lr", "0.1", "--lr-extend", "3"], "only a rate tuned over a grid is bracketed"),
    (["--lr-extend", "3", "--branch-at", "0,10"], "--branch-at and --batch-schedule"),
    (["--lr-extend", "-1"], "whole number of steps"),
])
def test_lr_extend_bad_input_is_one_line_and_exit_2(args, says, tmp_path):
    result = CliRunner().invoke(main, ["sweep", "net", *args, "--out", str(tmp_path)])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and says in lines[0], result.output


@pytest.mark.slow  # about 60 s on 2 cores: the reference runs of a 2 × 2 grid and its bracket
def test_a_bracketed_grid_keeps_each_cells_held_out_target_and_runs_no_new_reference(tmp_path, monkeypatch):
    """``--regime finite`` on a 2 × 2 (D, width) grid with --lr-extend 2: the reference runs are made once (when the
    config is built; the bracket's sub-sweeps carry its table), and every lane the bracket adds stops at its cell's
    held-out target, the same number as the grid's own lanes of that cell."""
    from otod.nets.model import reference

    calls = []
    table = reference.reference_table
    monkeypatch.setattr(reference, "reference_table", lambda *a, **k: calls.append(1) or table(*a, **k))
    args = ["sweep", "net", "--data", "teacher", "--regime", "finite", "--examples", "128,256", "--width", "4,8",
            "--batch", "8,16", "--seeds", "2", "--lr-grid", "0.3,1", "--max-iters", "300", "--no-plot",
            "--lr-extend", "2", "--out", str(tmp_path)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    results = load(next(tmp_path.glob("net-*.parquet")))
    planned = results.meta["bracket"]["planned_records"]
    assert calls == [1] and planned == 2 * 2 * 2 * 2 * 2 and len(results.records) > planned
    target = {}
    for r in results.records[:planned]:
        target.setdefault((r["examples"], r["width"]), set()).add(r["held_out_target"])
    assert all(len(values) == 1 for values in target.values())
    for r in results.records[planned:]:
        assert {r["held_out_target"]} == target[r["examples"], r["width"]]
