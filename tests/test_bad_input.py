"""Issue 17 for ``otod sweep condition|depth|toy``, ``otod fit``, ``otod plot`` and ``otod figures``: bad input gets
one line on stderr (``otod: error: ...`` naming the option), exit code 2, quickly, and no traceback, no warning
text, no file or folder left behind; and what is meant (the defaults, the boundary values) still runs.

Every case runs in a real process, as a user meets it (the table's cases share one, `run_otod_cases`). The refusals happen before JAX is imported where they can
(option values, ignored options), so the table stays fast; the estimate refusals import it to read free memory.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_otod as run
from tests.conftest import is_one_line_refusal
from tests.conftest import run_otod_cases as run_cases

#: A refusal must come well before any sweep could run: the CPU seconds the refusing process may spend (CPU time,
#: which a machine busy with other jobs does not stretch as it stretches wall time).
CPU_SECONDS = 10.0

COND = ["sweep", "condition", "--k", "1..10:3", "--seeds", "2", "--no-plot", "--out", "out"]
DEPTH = ["sweep", "depth", "--depth", "1..3", "--init", "identity", "--seeds", "2", "--no-plot", "--out", "out"]
TOY = ["sweep", "toy", "--layers", "1..2", "--seeds", "2", "--no-plot", "--out", "out"]


@pytest.fixture(scope="module")
def depth_file(tmp_path_factory) -> Path:
    """A small depth results file (for the fit and plot cases that must read a real file). It is the cases' input,
    not a case, so the sweep runs in this process (`CliRunner`), sparing a process's start."""
    from click.testing import CliRunner

    from otod.cli import main

    folder = tmp_path_factory.mktemp("depth")
    result = CliRunner().invoke(main, ["sweep", "depth", "--depth", "1..2", "--init", "identity", "--seeds", "2",
                                       "--lr", "theory", "--no-plot", "--out", str(folder / "d.json")])
    assert result.exit_code == 0, result.output
    return folder / "d.json"


@pytest.fixture(scope="module")
def net_file(tmp_path_factory) -> Path:
    """A net results file whose one lane keeps its loss trace, from a run to target 0.1 (written directly: a sweep
    would cost a compile), for the cases that re-read it at another target."""
    import otod.nets  # noqa: F401 (registers the net sweep)
    from otod.core import results as results_io
    from otod.nets.sweep.options import net_config

    config = net_config(batch="16", seeds=1, lr="0.3", max_iters="4", target="0.1")
    meta = {"kind": "sweep", "sweep": "net", "digest": config.digest(), "config": config.to_dict(), "axes": [],
            "environment": results_io.environment(), "trace_iterations": [0, 1, 2, 3, 4]}
    record = {"sweep": "net", "batch": 16.0, "beta": 0.0, "method": "sgd", "seed": 0, "lr_multiplier": None,
              "learning_rate": 0.3, "iterations": 4, "status": "censored", "final_loss": 1.5, "hits": [None],
              "loss_trace": [2.3, 2.0, 1.8, 1.6, 1.5]}
    return results_io.save(tmp_path_factory.mktemp("net") / "n.parquet", meta, [record])


CASES = [
    # -- condition: values -----------------------------------------------------------------------------------------
    (COND + ["--seed", "1e30"], "--seed 1e30"),
    (COND + ["--seed", "2147483648"], "0 to 2147483647"),
    (COND + ["--seed", "-1"], "--seed -1"),
    (COND + ["--tol", "1e-320"], "--tol 1e-320"),
    (COND + ["--x32", "--tol", "1e-40"], "float32's smallest normal"),
    (COND + ["--tol", "0"], "--tol 0"),
    (COND + ["--tol", "2"], "--tol 2"),
    (COND + ["--ladder", "1e-300"], "--ladder 1e-300"),
    (COND + ["--ladder", "2"], "--ladder 2"),
    (COND + ["--check-every", "1e9"], "--check-every 1000000000"),
    (COND + ["--check-every", "0"], "--check-every 0"),
    (COND + ["--max-iters", "100", "--check-every", "100"], "--check-every 100"),
    (COND + ["--method", "gd,kfac", "--problem", "kronecker", "--damping", "-1"], "--damping -1"),
    (COND + ["--k", "0..5"], "--k"),
    (COND + ["--k", "5..1"], "--k 5..1"),
    (COND + ["--k", "abc"], "--k abc"),
    (COND + ["--k", "1..1e30:3:log"], "--k"),
    (COND + ["--dim", "0"], "--dim"),
    (COND + ["--dim", "2.5"], "--dim"),
    (COND + ["--method", "sgdx"], "--method sgdx"),
    (COND + ["--method", "kfac"], "--problem kronecker"),
    (COND + ["--seeds", "0"], "--seeds 0"),
    (COND + ["--lr", "-1"], "--lr -1"),
    (COND + ["--lr", "1e300"], "--lr 1e300: above float32's largest number 3.4e+38"),
    (DEPTH + ["--lr", "1e39"], "--lr 1e39: above float32's largest number"),
    (COND + ["--spectrum", "flat"], "'--spectrum'"),
    (COND + ["--max-iters", "99999999999"], "--max-iters"),
    (["sweep", "condition", "--k", "1..1000000", "--out", "out"], "--k values"),
    (["sweep", "condition", "--k", "2", "--out", "/proc/otod"], "--out"),
    # -- condition: ignored or contradictory options ---------------------------------------------------------------
    (COND + ["--damping", "-1"], "--damping"),
    (COND + ["--damping", "1e-3"], "--damping"),
    (COND + ["--perturbation", "0.1"], "--perturbation"),
    (COND + ["--shape", "8x12"], "--shape"),
    (COND + ["--problem", "kronecker", "--dim", "64"], "--dim"),
    (COND + ["--problem", "kronecker", "--basis", "rotated"], "--basis"),
    (COND + ["--lr", "0.1", "--lr-grid", "0.5..2:4:log"], "--lr-grid"),
    (COND + ["--x64", "--x32"], "--x64 --x32"),
    (COND + ["--pdf"], "--pdf"),
    # -- condition: the estimate (imports JAX to read free memory) -------------------------------------------------
    (COND + ["--dim", "1e9"], "GiB of memory"),
    (COND + ["--problem", "kronecker", "--shape", "2000x2000"], "GiB of memory"),
    (["sweep", "condition", "--k", "1..1e8:60:log", "--seeds", "64", "--dim", "10000", "--method", "gd", "--out",
      "out"], "pass --yes"),
    # -- depth and toy ----------------------------------------------------------------------------------------------
    (DEPTH + ["--seed", "1e30"], "--seed 1e30"),
    (DEPTH + ["--tol", "1e-320"], "--tol 1e-320"),
    (DEPTH + ["--ladder", "1e-30"], "--ladder 1e-30"),
    (DEPTH + ["--check-every", "1e9"], "--check-every 1000000000"),
    (DEPTH + ["--beta", "0.9"], "--beta"),
    (DEPTH + ["--damping", "1e-2"], "--damping"),
    (DEPTH + ["--method", "kfac", "--damping", "-1"], "--damping -1"),
    (DEPTH + ["--init-scale", "0.2"], "--init-scale"),
    (DEPTH + ["--target-value", "1"], "--target-value"),
    (DEPTH + ["--problem", "chain", "--init", "gaussian", "--target-kappa", "10"], "--target-kappa"),
    (DEPTH + ["--problem", "chain", "--init", "gaussian", "--input-kappa", "10"], "--input-kappa"),
    (DEPTH + ["--lr", "0.1", "--lr-grid", "1,2"], "--lr-grid"),
    # the rate's bracket (otod.core.bracket): a whole number of steps, 0 to 64, and only where a rate is tuned
    (COND + ["--lr", "tuned", "--lr-extend", "-1"], "--lr-extend -1"),
    (COND + ["--lr", "tuned", "--lr-extend", "1.5"], "--lr-extend 1.5"),
    (COND + ["--lr", "tuned", "--lr-extend", "65"], "--lr-extend 65"),
    (COND + ["--lr", "tuned", "--lr-extend", "many"], "--lr-extend many"),
    (COND + ["--lr-extend", "4"], "--lr-extend 4: only a rate tuned"),
    (DEPTH + ["--lr-extend", "nan"], "--lr-extend nan"),
    (DEPTH + ["--lr", "theory", "--lr-extend", "2"], "--lr-extend 2: only a rate tuned"),
    (DEPTH + ["--x64", "--x32"], "--x64 --x32"),
    (DEPTH + ["--pdf"], "--pdf"),
    (DEPTH + ["--depth", "0..3"], "--depth"),
    (DEPTH + ["--width", "0"], "--width"),
    (DEPTH + ["--width", "100000"], "--width"),
    (DEPTH + ["--depth", "1e6"], "--depth"),
    (DEPTH + ["--init", "he"], "--init he"),
    (DEPTH + ["--init", "small", "--init-scale", "0"], "--init-scale"),
    (DEPTH + ["--target-kappa", "0.5"], "--target-kappa"),
    (DEPTH + ["--target-kappa", "1e300"], "--target-kappa 1e300"),
    (DEPTH + ["--input-kappa", "1e13"], "--input-kappa 1e13"),
    (DEPTH + ["--problem", "chain", "--init", "gaussian", "--target-value", "1e300"], "--target-value 1e300"),
    (DEPTH + ["--problem", "residual"], "--init"),
    (DEPTH + ["--problem", "mlp"], "--problem mlp"),
    (DEPTH + ["--method", "heavy-ball", "--beta", "1"], "--beta"),
    (["sweep", "depth", "--depth", "1000", "--width", "4096", "--init", "identity", "--out", "out"], "--width"),
    (TOY + ["--seed", "2147483648"], "--seed"),
    (TOY + ["--beta", "0.9"], "--beta"),
    (TOY + ["--method", "kfac"], "--method kfac"),
    (TOY + ["--check-every", "1e9"], "--check-every"),
    (TOY + ["--layers", "0"], "--layers"),
    (["sweep", "toy", "--layers", "1..64", "--seeds", "4096", "--out", "out"], "--layers"),
    # -- fit, plot, figures -----------------------------------------------------------------------------------------
    (["fit", "missing.json"], "no such file"),
    (["fit", "corrupt.json"], "not readable as JSON"),
    (["fit", "folder"], "a folder"),
    (["fit", "corrupt.json", "--tol", "2"], "--tol 2"),
    (["fit", "corrupt.json", "--tol", "0"], "--tol 0"),
    (["fit", "corrupt.json", "--tol", "-1e-3"], "--tol -0.001"),
    (["fit", "NET_FILE", "--target", "0.05"], "--target 0.05: below this run's target 0.1"),
    (["fit", "NET_FILE", "--target", "0"], "--target 0: a training-loss target must be a positive number"),
    (["fit", "NET_FILE", "--target", "nan"], "--target nan"),
    (["fit", "NET_FILE", "--target", "2.3"], "--target 2.3: at or above the start loss 2.3 of a lane of this run"),
    (["plot", "NET_FILE", "--target", "5"], "--target 5: at or above the start loss 2.3"),
    (["fit", "NET_FILE", "--tol", "1e-3", "--target", "0.2"], "give one threshold"),
    (["fit", "DEPTH_FILE", "--target", "0.2"], "0.2: not recorded in this run"),  # no traces: as before
    (["plot", "NET_FILE", "--target", "0.05"], "--target 0.05: below this run's target 0.1"),
    (["plot", "NET_FILE", "--target", "-1"], "--target -1"),
    (["plot", "corrupt.json"], "not readable as JSON"),
    (["plot", "DEPTH_FILE", "--x-axis", "flops"], "--x-axis flops"),
    (["plot", "DEPTH_FILE", "--out", "/proc/x"], "--out /proc/x"),
    (["figures", "--out", "/proc/x", "condition/zigzag"], "--out /proc/x"),
]


def test_bad_input_is_one_line_exit_2_and_quick(tmp_path, depth_file, net_file):
    """Every case of `CASES`, each in a fresh folder holding a corrupt JSON file and a folder (`run_otod_cases`:
    one process calls the command line once per case); every case that fails is named, with its stderr."""
    folders = []
    for i, _ in enumerate(CASES):
        folder = tmp_path / f"case{i}"
        folder.mkdir()
        (folder / "corrupt.json").write_text("{ this is not json")
        (folder / "folder").mkdir()
        folders.append(folder)
    files = {"DEPTH_FILE": str(depth_file), "NET_FILE": str(net_file)}
    runs = run_cases([([files.get(a, a) for a in args], folder)
                      for (args, _), folder in zip(CASES, folders)], tmp_path / "captures")
    failed = []
    for (args, fragment), folder, (proc, cpu) in zip(CASES, folders, runs):
        # refused before the output folder (or a journal in it) is made
        if not (is_one_line_refusal(proc, cpu, fragment, CPU_SECONDS, stdout_empty=False)
                and not (folder / "out").exists()):
            failed.append(f"otod {' '.join(args)}: exit {proc.returncode} in {cpu:.1f} CPU s, expected one line "
                          f"with {fragment!r}; out made: {(folder / 'out').exists()}; stderr: {proc.stderr[-600:]}")
    assert not failed, f"{len(failed)} of {len(CASES)} cases:\n" + "\n".join(failed)


@pytest.mark.parametrize("base", [COND, DEPTH, TOY], ids=["condition", "depth", "toy"])
def test_an_out_the_command_does_not_write_is_refused_and_not_created(tmp_path, base):
    args = base[:-1] + ["x.csv"]
    proc, _ = run(args, tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith("otod: error: --out x.csv")
    assert not (tmp_path / "x.csv").exists()


def test_a_seed_out_of_range_leaves_no_journal(tmp_path):
    proc, _ = run(COND[:-1] + [str(tmp_path / "res"), "--seed", "1e30"], tmp_path)
    assert proc.returncode == 2 and "--seed" in proc.stderr
    assert not list(tmp_path.rglob("*.partial")) and not (tmp_path / "res").exists()


def test_toy_help_lists_only_the_methods_it_accepts(tmp_path):
    proc, _ = run(["sweep", "toy", "--help"], tmp_path)
    assert proc.returncode == 0 and "heavy-ball" in proc.stdout and "kfac" not in proc.stdout


# -- what is meant still runs ------------------------------------------------------------------------------------


#: The sweeps that must run, by name: each a real otod command line (all three in one process, `meant_runs`).
MEANT = {
    # defaults left alone are never refused as ignored (damping, shape, lr-grid…), and the largest seed runs
    "defaults": COND[:-1] + ["a", "--seed", "2147483647", "--x64"],
    # every option refused elsewhere as ignored, given where it means something
    "accepted": COND[:-1] + ["k.json", "--method", "kfac", "--problem", "kronecker", "--shape", "4x4",
                             "--perturbation", "0.1", "--damping", "1e-3", "--lr", "tuned", "--lr-grid", "0.5,1",
                             "--ladder", "1e-8", "--check-every", "2", "--x32"],
    # a learning rate that overflows the iterates is a diverged record, not warning text (one above float32's
    # range, 1e300, is refused: its record's rate was null)
    "overflow": COND[:-1] + ["lr.json", "--lr", "1e30", "--json"],
}


@pytest.fixture(scope="module")
def meant_runs(tmp_path_factory) -> dict:
    """`MEANT`'s command lines run in one real process (`run_otod_cases`: each case calls the command line afresh
    in its own folder, its stdout and stderr caught at the file descriptors), which saves two interpreters' and JAX
    imports' 2-3 s each; by name: (the completed case, its folder)."""
    root = tmp_path_factory.mktemp("meant")
    folders = {name: root / name for name in MEANT}
    for folder in folders.values():
        folder.mkdir()
    runs = run_cases([(MEANT[name], folders[name]) for name in MEANT], root / "captures", timeout=600)
    return {name: (proc, folders[name]) for name, (proc, _) in zip(MEANT, runs, strict=True)}


def test_the_defaults_and_the_boundary_seed_run(meant_runs):
    """Defaults left alone are never refused as ignored (damping, shape, lr-grid…), and the largest seed runs."""
    proc, _ = meant_runs["defaults"]
    assert proc.returncode == 0, proc.stderr
    assert "results:" in proc.stdout and "Warning" not in proc.stderr


def test_every_refused_option_is_accepted_where_it_means_something(meant_runs):
    proc, folder = meant_runs["accepted"]
    assert proc.returncode == 0, proc.stderr
    assert (folder / "k.json").is_file()


def test_an_overflowing_learning_rate_is_recorded_as_diverged_without_warning_text(meant_runs):
    proc, _ = meant_runs["overflow"]
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stderr
    assert {r["status"] for r in json.loads(proc.stdout)} == {"diverged"}


def test_plot_of_a_depth_file_draws_iterations_without_warning_text(tmp_path, depth_file):
    proc, _ = run(["plot", str(depth_file), "--out", "figs"], tmp_path)
    assert proc.returncode == 0 and "Warning" not in proc.stderr
    assert sorted(p.name.split(".", 1)[1] for p in (tmp_path / "figs").iterdir()) == ["caption.txt", "png"]


def test_a_target_loss_on_a_sweep_stopped_at_a_relative_gap_is_refused():
    """``--target`` names a training loss: a condition sweep's file (stopped at a relative gap) is refused, --tol
    named instead."""
    from types import SimpleNamespace

    from otod.cli import _target_tol
    from otod.core.errors import OtodError

    from otod.condition.options import condition_sweep
    from otod.noise.options import noise_config

    relative = SimpleNamespace(meta={"kind": "sweep", "sweep": "condition",
                                     "config": condition_sweep((4.0, 9.0)).to_dict()})
    with pytest.raises(OtodError, match="stopped at a relative gap, not a training loss; use --tol"):
        _target_tol([("c.parquet", relative, None)], None, 0.2)
    curvature = SimpleNamespace(meta={"kind": "curvature", "config": {}})
    with pytest.raises(OtodError, match="holds curvature measurements, not a sweep with a target to re-read"):
        _target_tol([("k.parquet", curvature, None)], None, 0.2)
    stopped_at_a_loss = noise_config(batch="1,4", mode="simulate", problem="isotropic", dim="10", seeds=2)[0]
    loss = SimpleNamespace(meta={"kind": "sweep", "sweep": "noise", "config": stopped_at_a_loss.to_dict()})
    assert _target_tol([("n.parquet", loss, None)], None, 0.2) == 0.2 and _target_tol([], 1e-3, None) == 1e-3


def test_pure_option_checks():
    from otod.core.errors import OtodError
    from otod.core.options import SEED_MAX, ladder_rungs, precision, seed_value, tolerance

    assert precision(True, False) is True and precision(False, True) is False and precision(False, False) is None
    assert seed_value("0") == 0 and seed_value(str(SEED_MAX)) == SEED_MAX
    assert tolerance("1e-300", "--tol", "1e-6", True) == 1e-300
    assert ladder_rungs((1e-8, 1e-12), 1e-6, False) == (1e-8, 1e-12)
    for bad in (lambda: seed_value(str(SEED_MAX + 1)), lambda: tolerance("1e-300", "--tol", "1e-6", False),
                lambda: ladder_rungs((1e-13,), 1e-6, True), lambda: precision(True, True)):
        with pytest.raises(OtodError):
            bad()
