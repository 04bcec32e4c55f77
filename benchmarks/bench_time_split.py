"""Benchmark: what the time-split figure's timing of one network costs with and without the fused
value_and_grad program, which the figure does not draw (`otod.cost.profile.profile_one`, ``fused``).

Each side is `profile_one` of one network at the figure's settings (batch 16, sgd, 2 warm-up calls, 25 repeats,
``experiments/cost.toml``), compile included, in this process; the sides alternate (fused first on even rounds).
Prints every run, the medians, the per-pair ratios and the CPU model. Run from the repository root:

    python3 benchmarks/bench_time_split.py --model convnet --rounds 5
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench_regression_order import cpu_model

from otod.cost.models import network
from otod.cost.profile import profile_one


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="convnet")
    p.add_argument("--precision", default="float32")
    p.add_argument("--repeats", type=int, default=25)
    p.add_argument("--rounds", type=int, default=5)
    a = p.parse_args()
    net = network(a.model, depth=8)
    times = {True: [], False: []}
    for r in range(a.rounds):
        for fused in ((True, False) if r % 2 == 0 else (False, True)):
            start = time.perf_counter()
            row = profile_one(net, 16, "sgd", a.precision, warmup=2, repeats=a.repeats, fused=fused)
            times[fused].append(time.perf_counter() - start)
            print(f"round {r + 1} {'fused  ' if fused else 'unfused'}: {times[fused][-1]:.2f} s "
                  f"(forward {row.forward_s * 1e3:.1f} ms, backward {row.backward_s * 1e3:.1f} ms)", flush=True)
    ratios = [f / u for f, u in zip(times[True], times[False])]
    print(f"{a.model} {a.precision}, CPU: {cpu_model()}")
    print(f"fused median {statistics.median(times[True]):.2f} s, unfused {statistics.median(times[False]):.2f} s; "
          f"fused/unfused per pair {', '.join(f'{x:.3f}' for x in ratios)}; median {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
