"""Issue 17 for the noise commands (`otod sweep noise`, `otod sweep params`, `otod noise-scale`) and the cost
commands (`otod flops`, `otod profile`): bad input ends in one line on stderr, ``otod: error: ...`` naming the
option, and exit code 2, within seconds (sizes are estimated before anything is allocated or compiled): never a
traceback, an out-of-memory kill or a hang; and no option is silently ignored.

Every case runs in a real process, as a user meets it (the table's cases share one, `run_otod_cases`); each would fail on the code before the fix (a traceback,
a timeout, or exit code 0)."""

import json

import pytest

from tests.conftest import run_otod as otod
from tests.conftest import is_one_line_refusal
from tests.conftest import run_otod_cases as otod_cases

#: Bad input must be refused this cheaply, in CPU seconds of the refusing process (not wall time, which other jobs on
#: the machine stretch): before any sweep, compile or large allocation starts.
QUICK_CPU_SECONDS = 10


BAD_INPUT = [
    # tracebacks before: MemoryError, OverflowError
    (["noise-scale", "--steps", "1e9"], "--steps 1000000000"),
    (["noise-scale", "--dim", "1e9"], "--dim 1000000000"),
    (["noise-scale", "--seed", "1e30"], "--seed 1e30"),
    (["noise-scale", "--lr", "1e300"], "--lr 1e+300: above float32's largest number"),
    (["sweep", "noise", "--lr", "1e300"], "--lr 1e300: above float32's largest number"),
    (["sweep", "noise", "--out", "/proc/otod"], "--out /proc/otod: cannot write in /proc"),  # was: after the work
    (["noise-scale", "--seed", "2147483648"], "--seed 2147483648"),
    (["sweep", "noise", "--mode", "simulate", "--seed", "2147483648"], "--seed 2147483648"),
    (["sweep", "noise", "--mode", "simulate", "--seed", "1e30"], "--seed 1e30"),
    (["sweep", "params", "--seed", "2147483648"], "--seed 2147483648"),
    # hangs and out-of-memory kills before: now estimated first
    (["sweep", "noise", "--dim", "1e9"], "GiB of memory"),
    (["sweep", "noise", "--mode", "simulate", "--dim", "1e9"], "--dim 1e+09 --seeds 8"),
    (["sweep", "params", "--dim", "1e9", "--mode", "exact"], "--dim 1e+09"),
    (["sweep", "params", "--dim", "1e9"], "--dim 1e+09"),
    (["sweep", "noise", "--beta", "0..0.99:1000"], "pass --yes"),
    (["sweep", "noise", "--mode", "simulate", "--dim", "3000", "--batch", "1..1024:30:log", "--seeds", "64"],
     "pass --yes"),
    (["sweep", "noise", "--mode", "simulate", "--seeds", "1e9"], "--seeds 1000000000"),
    (["sweep", "noise", "--problem", "regression", "--examples", "1e9"], "--examples 1e+09"),
    (["flops", "--model", "deeperconvnet", "--depth", "100000"], "--depth 100000"),
    (["profile", "--repeats", "1e9"], "--repeats 1000000000"),
    (["flops", "--image", "1e9"], "--image"),  # XLA aborted the process (C++ terminate) before
    (["flops", "--model", "transformer", "--tokens", "1e9"], "--tokens"),
    (["flops", "--model", "transformer", "--blocks", "100000"], "--blocks 100000"),
    # silent acceptance before: each option ignored or contradicted
    (["sweep", "noise", "--seeds", "4"], "--mode exact"),
    (["sweep", "noise", "--seed", "3"], "--seed 3"),
    (["sweep", "noise", "--x64"], "--x64"),
    (["sweep", "noise", "--chunk-seconds", "2"], "--chunk-seconds 2"),
    (["sweep", "params", "--mode", "exact", "--seeds", "2"], "--seeds 2"),
    (["sweep", "noise", "--problem", "rosenbrock", "--dim", "5"], "--dim 5"),
    (["sweep", "noise", "--mode", "simulate", "--batch", "1.5"], "--batch 1.5"),
    (["sweep", "noise", "--mode", "simulate", "--dim", "10.5"], "--dim 10.5"),
    (["sweep", "noise", "--mode", "simulate", "--x64", "--x32"], "--x64 --x32"),
    (["sweep", "params", "--x64", "--x32"], "--x64 --x32"),
    (["sweep", "noise", "--lr", "0.1", "--lr-grid", "1e-3..1:7:log"], "--lr-grid"),
    (["sweep", "params", "--lr", "theory", "--lr-grid", "1e-3..1:7:log"], "--lr-grid"),
    (["sweep", "noise", "--out", "x.csv"], "--out x.csv"),
    (["sweep", "params", "--out", "x.csv"], "--out x.csv"),
    (["sweep", "params", "--out", "x.json"], "--out x.json"),  # two batch rules, one file
    (["flops", "--out", "x.csv"], "--out x.csv"),
    (["profile", "--out", "x.csv"], "--out x.csv"),
    (["sweep", "noise", "--pdf", "--no-plot"], "--pdf --no-plot"),
    (["sweep", "noise", "--noise", "1"], "--noise 1"),
    (["sweep", "noise", "--problem", "isotropic", "--noise-spectrum", "identity"], "--noise-spectrum identity"),
    (["sweep", "noise", "--examples", "100"], "--examples 100"),
    (["sweep", "noise", "--method", "sgd", "--beta", "0.5"], "--beta 0.5"),
    (["sweep", "params", "--beta", "0.5"], "--beta 0.5"),
    (["sweep", "noise", "--mode", "simulate", "--seeds", "2.5"], "--seeds 2.5"),
    (["sweep", "noise", "--mode", "simulate", "--chunk-seconds", "0"], "--chunk-seconds 0"),
    (["flops", "--model", "convnet", "--depth", "5"], "--depth"),
    (["flops", "--widths", "784,10"], "--widths"),
    (["flops", "--model", "mlp", "--widths", "7,,x"], "--widths 7,,x"),
    (["flops", "--model", "transformer", "--heads", "0"], "--heads 0"),
    (["flops", "--workers", "-1"], "--workers -1"),
    (["flops", "--batch", "1.5"], "--batch 1.5"),
    (["profile", "--repeats", "1.5"], "--repeats 1.5"),
    (["profile", "--warmup", "-1"], "--warmup -1"),
    (["profile", "--optimizer", "lion"], "--optimizer lion"),
    # the exact path runs in one process: --distributed is refused before any process joins
    (["sweep", "noise", "--distributed"], "--distributed"),
    (["sweep", "params", "--problem", "nqm", "--distributed"], "--distributed"),
    (["sweep", "noise", "--share", "0/2"], "--share: the exact path"),
    # the noise commands' value checks (once an in-process table in tests/noise/test_cli.py)
    (["sweep", "noise", "--batch", "0..4"], "must be ≥ 1"),
    (["sweep", "noise", "--problem", "regression", "--examples", "64", "--batch", "1..128:8:log"],
     "larger than the data set"),
    (["sweep", "noise", "--method", "precond:1.5"], "must lie in [0, 1]"),
    (["sweep", "noise", "--method", "precond:-0.1"], "must lie in [0, 1]"),
    (["sweep", "noise", "--target", "0"], "positive number"),
    (["sweep", "noise", "--target", "-1"], "positive number"),
    (["sweep", "noise", "--target", "100"], "below the initial loss"),
    (["sweep", "noise", "--problem", "isotropic", "--noise", "-1"], "must be ≥ 0"),
    (["sweep", "noise", "--problem", "rosenbrock", "--noise", "-0.5"], "must be ≥ 0"),
    (["sweep", "noise", "--mode", "simulate", "--schedule", "linear"], "unknown schedule"),
    (["sweep", "noise", "--mode", "exact", "--problem", "rosenbrock"], "no exact recursion"),
    (["sweep", "noise", "--mode", "exact", "--problem", "regression"], "no exact recursion"),
    (["sweep", "noise", "--method", "adam", "--mode", "exact"], "no exact recursion for adam"),
    (["sweep", "params", "--batch-rule", "fixed:0"], "whole number ≥ 1"),
    (["noise-scale", "--pairs", "8:4"], "B_small < B_big"),
    # the tuned axes: β (heavy-ball's momentum, ema's decay) in [0, 1), the lr grid positive and not empty
    (["sweep", "noise", "--beta", "1"], "β values must be < 1 (got 1): at β = 1 the momentum or average never "
                                        "forgets its start"),
    (["sweep", "noise", "--beta", "1.5"], "β values must be < 1 (got 1.5)"),
    (["sweep", "noise", "--beta", "-0.1"], "β values must be ≥ 0 (got -0.1)"),
    (["sweep", "noise", "--mode", "simulate", "--beta", "0.5,1"], "β values must be < 1 (got 1)"),
    (["sweep", "params", "--method", "heavy-ball", "--beta", "-1"], "β values must be ≥ 0 (got -1)"),
    (["sweep", "noise", "--lr-grid", "0..1:5"], "--lr-grid: multipliers must be positive"),
    (["sweep", "noise", "--lr-grid", "-1,1"], "--lr-grid: multipliers must be positive"),
    (["sweep", "noise", "--mode", "simulate", "--lr-grid", "0"], "--lr-grid: multipliers must be positive"),
    (["sweep", "params", "--lr-grid", "-0.5"], "--lr-grid: multipliers must be positive"),
    (["sweep", "noise", "--lr-grid", ""], "--lr-grid: empty"),
    (["sweep", "noise", "--lr-grid", "1..0.5:3"], "range start 1 exceeds its end 0.5"),
    # otod nqm-schedule (issue 37): every option's bad values, and the search's --budget beside --schedule
    (["nqm-schedule", "--dim", "0"], "--dim 0"),
    (["nqm-schedule", "--dim", "1e9"], "--dim 1e9"),
    (["nqm-schedule", "--target", "0"], "--target 0"),
    (["nqm-schedule", "--target", "100"], "initial loss"),
    (["nqm-schedule", "--noise-spectrum", "cubic"], "--noise-spectrum cubic"),
    (["nqm-schedule", "--method", "adam"], "--method adam"),
    (["nqm-schedule", "--method", "precond:2"], "--method precond:2"),
    (["nqm-schedule", "--budget", "0.5"], "--budget 0.5"),
    (["nqm-schedule", "--budget", "x"], "--budget x"),
    (["nqm-schedule", "--max-iters", "0"], "--max-iters 0"),
    (["nqm-schedule", "--dim", "100", "--max-iters", "1"], "no constant batch reaches the target"),
    (["nqm-schedule", "--schedule", "64:1.5:x"], "--schedule 64:1.5:x"),
    (["nqm-schedule", "--schedule", "0.5:1.0"], "batch 0.5"),
    (["nqm-schedule", "--schedule", "64:1.0:10,128:0"], "learning rate 0"),
    (["nqm-schedule", "--schedule", "doubling:64:16:100:1"], "first batch"),
    (["nqm-schedule", "--schedule", "64:1.0", "--budget", "3"], "--budget"),
]


def test_bad_input_is_one_quick_line_and_exit_code_2(tmp_path):
    """Every case of `BAD_INPUT`, each in a fresh folder (`run_otod_cases`: one process calls the command line once
    per case); every case that fails is named, with its stderr."""
    folders = [tmp_path / f"case{i}" for i, _ in enumerate(BAD_INPUT)]
    for folder in folders:
        folder.mkdir()
    runs = otod_cases([(args, folder) for (args, _), folder in zip(BAD_INPUT, folders)], tmp_path / "captures")
    failed = []
    for (args, fragment), folder, (result, cpu) in zip(BAD_INPUT, folders, runs):
        # no file is written (the core's run_sweep makes the --out folder, empty, before its own estimate)
        written = [str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()]
        if not (is_one_line_refusal(result, cpu, fragment, QUICK_CPU_SECONDS) and not written):
            failed.append(f"otod {' '.join(args)}: exit {result.returncode} in {cpu:.1f} CPU s, expected one line "
                          f"with {fragment!r}; wrote {written}; stdout {result.stdout[-200:]!r}; "
                          f"stderr: {result.stderr[-600:]}")
    assert not failed, f"{len(failed)} of {len(BAD_INPUT)} cases:\n" + "\n".join(failed)


@pytest.mark.parametrize("mode", ["exact", pytest.param("simulate", marks=pytest.mark.slow)])  # simulate: 8 s
def test_a_huge_step_diverges_quietly_and_is_recorded_as_diverged(mode, tmp_path):
    """--lr 1e38 (below float32's largest, so accepted) overflows NumPy: no warning text reaches stderr, and every lane
    is recorded as diverged (1e300, above float32's range, is refused: `BAD_INPUT`)."""
    args = ["sweep", "noise", "--mode", mode, "--dim", "10", "--batch", "1,2", "--method", "sgd,heavy-ball",
            "--lr", "1e38", "--target", "0.05", "--json", "--out", "r.json"]
    result, _ = otod(args + (["--seeds", "2"] if mode == "simulate" else []), tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Warning" not in result.stderr and "Traceback" not in result.stderr, result.stderr
    records = json.loads(result.stdout)
    assert records and {r["status"] for r in records} == {"diverged"}
    assert (tmp_path / "r.png").exists()  # the figure says no lane reached the target instead of failing


COMMON = ["--seeds", "--seed", "--x64", "--x32", "--out", "--json", "--no-plot", "--pdf", "--yes",
          "--chunk-seconds", "--distributed", "--coordinator", "--num-processes", "--process-id", "--share"]


SWEEPS = ["condition", "depth", "toy", "noise", "params", "net"]


def test_every_registered_sweep_is_checked_here():
    from otod.cli import main

    assert sorted(main.commands["sweep"].commands) == sorted(SWEEPS)


@pytest.mark.parametrize("command", SWEEPS)
def test_every_sweep_offers_the_common_options_declared_once(command):
    """One surface: every sweep's --help lists the options `common_sweep_options` declares, each with the one
    help text it has there (declared once, not once per command); --seeds' states the sweep's own default (the
    net sweep's 5: tests/nets/sweep/test_sweep.py), so its number is not compared here."""
    import re

    import click
    from click.testing import CliRunner

    from otod.cli import main
    from otod.core.cli import COMMON_SWEEP_OPTIONS

    result = CliRunner().invoke(main, ["sweep", command, "--help"])
    assert result.exit_code == 0
    missing = [o for o in COMMON if f"  {o} " not in result.output and f"  {o}\n" not in result.output]
    assert not missing, missing
    def plain(name, text):
        return re.sub(r"Default \d+\.", "Default N.", text) if name == "seeds" and text else text

    declared = {o.name: plain(o.name, o.help) for o in COMMON_SWEEP_OPTIONS}
    params = {p.name: plain(p.name, p.help) for p in main.commands["sweep"].commands[command].params
              if isinstance(p, click.Option)}
    assert {name: params.get(name) for name in declared} == declared


@pytest.mark.parametrize("path", [["sweep", name] for name in SWEEPS] + [["noise-scale"], ["nqm-schedule"], ["flops"], ["profile"],
                                                                      ["fit"], ["plot"], ["figures"], ["convert"],
                                                                      ["merge"]])
def test_every_option_has_help_with_an_example(path):
    """Each option says what it does (text before the example) and gives an example ("E.g. ...")."""
    import click

    from otod.cli import main

    command = main
    for name in path:
        command = command.commands[name]
    bare = [p.name for p in command.params if isinstance(p, click.Option)
            and ("E.g." not in (p.help or "") or not (p.help or "").split("E.g.")[0].strip())]
    assert not bare, bare


def test_params_writes_the_named_results_file_and_a_figure(tmp_path):
    result, _ = otod(["sweep", "params", "--mode", "exact", "--dim", "10..100:3:log", "--batch-rule", "fixed:4",
                      "--out", "f.json", "--pdf"], tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads((tmp_path / "f.json").read_text())["records"]
    assert (tmp_path / "f.png").stat().st_size > 0 and (tmp_path / "f.pdf").stat().st_size > 0
    assert "figure:  f.png" in result.stdout


@pytest.mark.slow  # 4.9 s; the named-file case above stays in the fast suite
def test_params_in_a_folder_writes_a_file_per_rule_and_one_figure(tmp_path):
    result, _ = otod(["sweep", "params", "--mode", "exact", "--dim", "10..100:3:log", "--out", "runs", "--json"],
                     tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert len(list((tmp_path / "runs").glob("params-exact-*.parquet"))) == 2
    assert len(list((tmp_path / "runs").glob("*.png"))) == 1
    records = json.loads(result.stdout)
    assert {r.get("batch_ratio") is None for r in records} == {True, False}  # both rules' records


@pytest.mark.slow  # tests/core/test_sweep.py resumes under another --chunk-seconds with identical records
def test_chunk_seconds_does_not_change_the_records(tmp_path):
    """--chunk-seconds plans the chunks (what Ctrl-C may lose); the records are the same."""
    base = ["sweep", "noise", "--mode", "simulate", "--dim", "20", "--batch", "1,4,16", "--method", "sgd,heavy-ball",
            "--seeds", "3", "--lr-grid", "0.1..1:4:log", "--target", "0.1", "--no-plot", "--json"]
    outputs = []
    for seconds in ("5", "0.001"):
        result, _ = otod(base + ["--chunk-seconds", seconds, "--out", f"c{seconds}.json"], tmp_path, timeout=120)
        assert result.returncode == 0, result.stderr[-2000:]
        outputs.append(json.loads(result.stdout))
    # 3 batches × 4 rates × 3 seeds for sgd (at β = 0 only) and for heavy-ball at each of its 7 default β
    assert outputs[0] == outputs[1] and len(outputs[0]) == 3 * 4 * 3 * (1 + 7)
