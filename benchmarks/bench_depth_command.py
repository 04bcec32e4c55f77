"""Benchmark: a whole ``otod sweep depth`` command, this checkout (A) against another tree (B): wall time, the
process's CPU time (user + sys), the work ratio it prints, and whether the two write the same records.

The sweep is ``otod sweep SWEEP --no-plot`` (default ``depth --depth 4,8 --init xavier --seeds 8``). Every run is
its own process started with ``cwd`` and ``PYTHONPATH`` both its side's tree (``python -c`` puts the working
directory first on sys.path, so a child started in the other tree would import the other tree's otod); the child
prints the ``otod.__file__`` it imported and the harness stops if that is not inside the side's tree. The
compilation cache (``OTOD_COMPILATION_CACHE``) is left as the environment sets it: one untimed run per side first
warms it, so the timed runs load their programs instead of compiling them (``--cache off`` turns it off on both
sides instead). Wall is from spawn to exit; CPU is the child's user + sys from ``getrusage(RUSAGE_CHILDREN)``
around it. Sides alternate (A first on even rounds, B first on odd). Prints every run, the medians, the per-pair
ratios B/A, the load average before and after, the CPU model, and compares every run's results file with the
warm-up run of A, column by column bit for bit (NaN equal to NaN) and their metadata but for times, compile
counts, commit and command line. B is any tree of otod, e.g. ``git archive <commit> | tar -x -C /tmp/base``. From
the repository root:

    python3 benchmarks/bench_depth_command.py --base /tmp/base --rounds 5
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from bench_depth_engine import imported_from, inside
from bench_regression_order import cpu_model, records_differ

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SWEEP = "depth --depth 4,8 --init xavier --seeds 8"

#: The child: report which otod it imported, then run the command line as ``otod`` would.
CHILD = "import os, sys, otod; print('otod from', os.path.realpath(otod.__file__), flush=True); " \
        "from otod.cli import main; sys.argv[0] = 'otod'; main()"

#: Metadata that differs between two runs of the same sweep without saying anything about its records: the
#: compilation cache's state (how many programs were compiled rather than loaded) beside the times, commit and
#: command line `records_differ` already leaves out.
RUN_ONLY = re.compile(r"(compile_count|cache_loads|compile_time_s)$")


def side_env(tree: str, cache: str | None) -> dict:
    """The child's environment: PYTHONPATH the side's tree alone, the compilation cache as asked (None: as set)."""
    env = {**os.environ, "PYTHONPATH": tree}
    if cache is not None:
        env["OTOD_COMPILATION_CACHE"] = cache
    return env


def children_cpu() -> float:
    """User + sys seconds of every child process waited for so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_command(tree: str, sweep: str, out: str, cache: str | None) -> dict:
    """One whole command in ``tree`` writing into ``out``: its wall and CPU seconds, the work ratio and compile
    count it printed. Raises if it imported otod from outside ``tree`` or failed."""
    cpu0, t0 = children_cpu(), time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, "sweep", *sweep.split(), "--no-plot", "--out", out],
                          capture_output=True, text=True, cwd=tree, env=side_env(tree, cache))
    wall, cpu = time.perf_counter() - t0, children_cpu() - cpu0
    if done.returncode:
        raise RuntimeError(f"the command in {tree} failed:\n{done.stderr[-2000:]}")
    origin = imported_from(done.stdout)
    if not inside(origin, tree):
        raise RuntimeError(f"the side for {tree} imported otod from {origin}")
    text = done.stdout + done.stderr
    ratio = re.search(r"([\d.]+) lane-iterations run per one needed", text)
    compiled = re.search(r"(\d+) compilations?", text)
    return {"wall": wall, "cpu": cpu, "origin": origin, "ratio": ratio.group(1) if ratio else "?",
            "compiled": int(compiled.group(1)) if compiled else -1}


def same_records(reference: str, folder: str) -> list[str]:
    """What differs between two results folders' files beyond run-only metadata (empty: the same records)."""
    return [k for k in records_differ(reference, folder) if not RUN_ONLY.search(k)]


def summary(name: str, runs: dict, unit: str) -> list[str]:
    """Lines of one measure: each side's median and runs, then the per-pair ratios B/A and their median."""
    ratios = [b / a for a, b in zip(runs["A"], runs["B"])]
    lines = [f"{name} {side}: median {statistics.median(runs[side]):.2f} {unit} "
             f"({', '.join(f'{v:.2f}' for v in runs[side])})" for side in "AB"]
    return lines + [f"{name} B/A per pair: {', '.join(f'{v:.3f}' for v in ratios)}; "
                    f"median {statistics.median(ratios):.3f}"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", required=True, help="B: another otod tree")
    p.add_argument("--tree", default=ROOT, help="A: the otod tree measured against B (default: this checkout)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--sweep", default=SWEEP, help=f"the sweep's arguments (default: {SWEEP!r})")
    p.add_argument("--cache", default=None, help="OTOD_COMPILATION_CACHE for both sides (default: as set, warmed)")
    a = p.parse_args(argv)
    trees = {"A": a.tree, "B": a.base}
    print(f"otod sweep {a.sweep} --no-plot; CPU: {cpu_model()}, {os.cpu_count()} cores; "
          f"load before {' '.join(f'{v:.2f}' for v in os.getloadavg())}", flush=True)
    runs = {"wall": {"A": [], "B": []}, "cpu": {"A": [], "B": []}}
    with tempfile.TemporaryDirectory() as tmp:
        reference = os.path.join(tmp, "warm-A")
        for side in "AB":
            folder = os.path.join(tmp, f"warm-{side}")
            warm = run_command(trees[side], a.sweep, folder, a.cache)
            differ = same_records(reference, folder)
            print(f"warm-up {side} ({warm['origin']}): {warm['wall']:.2f} s wall, {warm['cpu']:.2f} s CPU, "
                  f"{warm['compiled']} compilations, {warm['ratio']} run per needed; records vs warm-up A: "
                  f"{'identical' if not differ else 'DIFFER in ' + ', '.join(differ)}", flush=True)
        for r in range(a.rounds):
            for side in ("A", "B") if r % 2 == 0 else ("B", "A"):
                folder = os.path.join(tmp, f"{r}-{side}")
                run = run_command(trees[side], a.sweep, folder, a.cache)
                runs["wall"][side].append(run["wall"])
                runs["cpu"][side].append(run["cpu"])
                differ = same_records(reference, folder)
                print(f"round {r + 1} {side}: {run['wall']:.2f} s wall, {run['cpu']:.2f} s CPU, "
                      f"{run['compiled']} compilations, {run['ratio']} run per needed; records vs warm-up A: "
                      f"{'identical' if not differ else 'DIFFER in ' + ', '.join(differ)}; "
                      f"load {os.getloadavg()[0]:.2f}", flush=True)
    print("\n".join(summary("wall", runs["wall"], "s") + summary("CPU", runs["cpu"], "s")))
    print(f"load after {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
