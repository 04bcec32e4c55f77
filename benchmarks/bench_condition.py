"""Benchmark (issue 8): the otod engine against three baselines and a prototype kernel, on identical work.

Sweep: κ = 1..KMAX (integers) × SEEDS seeds (default 1..100 × 8), gd at its theory step 1/L, tol 1e-6, log-uniform
spectrum, random start, float32 (otod's precision rule at this tolerance). The iteration cap is otod's own automatic
cap, ``otod.condition.kind.max_iters`` of the same sweep's `SweepConfig` (2752 for gd at κ ≤ 100), and every
implementation gets it. Seed s draws x*, the start and (rotated basis) a Haar rotation from
``numpy.random.default_rng([0, s])``, as ``otod.core.engine.seed_draws`` does.

Part 1 (in one process) runs four cases: the eigen (diagonal H) and rotated (dense H = QΛQᵀ, one Haar rotation per
seed) bases at d = 64 and d = 100. Each case runs, alternating their order from repeat to repeat (even repeats in
the order below, odd ones reversed), ``--repeats`` times (default 5):

* **engine**: ``otod.core.engine.iterations_to_target`` with the sweep's lanes laid out as ``otod sweep`` lays
  them out (`sweep_layout`: its plan's point order and block size, where the plan gives them). Every repeat clears JAX's caches and times a first pass (compilation included; the script checks
  it compiles exactly once) and a compiled pass (checked: no compilation; the best of 3 calls in a row);
* **prototype**: the prototype-class kernel of issue 8 (``optax_loop_condition.run_buckets``): lanes sorted by
  predicted cost (κ), buckets of 32 lanes, each bucket one ``jit(vmap(per-lane lax.while_loop))`` call; a first
  pass (compile included) and a compiled pass, as for the engine;
* **while**: the careful JAX user's script (``optax_loop_condition.run_while``): one jitted ``lax.while_loop``
  running the whole optax loop of one config, compiled once, called per config; timed with its compilation;
* **NumPy**: a per-config float32 NumPy loop with the same update and stopping rule, written here on purpose (an
  implementation that shares no code with the others); its problems are built once, untimed, from the engine's
  own family, and its step 1/L is checked bit for bit against the engine's ``Solution.learning_rate``;
* **step** (first case only, unless ``--all-step-loops``): a Python loop per config over one jitted optax step
  (``optax_loop_condition.run``), what most users write. It costs 5-10 s a repeat, hence only in the first case.

Iteration counts must be identical for every (κ, seed) in every repeat and every implementation (exit 1
otherwise), except a ±1 that the script verifies to be float32 rounding at the tolerance (`near_tie`). For the
rotated cases the script prints the time per lane-iteration next to the FLOP and byte roofline of one
lane-iteration (two d×d matrix-vector products: 4d² FLOPs; 8d² bytes when each lane streams its own float32
rotation, as a per-lane copy does), using the machine's GEMM rate and copy bandwidth measured at start-up.

Part 2 (whole processes, cold: `condition_processes`, beside this file): ``otod sweep condition --basis rotated``
against the per-config optax script on the same work, alternated ``--repeats`` times with their counts compared;
plain ``otod sweep condition --k 1..KMAX`` cold; the peak memory of ``otod sweep condition --k 1..1e4:200:log
--seeds 64 --no-plot``; and executed/needed lane-iterations from the results files' metadata.

The otod commands run this checkout's code (``python3 -m otod`` with the repository root first on PYTHONPATH).
Targets (issue 8) are printed PASS/MISS; they are reported, not enforced. Run from the repository root:

    python3 benchmarks/bench_condition.py [--quick] [--repeats 5] [--skip-cli | --skip-inprocess] [--json PATH]

Exit status: 0 when all counts match and every run succeeded, 1 otherwise, 2 (one line) on bad input.
"""

from __future__ import annotations

import inspect
import json
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # this checkout's otod, whatever is installed
sys.path.insert(0, str(HERE))
try:  # one host device per core, as `otod sweep` makes them; set before JAX is imported (OTOD_CPU_DEVICES=1: one)
    from otod.core.devices import use_every_core
except ImportError:  # an engine that runs on one device
    pass
else:
    use_every_core()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

import optax_loop_condition as standalone  # noqa: E402  (the standalone scripts next to this one)
from condition_processes import (METHOD, SEED, TARGET_CLI_COLD_S, TARGET_EFFICIENCY, TARGET_PEAK_MIB,  # noqa: E402
                                 TOL, compare, fmt_runs, load, median, part_two, verdict)

import otod.condition  # noqa: E402,F401  (registers the condition sweep)
from otod.condition.kind import max_iters as condition_max_iters  # noqa: E402
from otod.condition.methods import METHODS  # noqa: E402
from otod.condition.options import sweep_config_from_options  # noqa: E402
from otod.core.compilation_cache import count_compilations  # noqa: E402
from otod.core.engine import iterations_to_target, seed_draws  # noqa: E402
from otod.core.results import cpu_model  # noqa: E402

CASES = (("eigen", 64), ("rotated", 64), ("eigen", 100), ("rotated", 100))
COMPILED_PASSES = 3  # a compiled pass (10-500 ms) is timed as the best of this many calls in a row: less noise
ENGINE_COMPILED = f"engine, compiled pass (best of {COMPILED_PASSES})"
PROTOTYPE_COMPILED = f"prototype buckets, compiled pass (best of {COMPILED_PASSES})"

# Targets of issue 8 (ratios: larger = engine faster).
TARGET_PROTOTYPE = 1.5      # prototype compiled / engine compiled, eigen, d = 64
TARGET_ROTATED = 3.0        # rotated / eigen time per lane-iteration, d = 100: at most this



# ------------------------------------------------------------------------------------------------------------------
# The machine's rates, for the roofline
# ------------------------------------------------------------------------------------------------------------------

def machine_rates(n: int = 1024, copy_mib: int = 128) -> dict:
    """Peak float32 GEMM rate (n×n matmul, NumPy and jitted JAX, best of 5 each) and copy bandwidth (a
    ``copy_mib`` MiB NumPy copy, read + write bytes counted, best of 5)."""

    def best(f, reps=5):
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            f()
            times.append(time.perf_counter() - t0)
        return min(times)

    a = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    a @ a
    t_np = best(lambda: a @ a)
    ja = jnp.asarray(a)
    mm = jax.jit(lambda x: x @ x)
    mm(ja).block_until_ready()
    t_jax = best(lambda: mm(ja).block_until_ready())
    src = np.ones(copy_mib * 2 ** 20 // 4, np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    t_copy = best(lambda: np.copyto(dst, src))
    flops = 2.0 * n ** 3
    out = {"gemm_numpy_gflops": flops / t_np / 1e9, "gemm_jax_gflops": flops / t_jax / 1e9,
           "copy_gbytes_per_s": 2.0 * src.nbytes / t_copy / 1e9}
    out["gemm_gflops"] = max(out["gemm_numpy_gflops"], out["gemm_jax_gflops"])
    print(f"machine rates (best of 5): float32 GEMM {n}×{n}: NumPy {out['gemm_numpy_gflops']:.1f} GFLOP/s, "
          f"JAX {out['gemm_jax_gflops']:.1f} GFLOP/s; copy of {copy_mib} MiB: "
          f"{out['copy_gbytes_per_s']:.1f} GB/s (read + write)")
    return out


# ------------------------------------------------------------------------------------------------------------------
# Part 1: in one process
# ------------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    basis: str
    dim: int
    kmax: int
    seeds: int
    config: object
    cap: int

    @property
    def name(self) -> str:
        return f"{self.basis}, d = {self.dim}"

    @property
    def configs(self) -> list[tuple[int, int]]:
        return standalone.configs(self.kmax, self.seeds)


def make_case(basis: str, dim: int, kmax: int, seeds: int) -> Case:
    config = sweep_config_from_options(k=f"1..{kmax}", method=METHOD, dim=dim, seeds=seeds, basis=basis, tol=TOL,
                                       seed=SEED)
    if config.resolved_x64:
        raise SystemExit(f"bench_condition.py: expected otod to pick float32 at tol {TOL:g}; it picked float64")
    return Case(basis, dim, kmax, seeds, config, condition_max_iters(config))


def sweep_layout(case: Case) -> tuple[list[int], int | None, str]:
    """The point order and block size `otod sweep` gives these lanes: its `plan`'s, when the plan is one chunk of
    all points with a ``block_points`` (the engine's cost model); else value order and the engine's default."""
    points = list(range(case.kmax))
    try:
        from otod.core.plan import plan
        chunks = plan(case.config)
    except ImportError:
        return points, None, "value order, the engine's default block size"
    if len(chunks) == 1 and chunks[0].n_points == case.kmax and getattr(chunks[0], "block_points", None):
        block = int(chunks[0].block_points) * case.seeds
        return list(chunks[0].point_indices), block, f"the sweep's plan: cost order, blocks of {block} lanes"
    return points, None, "value order, the engine's default block size"


def run_engine(case: Case, draws) -> dict:
    """One repeat: clear JAX's caches, a first pass (compilation included), then a compiled pass. The lanes are
    laid out as `otod sweep` lays them out (`sweep_layout`); the results are put back in value-major order."""
    order, block, _ = sweep_layout(case)
    lane = np.asarray([p * case.seeds + s for p in order for s in range(case.seeds)])  # into case.configs
    cfg = case.configs
    kappas = np.asarray([cfg[i][0] for i in lane], np.float32)
    seed_idx = np.asarray([cfg[i][1] for i in lane], np.int32)
    n = len(cfg)
    config = case.config
    # as `otod sweep` calls it: whole points of (1 rate, seeds), the seeds' draws made once and the plan's block
    # size, where the engine takes them (its interface keeps the positional arguments; keywords may change)
    accepted = inspect.signature(iterations_to_target).parameters
    extra = {k: v for k, v in (("group", (1, case.seeds)), ("draws", draws), ("block_lanes", block))
             if k in accepted and v is not None}

    def one_pass():
        t0 = time.perf_counter()
        sol = iterations_to_target(config.problem, (METHODS[METHOD],), {"kappa": kappas}, seed_idx,
                                   np.ones(n, np.float32), method_indices=np.zeros(n, np.int32), seed=SEED,
                                   target=config.target, max_iters=case.cap, relative_lr=True,
                                   options=config.options, **extra)
        return sol, time.perf_counter() - t0  # the Solution is NumPy arrays: the work is done

    def value_major(a):
        out = np.empty_like(a)
        out[lane] = a
        return out

    jax.clear_caches()
    with count_compilations() as first_compiles:
        first, first_s = one_pass()
    with count_compilations() as second_compiles:
        passes = [one_pass() for _ in range(COMPILED_PASSES)]
    second, compiled_s = passes[0][0], min(t for _, t in passes)
    return {"first": first_s, "compiled": compiled_s, "compiles": len(first_compiles),
            "compile_s": float(sum(first_compiles)), "recompiles": len(second_compiles),
            "iterations": [value_major(first.iterations), value_major(second.iterations)],
            "status": value_major(first.status), "learning_rate": value_major(first.learning_rate),
            "executed": int(getattr(first, "lane_iterations", 0) or 0)}


def _standalone_counts(records) -> np.ndarray:
    return np.asarray([t for _, _, _, t in records], np.int64)


def _sweep_args(case: Case):
    return case.kmax, case.seeds, case.dim, [METHOD], TOL, case.cap, "float32", case.basis


def run_prototype(case: Case) -> dict:
    jax.clear_caches()
    with count_compilations() as first_compiles:
        first, first_s, executed = standalone.run_buckets(*_sweep_args(case))
    with count_compilations() as second_compiles:
        passes = [standalone.run_buckets(*_sweep_args(case)) for _ in range(COMPILED_PASSES)]
    second, compiled_s = passes[0][0], min(p[1] for p in passes)
    return {"first": first_s, "compiled": compiled_s, "compiles": len(first_compiles),
            "compile_s": float(sum(first_compiles)), "recompiles": len(second_compiles), "executed": executed,
            "iterations": [_standalone_counts(first), _standalone_counts(second)]}


def run_while(case: Case) -> dict:
    jax.clear_caches()
    with count_compilations() as compiles:
        records, seconds = standalone.run_while(*_sweep_args(case))
    return {"seconds": seconds, "compiles": len(compiles), "compile_s": float(sum(compiles)),
            "iterations": [_standalone_counts(records)]}


def run_step(case: Case) -> dict:
    jax.clear_caches()
    records, seconds = standalone.run(*_sweep_args(case))
    return {"seconds": seconds, "iterations": [_standalone_counts(records)]}


def numpy_problems(case: Case, draws) -> dict:
    """The engine's problems as float32 NumPy arrays (built untimed from its own family), the seeds' rotations
    (one per seed, not copied per config) and the step 1/L computed in NumPy."""
    family = case.config.problem.family()
    cfg = case.configs

    def one(kappa, s):
        p = family.make({"kappa": kappa}, jax.tree.map(lambda a: jnp.asarray(a)[s], draws))
        return p["eigenvalues"], family.init(p)

    lam, x0 = jax.jit(jax.vmap(one))(np.asarray([k for k, _ in cfg], np.float32),
                                     np.asarray([s for _, s in cfg], np.int32))
    lam, x0 = np.asarray(lam), np.asarray(x0)
    return {"lam": lam, "x0": x0, "x_star": np.asarray(draws["x_star"], np.float32),
            "rotation": None if case.basis == "eigen" else np.asarray(draws["rotation"], np.float32),
            "lr": np.float32(1.0) / lam.max(axis=1)}


def numpy_iterations(lam, x_star, x0, rotation, lr, tol, max_iters) -> int:
    """Iterations of x ← x − lr·∇f until f(x)/f(x₀) ≤ tol or max_iters, f(x) = ½ Σλᵢzᵢ², z = Qᵀ(x − x*)."""

    def value_and_grad(x):
        d = x - x_star
        z = d if rotation is None else rotation.T @ d
        lz = lam * z
        return 0.5 * np.sum(lz * z), (lz if rotation is None else rotation @ lz)

    x = x0
    f0, g = value_and_grad(x)
    safe_f0 = f0 if f0 > 0 else np.float32(1.0)
    gap = np.float32(1.0) if f0 > 0 else np.float32(0.0)
    t = 0
    while gap > tol and t < max_iters:
        x = x - lr * g
        f, g = value_and_grad(x)
        gap = f / safe_f0
        t += 1
    return t


def run_numpy(case: Case, problems) -> dict:
    tol = np.float32(TOL)  # the engine compares the float32 gap with the float32 tolerance
    rot = problems["rotation"]
    t0 = time.perf_counter()
    iters = np.asarray([numpy_iterations(problems["lam"][i], problems["x_star"][s], problems["x0"][i],
                                         None if rot is None else rot[s], problems["lr"][i], tol, case.cap)
                        for i, (_, s) in enumerate(case.configs)], np.int64)
    return {"seconds": time.perf_counter() - t0, "iterations": [iters], "lr": problems["lr"]}


TIE = 1e-3


def gap_offset(case: Case, problems: dict, i: int, t: int) -> float:
    """gap/tol − 1 after ``t`` iterations of config ``i``, recomputed in float64 NumPy: how close the run is to the
    tolerance where two float32 implementations disagree by one iteration."""
    s = case.configs[i][1]
    rot = problems["rotation"]
    lam, x_star = problems["lam"][i].astype(np.float64), problems["x_star"][s].astype(np.float64)
    q = None if rot is None else rot[s].astype(np.float64)
    lr = np.float64(problems["lr"][i])

    def f_and_g(x):
        z = x - x_star if q is None else q.T @ (x - x_star)
        return 0.5 * np.sum(lam * z * z), (lam * z if q is None else q @ (lam * z))

    x = problems["x0"][i].astype(np.float64)
    f0, g = f_and_g(x)
    f = f0
    for _ in range(t):
        x = x - lr * g
        f, g = f_and_g(x)
    return float(f / f0 / TOL - 1.0)


def near_tie(case: Case, problems: dict, i: int, t: int) -> bool:
    """A ±1 disagreement is float32 rounding at the tolerance, not a bug, when the exact (float64) gap after the
    smaller count lies within ``TIE`` (relative) of tol: one gd step changes the gap by ≥ 1 − (1 − 1/κ)² ≥ 2 %
    at κ ≤ 100, 20× more than that window."""
    return abs(gap_offset(case, problems, i, t)) < TIE


def roofline(case: Case, rates: dict, per_lane_iteration_s: dict) -> dict:
    """FLOP and byte bounds of one rotated lane-iteration (two d×d float32 matrix-vector products) at the
    measured rates, printed next to the measured times."""
    d = case.dim
    flops = 4.0 * d * d
    streamed = 8.0 * d * d  # Q read twice per iteration, float32, if each lane holds its own copy
    state = 4.0 * 6 * d  # x, x*, λ, g read; x, g written: what a lane touches besides Q
    bound_flop = flops / (rates["gemm_gflops"] * 1e9)
    bound_stream = streamed / (rates["copy_gbytes_per_s"] * 1e9)
    bound_state = state / (rates["copy_gbytes_per_s"] * 1e9)
    print(f"  roofline of one lane-iteration (d = {d}): {flops:.0f} FLOPs (2 matvecs) → ≥ {1e9 * bound_flop:.1f} ns "
          f"at {rates['gemm_gflops']:.0f} GFLOP/s; {streamed / 1024:.0f} KiB if each lane streams its own Q → ≥ "
          f"{1e9 * bound_stream:.1f} ns at {rates['copy_gbytes_per_s']:.1f} GB/s; Q shared and cached, state only "
          f"({state:.0f} B) → ≥ {1e9 * bound_state:.2f} ns")
    for label, seconds in per_lane_iteration_s.items():
        print(f"    {label:<46} {1e9 * seconds:>9.1f} ns per lane-iteration = {seconds / bound_flop:.1f}× the FLOP "
              f"bound, {seconds / bound_stream:.2f}× the streamed-Q byte bound")
    return {"flops": flops, "bytes_streamed": streamed, "bound_flop_s": bound_flop, "bound_stream_s": bound_stream,
            "bound_state_s": bound_state}


def part_one(kmax: int, seeds: int, repeats: int, all_step_loops: bool, rates: dict) -> tuple[bool, dict]:
    print(f"== part 1: in one process; gd, float32, κ = 1..{kmax} × {seeds} seeds, tol {TOL:g}, lr theory (1/L), "
          f"{repeats} repeats alternating (even repeats engine first, odd repeats engine last) ==")
    jax.block_until_ready(jnp.zeros(3) + 1)  # the backend's one-time set-up outside every timing
    fail, out = False, {}
    for ci, (basis, dim) in enumerate(CASES):
        case = make_case(basis, dim, kmax, seeds)
        draws = seed_draws(case.config.problem, SEED, seeds, np.float32)
        problems = numpy_problems(case, draws)
        runners = {"engine": lambda: run_engine(case, draws), "prototype": lambda: run_prototype(case),
                   "while": lambda: run_while(case), "numpy": lambda: run_numpy(case, problems)}
        if ci == 0 or all_step_loops:
            runners["step"] = lambda: run_step(case)
        runs = {k: [] for k in runners}
        for rep in range(repeats):
            order = list(runners) if rep % 2 == 0 else list(reversed(runners))
            for name in order:
                runs[name].append(runners[name]())
        f, out[case.name] = report_case(case, runs, rates, problems)
        fail |= f
    # rotated against eigen, per lane-iteration (issue 8, item 2)
    print("\n-- rotated / eigen basis, engine compiled, time per needed lane-iteration (same repeat) --")
    for dim in sorted({d for _, d in CASES}):
        eig, rot = out[f"eigen, d = {dim}"], out[f"rotated, d = {dim}"]
        out[f"rotated/eigen, d = {dim}"] = compare(
            f"d = {dim}: rotated / eigen", rot["per_lane_iteration_engine"], eig["per_lane_iteration_engine"],
            TARGET_ROTATED if dim == 100 else None, at_most=True)
    print()
    return fail, out


def report_case(case: Case, runs: dict, rates: dict, problems: dict) -> tuple[bool, dict]:
    n = len(case.configs)
    print(f"\n-- case {case.name}: {n} lanes, cap {case.cap}; engine lanes in {sweep_layout(case)[2]} --")
    reference = runs["engine"][0]["iterations"][0]
    fail = False
    mismatches, ties = {}, {}
    for name, reps in runs.items():
        counts = [c for r in reps for c in r["iterations"]]
        bad = [(int(i), int(c[i])) for c in counts for i in np.flatnonzero(c != reference)]
        mismatches[name] = len(bad)
        tied = [(i, other) for i, other in bad if name != "engine" and abs(other - int(reference[i])) == 1
                and near_tie(case, problems, i, min(other, int(reference[i])))]
        ties[name] = len(tied)
        for i, other in sorted(set(bad))[:5]:
            k, s = case.configs[i]
            kind = "a rounding tie" if (i, other) in tied else "NOT a tie"
            print(f"    κ={k} seed={s}: engine {reference[i]}, {name} {other} ({kind}: float64 gap at the smaller "
                  f"count / tol − 1 = {gap_offset(case, problems, i, min(other, int(reference[i]))):+.1e})")
        fail |= len(bad) > len(tied)
    status = runs["engine"][0]["status"]
    needed = int(reference.sum())
    print("  counts against the engine's first pass, mismatches over all repeats (of which rounding ties): "
          + ", ".join(f"{k} {v} ({ties[k]})" for k, v in mismatches.items())
          + f"; iterations min/mean/max {reference.min()}/{reference.mean():.1f}/{reference.max()}, "
          f"needed lane-iterations Σ {needed}; engine lanes not converged: {int(np.sum(status != 0))}")
    lr_bad = sum(int(np.sum(r["learning_rate"] != runs["numpy"][0]["lr"])) for r in runs["engine"])
    print(f"  step sizes: NumPy's 1/L vs the engine's Solution.learning_rate, {lr_bad} bitwise mismatches")
    fail |= lr_bad > 0
    eng = runs["engine"]
    ok = all(r["compiles"] == 1 for r in eng) and not any(r["recompiles"] for r in eng + runs["prototype"])
    print(f"  XLA compilations per repeat, first pass / compiled pass: engine {[r['compiles'] for r in eng]} / "
          f"{[r['recompiles'] for r in eng]}, prototype {[r['compiles'] for r in runs['prototype']]} / "
          f"{[r['recompiles'] for r in runs['prototype']]} (its kernel and the transfers of its inputs), while loop "
          f"{[r['compiles'] for r in runs['while']]}" + ("  (OK)" if ok else "  (expected 1 and 0 / 0!)"))
    fail |= not ok

    rows = {"engine, first pass (compile incl.)": [r["first"] for r in eng],
            "  of which XLA compile (engine)": [r["compile_s"] for r in eng],
            ENGINE_COMPILED: [r["compiled"] for r in eng],
            "prototype buckets, first pass (compile incl.)": [r["first"] for r in runs["prototype"]],
            "  of which XLA compile (prototype)": [r["compile_s"] for r in runs["prototype"]],
            PROTOTYPE_COMPILED: [r["compiled"] for r in runs["prototype"]],
            "per-config jitted while_loop (compile incl.)": [r["seconds"] for r in runs["while"]],
            "  of which XLA compile (while)": [r["compile_s"] for r in runs["while"]],
            "NumPy loop": [r["seconds"] for r in runs["numpy"]]}
    if "step" in runs:
        rows["per-config Python loop, jitted optax step"] = [r["seconds"] for r in runs["step"]]
    print("  seconds (wall; median; every run in order):")
    for label, xs in rows.items():
        print(f"    {label:<48} {median(xs):>8.4f}   {fmt_runs(xs)}")
    executed = runs["prototype"][0]["executed"]
    engine_executed = eng[0]["executed"]  # 0: this engine does not report it
    per_engine = [t / needed for t in rows[ENGINE_COMPILED]]
    per_proto = [t / executed for t in rows[PROTOTYPE_COMPILED]]
    print(f"  lane-iterations: needed {needed}; prototype executed {executed} ({executed / needed:.3f}× needed); "
          + (f"engine executed {engine_executed} ({engine_executed / needed:.3f}× needed, its Solution's count)"
             if engine_executed else "the engine does not report its executed count"))
    print(f"  per lane-iteration, compiled: engine {1e9 * median(per_engine):.1f} ns per needed one"
          + (f", {1e9 * median(rows[ENGINE_COMPILED]) / engine_executed:.1f} ns per executed one"
             if engine_executed else "")
          + f"; prototype {1e9 * median(per_proto):.1f} ns per executed one, "
          f"{1e9 * median(rows[PROTOTYPE_COMPILED]) / needed:.1f} ns per needed one")
    result = {"lanes": n, "cap": case.cap, "needed_lane_iterations": needed, "prototype_executed": executed,
              "engine_executed": engine_executed or None,
              "mismatches": mismatches, "rounding_ties": ties, "times": rows, "per_lane_iteration_engine": per_engine,
              "per_lane_iteration_prototype_executed": per_proto}
    if case.basis == "rotated":
        result["roofline"] = roofline(case, rates, {"engine, compiled (per needed lane-iteration)": median(per_engine),
                                                    "prototype, compiled (per executed lane-iteration)":
                                                        median(per_proto)})
    print("  ratios baseline / engine, per pair (same repeat); larger = engine faster:")
    is_target_case = case.basis == "eigen" and case.dim == 64
    e_first, e_comp = rows["engine, first pass (compile incl.)"], rows[ENGINE_COMPILED]
    r = {"prototype/engine, compiled": compare("prototype / engine, both compiled", rows[
        PROTOTYPE_COMPILED], e_comp, TARGET_PROTOTYPE if is_target_case else None),
         "prototype/engine, first": compare("prototype / engine, both compile incl.", rows[
             "prototype buckets, first pass (compile incl.)"], e_first, None),
         "while/engine, first": compare("while_loop script / engine, both compile incl.", rows[
             "per-config jitted while_loop (compile incl.)"], e_first, None),
         "while/engine, compiled": compare("while_loop script (compile incl.) / engine compiled", rows[
             "per-config jitted while_loop (compile incl.)"], e_comp, None),
         "numpy/engine, first": compare("NumPy / engine (compile incl.)", rows["NumPy loop"], e_first, None),
         "numpy/engine, compiled": compare("NumPy / engine compiled", rows["NumPy loop"], e_comp, None)}
    if "step" in runs:
        step = rows["per-config Python loop, jitted optax step"]
        r["step/engine, first"] = compare("jitted-step loop / engine (compile incl.)", step, e_first, None)
        r["step/engine, compiled"] = compare("jitted-step loop / engine compiled", step, e_comp, None)
    result["ratios"] = r
    return fail, result


# ------------------------------------------------------------------------------------------------------------------

def targets(payload: dict) -> list[dict]:
    """The issue's targets, each with what was measured and PASS/MISS, printed as one table."""
    rows = []
    one, two = payload.get("in_process"), payload.get("whole_process")
    if one:
        r = one["eigen, d = 64"]["ratios"]["prototype/engine, compiled"]
        rows.append(("engine ≥ 1.5× the prototype kernel (compiled, eigen, d = 64)", f"{r['median']:.2f}×", r["pass"]))
        r = one["rotated/eigen, d = 100"]
        rows.append(("rotated within 3× of eigen per lane-iteration (d = 100)", f"{r['median']:.2f}×", r["pass"]))
    if two:
        r = two["ratio_script_over_rotated"]
        rows.append(("optax script ≥ 10× otod sweep --basis rotated, cold", f"{r['median']:.2f}×", r["pass"]))
        rows.append((f"otod sweep condition --k 1..K cold < {TARGET_CLI_COLD_S:g} s",
                     f"{two['plain_cold_median_s']:.2f} s", two["plain_cold_pass"]))
        rows.append((f"peak memory of the 1e4 × 64-seed sweep < {TARGET_PEAK_MIB:g} MiB",
                     f"{two['peak_rss_mib']:.0f} MiB", None if two["quick"] else
                     bool(two["peak_rss_mib"] < TARGET_PEAK_MIB)))
        if not two["efficiency"]:
            rows.append((f"executed/needed lane-iterations ≤ {TARGET_EFFICIENCY:g}", "not recorded yet", None))
        for label, e in two["efficiency"].items():
            ratio = e.get("ratio")
            rows.append((f"executed/needed lane-iterations ≤ {TARGET_EFFICIENCY:g}, {label}",
                         "see above" if ratio is None else f"{ratio:.3f}",
                         None if ratio is None else bool(ratio <= TARGET_EFFICIENCY)))
    print("-- targets (issue 8) --")
    for label, measured, ok in rows:
        print(f"  {label:<62} {measured:>16}  {'—' if ok is None else verdict(ok)}")
    print()
    return [{"target": label, "measured": measured, "pass": ok} for label, measured, ok in rows]


def main(argv=None) -> int:
    ap = standalone.OneLineParser(prog="bench_condition.py", description=__doc__.split("\n\n")[0],
                                  epilog="Exit status: 0 all counts identical, 1 a mismatch or a failed run, "
                                         "2 bad input.")
    ap.add_argument("--kmax", type=standalone.at_least(2), default=None, metavar="K", help="κ = 1..K (default 100)")
    ap.add_argument("--seeds", type=standalone.at_least(1), default=None, metavar="S", help="seeds 0..S−1 (default 8)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke test: κ = 1..20 × 4 seeds, 2 repeats, a smaller memory sweep (targets are for the "
                         "full run)")
    ap.add_argument("--repeats", type=standalone.at_least(1), default=None, metavar="N",
                    help="timed runs of everything, alternating (default 5; 2 with --quick)")
    ap.add_argument("--all-step-loops", action="store_true",
                    help="run the per-config jitted-step Python loop in every case, not just eigen d = 64 (slow)")
    parts = ap.add_mutually_exclusive_group()
    parts.add_argument("--skip-cli", action="store_true", help="part 1 only (in one process)")
    parts.add_argument("--skip-inprocess", action="store_true", help="part 2 only (whole processes)")
    ap.add_argument("--json", metavar="PATH", help="also write the measurements as JSON to PATH")
    args = ap.parse_args(argv)
    kmax = args.kmax or (20 if args.quick else 100)
    seeds = args.seeds or (4 if args.quick else 8)
    repeats = args.repeats or (2 if args.quick else 5)
    if args.json:
        folder = Path(args.json).expanduser().resolve().parent
        if not folder.is_dir() or not os.access(folder, os.W_OK):
            ap.error(f"argument --json: cannot write into {folder}")

    started = time.perf_counter()
    env = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "cpu": cpu_model(),
           "cores": os.cpu_count(), "jax": jax.__version__, "backend": jax.default_backend(),
           "devices": len(jax.devices()), "optax": optax.__version__, "numpy": np.__version__,
           "python": platform.python_version(), "load_before": os.getloadavg(),
           "command": "python3 benchmarks/bench_condition.py" + "".join(f" {a}" for a in sys.argv[1:])}
    print(f"otod engine benchmark (issue 8); {env['date']}")
    print(f"CPU: {env['cpu']}, {env['cores']} cores; jax {env['jax']} ({env['backend']}, {env['devices']} device(s)), "
          f"optax {env['optax']}, numpy {env['numpy']}, python {env['python']}")
    print(f"load average (1, 5, 15 min) before: {load()}  (the cores are shared with other work)")
    print(f"command: {env['command']}\n")
    rates = machine_rates()
    print()

    fail, payload = False, {"environment": env, "kmax": kmax, "seeds": seeds, "repeats": repeats,
                            "machine_rates": rates}
    if not args.skip_inprocess:
        f1, payload["in_process"] = part_one(kmax, seeds, repeats, args.all_step_loops, rates)
        fail |= f1
    if not args.skip_cli:
        f2, payload["whole_process"] = part_two(kmax, seeds, repeats, args.quick)
        fail |= f2
    payload["targets"] = targets(payload)
    if (kmax, seeds) != (100, 8):
        print("(a smaller sweep than κ 1..100 × 8 seeds: the targets are set for that one)")
    env["load_after"] = os.getloadavg()
    env["seconds"] = time.perf_counter() - started
    print(f"load average after: {load()}; the whole benchmark took {env['seconds']:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(payload, indent=2, default=lambda o: np.asarray(o).tolist()))
    print("RESULT: " + ("FAIL: iteration counts disagree, or a run failed" if fail
                        else "all iteration counts identical"))
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main())
