"""Benchmark: ns per executed lane-iteration of the depth engine, this checkout (A) against another tree (B).

One engine block of 104 lanes (13 lr multipliers 0.1..1 × 8 seeds, xavier, width n, depth L, float32, one CPU
device), every lane run to the fixed trip count (the window stall rule with a window past the cap, tol 1e-12), so
A and B execute the same lane-iterations. Each run is its own process; the figure is its steady state (best of 3
engine calls after the compiling one) over the executed lane-iterations. Sides alternate; prints the runs,
medians, per-pair ratios B/A and the CPU model. B is any tree of otod, e.g. ``git archive <commit> | tar -x -C
/tmp/base``.

Each side imports its own tree: ``python -c`` puts the current directory first on sys.path, ahead of PYTHONPATH,
so a child started from A's root with ``PYTHONPATH=B`` imports A's otod (the harness once compared A with A that
way). Each child therefore runs with ``cwd`` and ``PYTHONPATH`` both its own tree, prints the ``otod.__file__`` it
imported, and the harness stops if that file is not inside the side's tree. From the repository root:

    python3 benchmarks/bench_depth_engine.py --base /tmp/base --depth 8 --iters 1000 --method gd --rounds 5
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys

from otod.core.results import cpu_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ONE = r'''
import os, sys, time, dataclasses
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=1")
import numpy as np
import otod
print(f"otod from {os.path.realpath(otod.__file__)}")
from otod.core.engine import iterations_to_target
from otod.depth.kind import depth_target
from otod.depth.linear import DeepLinearSpec, init_code
from otod.depth.methods import METHODS, MethodOptions

@dataclasses.dataclass(frozen=True)
class NoStallSpec(DeepLinearSpec):
    def family(self):
        return super().family()._replace(stall="window")

depth, iters, method, width = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
spec = NoStallSpec(depth=depth, width=width)
lrs = np.repeat(np.geomspace(0.1, 1.0, 13), 8); seeds = np.tile(np.arange(8), 13); n = len(lrs)
points = {"init": np.full(n, float(init_code("xavier"))), "beta": np.zeros(n)}
def go():
    t0 = time.perf_counter()
    s = iterations_to_target(spec, (METHODS[method],), points, seeds, lrs, target=depth_target(1e-12),
                             max_iters=iters, options=MethodOptions(), block_lanes=n, devices=1,
                             stall_window=iters + 1)
    return time.perf_counter() - t0, s
go()
best = min(go()[0] for _ in range(3))
s = go()[1]
print(f"{1e9 * best / s.lane_iterations:.1f} ns/lane-it, {s.lane_iterations} lane-its, iterations sum "
      f"{int(s.iterations.sum())}, statuses {np.bincount(s.status, minlength=6).tolist()}")
'''


def side_env(tree: str) -> dict:
    """The child's environment: this one with PYTHONPATH replaced by ``tree`` alone (no other tree's otod)."""
    return {**os.environ, "PYTHONPATH": tree}


def imported_from(stdout: str) -> str:
    """The ``otod.__file__`` a child reports having imported (its ``otod from`` line)."""
    return re.search(r"^otod from (.+)$", stdout, re.M).group(1).strip()


def inside(path: str, tree: str) -> bool:
    """Whether ``path`` lies inside the directory ``tree`` (both resolved through symlinks)."""
    root = os.path.realpath(tree)
    return os.path.commonpath([os.path.realpath(path), root]) == root


def run_side(tree: str, args: list[str]) -> str:
    """One measuring process on ``tree``: cwd and PYTHONPATH both ``tree``, so ``python -c``'s current-directory
    entry on sys.path is that tree too. Returns its stdout; raises if it imported otod from anywhere else."""
    out = subprocess.run([sys.executable, "-c", ONE, *args], capture_output=True, text=True, cwd=tree,
                         env=side_env(tree), check=True).stdout
    origin = imported_from(out)
    if not inside(origin, tree):
        raise RuntimeError(f"the side for {tree} imported otod from {origin}")
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", required=True, help="B: another otod tree")
    p.add_argument("--tree", default=ROOT, help="A: the otod tree measured against B (default: this checkout)")
    p.add_argument("--depth", type=int, default=8)
    p.add_argument("--width", type=int, default=8)
    p.add_argument("--iters", type=int, default=1000)
    p.add_argument("--method", default="gd")
    p.add_argument("--rounds", type=int, default=5)
    a = p.parse_args(argv)
    print(f"L = {a.depth}, n = {a.width}, {a.method}, {a.iters} iterations × 104 lanes; CPU: {cpu_model()}, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    ns = {"A": [], "B": []}
    lines = {}
    origins = {}
    for r in range(a.rounds):
        for side in ("A", "B") if r % 2 == 0 else ("B", "A"):
            tree = a.tree if side == "A" else a.base
            out = run_side(tree, [str(a.depth), str(a.iters), a.method, str(a.width)])
            origins.setdefault(side, imported_from(out))
            line = out.strip().splitlines()[-1]
            ns[side].append(float(re.match(r"([\d.]+) ns", line).group(1)))
            lines.setdefault(side, line.split(", ", 1)[1])
            print(f"round {r + 1} {side}: {line}")
    for side in "AB":
        print(f"{side} imports {origins[side]}")
    ratios = [b / x for x, b in zip(ns["A"], ns["B"])]
    for side in "AB":
        print(f"{side}: median {statistics.median(ns[side]):.0f} ns ({', '.join(f'{v:.0f}' for v in ns[side])})")
    print(f"B/A per pair: {', '.join(f'{v:.2f}' for v in ratios)}; median {statistics.median(ratios):.2f}")
    print(f"same work: {lines['A'] == lines['B']}; load after {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
