"""Benchmark: the regression sweep, this checkout (A) against another tree (B): engine ns per executed lane-iteration,
the whole command's wall time, and whether the two write the same records.

The sweep is ``otod sweep noise --problem regression --batch 1..256:9:log --method sgd`` plus ``EXTRA`` options
(e.g. ``--schedule cosine``). Per round and side, two processes, each with ``PYTHONPATH`` the side's tree and
``OTOD_COMPILATION_CACHE=off``, run in that tree (``python -c`` puts the working directory first on the path):

* the whole command (``otod.cli.main``, ``--no-plot``), timed from its spawn to its exit (imports, planning,
  compilation, the engine, records, analysis), writing its results file into a folder of its own;
* the engine alone, as `benchmarks/roofline.py` times it: the sweep is run once through the command line in the
  process, capturing every ``iterations_to_target`` call (that run compiles; not timed), then the captured calls
  are run again warm, ``--warm`` times, timed with ``perf_counter`` around the calls; the figure is the fastest
  of those times over Σ ``Solution.lane_iterations``.

Sides alternate (A first on even rounds, B first on odd). Prints every run, the medians, the per-pair ratios B/A,
the CPU model, and compares each round's results files, A against B, column by column bit for bit (NaN equal to
NaN) and their metadata but for times, commit and command line. B is any tree of otod, e.g. ``git archive <commit>
| tar -x -C /tmp/base``. From the repository root:

    python3 benchmarks/bench_regression_order.py --base /tmp/base --rounds 5 [--extra "--schedule cosine"]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from otod.core.results import cpu_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SWEEP = "noise --problem regression --batch 1..256:9:log --method sgd"

ENGINE = r'''
import contextlib, os, sys, tempfile, time
from otod.core import devices
devices.use_every_core()
import numpy as np
import otod.core.engine as engine
from otod.cli import main

original, calls = engine.iterations_to_target, []
def capturing(*args, **kwargs):
    calls.append((args, kwargs))
    return original(*args, **kwargs)
engine.iterations_to_target = capturing
with tempfile.TemporaryDirectory() as out, contextlib.redirect_stdout(open(os.devnull, "w")):
    try:
        main.main(args=["sweep", *sys.argv[2].split(), "--no-plot", "--out", out], standalone_mode=False)
    except SystemExit as e:
        assert e.code in (0, None), e.code
engine.iterations_to_target = original
times = []
for _ in range(int(sys.argv[1])):
    t0 = time.perf_counter()
    solutions = [original(*a, **k) for a, k in calls]
    times.append(time.perf_counter() - t0)
executed = sum(int(s.lane_iterations) for s in solutions)
needed = sum(int(np.asarray(s.iterations, np.int64).sum()) for s in solutions)
print(f"{1e9 * min(times) / executed:.1f} ns/lane-it, {len(calls)} calls, {executed} executed lane-its, "
      f"{needed} needed, warm {', '.join(f'{t:.2f}' for t in times)} s")
'''


def whole_command(tree: str, sweep: str, out: str) -> float:
    """Seconds from spawning the whole ``otod sweep`` command in ``tree`` to its exit."""
    env = {**os.environ, "PYTHONPATH": tree, "OTOD_COMPILATION_CACHE": "off"}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "from otod.cli import main; main()", "sweep", *sweep.split(), "--no-plot",
                    "--out", out], capture_output=True, text=True, env=env, check=True, cwd=tree)
    return time.perf_counter() - t0


def engine_line(tree: str, sweep: str, warm: int) -> str:
    env = {**os.environ, "PYTHONPATH": tree, "OTOD_COMPILATION_CACHE": "off"}
    out = subprocess.run([sys.executable, "-c", ENGINE, str(warm), sweep], capture_output=True, text=True, env=env,
                         check=True, cwd=tree)
    return out.stdout.strip().splitlines()[-1]


def records_differ(folder_a: str, folder_b: str) -> list[str]:
    """The columns, and the metadata entries other than times, commit and command line, in which the results
    files of two folders differ (bit for bit; NaN equals NaN)."""
    import numpy as np
    import pyarrow.parquet as pq

    (a,), (b,) = ([os.path.join(f, n) for n in os.listdir(f) if n.endswith(".parquet")] for f in (folder_a, folder_b))
    ta, tb = pq.read_table(a), pq.read_table(b)
    if ta.schema.names != tb.schema.names or ta.num_rows != tb.num_rows:
        return ["shape"]
    differ = []
    for name in ta.schema.names:
        x, y = (t[name].to_numpy(zero_copy_only=False) for t in (ta, tb))
        if x.dtype.kind == "f":
            x, y = x.view(f"u{x.itemsize}"), y.view(f"u{y.itemsize}")
        if not np.array_equal(x, y):
            differ.append(name)

    def flat(d, prefix=""):
        out = {}
        for k, v in d.items():
            out.update(flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {prefix + k: v})
        return out

    ma, mb = (flat(json.loads(t.schema.metadata[b"otod"])) for t in (ta, tb))
    ignored = re.compile(r"(_time_s|utc_time|git_commit|command_line|meta_sha256)$")
    differ += [k for k in sorted(set(ma) | set(mb)) if ma.get(k) != mb.get(k) and not ignored.search(k)]
    return differ


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", required=True, help="B: another otod tree")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--warm", type=int, default=2, help="warm engine runs per process (the fastest counts)")
    p.add_argument("--extra", default="", help="options added to the sweep, e.g. '--schedule cosine'")
    a = p.parse_args(argv)
    sweep = f"{SWEEP} {a.extra}".strip()
    print(f"otod sweep {sweep}; CPU: {cpu_model()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    ns, wall, lines = {"A": [], "B": []}, {"A": [], "B": []}, {}
    for r in range(a.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            for side in ("A", "B") if r % 2 == 0 else ("B", "A"):
                tree = ROOT if side == "A" else a.base
                wall[side].append(whole_command(tree, sweep, os.path.join(tmp, side)))
                line = engine_line(tree, sweep, a.warm)
                ns[side].append(float(re.match(r"([\d.]+) ns", line).group(1)))
                lines.setdefault(side, line.split(", ")[1:4])
                print(f"round {r + 1} {side}: whole command {wall[side][-1]:.2f} s; engine {line}", flush=True)
            differ = records_differ(os.path.join(tmp, "A"), os.path.join(tmp, "B"))
            print(f"round {r + 1} records A vs B: {'identical' if not differ else 'DIFFER in ' + ', '.join(differ)}")
    for name, runs, unit in (("engine ns/lane-it", ns, "ns"), ("whole command", wall, "s")):
        ratios = [b / x for x, b in zip(runs["A"], runs["B"])]
        for side in "AB":
            print(f"{name} {side}: median {statistics.median(runs[side]):.4g} {unit} "
                  f"({', '.join(f'{v:.4g}' for v in runs[side])})")
        print(f"{name} B/A per pair: {', '.join(f'{v:.2f}' for v in ratios)}; median {statistics.median(ratios):.2f}")
    print(f"same engine work (calls, executed, needed): {lines['A'] == lines['B']}; "
          f"load after {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
