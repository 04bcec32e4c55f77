"""The wall time and peak memory of each default command, as a user types it on a fresh machine (issue 36: "default
commands still finish in under a minute on 2 cores; each default command's time is measured").

Each command runs in its own process, with ``--out`` in a fresh temporary folder, first cold (an empty compilation
cache of its own: ``OTOD_COMPILATION_CACHE`` a fresh folder) and then warm (the same cache, a fresh output folder,
so nothing is read back); wall time and peak resident memory come from ``/usr/bin/time -v``. The table lists the
median over ``--repeats`` of each, with the CPU model and the load average before the first run. Run from the
repository root: ``python3 benchmarks/bench_defaults.py [--repeats 3] [--only net,curvature]``.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: Each default command by a short name: the README's first line, then each obstacle's bare sweep and the nets'
#: measurements.
COMMANDS = {
    "condition": ["sweep", "condition", "--k", "1..100"],
    "noise": ["sweep", "noise"],
    "depth": ["sweep", "depth"],
    "toy": ["sweep", "toy"],
    "net": ["sweep", "net"],
    "curvature": ["curvature"],
    "noise-scale": ["noise-scale", "--model", "mlp"],
}


def run_once(args: list[str], cache: Path) -> tuple[float, float, int]:
    """(wall seconds, peak MiB, exit code) of ``otod ARGS --out <fresh folder>`` with the compilation cache at
    ``cache``."""
    with tempfile.TemporaryDirectory() as out:
        env = {**os.environ, "OTOD_COMPILATION_CACHE": str(cache), "PYTHONPATH": str(ROOT)}
        proc = subprocess.run(["/usr/bin/time", "-v", sys.executable, "-m", "otod", *args, "--out", out],
                              capture_output=True, text=True, env=env, cwd=out)
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", proc.stderr)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    parts = [float(p) for p in wall.group(1).split(":")] if wall else [float("nan")]
    seconds = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
    return seconds, (int(rss.group(1)) / 1024 if rss else float("nan")), proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default=",".join(COMMANDS))
    args = parser.parse_args()
    from otod.core.results import cpu_model

    names = [n.strip() for n in args.only.split(",") if n.strip()]
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; load before: {os.getloadavg()[0]:.2f}")
    print(f"{'command':<14}{'cold s':>9}{'warm s':>9}{'peak MiB':>10}  exit  (medians over {args.repeats} runs)")
    for name in names:
        cold, warm, peak, codes = [], [], [], set()
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as cache:
                for bucket in (cold, warm):
                    seconds, mib, code = run_once(COMMANDS[name], Path(cache))
                    bucket.append(seconds)
                    peak.append(mib)
                    codes.add(code)
        print(f"{name:<14}{statistics.median(cold):>9.1f}{statistics.median(warm):>9.1f}"
              f"{statistics.median(peak):>10.0f}  {','.join(map(str, sorted(codes)))}    otod {' '.join(COMMANDS[name])}",
              flush=True)


if __name__ == "__main__":
    main()
