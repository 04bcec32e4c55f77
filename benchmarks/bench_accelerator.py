"""Benchmark: what bounds a sweep on an accelerator, measured on whatever device JAX sees first (issue 11, part 4).

On the benchmarks' own kernel (`gd_lanes.py`, gd on quadratics, float32, one ``jit`` on one device):

1. **Grid growth**: lane-iterations per second of ``vmap(while_loop)`` as the lanes grow from 1 to ``--max-lanes``
   (d = ``--dim`` fixed). Each size runs a fixed number of trips (the tolerance check runs every step but never
   stops a lane), about 10⁷ lane-iterations per size, between 100 and 10⁵ trips. Flat time per trip while the
   lanes grow means the device is not yet full: the trip floor, not the arithmetic, bounds it.
2. **Serial floor**: the time of one ``while_loop`` trip, 1 lane, d = 1: the slope (t(10⁵ trips) − t(10⁴ trips)) /
   (9·10⁴), so the call's own launch and transfer cancel. No sweep's wall can be below trips × this.
3. **Memory bandwidth**: a large dense sweep (``--dense-lanes`` lanes each with its own d × d Hessian,
   ``--dense-dim``; gd x ← x − Hx with f from the same product), bytes per trip = lanes·d²·4 (every H read once;
   the vectors are < 1 %), against the device's copy bandwidth measured on a 256 MiB float32 array (y ← c·y in a
   loop, read + write, `copy_bandwidth`); the ratio is the achieved fraction.
4. **Fixed-K unrolled scan**: the uneven grid (``--lanes`` lanes, κ log-spaced 1..``--kmax``, d = ``--dim``, tol
   1e-6) run with K = 1, 2, 4, 8 gd steps per while trip (a fully unrolled ``lax.scan``; the tolerance is checked
   at every step and the first hit recorded, so the counts are exact and are checked equal to K = 1's). The
   variants run in a rotating order over ``--repeats`` rounds; medians and per-round ratios t(K = 1) / t(K).

Every time is one call, waited for (``block_until_ready``), after a compiling call; medians over ``--repeats``.
Prints the device kind, platform, date, CPU model and load average, and a table; ``--json PATH`` writes the
numbers.

    python3 benchmarks/bench_accelerator.py [--repeats 5] [--max-lanes 100000] [--json PATH]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import gd_lanes  # noqa: E402
from otod.core.results import cpu_model  # noqa: E402

NEVER = -1.0  # a tolerance no lane reaches: the loop runs to its cap


def median_seconds(fn, args, repeats: int) -> tuple[float, list[float]]:
    """Median and every run's seconds of ``fn(*args)`` waited for, after one untimed (compiling) call."""
    jax.block_until_ready(fn(*args))
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        runs.append(time.perf_counter() - start)
    return statistics.median(runs), runs


def fixed_trips(lanes: int, d: int, trips: int, repeats: int) -> float:
    """Median seconds of ``trips`` trips of the gd kernel on ``lanes`` lanes (κ 1..10⁴), the tolerance never met."""
    lam = jax.device_put(gd_lanes.eigenvalues(np.geomspace(1.0, 1e4, lanes), d))
    fn = jax.jit(lambda l: gd_lanes.solve(l, NEVER, trips))
    out = np.asarray(fn(lam))
    assert (out == -1).all(), "a lane met a tolerance no lane can meet"
    return median_seconds(fn, (lam,), repeats)[0]


def grid_growth(max_lanes: int, d: int, repeats: int) -> list[dict]:
    rows, lanes = [], 1
    while lanes <= max_lanes:
        trips = int(min(1e5, max(100, 1e7 // lanes)))
        seconds = fixed_trips(lanes, d, trips, repeats)
        rows.append({"lanes": lanes, "trips": trips, "seconds": seconds, "trip_us": seconds / trips * 1e6,
                     "lane_iterations_per_s": lanes * trips / seconds,
                     "ns_per_lane_iteration": seconds / (lanes * trips) * 1e9})
        lanes *= 10
    return rows


def serial_floor(repeats: int) -> dict:
    short, long = fixed_trips(1, 1, 10_000, repeats), fixed_trips(1, 1, 100_000, repeats)
    return {"t_1e4_s": short, "t_1e5_s": long, "trip_s": (long - short) / 90_000}


def copy_bandwidth(repeats: int, mib: int = 256) -> dict:
    """The device's streaming bandwidth: y ← c·y on a ``mib`` MiB float32 array in a ``fori_loop`` (in place: no
    fresh allocation, whose page faults would be timed too), read + write per trip, the slope between 2 and 12
    trips so the call's own cost cancels."""
    x = jnp.ones(mib * 2**20 // 4, jnp.float32)

    def scaled(trips):
        return jax.jit(lambda a: jax.lax.fori_loop(0, trips, lambda i, y: y * 1.0000001, a))

    short, long = (median_seconds(scaled(n), (x,), repeats)[0] for n in (2, 12))
    return {"mib": mib, "trip_s": (long - short) / 10, "bytes_per_s": 2 * x.nbytes * 10 / (long - short)}


def dense_bandwidth(lanes: int, d: int, trips: int, repeats: int) -> dict:
    h = jax.device_put(gd_lanes.dense_problems(lanes, d, 1e3))
    fn = jax.jit(lambda a: gd_lanes.dense_solve(a, trips))
    seconds, _ = median_seconds(fn, (h,), repeats)
    per_trip = lanes * d * d * 4
    return {"lanes": lanes, "dim": d, "trips": trips, "seconds": seconds, "bytes_per_trip": per_trip,
            "trip_s": seconds / trips, "bytes_per_s": per_trip * trips / seconds}


def unrolled(lanes: int, d: int, kmax: float, repeats: int, ks=(1, 2, 4, 8)) -> dict:
    tol = 1e-6
    lam = jax.device_put(gd_lanes.eigenvalues(np.geomspace(1.0, kmax, lanes), d))
    cap = int(4 * gd_lanes.predicted_count(kmax, tol))
    fns = {k: jax.jit(lambda l, k=k: gd_lanes.solve(l, tol, cap, k)) for k in ks}
    counts = {k: np.asarray(fn(lam)) for k, fn in fns.items()}
    same = all(np.array_equal(c, counts[ks[0]]) for c in counts.values()) and bool((counts[ks[0]] > 0).all())
    runs = {k: [] for k in ks}
    for r in range(repeats):
        for k in ks[r % len(ks):] + ks[:r % len(ks)]:
            start = time.perf_counter()
            jax.block_until_ready(fns[k](lam))
            runs[k].append(time.perf_counter() - start)
    trips = int(counts[ks[0]].max())
    rows = []
    for k in ks:
        ratios = [a / b for a, b in zip(runs[ks[0]], runs[k])]
        rows.append({"k": k, "seconds": statistics.median(runs[k]), "runs": runs[k], "ratios": ratios,
                     "median_ratio": statistics.median(ratios), "while_trips": -(-trips // k)})
    return {"lanes": lanes, "dim": d, "kmax": kmax, "counts_identical": same, "iterations": trips,
            "sum_counts": int(counts[ks[0]].sum()), "rows": rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max-lanes", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--dense-lanes", type=int, default=64)
    parser.add_argument("--dense-dim", type=int, default=512)
    parser.add_argument("--dense-trips", type=int, default=100)
    parser.add_argument("--lanes", type=int, default=64, help="lanes of the fixed-K comparison")
    parser.add_argument("--kmax", type=float, default=1000.0, help="largest κ of the fixed-K comparison")
    parser.add_argument("--json", help="write every measurement to this file")
    a = parser.parse_args()
    if (a.repeats < 1 or a.max_lanes < 1 or a.dim < 2 or a.dense_lanes < 1 or a.dense_dim < 2 or a.dense_trips < 1
            or a.lanes < 1 or a.kmax < 1):
        print("bench_accelerator: need --repeats, --max-lanes, --dense-lanes, --dense-trips, --lanes ≥ 1, --dim and "
              "--dense-dim ≥ 2, --kmax ≥ 1", file=sys.stderr)
        return 2
    device = jax.devices()[0]
    now = datetime.datetime.now(datetime.timezone.utc)
    report = {"date": now.isoformat(), "device_kind": device.device_kind, "platform": device.platform,
              "device_count": jax.device_count(), "cpu": cpu_model(), "jax": jax.__version__,
              "load_before": os.getloadavg()}
    print(f"date {now:%Y-%m-%d %H:%M UTC}; device: {device.device_kind} ({device.platform}, {jax.device_count()} "
          f"device(s), one used); CPU: {cpu_model()}, {os.cpu_count()} cores; jax {jax.__version__}; "
          f"load average before: {report['load_before']}")

    report["serial_floor"] = floor = serial_floor(a.repeats)
    print(f"\nserial floor (1 lane, d = 1): 10⁴ trips {floor['t_1e4_s'] * 1e3:.2f} ms, 10⁵ trips "
          f"{floor['t_1e5_s'] * 1e3:.2f} ms: one while trip {floor['trip_s'] * 1e6:.3f} µs")

    report["grid_growth"] = rows = grid_growth(a.max_lanes, a.dim, a.repeats)
    print(f"\ngrid growth (d = {a.dim}, gd, tolerance checked every step):")
    print("| lanes | trips | s | µs per trip | lane-iterations/s | ns per lane-iteration |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['lanes']} | {r['trips']} | {r['seconds']:.4f} | {r['trip_us']:.2f} | "
              f"{r['lane_iterations_per_s']:.3g} | {r['ns_per_lane_iteration']:.3g} |")

    report["copy"] = copy = copy_bandwidth(a.repeats)
    report["dense"] = dense = dense_bandwidth(a.dense_lanes, a.dense_dim, a.dense_trips, a.repeats)
    dense["fraction_of_copy"] = dense["bytes_per_s"] / copy["bytes_per_s"]
    print(f"\ncopy bandwidth ({copy['mib']} MiB float32, y ← c·y in place, read + write): "
          f"{copy['bytes_per_s'] / 1e9:.1f} GB/s")
    print(f"dense sweep ({dense['lanes']} lanes × H {dense['dim']}², {dense['bytes_per_trip'] / 2**20:.0f} MiB read "
          f"per trip, {dense['trips']} trips): {dense['trip_s'] * 1e3:.3f} ms per trip, "
          f"{dense['bytes_per_s'] / 1e9:.1f} GB/s = {dense['fraction_of_copy']:.2f} of the copy bandwidth")

    report["unrolled"] = unr = unrolled(a.lanes, a.dim, a.kmax, a.repeats)
    print(f"\nfixed-K unrolled scan ({unr['lanes']} lanes, κ 1..{unr['kmax']:g}, d = {unr['dim']}, tol 1e-6; slowest "
          f"lane {unr['iterations']} iterations, Σ {unr['sum_counts']}); counts identical to K = 1: "
          f"{unr['counts_identical']}")
    print("| K | while trips | median s | t(K=1)/t(K) per round | median ratio |")
    print("|---:|---:|---:|---|---:|")
    for r in unr["rows"]:
        print(f"| {r['k']} | {r['while_trips']} | {r['seconds']:.4f} | {', '.join(f'{x:.2f}' for x in r['ratios'])} "
              f"| {r['median_ratio']:.2f} |")
    report["load_after"] = os.getloadavg()
    print(f"\nload average after: {report['load_after']}")
    if a.json:
        Path(a.json).write_text(json.dumps(report, indent=1))
    return 0 if unr["counts_identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
