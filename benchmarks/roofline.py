"""Benchmark (issue 20, item 1): a roofline row per obstacle sweep.

Each row is one ``otod sweep`` command line (ROWS), run once in this process through the command line itself
(``otod.cli.main``, ``--no-plot``, into a temporary folder, ``OTOD_COMPILATION_CACHE=off``) while every call the
sweep sends with ``otod.core.engine.dispatch`` is captured (its arguments, as the sweep made them, and the
solution ``collect`` reads back). That run compiles every program; it is not timed. Then, ``--repeats`` rounds,
alternating the order of the rows (forward on even rounds, backward on odd), each row's captured calls are run
again one after another through ``iterations_to_target``, each on the device it ran on, warm (no compilation:
checked), and timed with ``time.perf_counter`` around the calls (host-side padding, dispatch and the copy back
included; the sweep's planning, records, results file and analysis not). Since chunks run side by side (one
single-device program per device) a call runs on one device, so ns per lane-iteration is one device's, where
the tables before it timed calls spread over both devices. Per row:

* **FLOPs and bytes per lane-iteration**: XLA's cost analysis (`otod.core.xla.compiled_cost`) of one lane's
  iteration as the engine runs it, compiled on its own from abstract shapes: the family's dynamics
  (``advance``: the step and the metric) for one lane, with the per-step key's ``fold_in`` where the family is
  stochastic; the engine's own book-keeping (hits, status, stall, pruning; a few scalar selects per lane) is not
  in it. Where the dynamics split the step from the metric (a net's minibatch step against its full training
  loss, read on the ``checks`` schedule), the count is step + measure × the fraction of iterations that read the
  metric, that fraction taken from the lanes' own counts (Σ over lanes of the checks in 1..count / Σ counts).
  Weighted over a row's calls by each call's executed lane-iterations. Bytes are XLA's "bytes accessed" for one
  lane alone: constants a lane shares with others (a seed's rotation, a net's data) count in full, so for shared
  constants they overstate what the lanes together stream from memory.
* **ns per executed lane-iteration**: the timed seconds / Σ ``Solution.lane_iterations`` (each block's trips ×
  its lanes, padding included), median over the rounds.
* **executed/needed**: Σ ``Solution.lane_iterations`` / Σ of the lanes' iteration counts.
* **the machine's bounds**, measured here in every round: the float32 FLOP rate of a jitted 2048×2048 matmul
  and the bandwidth of a jitted y = 2x over 256 MiB (read + write), each on one device alone and on every device
  at once (one per core, as ``otod sweep`` runs, via ``shard_map``); the faster of the two is the bound. A row is
  FLOP-bound when its FLOPs/byte exceed peak FLOP/s ÷ bandwidth, else bandwidth-bound; "% of bound" is the
  measured rate against the binding bound: FLOPs/ns ÷ peak, or bytes/ns ÷ bandwidth.

``--experiments`` adds the measurements behind the "what bounds it" claims (see `experiments`).

    python3 benchmarks/roofline.py [--repeats 5] [--rows condition-eigen,net] [--experiments] [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # this checkout's otod
os.environ["OTOD_COMPILATION_CACHE"] = "off"

from otod.core import devices  # noqa: E402

devices.use_every_core()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import otod.core.engine as engine  # noqa: E402
from otod.core.compilation_cache import count_compilations  # noqa: E402
from otod.core.dynamics import optax_dynamics  # noqa: E402
from otod.core.precision import exact_float32  # noqa: E402
from otod.core.xla import compiled_cost, has_while_loop  # noqa: E402

ROWS = {
    "condition-eigen": "condition --k 1..100",
    "condition-rotated": "condition --k 1..100 --basis rotated",
    "depth": "depth --depth 4,8 --init xavier --seeds 8",
    "toy": "toy",
    "noise-simulate": "noise --mode simulate --dim 100 --batch 1..256:9:log --method sgd",
    "regression": "noise --problem regression --batch 1..256:9:log --method sgd",
    "net": "net",
    # issue 38 item 4e: the larger network workloads, each a short sweep (two batches, two seeds, three step sizes)
    "net-cnn": "net --model cnn --batch 16,128 --seeds 2 --lr-grid 0.03,0.1,0.3 --target 1.0 --no-predict",
    "net-transformer": "net --model otod.nets.model.zoo:transformer --batch 16,128 --seeds 2 --lr-grid 0.3,1,3 "
                       "--target 3.1 --no-predict",
}


from otod.core.results import cpu_model  # noqa: E402  (the one copy)


def load() -> str:
    return ", ".join(f"{v:.2f}" for v in os.getloadavg())


class Call:
    """One captured ``iterations_to_target`` call: its arguments and whether x64 was on."""

    def __init__(self, args, kwargs):
        self.args, self.kwargs = args, kwargs
        self.x64 = bool(jax.config.jax_enable_x64)
        self.solution = None

    def run(self, **override):
        with jax.enable_x64(self.x64), exact_float32():  # the sweep's own arithmetic (`otod.core.precision`)
            return ORIGINAL(*self.args, **{**self.kwargs, **override})


ORIGINAL = engine.iterations_to_target
ORIGINAL_DISPATCH, ORIGINAL_COLLECT = engine.dispatch, engine.collect
CAPTURED: list[Call] = []
SENT: dict[int, Call] = {}


def capturing_dispatch(*args, **kwargs):
    """The sweep sends its chunks with `engine.dispatch` and reads them back with `engine.collect` (one
    single-device program per device, chunks side by side): each call is kept with its arguments, its solution
    attached when it is collected, and replayed through `iterations_to_target` on the device it ran on."""
    sent = ORIGINAL_DISPATCH(*args, **kwargs)
    call = Call(args, kwargs)
    CAPTURED.append(call)
    SENT[id(sent)] = call
    return sent


def capturing_collect(sent):
    solution = ORIGINAL_COLLECT(sent)
    SENT.pop(id(sent)).solution = solution
    return solution


def capture(row: str, keep: str | None = None) -> list[Call]:
    """Run the row's sweep through the command line (compiling everything) and return its engine calls; with
    ``keep``, the sweep's results file is written into ``keep/<row>`` (to compare one device's records with
    another's), else into a temporary folder."""
    from otod.cli import main

    CAPTURED.clear()
    engine.dispatch, engine.collect = capturing_dispatch, capturing_collect
    folder = contextlib.nullcontext(os.path.join(keep, row)) if keep else tempfile.TemporaryDirectory()
    try:
        with folder as out, contextlib.redirect_stdout(open(os.devnull, "w")):
            try:
                main.main(args=["sweep", *ROWS[row].split(), "--no-plot", "--out", out], standalone_mode=False)
            except SystemExit as e:
                if e.code not in (0, None):
                    raise RuntimeError(f"otod sweep {ROWS[row]} exited {e.code}") from None
    finally:
        engine.dispatch, engine.collect = ORIGINAL_DISPATCH, ORIGINAL_COLLECT
    return list(CAPTURED)


def check_fraction(checks, counts, check_every: int) -> float:
    """Fraction of the lanes' iterations 1..count that read the metric under ``checks`` and ``check_every``."""
    counts = np.asarray(counts, np.int64)
    top = int(counts.max()) if counts.size else 0
    if top <= 0:
        return 1.0
    t = np.arange(1, top + 1)
    reads = np.asarray(jax.jit(jax.vmap(checks))(jnp.asarray(t, jnp.int32))) & (t % check_every == 0)
    cumulative = np.concatenate([[0], np.cumsum(reads)])
    return float(cumulative[counts].sum() / max(counts.sum(), 1))


def lane_cost(call: Call) -> dict:
    """XLA's count of one lane's iteration of this call's program (see module docstring)."""
    spec, members = call.args[0], tuple(call.args[1])
    points, lrs = call.args[2], call.args[4]
    kw = call.kwargs
    family = spec.family()
    dynamics = (family.dynamics or optax_dynamics)(family, members, kw.get("options"), kw.get("relative_lr", True))
    with jax.enable_x64(call.x64), exact_float32():
        dtype = np.float64 if call.x64 else np.float32
        point = {k: dtype(np.asarray(v)[0]) for k, v in points.items()}
        drawn = jax.tree.map(lambda a: np.asarray(a)[0], kw["draws"])
        m = np.int32(np.asarray(kw.get("method_indices", [0]))[0])
        lane = jax.eval_shape(dynamics.set_up, point, drawn, dtype(np.asarray(lrs)[0]), m)
        key = jax.eval_shape(lambda: jax.random.PRNGKey(0))
        t = jax.ShapeDtypeStruct((), jnp.int32)

        def keyed(k, t):
            return jax.random.fold_in(k, t) if dynamics.stochastic else k

        split = dynamics.measure is not None and dynamics.checks is not None and family.stall != "fixed-point"
        if split:
            def step(c, s, k, t):
                return dynamics.step(c, s, keyed(k, t), t)  # t: the block's count too (a net redraws its epoch order)

            step_cost = compiled_cost(step, lane.constants, lane.carry, key, t)
            measure_cost = compiled_cost(dynamics.measure, lane.constants, lane.carry)
            loops = has_while_loop(step, lane.constants, lane.carry, key, t) or has_while_loop(
                dynamics.measure, lane.constants, lane.carry)
            target = kw.get("target")
            fraction = check_fraction(dynamics.checks, call.solution.iterations, target.check_every if target else 1)
            return {"flops": step_cost.flops + fraction * measure_cost.flops,
                    "transcendentals": step_cost.transcendentals + fraction * measure_cost.transcendentals,
                    "bytes": step_cost.bytes_accessed + fraction * measure_cost.bytes_accessed,
                    "step_flops": step_cost.flops, "step_bytes": step_cost.bytes_accessed,
                    "measure_flops": measure_cost.flops, "measure_bytes": measure_cost.bytes_accessed,
                    "check_fraction": fraction, "while_loop": loops}

        def advance(c, s, k, t):
            return dynamics.advance(c, s, keyed(k, t))

        cost = compiled_cost(advance, lane.constants, lane.carry, key, t)
        return {"flops": cost.flops, "transcendentals": cost.transcendentals, "bytes": cost.bytes_accessed,
                "while_loop": has_while_loop(advance, lane.constants, lane.carry, key, t)}


def timed(calls: list[Call], per_call: list | None = None, **override) -> tuple[float, int, int]:
    """(seconds, executed lane-iterations, needed lane-iterations) of running the calls again; with
    ``per_call``, each call's own (seconds, executed, needed) appended to it."""
    total = [0.0, 0, 0]
    for c in calls:
        t0 = time.perf_counter()
        s = c.run(**override)
        one = (time.perf_counter() - t0, int(s.lane_iterations), int(np.asarray(s.iterations, np.int64).sum()))
        if per_call is not None:
            per_call.append(one)
        total = [a + b for a, b in zip(total, one)]
    return tuple(total)


def median_seconds(fn, repeats: int = 5) -> float:
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def machine_bounds() -> dict:
    """float32 FLOP/s of a 2048² matmul; bytes/s of x ← 2x in place (the buffer donated, so no page is touched
    for the first time) over 256 MiB (memory) and, 2,000 times in one ``fori_loop``, over 256 KiB (cache); each on
    one device alone and, where there are more, on every device at once (``shard_map``)."""
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    n, words, small, loops = 2048, 64 * 2 ** 20, 64 * 2 ** 10, 2000
    devs = jax.local_devices()
    k = len(devs)
    a = jax.random.normal(jax.random.PRNGKey(0), (n, n), jnp.float32)
    matmul = jax.jit(lambda a: a @ a)
    scale = jax.jit(lambda x: 2.0 * x, donate_argnums=0)
    cached = jax.jit(lambda x: jax.lax.fori_loop(0, loops, lambda i, x: x * 0.5 + 1.0, x), donate_argnums=0)
    buffers = {"big": jnp.ones((words,), jnp.float32), "small": jnp.ones((small,), jnp.float32)}

    def stream(fn, name):
        def go():
            buffers[name] = fn(buffers[name])
            return buffers[name]
        go()
        return go

    out = {"devices": k, "flops_one": 2 * n ** 3 / median_seconds(lambda: matmul(a)),
           "bytes_one": 2 * 4 * words / median_seconds(stream(scale, "big")),
           "cache_one": loops * 2 * 4 * small / median_seconds(stream(cached, "small"))}
    if k > 1:
        mesh = Mesh(np.asarray(devs), ("d",))
        spread = NamedSharding(mesh, PartitionSpec("d"))

        def per_device(fn):
            return jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=PartitionSpec("d"), out_specs=PartitionSpec("d")),
                           donate_argnums=0)

        aa = jax.device_put(jnp.stack([a] * k), spread)
        bmm = jax.jit(jax.shard_map(lambda a: a @ a, mesh=mesh, in_specs=PartitionSpec("d"),
                                    out_specs=PartitionSpec("d")))
        buffers["big"] = jax.device_put(jnp.ones((words,), jnp.float32), spread)
        buffers["small"] = jax.device_put(jnp.ones((k * small,), jnp.float32), spread)
        jax.block_until_ready(bmm(aa))
        out["flops_all"] = k * 2 * n ** 3 / median_seconds(lambda: bmm(aa))
        out["bytes_all"] = 2 * 4 * words / median_seconds(stream(per_device(lambda x: 2.0 * x), "big"))
        out["cache_all"] = k * loops * 2 * 4 * small / median_seconds(
            stream(per_device(lambda x: jax.lax.fori_loop(0, loops, lambda i, x: x * 0.5 + 1.0, x)), "small"))
    for key in ("flops", "bytes", "cache"):
        out[key] = max(out[f"{key}_one"], out.get(f"{key}_all", 0.0))
    return out


def net_variant(spec, name: str, checks=None, in_order: bool = False):
    """The net ``spec`` as another spec (so its programs compile and cache apart from the sweep's) whose family
    reads the metric on ``checks`` and, with ``in_order``, takes step t's minibatch as the examples
    [pB, (p + 1)B) in their stored order (no permutation, so no sort); the records it gives are not the sweep's."""
    import dataclasses

    base = type(spec)

    def family(self):
        fam = base.family(self)
        if checks is not None:
            fam = fam._replace(checks=checks)
        if in_order:
            x_np, y_np = self.training_arrays(np.float64)
            n, batch, labels = x_np.shape[0], int(self.batch), self.dataset().classes > 0

            def gradient(p, params, step):
                dtype = jax.tree.leaves(params)[0].dtype
                x = jnp.asarray(x_np, dtype)
                y = jnp.asarray(y_np, jnp.int32) if labels else jnp.asarray(y_np, dtype)
                t = jnp.asarray(step.t).astype(jnp.int32)
                per_epoch = max(1, n // batch)
                idx = (t - (t // per_epoch) * per_epoch) * batch + jnp.arange(batch)
                return jax.grad(self.mean_loss)(params, x[idx], y[idx], p["residual"])

            fam = fam._replace(gradient=gradient)
        return fam

    cls = dataclasses.make_dataclass(f"Net_{name}", [("variant", str, dataclasses.field(default=name))],
                                     bases=(base,), frozen=True, namespace={"family": family})
    return cls(**{f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)})


def variant_calls(calls: list[Call], name: str, **how) -> list[Call]:
    out = []
    for c in calls:
        v = Call((net_variant(c.args[0], name, **how),) + tuple(c.args[1:]), c.kwargs)
        v.x64 = c.x64
        out.append(v)
    return out


#: The net experiments' cap: every lane runs exactly this many iterations (the metric is never read).
NET_CAP = 100


def per_call_medians(rounds: list[list], calls: list[Call]) -> list[dict]:
    """Per call: its lanes' point (e.g. the batch size of a net call) and the median ns per executed
    lane-iteration over the rounds."""
    out = []
    for i, c in enumerate(calls):
        ns = [1e9 * r[i][0] / max(r[i][1], 1) for r in rounds]
        out.append({"spec": repr(c.args[0])[:200], "ns": statistics.median(ns), "executed": rounds[0][i][1],
                    "needed": rounds[0][i][2]})
    return out


def experiments(rows: dict[str, list[Call]], report: dict, repeats: int, lanes_rows: list[str]) -> None:
    """Measurements behind the "what bounds it" claims, alternated over ``repeats`` rounds (warm: each variant
    is run once, compiling, before the rounds):

    * lanes per block (``lanes_rows``): the row's calls with at most 8 lanes per block (one point where a point
      is more) against the sweep's own blocks: the fixed cost of a loop trip shared by fewer lanes;
    * the net's step (its own calls, capped at `NET_CAP` iterations, timed call by call, i.e. batch by batch): the
      metric never read (every lane runs to the cap), and never read with the minibatch taken in order (no
      permutation, so no sort): against the sweep's own calls (per batch, in the main rounds), the cost of the
      step, of the amortised check, and of the sort inside the step.
    """
    variants: dict[str, tuple[list[Call], dict]] = {}
    for name in lanes_rows:
        if name in rows:
            variants[f"{name} / 8 lanes per block"] = (rows[name], {"block_lanes": 8})
            variants[f"{name} / own blocks"] = (rows[name], {})
    if "net" in rows:
        never = lambda t: jnp.asarray(t) < 0  # noqa: E731
        capped = {"max_iters": NET_CAP}
        net = rows["net"]
        variants[f"net / cap {NET_CAP}, metric never read"] = (variant_calls(net, "never", checks=never), capped)
        variants[f"net / cap {NET_CAP}, metric never read, minibatch in order (no sort)"] = (
            variant_calls(net, "never_in_order", checks=never, in_order=True), capped)
    names = list(variants)
    for name in names:
        t0 = time.perf_counter()
        timed(variants[name][0], **variants[name][1])
        print(f"  warmed {name} ({time.perf_counter() - t0:.1f} s)", flush=True)
    out: dict[str, list] = {n: [] for n in names}
    calls_out: dict[str, list] = {n: [] for n in names}
    for r in range(repeats):
        for name in (names if r % 2 == 0 else names[::-1]):
            calls_out[name].append([])
            out[name].append(timed(variants[name][0], calls_out[name][-1], **variants[name][1]))
            s, e, _ = out[name][-1]
            print(f"  experiment round {r + 1} (load {load()}): {name}: {s:.3f} s, {1e9 * s / max(e, 1):.1f} ns per "
                  "lane-iteration", flush=True)
    report["experiments"] = {}
    for name in names:
        runs = out[name]
        ns = [1e9 * s / max(e, 1) for s, e, _ in runs]
        report["experiments"][name] = {"ns": statistics.median(ns), "runs_ns": ns, "executed": runs[0][1],
                                       "needed": runs[0][2],
                                       "per_call_ns": per_call_medians(calls_out[name], variants[name][0])}


def capture_rows(names, keep) -> tuple[dict, dict, dict]:
    """Each row's engine calls captured from its command (`capture`), with its per-call costs (`lane_cost`) and
    their mean weighted by executed lane-iterations; each row is called once untimed after the capture."""
    rows, costs, per_call_costs = {}, {}, {}
    for name in names:
        t0 = time.perf_counter()
        rows[name] = capture(name, keep)
        cost = [lane_cost(c) for c in rows[name]]
        per_call_costs[name] = cost
        weights = np.asarray([c.solution.lane_iterations for c in rows[name]], float)
        w = weights / weights.sum()
        costs[name] = {k: float(sum(wi * ci[k] for wi, ci in zip(w, cost)))
                       for k in cost[0] if isinstance(cost[0][k], float)}
        costs[name]["while_loop"] = any(c["while_loop"] for c in cost)
        costs[name]["calls"] = len(rows[name])
        costs[name]["block_lanes"] = sorted({int(c.kwargs.get("block_lanes", engine.BLOCK_LANES))
                                             for c in rows[name]})
        print(f"captured {name}: {len(rows[name])} engine calls, blocks of {costs[name]['block_lanes']} lanes, "
              f"{costs[name]['flops']:.4g} FLOPs and {costs[name]['bytes']:.4g} bytes per lane-iteration, "
              f"{int(weights.sum())} executed lane-iterations ({time.perf_counter() - t0:.1f} s)", flush=True)
        timed(rows[name])  # the first call after the sweep may still load or tune something: untimed
    return rows, costs, per_call_costs


def timed_rounds(rows: dict, names, repeats: int) -> tuple[dict, dict, list]:
    """``repeats`` rounds of every row's calls (the order reversed every other round), each round after a
    measurement of the machine's bounds: (runs per row, per-call runs per row, bounds per round)."""
    runs: dict[str, list] = {n: [] for n in names}
    call_runs: dict[str, list] = {n: [] for n in names}
    bounds = []
    for r in range(repeats):
        order = names if r % 2 == 0 else names[::-1]
        bounds.append(machine_bounds())
        with count_compilations() as compiles:
            for name in order:
                call_runs[name].append([])
                runs[name].append(timed(rows[name], call_runs[name][-1]))
        if compiles:
            print(f"  round {r + 1}: {len(compiles)} compilations in a warm round", flush=True)
        b = bounds[-1]
        print(f"  round {r + 1} (load {load()}): peak {b['flops'] / 1e9:.1f} GFLOP/s, {b['bytes'] / 1e9:.2f} GB/s; "
              + ", ".join(f"{n} {runs[n][-1][0]:.2f} s" for n in order), flush=True)
    return runs, call_runs, bounds


def row_report(name: str, c: dict, runs: list, call_runs: list, rows: list, per_call_cost: list, peak: float,
               bandwidth: float, cache: float) -> dict:
    """One row's measured rates against the machine's bounds (medians of the rounds)."""
    ns_runs = [1e9 * s / e for s, e, _ in runs]
    ns = statistics.median(ns_runs)
    executed, needed = runs[0][1], runs[0][2]
    intensity = c["flops"] / c["bytes"] if c["bytes"] else float("inf")
    flop_bound = intensity >= peak / bandwidth
    flop_pct = 100 * c["flops"] / ns * 1e9 / peak
    byte_pct = 100 * c["bytes"] / ns * 1e9 / bandwidth
    return {"command": f"otod sweep {ROWS[name]}", **c, "ns": ns, "runs_ns": ns_runs,
            "seconds": [s for s, _, _ in runs], "executed": executed, "needed": needed,
            "ratio": executed / needed, "intensity": intensity, "bound": "FLOP" if flop_bound else "bandwidth",
            "percent_of_bound": flop_pct if flop_bound else byte_pct,
            "percent_of_flops": flop_pct, "percent_of_bandwidth": byte_pct,
            "percent_of_cache": 100 * c["bytes"] / ns * 1e9 / cache,
            "gflops": c["flops"] / ns, "gbytes": c["bytes"] / ns,
            "per_call_ns": per_call_medians(call_runs, rows), "per_call_cost": per_call_cost}


def print_table(report: dict, repeats: int) -> None:
    """The roofline table (one row per workload) and each row's call details."""
    peak, bandwidth, cache = report["peak_flops"], report["bandwidth"], report["cache_bandwidth"]
    print(f"\nmachine: peak float32 {peak / 1e9:.1f} GFLOP/s, memory {bandwidth / 1e9:.1f} GB/s, cache "
          f"{cache / 1e9:.1f} GB/s (medians of {repeats}), ridge {peak / bandwidth:.2f} FLOPs/byte; "
          f"load after {report['load_after']}")
    print("| row | FLOPs / lane-it | bytes / lane-it | FLOPs/byte | ns / executed lane-it: median (runs) | "
          "GFLOP/s | % of FLOP peak | GB/s | % of memory bw | % of cache bw | bound at this FLOPs/byte | "
          "executed/needed |")
    print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---|---:|")
    for name, row in report["rows"].items():
        print(f"| {name} | {row['flops']:.3g} | {row['bytes']:.3g} | {row['intensity']:.2g} | {row['ns']:.0f} "
              f"({', '.join(f'{v:.0f}' for v in row['runs_ns'])}) | {row['gflops']:.3g} | "
              f"{row['percent_of_flops']:.2g} | {row['gbytes']:.3g} | {row['percent_of_bandwidth']:.2g} | "
              f"{row['percent_of_cache']:.2g} | {row['bound']} | "
              f"{row['ratio']:.2f} ({row['executed']:.4g}/{row['needed']:.4g}) |")
    for name, row in report["rows"].items():
        extra = {k: row[k] for k in ("step_flops", "step_bytes", "measure_flops", "measure_bytes", "check_fraction")
                 if k in row}
        print(f"  {name}: {row['calls']} calls, blocks {row['block_lanes']}, while loop in the counted program: "
              f"{row['while_loop']}, transcendentals {row['transcendentals']:.3g} {extra or ''}")


def print_experiments_and_net_calls(report: dict) -> None:
    """The experiments' rates (``--experiments``) and the net row's per-call costs."""
    for name, e in report.get("experiments", {}).items():
        print(f"  experiment {name}: {e['ns']:.1f} ns per executed lane-iteration (runs "
              f"{', '.join(f'{v:.1f}' for v in e['runs_ns'])}), executed/needed {e['executed'] / max(e['needed'], 1):.2f}")
        if name.startswith("net"):
            print("    per call: " + "; ".join(f"{c['spec'].split('batch=')[-1].rstrip(')')}: {c['ns']:.0f} ns"
                                          for c in e["per_call_ns"]))
    if "net" in report["rows"]:
        row = report["rows"]["net"]
        print("  net per call (batch: ns per executed lane-iteration; XLA step FLOPs, measure FLOPs, check fraction): "
              + "; ".join(f"{c['spec'].split('batch=')[-1].rstrip(')')}: {c['ns']:.0f} ns ({k['step_flops']:.3g}, "
                          f"{k['measure_flops']:.3g}, {k['check_fraction']:.3f}; {c['executed']}/{c['needed']})"
                          for c, k in zip(row["per_call_ns"], row["per_call_cost"])))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rows", default=",".join(ROWS))
    parser.add_argument("--experiments", action="store_true")
    parser.add_argument("--experiment-repeats", type=int, default=5)
    parser.add_argument("--lanes-rows", default="condition-eigen,condition-rotated")
    parser.add_argument("--json", default=None)
    parser.add_argument("--keep", default=None, metavar="DIR", help="write each row's results file into DIR/<row>")
    args = parser.parse_args()
    names = args.rows.split(",")
    report = {"cpu": cpu_model(), "cores": os.cpu_count(), "python": platform.python_version(),
              "jax": jax.__version__, "devices": len(jax.local_devices()), "load_before": load(),
              "device_kind": jax.local_devices()[0].device_kind, "platform": jax.default_backend(),
              "matmul_precision": str(jax.config.jax_default_matmul_precision),
              "started": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    print(f"CPU: {report['cpu']}, {report['cores']} cores, {report['devices']} JAX devices; python "
          f"{report['python']}, jax {report['jax']}; load before {report['load_before']}; device "
          f"{report['device_kind']} ({report['platform']}), matmul precision {report['matmul_precision']}", flush=True)
    rows, costs, per_call_costs = capture_rows(names, args.keep)
    runs, call_runs, bounds = timed_rounds(rows, names, args.repeats)
    peak = statistics.median(b["flops"] for b in bounds)
    bandwidth = statistics.median(b["bytes"] for b in bounds)
    cache = statistics.median(b["cache"] for b in bounds)
    report.update(bounds=bounds, peak_flops=peak, bandwidth=bandwidth, cache_bandwidth=cache, ridge=peak / bandwidth,
                  rows={name: row_report(name, costs[name], runs[name], call_runs[name], rows[name],
                                         per_call_costs[name], peak, bandwidth, cache) for name in names})
    report["load_after"] = load()
    print_table(report, args.repeats)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1, default=float)
    if args.experiments:
        experiments(rows, report, args.experiment_repeats, args.lanes_rows.split(","))
    print_experiments_and_net_calls(report)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1, default=float)
    return 0


if __name__ == "__main__":
    sys.exit(main())
