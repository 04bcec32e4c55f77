"""Benchmark: a sweep on every core (one JAX host device per core, blocks dealt by shard_map) against one device.

Runs the same ``otod sweep condition`` in fresh processes with ``OTOD_CPU_DEVICES=1`` (A) and with the default,
one device per core (B), alternating A and B over ``--repeats`` pairs (A first in even pairs, B first in odd
ones), each in its own empty folder with a warm compilation cache (so the comparison is the run, not XLA's
compile). Reads from each results file the sweep's run time (its chunks' wall time, compile excluded), wall time
and device count, checks that A's and B's records are identical, and prints medians, per-pair ratios A/B and the
CPU model and load average. Exit status 1 when the records differ.

    python3 benchmarks/bench_devices.py [--repeats 5] [--sweep "--k 1..1000:40:log --seeds 16 --method gd,nesterov"]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from otod.core.results import cpu_model


def run(args: str, devices: int | None, cache: str) -> dict:
    env = {**os.environ, "OTOD_COMPILATION_CACHE": cache}
    env.pop("XLA_FLAGS", None)
    if devices is not None:
        env["OTOD_CPU_DEVICES"] = str(devices)
    else:
        env.pop("OTOD_CPU_DEVICES", None)
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([sys.executable, "-m", "otod", "sweep", "condition", *args.split(), "--no-plot", "--out", out],
                       env=env, check=True, capture_output=True, text=True)
        payload = json.loads(next(Path(out).glob("*.json")).read_text())
    meta = payload["meta"]
    return {"run": meta["run_time_s"], "wall": meta["wall_time_s"], "devices": meta["environment"]["device_count"],
            "records": payload["records"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sweep", default="--k 1..1000:40:log --seeds 16 --method gd,nesterov")
    a = parser.parse_args()
    if a.repeats < 1:
        print("bench_devices: --repeats must be ≥ 1", file=sys.stderr)
        return 2
    cache = tempfile.mkdtemp(prefix="otod-bench-cache-")
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; load average before: {os.getloadavg()}")
    print(f"sweep: otod sweep condition {a.sweep} --no-plot (compilation cache warmed first)")
    run(a.sweep, 1, cache), run(a.sweep, None, cache)  # warm the cache for both programs' shapes
    one, every = [], []
    for i in range(a.repeats):
        order = [(1, one), (None, every)] if i % 2 == 0 else [(None, every), (1, one)]
        for devices, sink in order:
            sink.append(run(a.sweep, devices, cache))
    same = all(x["records"] == one[0]["records"] for x in one + every)
    print(f"records identical across every run: {same}; devices: one = {one[0]['devices']}, "
          f"every core = {every[0]['devices']}")
    for key in ("run", "wall"):
        ratios = [x[key] / y[key] for x, y in zip(one, every)]
        print(f"{key:>4} s   one device: median {statistics.median(x[key] for x in one):.3f} "
              f"({', '.join(f'{x[key]:.3f}' for x in one)})   every core: median "
              f"{statistics.median(x[key] for x in every):.3f} ({', '.join(f'{x[key]:.3f}' for x in every)})   "
              f"one/every per pair: {', '.join(f'{r:.2f}' for r in ratios)}, median {statistics.median(ratios):.2f}")
    print(f"load average after: {os.getloadavg()}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
