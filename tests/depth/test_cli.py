"""The depth and toy commands as a user meets them (bad input: tests/test_bad_input.py): a small sweep runs end
to end with records carrying depth, init, width and beta by name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import otod

ROOT = Path(otod.__file__).resolve().parents[1]


def run(args, cwd):
    """`otod ARGS` as a real process, importing this checkout's otod (not an installed one)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "otod", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300, env=env)


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
