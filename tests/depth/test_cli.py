"""The depth and toy commands as a user meets them (bad input: tests/test_bad_input.py): a small sweep runs end
to end with records carrying depth, init, width and beta by name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import otod

ROOT = Path(otod.__file__).resolve().parents[1]


def run(args, cwd):
    """`otod ARGS` as a real process, importing this checkout's otod (not an installed one)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "otod", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300, env=env)


@pytest.mark.slow  # 10 s; the README test and the depth engine's tests keep the path fast
def test_a_small_depth_sweep_runs_end_to_end(tmp_path):
    """Depth 1..2, identity, 2 seeds at the reference step: records carry depth, init, beta; the table shows the
    per-mode theory column and the counts 1 and 6 (the factor recursion's)."""
    out = run(["sweep", "depth", "--depth", "1..2", "--init", "identity", "--seeds", "2", "--lr", "theory",
               "--no-plot", "--json", "--out", str(tmp_path)], tmp_path)
    assert out.returncode == 0, out.stderr
    records = json.loads(out.stdout)
    assert {(r["depth"], r["init"], r["beta"], r["iterations"]) for r in records} == {(1.0, "identity", 0.0, 1),
                                                                                      (2.0, "identity", 0.0, 6)}
    assert "modes" in out.stderr and "gd·identity" in out.stderr


@pytest.mark.slow
def test_the_toy_report_says_what_its_lanes_that_did_not_converge_are(tmp_path):
    """Issue 18: k = 6, shared reading, 14 seeds, lr tuned, cap 2·10⁴. Seed 13 sits in the local minimum f = 0.00634
    above f* = 0.00594 at the chosen lr: its record says so (``minimum`` "local", status not converged), and the
    report gives the toy's own note over its lanes that did not converge (fixed point / still moving, in another
    local minimum, at f* by rounding) with a line counting those in another local minimum, not the deep-linear
    sweep's (saddle P = 0, modes of Φ never learned)."""
    from otod.depth.toy import STOPPED_NOTE

    out = run(["sweep", "toy", "--layers", "6", "--reading", "shared", "--seeds", "14", "--max-iters", "20000",
               "--no-plot", "--json", "--out", str(tmp_path)], tmp_path)
    assert out.returncode == 0, out.stderr
    chosen = [r for r in json.loads(out.stdout) if r["selected"] and r["seed"] == 13]
    assert len(chosen) == 1 and chosen[0]["status"] != "converged"
    assert chosen[0]["minimum"] == "local" and abs(chosen[0]["minimum_loss"] - 0.0063398) < 1e-6
    assert abs(chosen[0]["f_star"] - 0.0059377) < 1e-6
    assert STOPPED_NOTE in out.stderr
    line = next(x for x in out.stderr.splitlines() if x.startswith("  gd at layers 6:"))
    assert "in another local minimum (f − f* " in line
    assert "saddle P = 0" not in out.stderr and "1/Σs²" not in out.stderr


@pytest.mark.slow  # 4 s; the depth sweep's end-to-end test above stays in the fast suite
def test_the_depth_report_keeps_its_own_note_on_lanes_that_did_not_converge(tmp_path):
    """A chain from w = 0 sits at the saddle P = 0 (every gradient 0): both lanes stall at iteration 1, and the
    depth note (saddle P = 0) is printed, not the toy's."""
    from otod.depth.toy import STOPPED_NOTE

    out = run(["sweep", "depth", "--problem", "chain", "--depth", "3", "--init", "zero", "--lr", "theory",
               "--seeds", "2", "--max-iters", "100", "--no-plot", "--json", "--out", str(tmp_path)], tmp_path)
    assert out.returncode == 0, out.stderr
    assert {(r["status"], r["iterations"]) for r in json.loads(out.stdout)} == {("stalled", 1)}
    assert "saddle P = 0" in out.stderr and STOPPED_NOTE not in out.stderr
    assert "gd·zero at depth 3: 2 stalled, median final loss 1" in out.stderr
