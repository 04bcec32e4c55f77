"""Issue 49: a user's model that passes the contract's first look but fails later (a loss that raises only on
larger batches, a backward pass that raises, a bfloat16 loss, a NaN start drawn by ``init``, ``sys.exit`` in the
model or at its import, a zero gradient) is refused before the work, in one line ``otod: error: ...`` and exit
code 2; where the user's code raised, the line says "your model's loss raised X: message (file:line)" with the
line of the user's file that raised, and no frame of otod's.

The cases run as `tests/test_bad_input_nets.py`'s do (`run_otod_cases`: one process, each case in its own
folder); no case is timed by the wall clock: a refusal before the work shows as no results file written."""

from __future__ import annotations

import math
from pathlib import Path

from tests.conftest import is_one_line_refusal, run_otod_cases

MODELS = Path(__file__).resolve().parent / "fixtures" / "models"
BROKEN = MODELS / "broken.py"
NET = ["sweep", "net", "--no-plot", "--out", "out"]


def line_of(statement: str, after: str = "", path: Path = BROKEN) -> str:
    """"FILE:LINE)" of the first line of ``path`` that is ``statement`` (a line starting with it), after the first
    line holding ``after``: where the user's code raised."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if after in line)
    return f"{path.name}:{next(i for i, line in enumerate(lines, 1) if i > start and line.strip().startswith(statement))})"


def model(name: str) -> str:
    return f"{BROKEN}:{name}"


CASES = [
    (NET + ["--model", model("big_batch_raises")],
     ["your model's loss raised ValueError: this model takes at most 16 examples, got 96", line_of("raise ValueError")]),
    (["curvature", "--model", model("big_batch_raises"), "--k", "2", "--batch", "32", "--out", "out"],
     ["your model's loss raised ValueError: this model takes at most 16 examples, got 32",
      line_of("raise ValueError"), "on a batch of 32"]),
    (NET + ["--model", model("backward_raises"), "--no-predict"],
     ["the gradient of your model's loss raised RuntimeError: no backward pass for this layer",
      line_of("raise RuntimeError")]),
    (["noise-scale", "--model", model("backward_raises"), "--out", "out"],
     ["the gradient of your model's loss raised RuntimeError", line_of("raise RuntimeError")]),
    (NET + ["--model", model("bfloat16_loss")], ["loss returns bfloat16; otod measures in float32"]),
    (NET + ["--model", model("nan_init")], ["init(key) drew seed 0's start with non-finite parameters in ['w']"]),
    (["curvature", "--model", model("nan_init"), "--k", "2", "--seed", "1", "--out", "out"],
     ["the start (init(key) at seed 1) has non-finite parameters"]),
    (NET + ["--model", model("exits")], ["calling it called sys.exit(0)", line_of("sys.exit(0)", "def exits")]),
    (["curvature", "--model", model("loss_exits"), "--k", "2", "--out", "out"],
     ["your model's loss called sys.exit(0)", line_of("sys.exit(0)", "def loss_exits")]),
    (["noise-scale", "--model", f"{MODELS / 'exit_at_import.py'}:problem", "--out", "out"],
     ["exit_at_import.py called sys.exit(0)", line_of("sys.exit(0)", "import sys", MODELS / "exit_at_import.py")]),
    (["noise-scale", "--model", model("zero_gradient"), "--out", "out"],
     ["the mean gradient is exactly zero at the start (step 0)"]),
    (NET + ["--model", model("zero_gradient")],
     ["the mean gradient is exactly zero at seed 0's start, where the NQM's prediction is measured", "--no-predict"]),
]


def test_a_model_that_fails_later_is_refused_before_the_work(tmp_path):
    """Every case: exit 2, one line holding each fragment, no traceback and no otod frame named, nothing on stdout,
    and no file written (a sweep may have made its --out folder, empty)."""
    folders = [tmp_path / f"case{i}" for i, _ in enumerate(CASES)]
    for folder in folders:
        folder.mkdir()
    runs = run_otod_cases([(args, folder) for (args, _), folder in zip(CASES, folders)], tmp_path / "captures",
                          timeout=600)
    failed = []
    for (args, fragments), folder, (result, _) in zip(CASES, folders, runs):
        written = [str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()]
        ok = all(is_one_line_refusal(result, 0.0, f, math.inf) for f in fragments)
        if not ok or written or "otod/nets" in result.stderr:
            failed.append(f"otod {' '.join(args)}: exit {result.returncode}, expected one line with {fragments}; "
                          f"wrote {written}; stdout {result.stdout[-200:]!r}; stderr: {result.stderr[-800:]}")
    assert not failed, f"{len(failed)} of {len(CASES)} cases:\n" + "\n".join(failed)
