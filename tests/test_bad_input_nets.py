"""Issue 33 for the network commands (`otod sweep net`, `otod curvature`, `otod noise-scale --model`): bad input
ends in one line on stderr, ``otod: error: ...`` naming the option, and exit code 2, within seconds, with no file
written: never a traceback (NumPy's MemoryError at ``--width 1e9``), an out-of-memory kill (``--depth 1e9``), a
run of minutes (``curvature --steps 1e9``), or the default run in place of an empty value (``--batch ''``).

Every option of the three commands has at least one case (`test_every_option_has_a_case`); every case runs in a
real process, as a user meets it (`run_otod_cases`: one process calls the command line once per case)."""

from __future__ import annotations

import click
import pytest

from pathlib import Path

from tests.conftest import is_one_line_refusal, run_otod_cases

#: A refusal comes before any training, compile of a sweep or large allocation.
QUICK_CPU_SECONDS = 10
#: A case that names a user's model file runs that file's own code before it can be refused (the fixture imports
#: JAX and builds its data and model with 17 small compiled JAX calls: 1.2 CPU s with a warm compilation cache, and
#: its wall time 4-6 s on a quiet 2-core machine and 14 s with three more processes busy), so it gets more CPU time;
#: it still refuses before any sweep.
MODEL_FILE_CPU_SECONDS = 30

NET = ["sweep", "net", "--no-plot", "--out", "out"]
CURVATURE = ["curvature", "--out", "out"]
SCALE = ["noise-scale", "--model", "mlp", "--out", "out"]
MEMORY = "GiB of memory"
#: The model contract's fixtures (`tests/fixtures/models/plain_jax.py`): absolute, since every case runs in its own
#: folder.
MODELS = str(Path(__file__).resolve().parent / "fixtures" / "models" / "plain_jax.py")


def contract_cases(command: list[str]) -> list:
    """A bad model contract refused by ``command`` (curvature or noise-scale with ``--out out``): each way the
    contract can break, in one line naming it (`otod.nets.model.contract`)."""
    model = command[:1] + ["--model"]
    tail = command[1:]
    return [
        (model + ["no_such_file.py:problem"] + tail, "no file no_such_file.py"),
        (model + [f"{MODELS}:nothing"] + tail, "has no nothing"),
        (model + [f"{MODELS}:not_callable"] + tail, "not a function"),
        (model + [f"{MODELS}:two_items"] + tail, "returned a 2-tuple"),
        (model + [f"{MODELS}:raises"] + tail, "raised RuntimeError: no data here"),
        (model + [f"{MODELS}:vector_loss"] + tail, "loss returns shape (2,)"),
        (model + [f"{MODELS}:unequal"] + tail, "unequal leading axes [64, 10]"),
        (model + [f"{MODELS}:nan_start", "--k", "3"][: 1 if command[0] == "noise-scale" else 3] + tail,
         "the loss at the start is nan"),
        (model + ["no_such_package.module:problem"] + tail, "no module no_such_package"),
        (model + [f"{MODELS}:"] + tail, "name a function as FILE.py:NAME"),
        (model + [f"{MODELS}:mlp", "--width", "8"] + tail, "--width: describes otod's own nets"),
        (model + [f"{MODELS}:mlp", "--chunk", "0"] + tail, "--chunk 0"),
        (model + [f"{MODELS}:mlp", "--batch", "500"] + tail, "--batch 500: larger than the data set (96"),
    ]

NET_CASES = [
    (NET + ["--batch", ""], "--batch"),
    (NET + ["--batch", "0"], "--batch"),
    (NET + ["--batch", "2000"], "--batch 2000: larger than the data set"),
    (NET + ["--width", ""], "--width"),
    (NET + ["--width", "1e9"], MEMORY),
    (NET + ["--width", "0"], "--width"),
    (NET + ["--model", "cnn", "--width", "1e9"], MEMORY),
    # issue 49: a model file without :NAME, and the core's size refusal naming the net sweep's own options
    (NET + ["--model", "bm.py"], "--model bm.py: a model of your own needs ':NAME'"),
    (NET + ["--seeds", "100000"], "use fewer --batch, --width or --depth values, a smaller net (--width, --depth, "
                                  "--examples), or fewer --seeds"),
    (NET + ["--depth", ""], "--depth"),
    (NET + ["--depth", "1e9"], "--depth 1000000000"),
    (NET + ["--depth", "1001"], "--depth 1001"),
    (NET + ["--model", "transformr"], "--model transformr: unknown; choose from mlp, cnn, transformer"),
    (NET + ["--model", f"{MODELS}:mlp", "--width", "8"], "--width: describes otod's own nets"),
    (NET + ["--model", f"{MODELS}:mlp", "--data", "teacher"], "--data: describes otod's own nets"),
    (NET + ["--model", f"{MODELS}:nan_start"], "the loss at the start is nan"),
    (NET + ["--model", f"{MODELS}:vector_loss"], "loss returns shape (2,)"),
    (NET + ["--model", f"{MODELS}:mlp", "--batch", "8,500"], "--batch 500: larger than the data set (96"),
    (NET + ["--model", f"{MODELS}:mlp", "--examples", "500"], "--examples 500: "),
    (NET + ["--model", f"{MODELS}:mlp", "--target", "100"], "--target 100: must lie below the initial training"),
    (NET + ["--model", "no_such_file.py:problem"], "no file no_such_file.py"),
    (NET + ["--model", f"{MODELS}:mlp", "--stream"], "--stream: draws fresh examples from otod's teacher"),
    (NET + ["--model", f"{MODELS}:mlp", "--examples", "10,20", "--batch", "16"],
     "--batch 16: larger than the data set (10 training examples)"),
    (NET + ["--activation", "sigmoid"], "'--activation'"),
    (NET + ["--architecture", ""], "--architecture"),
    (NET + ["--architecture", "dense"], "--architecture dense"),
    (NET + ["--init", ""], "--init"),
    (NET + ["--init", "he"], "--init he"),
    (NET + ["--data", "imagenet"], "'--data'"),
    (NET + ["--examples", ""], "--examples"),
    (NET + ["--examples", "5000"], "--examples 5000"),
    (NET + ["--stream"], "--stream: draws fresh examples from a teacher"),
    (NET + ["--data", "teacher", "--stream", "--examples", "256"], "--examples 256: a stream"),
    (NET + ["--data", "teacher", "--stream", "--predict"], "--predict: the NQM predicts S(B) on a finite"),
    (NET + ["--target", "0.1,0.05"], "--target 0.1,0.05: one training-loss target"),
    (NET + ["--data", "teacher", "--stream", "--target", "0.1,x"], "--target"),
    (NET + ["--data", "teacher", "--regime", "stream"], "--regime stream: needs the data sizes D"),
    (NET + ["--data", "teacher", "--regime", "finite", "--width", "4,8"], "--regime finite: needs the data sizes D"),
    (NET + ["--data", "teacher", "--regime", "stream", "--examples", "-64,256"], "--examples"),
    (NET + ["--data", "teacher", "--regime", "daily", "--examples", "64,256"], "--regime daily: unknown"),
    (NET + ["--regime", "stream", "--examples", "64,256"], "--regime stream: draws fresh examples from a source"),
    (NET + ["--model", "transformer", "--data", "sequence", "--heads", "0"], "--heads 0: need an integer ≥ 1"),
    (NET + ["--model", "transformer", "--data", "sequence", "--width", "8,10", "--heads", "4"],
     "--width 10: the transformer's d_model must be a multiple of --heads 4"),
    (NET + ["--model", "mlp", "--data", "sequence"], "--data sequence: token sequences for the transformer"),
    (NET + ["--model", "transformer", "--data", "teacher"], "--model transformer: reads token sequences"),
    (NET + ["--data", "teacher", "--heads", "2"], "--heads 2: the transformer's attention heads"),
    (NET + ["--data", "teacher", "--regime", "stream", "--stream", "--examples", "64"], "--stream: --regime stream"),
    (NET + ["--data", "teacher", "--regime", "stream", "--examples", "64", "--target", "0.1"],
     "--target 0.1: --regime sets each cell's target"),
    (NET + ["--data", "teacher", "--regime", "finite", "--examples", "64", "--depth", "2,3"],
     "--depth 2,3: --regime sets a target per (D, width) cell at one depth"),
    (NET + ["--model", f"{MODELS}:mlp", "--regime", "finite", "--examples", "64"], "--regime: otod's own nets"),
    (NET + ["--examples", "256,5.5"], "--examples 256,5.5: training-set sizes are whole numbers"),
    (NET + ["--examples", "256,2000"], "--examples 2000: digits keeps 1438 images"),
    (NET + ["--examples", "128,512", "--batch", "8..256:6:log"],
     "--batch 256: larger than the smallest training set (128 examples)"),
    (NET + ["--data", "teacher", "--examples", "1e9"], MEMORY),
    (NET + ["--loss", "hinge"], "'--loss'"),
    (NET + ["--data", "teacher", "--loss", "cross-entropy"], "--data teacher"),
    (NET + ["--method", ""], "--method"),
    (NET + ["--method", "lion"], "--method lion"),
    (NET + ["--target", ""], "--target"),
    (NET + ["--target", "0"], "--target 0"),
    (NET + ["--target", "100"], "--target 100"),
    (NET + ["--beta", "0.9", "--method", "sgd"], "--beta 0.9"),
    (NET + ["--beta", "", "--method", "heavy-ball"], "--beta"),
    (NET + ["--beta", "1", "--method", "heavy-ball"], "--beta"),
    (NET + ["--schedule", "linear"], "--schedule linear"),
    (NET + ["--max-iters", ""], "--max-iters"),
    (NET + ["--max-iters", "0"], "--max-iters 0"),
    (NET + ["--lr", ""], "--lr"),
    (NET + ["--lr", "-1"], "--lr -1"),
    (NET + ["--lr", "1e300"], "--lr 1e300: above float32's largest number"),
    (NET + ["--lr-grid", ""], "--lr-grid"),
    (NET + ["--lr-grid", "-1,1"], "--lr-grid"),
    (NET + ["--lr", "0.1", "--lr-grid", "1,2"], "--lr-grid"),
    (NET + ["--lr-extend", "2.5"], "--lr-extend 2.5: need a whole number of steps"),
    (NET + ["--lr", "0.1", "--lr-extend", "3"], "--lr-extend 3: only a rate tuned over a grid"),
    (NET + ["--lr-extend", "3", "--batch-schedule", "16@0.26,32@0.04"], "--lr-extend: brackets the lr of one"),
    (NET + ["--width", "8,16", "--batch", "64", "--predict"], "--predict"),
    (NET + ["--seeds", ""], "--seeds"),
    (NET + ["--seeds", "0"], "--seeds 0"),
    (NET + ["--seed", "-1"], "--seed -1"),
    (NET + ["--x64", "--x32"], "--x64 --x32"),
    (NET + ["--pdf", "--no-plot"], "--pdf --no-plot"),
    (NET + ["--json", "--width", "1e9"], MEMORY),
    (NET + ["--yes", "--width", "1e9"], MEMORY),
    (NET + ["--chunk-seconds", "0"], "--chunk-seconds 0"),
    (NET[:-1] + ["x.csv"], "--out x.csv"),
    (NET[:-1] + [""], "--out ''"),
    (NET + ["--share", "3/2"], "--share"),
    (NET + ["--distributed", "--share", "0/2"], "--share 0/2 --distributed"),
    (NET + ["--branch-at", ""], "--branch-at : a comma list of step counts"),
    (NET + ["--branch-at", "0,x"], "--branch-at x: not a step count"),
    (NET + ["--branch-at", "-1"], "--branch-at -1: need whole steps"),
    (NET + ["--branch-at", "1e8", "--max-iters", "1e8"], "training the 5 seeds' reference runs takes an estimated"),
    (NET + ["--branch-at", "1e9"], "--branch-at 1000000000: past the iteration cap 20000 (--max-iters)"),
    (NET + ["--branch-at", "0,50", "--max-iters", "40"], "--branch-at 50: past the iteration cap 40"),
    (NET + ["--branch-at", "100,30"], "--branch-at 100,30: give the checkpoints in increasing order"),
    (NET + ["--branch-at", "0,100", "--target", "0.1"], "--target: with --branch-at each branch runs to its"),
    (NET + ["--branch-at", "0", "--predict", "--width", "128"], "the NQM at a checkpoint forms the full Hessian"),
    (NET + ["--branch-at", "0", "--data", "teacher", "--stream"], "--stream: --branch-at branches from"),
    (NET + ["--branch-at", "0", "--width", "8,16"], "give one value of --width (it has 2)"),
    (NET + ["--branch-at", "0", "--batch", "8,16"], "give at least 3 batch sizes"),
    (NET + ["--branch-at", "0", "--model", f"{MODELS}:mlp", "--branch-batch", "97"],
     "--branch-batch 97: need a whole number from 1 to the 96 training examples"),
    (NET + ["--branch-at", "0", "--model", f"{MODELS}:mlp", "--examples", "32,64"], "give one value of --examples"),
    (NET + ["--branch-at", "loss:"], "--branch-at loss:: a comma list of training-loss levels"),
    (NET + ["--branch-at", "loss:0.5,,0.1"], "--branch-at loss:0.5,,0.1: a comma list"),
    (NET + ["--branch-at", "loss:x"], "--branch-at loss:x: not a loss level"),
    (NET + ["--branch-at", "loss:0"], "--branch-at loss:0: a loss level must be a finite number > 0"),
    (NET + ["--branch-at", "loss:-1"], "--branch-at loss:-1: a loss level must be"),
    (NET + ["--branch-at", "loss:" + ",".join(str(i + 1) for i in range(33))], "33 loss levels"),
    (NET + ["--branch-at", "loss:0.5", "--target", "0.1"], "--target: with --branch-at each branch runs to its"),
    (NET + ["--branch-at", "loss:1e-3", "--model", f"{MODELS}:mlp", "--seeds", "1", "--branch-lr", "1e6"],
     "diverged at step"),
    (NET + ["--branch-batch", "8"], "--branch-batch: sets the reference run of --branch-at"),
    (NET + ["--branch-at", "0", "--branch-batch", "5000"], "--branch-batch 5000: need a whole number from 1 to"),
    (NET + ["--branch-at", "0", "--branch-batch", "0"], "--branch-batch 0"),
    (NET + ["--branch-lr", "0.1"], "--branch-lr: sets the reference run of --branch-at"),
    (NET + ["--branch-at", "0", "--branch-lr", "0"], "--branch-lr 0: the reference run's step must be positive"),
    (NET + ["--branch-at", "0", "--branch-lr", "x"], "--branch-lr x: not a number"),
    (NET + ["--branch-to", "0.5"], "--branch-to: sets the reference run of --branch-at"),
    (NET + ["--branch-at", "0", "--branch-to", "1"], "--branch-to 1: the milestone is a fraction r"),
    (NET + ["--trace-examples", "64"], "--trace-examples: sets how B_noise is measured at the checkpoints"),
    (NET + ["--branch-at", "0", "--trace-examples", "1"], "--trace-examples 1: need an integer ≥ 2"),
    (NET + ["--branch-at", "0", "--trace-examples", "99999"],
     "--trace-examples 99999: more than the 1,438 training examples"),
    (NET + ["--batch-schedule", ""], "--batch-schedule : a comma list of batch@milestone phases"),
    (NET + ["--batch-schedule", "16@0.5,8"], "phase '8' is not batch@milestone"),
    (NET + ["--batch-schedule", "16@2"], "milestone 2 is not a fraction of the start's loss"),
    (NET + ["--batch-schedule", "16@0.2,32@0.3"], "each phase's milestone must lie below the one before"),
    (NET + ["--batch-schedule", "doubling:16..48@0.1"], "is not the first 16 doubled a whole number of times"),
    (NET + ["--batch-schedule", "16@0.1", "--target", "0.1"], "--target: with --batch-schedule the final target"),
    (NET + ["--batch-schedule", "16@0.1", "--branch-at", "0"], "--branch-at: --batch-schedule starts every seed"),
    (NET + ["--batch-schedule", "16@0.1", "--predict"], "--predict: the NQM's prediction is of a constant batch"),
    (NET + ["--batch-schedule", "16@0.1", "--data", "teacher", "--stream"], "--stream: --batch-schedule runs on"),
    (NET + ["--batch-schedule", "16@0.1", "--width", "8,16"], "give one value of --width (it has 2)"),
    (NET + ["--batch-schedule", "16@0.1", "--method", "sgd,adam"], "one method per schedule (--method has 2)"),
    (NET + ["--batch-schedule", "16@0.1", "--schedule", "cosine"], "--schedule cosine: a batch schedule's phases"),
    (NET + ["--batch-schedule", "5000@0.1"], "batch 5000 is larger than the training set (1438 examples)"),
    (NET + ["--batch-schedule", "16@0.1", "--model", f"{MODELS}:mlp"], "not supported yet, drop --batch-schedule"),
    (NET + ["--coordinator", "localhost:1"], "--distributed"),
    (NET + ["--num-processes", "2"], "--distributed"),
    (NET + ["--process-id", "0"], "--distributed"),
]

CURVATURE_CASES = [
    (CURVATURE + ["--model", ""], "--model"),
    (CURVATURE + ["--model", "rnn"], "--model rnn"),
    (CURVATURE + ["--model", "models/bm.py"], "--model models/bm.py: a model of your own needs ':NAME'"),
    (["noise-scale", "--model", "bm.py", "--out", "out"], "--model bm.py: a model of your own needs ':NAME'"),
    (CURVATURE + ["--width", ""], "--width"),
    (CURVATURE + ["--lr", "1e300"], "--lr 1e300: above float32's largest number"),
    (["curvature", "--out", "/proc/otod"], "--out /proc/otod: cannot write in /proc"),  # was: after the work
    (["curvature", "--out", "/proc/otod/c.parquet"], "--out /proc/otod/c.parquet: cannot write in /proc"),
    (CURVATURE + ["--width", "1e9"], MEMORY),
    (CURVATURE + ["--model", "cnn", "--width", "1e9"], MEMORY),
    (CURVATURE + ["--depth", "1e9"], "--depth 1000000000"),
    (CURVATURE + ["--activation", "sigmoid"], "--activation sigmoid"),
    (CURVATURE + ["--architecture", "dense"], "--architecture dense"),
    (CURVATURE + ["--init", "he"], "--init he"),
    (CURVATURE + ["--data", "imagenet"], "--data imagenet"),
    (CURVATURE + ["--data", "teacher", "--examples", "1e9"], MEMORY),
    (CURVATURE + ["--examples", "0"], "--examples 0"),
    (CURVATURE + ["--loss", "hinge"], "--loss hinge"),
    (CURVATURE + ["--batch", "0"], "--batch 0"),
    (CURVATURE + ["--batch", "5000"], "--batch 5000"),
    (CURVATURE + ["--k", ""], "--k"),
    (CURVATURE + ["--k", "1e9"], "--k 1000000000"),
    (CURVATURE + ["--probes", "0"], "--probes 0"),
    (CURVATURE + ["--probes", "1e9"], "--probes 1000000000"),
    (CURVATURE + ["--lanczos-steps", "1"], "--lanczos-steps 1"),
    (CURVATURE + ["--lanczos-steps", "1e9"], "--lanczos-steps 1000000000: more than the 2,410 parameters"),
    (CURVATURE + ["--steps", ""], "--steps"),
    (CURVATURE + ["--steps", "0,,5"], "--steps 0,,5"),
    (CURVATURE + ["--steps", "-1"], "--steps"),
    (CURVATURE + ["--steps", "1e9"], "pass --yes"),
    (CURVATURE + ["--lr", "0"], "--lr 0"),
    (CURVATURE + ["--lr", ""], "--lr"),
    (CURVATURE + ["--seed", "-1"], "--seed -1"),
    (CURVATURE + ["--quantile", "1"], "--quantile 1"),
    (CURVATURE + ["--damping", "-1"], "--damping -1"),
    (CURVATURE + ["--x64", "--probes", "1e9"], "--probes 1000000000"),
    (CURVATURE + ["--yes", "--width", "1e9"], MEMORY),
    (CURVATURE[:-1] + ["x.csv"], "--out x.csv"),
    (CURVATURE[:-1] + [""], "--out"),
    (CURVATURE + ["--chunk", "8"], "--chunk: only with --model FILE.py:NAME"),
    (CURVATURE + ["--per-layer=yes"], "--per-layer' does not take a value"),
    (CURVATURE + ["--per-layer", "--k", "1e9"], "--k 1000000000"),
    (CURVATURE + ["--model", f"{MODELS}:mlp", "--k", "1000"], "--k 1000: larger than the parameter count 112"),
    (CURVATURE + ["--model", f"{MODELS}:mlp", "--lanczos-steps", "500"], "--lanczos-steps 500: more than the 112"),
] + contract_cases(CURVATURE)

SCALE_CASES = [
    (["noise-scale", "--model", "rnn", "--out", "out"], "--model rnn"),
    (SCALE + ["--width", ""], "--width"),
    (SCALE + ["--lr", "1e300"], "--lr 1e300: above float32's largest number"),
    (SCALE + ["--width", "1e9"], MEMORY),
    (SCALE + ["--depth", "1e9"], "--depth 1000000000"),
    (SCALE + ["--activation", "sigmoid"], "--activation sigmoid"),
    (SCALE + ["--architecture", "dense"], "--architecture dense"),
    (SCALE + ["--init", "he"], "--init he"),
    (SCALE + ["--data", "imagenet"], "--data imagenet"),
    (SCALE + ["--data", "teacher", "--examples", "1e9"], MEMORY),
    (SCALE + ["--loss", "hinge"], "--loss hinge"),
    (SCALE + ["--draws", "1"], "--draws 1"),
    (SCALE + ["--draws", ""], "--draws"),
    (SCALE[:-1] + ["x.csv"], "--out x.csv"),
    (SCALE[:-1] + [""], "--out ''"),
    (SCALE + ["--dim", "10"], "--dim"),
    (SCALE + ["--pairs", ""], "--pairs"),
    (SCALE + ["--pairs", "64:8"], "B_small < B_big"),
    (SCALE + ["--pairs", "8:5000"], "--pairs 8:5000"),
    (SCALE + ["--decay", "0.9"], "--decay"),
    (SCALE + ["--lr", "-1"], "--lr -1"),
    (SCALE + ["--lr", ""], "--lr"),
    (SCALE + ["--batch", "5000"], "--batch 5000"),
    (SCALE + ["--steps", ""], "--steps"),
    (SCALE + ["--steps", "1e9"], "pass --yes"),
    (SCALE + ["--seeds", "4"], "--seeds"),
    (SCALE + ["--seed", "-1"], "--seed -1"),
    (SCALE + ["--yes", "--width", "1e9"], MEMORY),
    (SCALE + ["--x64", "--width", ""], "--x64: only with --model FILE.py:NAME"),
    (SCALE + ["--chunk", "8"], "--chunk: only with --model FILE.py:NAME"),
    (SCALE + ["--trace-examples", "1"], "--trace-examples 1"),
    (SCALE + ["--trace-examples", "5000"], "--trace-examples 5000: more than the 1,438 training examples"),
    (["noise-scale", "--trace-examples", "8"], "--trace-examples: measures a net"),
    (["noise-scale", "--model", f"{MODELS}:mlp", "--trace-examples", "97", "--out", "out"],
     "--trace-examples 97: more than the 96"),
    (["noise-scale", "--model", f"{MODELS}:mlp", "--pairs", "8:200", "--out", "out"], "--pairs 8:200: B_big larger"),
    (["noise-scale", "--model", f"{MODELS}:mlp", "--dim", "10", "--out", "out"], "--dim"),
] + contract_cases(["noise-scale", "--out", "out"])

CASES = NET_CASES + CURVATURE_CASES + SCALE_CASES


def test_bad_input_is_one_quick_line_and_exit_code_2(tmp_path):
    """Every case, each in a fresh folder: exit 2, one stderr line ``otod: error: ...`` with the fragment, nothing
    on stdout, no traceback, within `QUICK_CPU_SECONDS` of CPU time (`MODEL_FILE_CPU_SECONDS` where it names a model file), and no file written (a sweep may have made its --out folder,
    empty)."""
    folders = [tmp_path / f"case{i}" for i, _ in enumerate(CASES)]
    for folder in folders:
        folder.mkdir()
    runs = run_otod_cases([(args, folder) for (args, _), folder in zip(CASES, folders)], tmp_path / "captures")
    failed = []
    for (args, fragment), folder, (result, cpu) in zip(CASES, folders, runs):
        written = [str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()]
        quick = MODEL_FILE_CPU_SECONDS if any(MODELS in a for a in args) else QUICK_CPU_SECONDS
        if not (is_one_line_refusal(result, cpu, fragment, quick) and not written):
            failed.append(f"otod {' '.join(repr(a) if not a else a for a in args)}: exit {result.returncode} in "
                          f"{cpu:.1f} CPU s, expected one line with {fragment!r}; wrote {written}; stdout "
                          f"{result.stdout[-200:]!r}; stderr: {result.stderr[-600:]}")
    assert not failed, f"{len(failed)} of {len(CASES)} cases:\n" + "\n".join(failed)


def _options(path) -> set[str]:
    from otod.cli import main

    command = main
    for name in path:
        command = command.commands[name]
    return {o.opts[0] for o in command.params if isinstance(o, click.Option)} - {"--help"}


#: Flags with no value to get wrong: each appears in a case beside a bad value, and must not hide it.
NO_BAD_VALUE = {"--no-plot", "--json", "--yes", "--x64", "--x32", "--pdf", "--distributed", "--per-layer"}


@pytest.mark.parametrize("path,cases", [(["sweep", "net"], NET_CASES), (["curvature"], CURVATURE_CASES),
                                        (["noise-scale"], SCALE_CASES)], ids=["net", "curvature", "noise-scale"])
def test_every_option_has_a_case(path, cases):
    """One case at least per option of the command (``noise-scale``: with --model), so an option added later
    without a refusal case fails here."""
    used = {a for args, _ in cases for a in args if a.startswith("--")}
    options = _options(path)
    missing = sorted(options - used)
    assert not missing, f"otod {' '.join(path)}: options with no bad-input case: {missing}"
    assert NO_BAD_VALUE & options <= used
