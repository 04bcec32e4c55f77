"""Benchmark (issue 53, item 1): what reading a net's target check every k steps would buy, and whether replaying
the last window from the previous check recovers the first step below the target exactly.

For the roofline's CNN and transformer rows (`roofline.ROWS`: ``net-cnn``, ``net-transformer``), the sweep is run
once through the command line while its engine calls are captured (`roofline.capture`), then:

* **FLOPs**: XLA's count of one lane's minibatch step and of one full-training-loss check, per call (batch), and
  the stride k = ⌈10 · check / step⌉ at which the check would cost ≤ 10% of the steps' FLOPs; the fraction of the
  lanes' iterations that read the check today (the ``checks`` schedule: every step to 32, then 32 per doubling).
* **run lengths**: the lanes' recorded counts (iterations to target, or to where pruning or divergence stopped
  them).
* **timing**: every captured call again, warm, with the target read every k steps (``Target.check_every``:
  counts rounded up to a multiple of k, the records *not* exact) for each k of ``--every``, the variants
  alternating within each round (forward on even rounds, backward on odd), ``--rounds`` rounds: seconds per
  variant (medians), ns per executed lane-iteration, per-round ratio to k = 1, and how many records moved. This is
  the most a stride could save on these sweeps, before any replay.
* **replay exactness**: on the prefix of every lane's trace read at every step (today's schedule reads every
  step to t = 64), for 400 targets τ spread over the losses seen: the first step with loss ≤ τ (what checking
  every step records) against what a check every k steps followed by a replay of the window since the previous
  check finds (the first step ≤ τ inside the window closed by the first check that reads ≤ τ). They differ
  where the loss dips below τ and comes back above it before the next check: an earlier window's dip that no
  check sees.

    python3 benchmarks/bench_check_stride.py [--rounds 5] [--every 1,4,16] [--rows net-cnn,net-transformer]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import roofline  # noqa: E402  (sets up the devices and this checkout's otod first)
from roofline import capture, lane_cost, load, timed  # noqa: E402

import numpy as np  # noqa: E402


def strided_first_hit(values: np.ndarray, tol: float, k: int) -> int | None:
    """The step a check every k steps plus a replay of the last window finds: the first check c (a multiple of k,
    or the last step) with values[c] ≤ tol, then the first step ≤ tol in (c − k, c]; None where no check is."""
    last = len(values) - 1
    reads = list(range(k, last + 1, k)) + ([last] if last % k else [])
    for c in reads:
        if values[c] <= tol:
            start = c - k if c % k == 0 else last - last % k
            inside = np.flatnonzero(values[start + 1:c + 1] <= tol)
            return start + 1 + int(inside[0])
    return None


def every_step_first_hit(values: np.ndarray, tol: float) -> int | None:
    hit = np.flatnonzero(values <= tol)
    return int(hit[0]) if hit.size else None


def dense_prefixes(solutions) -> list[np.ndarray]:
    """Each lane's trace up to the last checkpoint of the every-step prefix (checkpoints 0, 1, 2, ... in a row),
    finite values only, at least 5 steps."""
    out = []
    for s in solutions:
        points = np.asarray(s.checkpoints)
        dense = int(np.flatnonzero(points != np.arange(len(points)))[0]) if (points != np.arange(len(points))).any() \
            else len(points)
        for row in np.asarray(s.trace):
            v = row[:dense]
            v = v[:int(np.argmax(~np.isfinite(v)))] if (~np.isfinite(v)).any() else v
            if len(v) > 4:
                out.append(v)
    return out


def replay_misses(prefixes, k: int, targets: int = 400) -> tuple[int, int]:
    """(pairs where the strided check with replay records another step than checking every step, pairs) over the
    lanes and ``targets`` values of τ spread over the losses seen (pairs hit at step 0 or never left out)."""
    low, high = min(float(v.min()) for v in prefixes), max(float(v[0]) for v in prefixes)
    taus = np.linspace(low, high, targets).astype(prefixes[0].dtype)
    n = bad = 0
    for v in prefixes:
        for tau in taus:
            exact = every_step_first_hit(v, tau)
            if exact is None or exact == 0:
                continue
            n += 1
            bad += strided_first_hit(v, tau, k) != exact
    return bad, n


def flops_lines(calls) -> list[str]:
    lines = []
    for c in calls:
        cost = lane_cost(c)
        spec = c.args[0]
        ratio = cost["measure_flops"] / cost["step_flops"]
        counts = np.asarray(c.solution.iterations)
        lines.append(f"  B = {int(spec.batch)}: step {cost['step_flops'] / 1e6:.2f} MFLOP, check "
                     f"{cost['measure_flops'] / 1e6:.2f} MFLOP (check/step {ratio:.1f}; k for ≤ 10%: "
                     f"{math.ceil(10 * ratio)}); counts {sorted(counts.tolist())}; read today on "
                     f"{100 * cost['check_fraction']:.0f}% of the iterations, check share of the lane's FLOPs "
                     f"{100 * cost['check_fraction'] * cost['measure_flops'] / cost['flops']:.0f}%")
    return lines


def run_variants(calls, every, rounds: int) -> dict:
    """Seconds, executed and needed lane-iterations per variant per round, alternated; and the records of each."""
    target = calls[0].kwargs["target"]
    variants = {k: dataclasses.replace(target, check_every=k) for k in every}
    records = {}
    for k, tgt in variants.items():  # compile each variant once, untimed; keep its records
        records[k] = [c.run(target=tgt) for c in calls]
    seconds = {k: [] for k in every}
    executed = {}
    for r in range(rounds):
        for k in (every if r % 2 == 0 else every[::-1]):
            s, ex, needed = timed(calls, target=variants[k])
            seconds[k].append(s)
            executed[k] = (ex, needed)
    return {"seconds": seconds, "executed": executed, "records": records}


def moved(base, other) -> tuple[int, int, int]:
    """(lanes whose count differs, whose status differs, lanes) between two variants' solutions."""
    counts = sum(int((np.asarray(a.iterations) != np.asarray(b.iterations)).sum()) for a, b in zip(base, other))
    status = sum(int((np.asarray(a.status) != np.asarray(b.status)).sum()) for a, b in zip(base, other))
    return counts, status, sum(len(a.iterations) for a in base)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--every", default="1,4,16")
    parser.add_argument("--rows", default="net-cnn,net-transformer")
    args = parser.parse_args()
    every = [int(k) for k in args.every.split(",")]
    from otod.core.results import cpu_model

    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; load {load()}")
    for row in args.rows.split(","):
        calls = capture(row)
        print(f"\n{row}: otod sweep {roofline.ROWS[row]}")
        print("\n".join(flops_lines(calls)))
        result = run_variants(calls, every, args.rounds)
        base = np.asarray(result["seconds"][every[0]])
        print(f"  warm engine calls, {args.rounds} rounds alternated (load {load()}):")
        for k in every:
            s = np.asarray(result["seconds"][k])
            ex, needed = result["executed"][k]
            counts, status, lanes = moved(result["records"][every[0]], result["records"][k])
            ratio = base / s
            print(f"    check every {k:>3}: {np.median(s):.3f} s (runs {', '.join(f'{x:.3f}' for x in s)}), "
                  f"{1e9 * np.median(s) / ex:,.0f} ns per executed lane-iteration ({ex} executed, {needed} needed); "
                  f"speed-up vs every 1, per round {', '.join(f'{x:.2f}' for x in ratio)}, median "
                  f"{np.median(ratio):.2f}; records moved: {counts} counts, {status} statuses of {lanes} lanes")
        reference = result["records"][1] if 1 in result["records"] else result["records"][every[0]]
        rises = [np.diff(row[np.isfinite(row)]) for s in reference for row in np.asarray(s.trace)]
        print(f"  the loss rose on {sum(int((d > 0).sum()) for d in rises)} of {sum(d.size for d in rises)} reads "
              "from one read to the next (the reads are every step up to t = 64)")
        prefixes = dense_prefixes(reference)
        for k in (2, 4, 8, 16):
            bad, n = replay_misses(prefixes, k)
            print(f"  replay from the last check, k = {k:>2}: another step than checking every step in {bad} of {n}"
                  f" (lane, τ) pairs ({100 * bad / max(n, 1):.1f}%; {len(prefixes)} lanes, every-step prefixes of "
                  f"{min(len(v) for v in prefixes) - 1}–{max(len(v) for v in prefixes) - 1} steps)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
