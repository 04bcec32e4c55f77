"""Benchmark (issue 20, item 6): whole ``otod sweep condition`` processes, cold and warm, against the per-config
optax script, and one checkout against another.

Every run is a fresh process (``python3 -m otod ...``, interpreter start and imports included) into a fresh
folder, timed by the wall clock around ``subprocess.run``. Cold: ``OTOD_COMPILATION_CACHE=off`` (nothing read
from or written to JAX's persistent cache or otod's side caches). Warm: a cache folder that one untimed run of
the same command filled first. The cases, alternated over ``--repeats`` rounds (forward on even rounds, backward
on odd):

* ``otod sweep condition --k 1..100`` (the default sweep: gd, heavy-ball, nesterov, newton, 8 seeds), cold and
  warm, with this checkout and, with ``--before DIR``, with the otod in DIR (e.g. ``git archive HEAD~1 | tar -x
  -C DIR``), so a change is measured against what it changed;
* ``otod sweep condition --k 1..100 --method gd --dim 64 --seeds 8 --basis rotated``, cold and warm, and
  ``benchmarks/optax_loop_condition.py`` on identical work (the same problems, cap and precision; its counts are
  compared with the sweep's records), as ``bench_condition.py`` part 2 does.

Prints every run, the medians, per-pair ratios and the CPU model and load. From the repository root:

    python3 benchmarks/cold_start.py [--repeats 5] [--before DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT = ["sweep", "condition", "--k", "1..100"]
ROTATED = ["sweep", "condition", "--k", "1..100", "--method", "gd", "--dim", "64", "--seeds", "8", "--basis",
           "rotated"]


from otod.core.results import cpu_model  # noqa: E402  (the one copy)


def load() -> str:
    return ", ".join(f"{v:.2f}" for v in os.getloadavg())


def run(cmd, root: Path, cache: str, cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    """Wall seconds of one process; its CPU seconds (user + system, from the children's rusage, less sensitive
    than the wall clock to other processes on a shared machine) in ``CPU[-1]``."""
    env = dict(os.environ, PYTHONPATH=str(root), OTOD_COMPILATION_CACHE=cache)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return seconds, r


CPU: list[float] = []


def rotated_cap() -> tuple[int, str]:
    """The rotated sweep's own cap and precision (the script must run the same)."""
    sys.path.insert(0, str(ROOT))
    from otod.condition.options import sweep_config_from_options

    config = sweep_config_from_options(k="1..100", method="gd", dim=64, seeds=8, basis="rotated")
    return config.resolved_max_iters, "float64" if config.resolved_x64 else "float32"


def sweep_counts(folder: Path) -> dict:
    sys.path.insert(0, str(ROOT))
    from otod.core import results as results_io

    (path,) = glob.glob(str(folder / "condition-*.parquet"))
    r = results_io.load(path)
    return {(float(rec["kappa"]), int(rec["seed"])): int(rec["iterations"]) for rec in r.records}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--before", default=None, help="a folder holding the otod to compare with (PYTHONPATH root)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--only", default=None, help="comma list of case-name prefixes to run (e.g. 'default warm')")
    args = ap.parse_args()
    cap, dtype = rotated_cap()
    py = sys.executable
    script = [py, str(HERE / "optax_loop_condition.py"), "--kmax", "100", "--seeds", "8", "--dim", "64", "--method",
              "gd", "--basis", "rotated", "--max-iters", str(cap), "--dtype", dtype]
    roots = {"now": ROOT} | ({"before": Path(args.before).resolve()} if args.before else {})
    tmp = Path(tempfile.mkdtemp(prefix="otod-cold-"))
    cases = {}
    for name, root in roots.items():
        cases[f"default cold ({name})"] = ([py, "-m", "otod", *DEFAULT], root, "off")
        cases[f"default warm ({name})"] = ([py, "-m", "otod", *DEFAULT], root, str(tmp / f"cache-{name}" / "xla"))
    cases["rotated cold (now)"] = ([py, "-m", "otod", *ROTATED], ROOT, "off")
    cases["rotated warm (now)"] = ([py, "-m", "otod", *ROTATED], ROOT, str(tmp / "cache-now" / "xla"))
    cases["optax script, rotated"] = (script, ROOT, "off")
    if args.only:
        cases = {n: c for n, c in cases.items() if any(n.startswith(p) for p in args.only.split(","))}
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; python {platform.python_version()}; load before {load()}; "
          f"cap {cap}, {dtype}", flush=True)
    for name, (cmd, root, cache) in cases.items():  # fill the warm caches (untimed)
        if "warm" in name:
            run(cmd + ["--out", str(tmp / "fill")], root, cache, tmp)
    times: dict[str, list[float]] = {n: [] for n in cases}
    cpu: dict[str, list[float]] = {n: [] for n in cases}
    mismatches = compared = 0
    for r in range(args.repeats):
        order = list(cases) if r % 2 == 0 else list(cases)[::-1]
        loads = load()
        for name in order:
            cmd, root, cache = cases[name]
            out = tmp / f"r{r}-{len(times[name])}-{name.split()[0]}-{abs(hash(name))}"
            full = cmd + (["--out", str(out)] if "script" not in name else ["--out", str(out) + ".json"])
            seconds, proc = run(full, root, cache, tmp)
            if proc.returncode:
                print(f"{name} exited {proc.returncode}: {(proc.stdout + proc.stderr)[-1500:]}")
                return 1
            times[name].append(seconds)
            cpu[name].append(CPU[-1])
            if name == "optax script, rotated":
                script_counts = json.loads(Path(str(out) + ".json").read_text())["records"]  # [method, κ, seed, n]
                sweep_dir = sorted(tmp.glob(f"r{r}-*-rotated-*"))
                if sweep_dir:
                    mine = sweep_counts(sweep_dir[0])
                    got = {(float(rec[1]), int(rec[2])): int(rec[3]) for rec in script_counts}
                    compared += len(mine)
                    mismatches += sum(got.get(k) != v for k, v in mine.items())
        print(f"  round {r + 1}/{args.repeats} (load {loads} before, {load()} after): "
              + ", ".join(f"{n} {times[n][-1]:.2f} s" for n in order), flush=True)
    print("\n| case | wall s, median | runs (s) | CPU s (user + sys), median | runs (s) |\n|---|---:|---|---:|---|")
    for n, ts in times.items():
        print(f"| {n} | {statistics.median(ts):.2f} | {', '.join(f'{t:.2f}' for t in ts)} | "
              f"{statistics.median(cpu[n]):.2f} | {', '.join(f'{t:.2f}' for t in cpu[n])} |")

    def ratio(a, b, table=None):
        table = times if table is None else table
        pairs = [x / y for x, y in zip(table[a], table[b])]
        return statistics.median(pairs), pairs

    print()
    comparisons = [("optax script, rotated", "rotated cold (now)"), ("optax script, rotated", "rotated warm (now)"),
                   ("default cold (now)", "default warm (now)")]
    if args.before:
        comparisons += [("default cold (before)", "default cold (now)"), ("default warm (before)", "default warm (now)")]
    report = {"cpu": cpu_model(), "times": times, "ratios": {}, "cap": cap, "dtype": dtype,
              "counts_compared": compared, "count_mismatches": mismatches, "load_after": load()}
    report["cpu_seconds"] = cpu
    for a, b in [c for c in comparisons if c[0] in times and c[1] in times]:
        for what, table in (("wall", times), ("CPU", cpu)):
            m, pairs = ratio(a, b, table)
            report["ratios"][f"{what}: {a} / {b}"] = pairs
            print(f"{what}: {a} / {b}: median of per-pair ratios {m:.2f} (pairs {', '.join(f'{p:.2f}' for p in pairs)})")
    print(f"rotated sweep vs optax script iteration counts: {mismatches} mismatches of {compared}; "
          f"load after {load()}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
