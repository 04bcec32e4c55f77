"""Benchmark: lanes across 2 forced CPU devices: shard_map against auto-sharding, and the engine's dealing of
blocks by predicted cost (LPT) against round-robin (issue 11, parts 1 and 6).

Part 1, `shard_map` against auto-sharding, on the benchmarks' own kernel (`gd_lanes.py`: gd on diagonal
quadratics, one lane per κ, log-spaced from 1 to ``--kmax``: very uneven lanes). The same function
``vmap(while_loop)`` over the lanes, the lanes split in two halves across the same 2 devices, compiled two ways:

* A, auto-sharded: ``jit`` of it with the lanes' input and output sharded (``NamedSharding``); XLA's SPMD
  partitioner splits the loop, but the batched loop's predicate (any lane running) is global, so it inserts an
  all-reduce of it into the loop's condition: every trip synchronises the devices and both run until the
  slowest lane anywhere ends;
* B, ``jax.shard_map``: each device runs the loop on its own lanes with its own predicate and stops with them.

Counts are checked identical; A and B alternate over ``--repeats`` pairs (A first in even pairs); medians, per-pair
ratios A/B and, from the compiled text, the all-reduce that A's loop condition holds and B's does not; and the
extra time per trip (A − B) / trips.

Part 2, the engine's `deal` (LPT by predicted cost) against round-robin dealing of the same blocks (the order the
engine used before commit a5f14bf), on the uneven condition sweep ``--sweep-kmax`` (25 log-spaced κ from 1,
gd/heavy-ball/nesterov/newton, d = 100, 8 seeds) run in this process by ``otod.core.sweep.run_sweep``: records
checked identical; the engine's device time (every ``_grid`` call, waited for) and the sweep's wall, medians and
per-pair ratios; and the busiest device's executed loop iterations over an even split (Σ / devices), from each
block's loop count the engine returns (``_grid``'s last output; the engine's loop makes
`otod.core.engine.UNROLL` iterations per while trip, so while trips are these over it).

The whole-process comparison of the sharded condition sweep against one device is `bench_devices.py`.

    python3 benchmarks/bench_sharding.py [--repeats 5] [--kmax 10000] [--lanes 64] [--dim 64] [--json PATH]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

if "--xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=2".strip()
sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402

import gd_lanes  # noqa: E402
from otod.core.results import cpu_model  # noqa: E402

DEVICES = 2


def timed(fn, *args) -> tuple[float, object]:
    """Seconds of one call, waited for, and its result."""
    start = time.perf_counter()
    out = jax.block_until_ready(fn(*args))
    return time.perf_counter() - start, out


def alternate(a, b, repeats: int) -> tuple[list, list]:
    """Run a() and b() ``repeats`` times each, A first in even pairs and B first in odd ones; their results."""
    ra, rb = [], []
    for i in range(repeats):
        for f, sink in ((a, ra), (b, rb)) if i % 2 == 0 else ((b, rb), (a, ra)):
            sink.append(f())
    return ra, rb


def summary(name_a: str, name_b: str, ta: list[float], tb: list[float]) -> dict:
    """Medians, runs and per-pair ratios A/B, printed and returned."""
    ratios = [x / y for x, y in zip(ta, tb)]
    print(f"  {name_a:<28} median {statistics.median(ta):.4f} s  runs {', '.join(f'{x:.4f}' for x in ta)}")
    print(f"  {name_b:<28} median {statistics.median(tb):.4f} s  runs {', '.join(f'{x:.4f}' for x in tb)}")
    print(f"  ratio A/B per pair           {', '.join(f'{r:.2f}' for r in ratios)}  (median "
          f"{statistics.median(ratios):.2f})")
    return {"a": ta, "b": tb, "ratios": ratios, "median_a": statistics.median(ta), "median_b": statistics.median(tb),
            "median_ratio": statistics.median(ratios)}


def loop_all_reduces(compiled_text: str) -> list[str]:
    """The all-reduce instructions of a compiled HLO module, shortened to the op and its operand."""
    return [re.sub(r",\s*metadata=.*", "", line.strip())[:140] for line in compiled_text.splitlines()
            if " all-reduce(" in line]


def shard_map_vs_auto(kmax: float, lanes: int, dim: int, tol: float, repeats: int) -> dict:
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.asarray(jax.devices()[:DEVICES]), ("lanes",))
    kappas = np.geomspace(1.0, kmax, lanes)
    sharding = NamedSharding(mesh, PartitionSpec("lanes"))
    lam = jax.device_put(gd_lanes.eigenvalues(kappas, dim), sharding)
    cap = int(4 * gd_lanes.predicted_count(kmax, tol))

    def solve(l):
        return gd_lanes.solve(l, tol, cap)

    auto = jax.jit(solve, in_shardings=sharding, out_shardings=sharding)
    manual = jax.jit(jax.shard_map(solve, mesh=mesh, in_specs=PartitionSpec("lanes"),
                                   out_specs=PartitionSpec("lanes"), check_vma=False))
    texts = {name: f.lower(lam).compile().as_text() for name, f in (("auto", auto), ("shard_map", manual))}
    counts_a, counts_b = np.asarray(auto(lam)), np.asarray(manual(lam))
    same = bool(np.array_equal(counts_a, counts_b)) and bool((counts_a > 0).all())
    halves = counts_b.reshape(DEVICES, -1)
    trips = int(counts_b.max())
    print(f"Part 1: shard_map vs auto-sharded jit(vmap(while_loop)), {lanes} lanes, κ log-spaced 1..{kmax:g}, d = "
          f"{dim}, gd at 1/L, tol {tol:g}, float32, {DEVICES} CPU devices (lanes split in halves)")
    print(f"  counts identical: {same}; Σ counts {int(counts_b.sum())}; trips (slowest lane) per device: "
          f"{', '.join(str(int(h.max())) for h in halves)}; median lane {int(np.median(counts_b))}")
    for name, text in texts.items():
        found = loop_all_reduces(text)
        print(f"  all-reduce in {name}'s compiled program: {len(found)}" + "".join(f"\n    {f}" for f in found))
    ta, tb = alternate(lambda: timed(auto, lam)[0], lambda: timed(manual, lam)[0], repeats)
    result = summary("A auto-sharded jit(vmap)", "B shard_map", ta, tb)
    per_trip = (result["median_a"] - result["median_b"]) / trips
    print(f"  A − B per trip of the loop: {per_trip * 1e6:.1f} µs (medians over {trips} trips)")
    return {**result, "counts_identical": same, "trips": trips, "sum_counts": int(counts_b.sum()),
            "device_trips_shard_map": [int(h.max()) for h in halves], "extra_per_trip_s": per_trip,
            "all_reduce": {k: loop_all_reduces(t) for k, t in texts.items()}, "kmax": kmax, "lanes": lanes,
            "dim": dim, "tol": tol}


def round_robin(block_costs, devices: int) -> np.ndarray:
    """The blocks dealt in turn (block i to device i mod devices), device-major as `deal` returns them."""
    n = len(block_costs)
    return np.arange(n, dtype=np.int32).reshape(-1, devices).T.reshape(-1)


def lpt_vs_round_robin(kmax: float, repeats: int) -> dict:
    import otod.condition  # noqa: F401  (registers the condition obstacle)
    import otod.core.engine as engine
    from otod.condition.options import condition_sweep
    from otod.condition.quadratic import QuadraticSpec
    from otod.core.sweep import run_sweep

    config = condition_sweep(tuple(float(k) for k in np.geomspace(1.0, kmax, 25)),
                             methods=("gd", "heavy-ball", "nesterov", "newton"), problem=QuadraticSpec(dim=100),
                             seeds=8)
    original_grid, original_deal = engine._grid, engine.deal
    calls: list[dict] = []

    def grid(*args):
        start = time.perf_counter()
        out = jax.block_until_ready(original_grid(*args))
        devices = args[11]
        trips = np.asarray(out[-1], np.int64).reshape(-1)  # device-major: device d's blocks are row d
        per_device = trips.reshape(devices, -1).sum(1)
        calls.append({"seconds": time.perf_counter() - start, "per_device": per_device.tolist()})
        return out

    def run(dealer) -> dict:
        calls.clear()
        engine._grid, engine.deal = grid, dealer
        try:
            with tempfile.TemporaryDirectory() as out:
                start = time.perf_counter()
                results = run_sweep(config, path=Path(out) / "sweep.json")
                wall = time.perf_counter() - start
        finally:
            engine._grid, engine.deal = original_grid, original_deal
        loads = np.asarray([c["per_device"] for c in calls])  # [call, device]
        busiest = float(loads.max(1).sum() / (loads.sum() / loads.shape[1]))
        return {"engine": sum(c["seconds"] for c in calls), "wall": wall, "busiest_over_even": busiest,
                "busiest_trips": int(loads.max(1).sum()), "trips": int(loads.sum()), "calls": len(calls),
                "records": results.records, "devices": results.meta["environment"]["device_count"]}

    run(original_deal), run(round_robin)  # compile (one program: the order is an argument, not static)
    lpt, rr = alternate(lambda: run(original_deal), lambda: run(round_robin), repeats)
    same = all(x["records"] == lpt[0]["records"] for x in lpt + rr)
    print(f"Part 2: engine deal (LPT by predicted cost) vs round-robin, otod condition sweep κ = 1..{kmax:g} (25 "
          f"log-spaced), gd/heavy-ball/nesterov/newton, d = 100, 8 seeds, {lpt[0]['devices']} devices, in process")
    print(f"  records identical: {same}; busiest device's block-loop iterations / even split: LPT "
          f"{lpt[0]['busiest_over_even']:.3f}, round-robin {rr[0]['busiest_over_even']:.3f} (summed over the sweep's "
          f"{lpt[0]['calls']} engine calls; "
          f"Σ over all blocks {lpt[0]['trips']}, busiest device LPT {lpt[0]['busiest_trips']}, round-robin "
          f"{rr[0]['busiest_trips']})")
    out = {"records_identical": same, "trips": lpt[0]["trips"], "calls": lpt[0]["calls"],
           "busiest_over_even": {"lpt": lpt[0]["busiest_over_even"], "round_robin": rr[0]["busiest_over_even"]},
           "busiest_trips": {"lpt": lpt[0]["busiest_trips"], "round_robin": rr[0]["busiest_trips"]}}
    for key, label in (("engine", "engine device time"), ("wall", "run_sweep wall")):
        print(f" {label}:")
        out[key] = summary("A round-robin", "B LPT (deal)", [x[key] for x in rr], [x[key] for x in lpt])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--kmax", type=float, default=1e4, help="largest κ of part 1's lanes")
    parser.add_argument("--lanes", type=int, default=64)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--tol", type=float, default=1e-6)
    parser.add_argument("--sweep-kmax", type=float, default=1e4, help="largest κ of part 2's condition sweep")
    parser.add_argument("--skip-engine", action="store_true", help="part 1 only")
    parser.add_argument("--json", help="write every measurement to this file")
    a = parser.parse_args()
    if a.repeats < 1 or a.lanes < DEVICES or a.lanes % DEVICES or a.dim < 2 or a.kmax < 1 or not 0 < a.tol < 1:
        print("bench_sharding: need --repeats ≥ 1, --lanes a positive even number, --dim ≥ 2, --kmax ≥ 1, "
              "0 < --tol < 1", file=sys.stderr)
        return 2
    if len(jax.devices()) < DEVICES:
        print(f"bench_sharding: JAX sees {len(jax.devices())} device(s), needs {DEVICES}", file=sys.stderr)
        return 2
    print(f"date {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}; CPU: {cpu_model()}, "
          f"{os.cpu_count()} cores; jax {jax.__version__}, devices: {jax.devices()[:DEVICES]}; "
          f"load average before: {os.getloadavg()}")
    report = {"cpu": cpu_model(), "jax": jax.__version__, "load_before": os.getloadavg(),
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat()}
    report["shard_map_vs_auto"] = shard_map_vs_auto(a.kmax, a.lanes, a.dim, a.tol, a.repeats)
    ok = report["shard_map_vs_auto"]["counts_identical"]
    if not a.skip_engine:
        report["lpt_vs_round_robin"] = lpt_vs_round_robin(a.sweep_kmax, a.repeats)
        ok = ok and report["lpt_vs_round_robin"]["records_identical"]
    report["load_after"] = os.getloadavg()
    print(f"load average after: {report['load_after']}")
    if a.json:
        Path(a.json).write_text(json.dumps(report, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
