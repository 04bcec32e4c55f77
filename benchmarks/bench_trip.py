"""Benchmark (issue 38, item 1): iterations per loop trip (K) and lanes per block, per device kind.

Each row (`roofline.ROWS`) is run once through the command line, its engine calls captured (`roofline.capture`:
that run compiles with the cost model's own choice, `otod.core.device_costs`). Then each setting (K, most lanes a
block; ``cap`` keeps the block the plan chose) replays the row's calls through ``iterations_to_target``:

* **first**: the first replay, compile included (``OTOD_COMPILATION_CACHE=off`` via roofline: every setting
  compiles its own programs, since K and the block's lane count are part of the program's key);
* **run**: then ``--repeats`` rounds, the settings alternated (forward on even rounds, backward on odd), each
  timed warm; the median per setting, and per round its ratio to the first setting's time that round;
* **records**: every lane's iterations, hits, status, final metric and lr against the first setting's, as
  the count of lanes whose record differs (0 is what K must give; a block size may move float32 roundings on a
  device that batches products, which the count shows).

    python3 benchmarks/bench_trip.py --rows condition-eigen,toy --settings 1:128,16:128,16:8192 --repeats 3 \\
        --json trip.json

The first setting is the baseline (the CPU's old engine: ``1:128``). Each row's results are printed and written
to the JSON as they come, so a run cut off keeps what it finished.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import roofline  # noqa: E402  (sets up the devices, the checkout's otod and OTOD_COMPILATION_CACHE=off)

import jax  # noqa: E402
import numpy as np  # noqa: E402

from otod.core.device_costs import trip_costs  # noqa: E402

FIELDS = ("iterations", "hits", "status", "final_metric", "learning_rate")


def parse_settings(text: str) -> list[tuple[int, int | None]]:
    """``K:LANES`` pairs, comma-separated; LANES ``cap`` keeps the captured block."""
    out = []
    for item in text.split(","):
        k, lanes = item.split(":")
        out.append((int(k), None if lanes == "cap" else int(lanes)))
    return out


def override(setting) -> dict:
    k, lanes = setting
    return {"unroll": k} | ({} if lanes is None else {"block_lanes": lanes})


def differing_lanes(a, b) -> int:
    """Lanes whose record differs in any field (NaN equal to NaN)."""
    differ = np.zeros(len(a.iterations), bool)
    for f in FIELDS:
        x, y = np.asarray(getattr(a, f)), np.asarray(getattr(b, f))
        same = np.isclose(x, y, rtol=0, atol=0, equal_nan=True) if x.dtype.kind == "f" else x == y
        differ |= ~(same.reshape(len(differ), -1).all(axis=1))
    return int(differ.sum())


def replay(calls, setting) -> tuple[float, list]:
    t0 = time.perf_counter()
    solutions = [c.run(**override(setting)) for c in calls]
    jax.block_until_ready([s.iterations for s in solutions])
    return time.perf_counter() - t0, solutions


def bench_row(name: str, settings, repeats: int) -> dict:
    t0 = time.perf_counter()
    calls = roofline.capture(name)
    captured = sorted({int(c.kwargs.get("block_lanes") or 0) for c in calls})
    print(f"{name}: {len(calls)} engine calls, captured blocks {captured} lanes ({time.perf_counter() - t0:.1f} s)",
          flush=True)
    first, base, differ, executed, needed = {}, None, {}, {}, {}
    for s in settings:
        seconds, sols = replay(calls, s)
        first[s] = seconds
        base = sols if base is None else base
        differ[s] = sum(differing_lanes(a, b) for a, b in zip(base, sols))
        executed[s] = sum(int(x.lane_iterations) for x in sols)
        needed[s] = sum(int(np.asarray(x.iterations, np.int64).sum()) for x in sols)
        print(f"  K {s[0]:>2}, block {s[1] or 'cap'}: first {seconds:.2f} s, executed {executed[s]:,}, "
              f"records differing {differ[s]}", flush=True)
    runs = {s: [] for s in settings}
    for r in range(repeats):
        for s in (settings if r % 2 == 0 else settings[::-1]):
            runs[s].append(replay(calls, s)[0])
    rows = []
    for s in settings:
        ratios = [b / x for b, x in zip(runs[settings[0]], runs[s])]
        rows.append({"unroll": s[0], "block_lanes": s[1] or "cap", "first_s": first[s],
                     "median_s": statistics.median(runs[s]), "runs_s": runs[s],
                     "speedup_per_round": ratios, "median_speedup": statistics.median(ratios),
                     "executed": executed[s], "needed": needed[s], "differing_lanes": differ[s],
                     "lanes": int(sum(len(x.iterations) for x in base))})
        print(f"  K {s[0]:>2}, block {s[1] or 'cap'}: median {rows[-1]['median_s']:.3f} s, "
              f"{rows[-1]['median_speedup']:.2f}× the first setting (rounds {', '.join(f'{x:.2f}' for x in ratios)})",
              flush=True)
    return {"calls": len(calls), "captured_block_lanes": captured, "settings": rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="condition-eigen,toy,depth,net")
    parser.add_argument("--settings", default="1:128,4:128,16:128,1:8192,16:8192")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    platform = jax.devices()[0].platform
    model = trip_costs(platform)
    report = {"cpu": roofline.cpu_model(), "device_kind": jax.devices()[0].device_kind, "platform": platform,
              "jax": jax.__version__, "cost_model": vars(model), "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
              "load_before": roofline.load(), "rows": {}}
    print(f"device {report['device_kind']} ({platform}), jax {jax.__version__}, CPU {report['cpu']}; cost model "
          f"{model}", flush=True)
    settings = parse_settings(args.settings)
    for name in args.rows.split(","):
        report["rows"][name] = bench_row(name, settings, args.repeats)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
