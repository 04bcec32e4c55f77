"""Benchmark: the otod engine against a per-config optax loop and a per-config NumPy loop, on one condition sweep.

Sweep: κ = 1..100 (integers) × 8 seeds, d = 64, methods gd and heavy-ball, tol 1e-6, lr = theory, float64,
log-uniform spectrum, eigen basis, random start; max_iters M = max(1000, ⌈2·κ_max·ln(1/tol)⌉) (2764 here).

Part 1 runs that sweep three ways and checks that all three give identical iteration counts for every
(κ, seed, method):

1. the engine, ``otod.engine.iterations_to_tolerance``: gd and heavy-ball are one jit-compiled vmapped program
   (``otod.methods.programs``), each method's 800 lanes one call of it, as ``otod sweep`` runs them; timed on a
   first pass (the one compilation included) and a second pass (compiled);
2. a per-config Python loop over one jitted optax step per method (``optax.sgd(1/L)``;
   ``optax.sgd(4/(√L+√μ)², momentum=((√κ−1)/(√κ+1))²)``), the problem arrays and step sizes passed as arguments so
   the step compiles once and is reused by every config;
3. a per-config plain NumPy float64 loop with the same update rules (gd: x ← x − lr·g; heavy-ball: m ← g + βm,
   x ← x − lr·m, optax's sgd-with-momentum form).

All three use the engine's own problems: seed s draws ``fam.draws(numpy.random.default_rng([0, s]))`` (what
``otod.engine.seed_draws`` does) and ``fam.make(κ, drawn)`` builds the problem. The baselines' problems are built
once, untimed, before they run (the engine's time includes building its problems inside the compiled program), so
the baseline times are the optimization loops alone: a conservative comparison for the engine.

Part 2 (whole processes, interpreter start and imports included): ``otod sweep condition --k 1..100 --method gd
--dim 64 --seeds 8 --no-plot`` against ``benchmarks/optax_loop_condition.py`` doing the same work, and plain
``otod sweep condition --k 1..100``. Each otod command runs twice: cold (an empty compilation cache,
OTOD_COMPILATION_CACHE pointing at a fresh folder) and warm (the cache the cold run filled: what a user's later
runs see). Each CLI run happens in a fresh temporary directory, so nothing is resumed. Skipped (reported "not measured") when ``otod sweep`` does not exist yet.

Run from the repository root:  python benchmarks/bench_condition.py  [--quick] [--skip-cli]
Exit status: 0 when all counts match, 1 on any mismatch (targets are reported PASS/MISS, not enforced).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

import otod.engine
from otod.methods import METHODS, heavy_ball_momentum
from otod.problems import QuadraticSpec

HERE = Path(__file__).resolve().parent
METHOD_NAMES = ("gd", "heavy-ball")
DIM = 64
TOL = 1e-6
SEED = 0

# Targets (ratios of wall times; larger = engine faster).
TARGET_OPTAX_FIRST = 20.0     # optax loop / engine, engine compile included
TARGET_OPTAX_COMPILED = 100.0  # optax loop / engine, compiled
TARGET_NUMPY_FIRST = 2.0      # NumPy loop / engine, compile included
TARGET_CLI_RATIO = 4.0        # whole process: optax-loop script / otod sweep
TARGET_CLI_COLD_S = 10.0      # whole process: otod sweep condition --k 1..100, cold


def default_max_iters(kmax: float, tol: float) -> int:
    """The engine's default M (``SweepConfig.resolved_max_iters``): max(1000, ⌈2·κ_max·ln(1/tol)⌉)."""
    return int(max(1000, math.ceil(2.0 * kmax * math.log(1.0 / tol))))


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


# ------------------------------------------------------------------------------------------------------------------
# Problems (shared by the optax and NumPy baselines; built once, untimed)
# ------------------------------------------------------------------------------------------------------------------

def build_problems(spec: QuadraticSpec, kappas, seeds):
    """Per (κ, seed): the engine's problem, as float64 numpy arrays, plus each method's step and momentum.

    Steps and momenta are computed in NumPy from μ and L with the formulas of ``otod.methods`` and checked bitwise
    against ``METHODS[m].reference_lr`` / ``heavy_ball_momentum`` evaluated in JAX.
    """
    fam = spec.family()
    drawn = {s: jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), fam.draws(np.random.default_rng([SEED, s])))
             for s in seeds}
    problems = {}
    mismatched_hyper = 0
    for k in kappas:
        for s in seeds:
            p = fam.make(jnp.asarray(k, jnp.float64), drawn[s])
            c = fam.curvature(p)
            mu, lip = float(c.mu), float(c.lipschitz)
            lr_gd = 1.0 * (1.0 / lip)
            lr_hb = 1.0 * (4.0 / (math.sqrt(lip) + math.sqrt(mu)) ** 2)
            r = math.sqrt(lip / mu)
            beta = ((r - 1) / (r + 1)) ** 2
            ref = (float(METHODS["gd"].reference_lr(c)), float(METHODS["heavy-ball"].reference_lr(c)),
                   float(heavy_ball_momentum(c)))
            if ref != (lr_gd, lr_hb, beta):
                mismatched_hyper += 1
            problems[(k, s)] = {
                "jax": p,  # the pytree fam.loss takes
                "lam": np.asarray(p["eigenvalues"], np.float64),
                "x_star": np.asarray(p["x_star"], np.float64),
                "x0": np.asarray(fam.start(p), np.float64),
                "lr": {"gd": lr_gd, "heavy-ball": lr_hb},
                "beta": beta,
            }
    return problems, mismatched_hyper


# ------------------------------------------------------------------------------------------------------------------
# 1. The engine
# ------------------------------------------------------------------------------------------------------------------

def run_engine(spec, configs, max_iters):
    """gd and heavy-ball are one compiled program (otod.methods.programs): each method's lanes are one call of it,
    as `otod sweep` runs them; the first pass (gd, then heavy-ball) includes the one compile, the second is
    compiled."""
    values = np.asarray([k for k, _ in configs], np.float64)
    seed_idx = np.asarray([s for _, s in configs], np.int32)
    lrs = np.ones(len(configs), np.float64)
    program = tuple(METHOD_NAMES)
    out = {m: {"times": [], "compiles": []} for m in METHOD_NAMES}
    with otod.engine.count_compilations() as all_compiles:
        for _ in range(2):
            for i, m in enumerate(METHOD_NAMES):
                with otod.engine.count_compilations() as compiles:
                    t0 = time.perf_counter()
                    sol = otod.engine.iterations_to_tolerance(
                        spec, program, values, seed_idx, lrs, method_indices=np.full(len(configs), i), seed=SEED,
                        tol=TOL, max_iters=max_iters, relative_lr=True)
                    sol = jax.block_until_ready(sol)
                    out[m]["times"].append(time.perf_counter() - t0)
                out[m]["compiles"] += compiles
                out[m]["solution"] = sol
    for m in METHOD_NAMES:
        times, compiles, sol = out[m]["times"], out[m]["compiles"], out[m]["solution"]
        out[m] = {
            "first_s": times[0], "compiled_s": times[1],
            "compiles": len(compiles), "compile_s": float(sum(compiles)), "program_compiles": len(all_compiles),
            "iterations": np.asarray(sol.iterations, np.int64),
            "status": np.asarray(sol.status),
            "learning_rate": np.asarray(sol.learning_rate, np.float64),
        }
    return out


# ------------------------------------------------------------------------------------------------------------------
# 2. Per-config Python loop over one jitted optax step
# ------------------------------------------------------------------------------------------------------------------

def make_optax_step(fam, method):
    """One jitted step per method: the problem arrays, step and momentum are arguments, so it compiles once."""

    def optimizer(lr, beta):
        return optax.sgd(lr) if method == "gd" else optax.sgd(lr, momentum=beta)

    @jax.jit
    def step(params, state, problem, lr, beta):
        grads = jax.grad(lambda x: fam.loss(problem, x))(params)
        updates, state = optimizer(lr, beta).update(grads, state, params)
        params = optax.apply_updates(params, updates)
        return params, state, fam.loss(problem, params)

    init = optimizer(1.0, 0.0).init  # the state's shape does not depend on the hyper-parameters
    return step, init


def cache_size(jitted) -> int | None:
    """How many compiled versions a jitted function holds (1 = compiled once, reused by every config)."""
    try:
        return int(jitted._cache_size())
    except AttributeError:
        return None


def run_optax_loop(spec, configs, problems, max_iters, methods=METHOD_NAMES):
    fam = spec.family()
    loss0 = jax.jit(fam.loss)
    out = {}
    for m in methods:
        t0 = time.perf_counter()
        step, init = make_optax_step(fam, m)
        iters = np.zeros(len(configs), np.int64)
        for i, cfg in enumerate(configs):
            pr = problems[cfg]
            p = pr["jax"]
            lr = jnp.asarray(pr["lr"][m], jnp.float64)
            beta = jnp.asarray(pr["beta"], jnp.float64)
            params = fam.start(p)
            state = init(params)
            f0 = float(loss0(p, params))
            safe_f0 = f0 if f0 > 0 else 1.0
            gap = 1.0 if f0 > 0 else 0.0
            t = 0
            while gap > TOL and t < max_iters:
                params, state, f = step(params, state, p, lr, beta)
                t += 1
                gap = float(f) / safe_f0
            iters[i] = t
        seconds = time.perf_counter() - t0
        out[m] = {"seconds": seconds, "iterations": iters, "compiles": cache_size(step)}
    return out


# ------------------------------------------------------------------------------------------------------------------
# 3. Per-config plain NumPy loop
# ------------------------------------------------------------------------------------------------------------------

def numpy_iterations(lam, x_star, x0, lr, beta, method, tol, max_iters) -> int:
    """Iterations until ½Σλᵢ(xᵢ−x*ᵢ)² / f(x₀) ≤ tol, float64, the same update rules as optax's sgd."""
    d = x0 - x_star
    ld = lam * d  # the gradient λ∘(x − x*)
    f0 = 0.5 * np.sum(ld * d)
    safe_f0 = f0 if f0 > 0 else 1.0
    gap = 1.0 if f0 > 0 else 0.0
    x = x0.copy()
    mom = np.zeros_like(x0)
    t = 0
    if method == "gd":
        while gap > tol and t < max_iters:
            x = x - lr * ld
            d = x - x_star
            ld = lam * d
            gap = 0.5 * np.sum(ld * d) / safe_f0
            t += 1
    else:
        while gap > tol and t < max_iters:
            mom = ld + beta * mom
            x = x - lr * mom
            d = x - x_star
            ld = lam * d
            gap = 0.5 * np.sum(ld * d) / safe_f0
            t += 1
    return t


def run_numpy_loop(configs, problems, max_iters):
    out = {}
    for m in METHOD_NAMES:
        t0 = time.perf_counter()
        iters = np.zeros(len(configs), np.int64)
        for i, cfg in enumerate(configs):
            pr = problems[cfg]
            iters[i] = numpy_iterations(pr["lam"], pr["x_star"], pr["x0"], pr["lr"][m], pr["beta"], m, TOL,
                                        max_iters)
        out[m] = {"seconds": time.perf_counter() - t0, "iterations": iters}
    return out


# ------------------------------------------------------------------------------------------------------------------
# Part 2: whole processes
# ------------------------------------------------------------------------------------------------------------------

def otod_command() -> list[str]:
    exe = shutil.which("otod")
    return [exe] if exe else [sys.executable, "-c", "import sys; from otod.cli import main; sys.exit(main())"]


def sweep_exists() -> bool:
    try:
        r = subprocess.run(otod_command() + ["sweep", "condition", "--help"], capture_output=True, text=True,
                           timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def timed_process(cmd, cwd, cache: Path | None = None) -> tuple[float, subprocess.CompletedProcess]:
    """Run a command as a whole process; ``cache`` is the otod compilation-cache folder it gets (None: off)."""
    env = dict(os.environ, OTOD_COMPILATION_CACHE=str(cache) if cache else "off")
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    return time.perf_counter() - t0, r


def cold_then_warm(cmd, base: Path, times: dict, key: str):
    """Run an otod command with an empty compilation cache (cold), then again with the cache that run filled
    (warm), each in a fresh folder so nothing is resumed; append the times under ``key`` and ``key + "_warm"``.
    Returns the cold run's folder and both completed processes."""
    cold, warm, cache = base / "cold", base / "warm", base / "cache"
    cold.mkdir(parents=True)
    warm.mkdir()
    t_cold, r_cold = timed_process(cmd, cold, cache)
    t_warm, r_warm = timed_process(cmd, warm, cache)
    times[key].append(t_cold)
    times[key + "_warm"].append(t_warm)
    return cold, r_cold, r_warm


def results_counts(directory: Path):
    """{(method, κ, seed): iterations} and the precision from the results file(s) an `otod sweep` wrote."""
    counts, precision = {}, None
    for path in sorted(directory.rglob("condition-*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        meta = data.get("meta", data)
        precision = meta.get("precision", precision)
        for rec in data.get("records", []):
            counts[(rec["method"], float(rec["sweep_value"]), int(rec["seed"]))] = int(rec["iterations"])
    return counts, precision


def run_cli_part(kmax: int, seeds: int, repeats: int) -> dict:
    """Time the three whole-process commands, each ``repeats`` times, interleaved, every run in a fresh directory."""
    if not sweep_exists():
        return {"measured": False, "reason": "`otod sweep condition --help` failed: the command does not exist yet"}
    k_arg = f"1..{kmax}"
    otod_cmd = otod_command()
    cmds = {
        "sweep_gd": otod_cmd + ["sweep", "condition", "--k", k_arg, "--method", "gd", "--dim", str(DIM),
                                "--seeds", str(seeds), "--no-plot"],
        "sweep_plain": otod_cmd + ["sweep", "condition", "--k", k_arg],
    }
    res = {"measured": True, "repeats": repeats,
           "times": {"sweep_gd": [], "sweep_gd_warm": [], "optax_loop": [], "sweep_plain": [],
                     "sweep_plain_warm": []},
           "rc": {}, "stderr": {},
           "cmd": {"sweep_gd": "otod " + " ".join(cmds["sweep_gd"][len(otod_cmd):]),
                   "sweep_gd_warm": "  the same, compilation cache warm",
                   "sweep_plain": f"otod sweep condition --k {k_arg}",
                   "sweep_plain_warm": "  the same, compilation cache warm"}}
    with tempfile.TemporaryDirectory(prefix="otod-bench-") as tmp:
        tmp = Path(tmp)
        for rep in range(repeats):
            # a) otod sweep, gd only, no plot, cold then warm
            d_a, r_a, r_aw = cold_then_warm(cmds["sweep_gd"], tmp / f"a{rep}", res["times"], "sweep_gd")
            counts_a, precision = results_counts(d_a)
            res["sweep_precision"] = precision
            # b) the standalone optax loop doing the same work, at the precision the sweep used
            dtype = "float64" if precision == "float64" else "float32"
            d_b = tmp / f"b{rep}"
            d_b.mkdir()
            out_b = d_b / "counts.json"
            cmd_b = [sys.executable, str(HERE / "optax_loop_condition.py"), "--kmax", str(kmax), "--seeds",
                     str(seeds), "--dim", str(DIM), "--method", "gd", "--dtype", dtype, "--out", str(out_b)]
            res["cmd"]["optax_loop"] = (f"python benchmarks/optax_loop_condition.py --kmax {kmax} --seeds {seeds} "
                                        f"--dim {DIM} --method gd --dtype {dtype}")
            t_b, r_b = timed_process(cmd_b, d_b)
            res["times"]["optax_loop"].append(t_b)
            if rep == 0 and counts_a and out_b.exists():
                loop = json.loads(out_b.read_text())
                pairs = [(counts_a.get(("gd", float(k), int(s))), it) for k, s, it in loop["records"]]
                res["cli_vs_loop_compared"] = sum(a is not None for a, _ in pairs)
                res["cli_vs_loop_mismatches"] = sum(a is not None and a != b for a, b in pairs)
                res["cli_vs_loop_max_abs_diff"] = max((abs(a - b) for a, b in pairs if a is not None), default=0)
            # c) plain otod sweep condition --k 1..100, cold then warm
            _, r_c, r_cw = cold_then_warm(cmds["sweep_plain"], tmp / f"c{rep}", res["times"], "sweep_plain")
            for key, r in (("sweep_gd", r_a), ("sweep_gd_warm", r_aw), ("optax_loop", r_b), ("sweep_plain", r_c),
                           ("sweep_plain_warm", r_cw)):
                res["rc"][key] = max(res["rc"].get(key, 0), r.returncode)
                if r.returncode != 0:
                    res["stderr"][key] = r.stderr[-2000:]
                if key != "optax_loop":
                    m_ = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.startswith("condition sweep:")]
                    if m_:
                        res.setdefault("summary", {}).setdefault(key, []).append(m_[0])
    return res


# ------------------------------------------------------------------------------------------------------------------

def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="κ = 1..20 × 4 seeds (seconds, for a smoke test)")
    ap.add_argument("--skip-cli", action="store_true", help="skip part 2 (whole-process timings of `otod sweep`)")
    ap.add_argument("--cli-repeats", type=int, default=2, metavar="N",
                    help="run each whole-process command N times (default 2; the verdicts use the best)")
    ap.add_argument("--json", metavar="PATH", help="also write the measurements as JSON to PATH")
    args = ap.parse_args(argv)

    kmax, n_seeds = (20, 4) if args.quick else (100, 8)
    kappas = list(range(1, kmax + 1))
    seeds = list(range(n_seeds))
    configs = [(k, s) for k in kappas for s in seeds]  # value-major, as the engine's sweeps order lanes
    max_iters = default_max_iters(kmax, TOL)
    spec = QuadraticSpec(dim=DIM)
    n = len(configs)

    print(f"otod condition benchmark: κ = 1..{kmax} × {n_seeds} seeds = {n} configs per method, d = {DIM}, "
          f"methods {', '.join(METHOD_NAMES)}, tol {TOL:g}, lr theory, float64, max_iters {max_iters}")
    print(f"device: {cpu_model()}, {os.cpu_count()} CPU cores; jax {jax.__version__} "
          f"({jax.default_backend()}), optax {optax.__version__}, numpy {np.__version__}, "
          f"python {platform.python_version()}")
    print(f"load average (1, 5, 15 min) before: {', '.join(f'{v:.2f}' for v in os.getloadavg())} "
          "(other processes share these cores)")
    print(f"command: python benchmarks/bench_condition.py{' ' + ' '.join(sys.argv[1:]) if sys.argv[1:] else ''}")
    print()

    with jax.enable_x64(True):
        jax.block_until_ready(jnp.zeros(3) + 1)  # initialise the backend first: no one-time setup in any timing
        eng = run_engine(spec, configs, max_iters)
        t0 = time.perf_counter()
        problems, bad_hyper = build_problems(spec, kappas, seeds)
        build_s = time.perf_counter() - t0
        opt = run_optax_loop(spec, configs, problems, max_iters)
        npy = run_numpy_loop(configs, problems, max_iters)

    # ---- agreement ----
    print("== iteration counts ==")
    fail = False
    if bad_hyper:
        print(f"WARNING: {bad_hyper} configs whose NumPy step/momentum differ from otod.methods' (bitwise)")
        fail = True
    lr_mismatch = 0
    for m in METHOD_NAMES:
        ours = np.asarray([problems[c]["lr"][m] for c in configs])
        lr_mismatch += int(np.sum(ours != eng[m]["learning_rate"]))
    print(f"step sizes: baselines vs engine's Solution.learning_rate, {lr_mismatch} bitwise mismatches")
    fail |= lr_mismatch > 0
    total_mismatch, worst = 0, 0
    for m in METHOD_NAMES:
        e, o, p = eng[m]["iterations"], opt[m]["iterations"], npy[m]["iterations"]
        mm_o = int(np.sum(e != o))
        mm_p = int(np.sum(e != p))
        mm_any = int(np.sum((e != o) | (e != p)))
        worst = max(worst, int(np.max(np.abs(e - o))), int(np.max(np.abs(e - p))))
        total_mismatch += mm_any
        censored = int(np.sum(eng[m]["status"] != 0))
        print(f"{m:>10}: engine vs optax loop {mm_o} mismatches, engine vs NumPy {mm_p} mismatches "
              f"(of {n}); iterations min/mean/max {e.min()}/{e.mean():.1f}/{e.max()}, total {e.sum()}; "
              f"lanes not converged: {censored}")
        for i in np.flatnonzero((e != o) | (e != p))[:10]:
            k, s = configs[i]
            print(f"            κ={k} seed={s}: engine {e[i]}, optax {o[i]}, numpy {p[i]}")
    print(f"MISMATCHES: {total_mismatch} of {n * len(METHOD_NAMES)} (κ, seed, method) triples")
    if worst > 1:
        print(f"!!!!! LOUD: some iteration counts differ by {worst} > ±1 — the implementations disagree, not just "
              "rounding at the tolerance !!!!!")
    fail |= total_mismatch > 0
    n_compiles = eng[METHOD_NAMES[0]]["program_compiles"]
    compiles_ok = n_compiles == 1
    print(f"engine compilations for gd and heavy-ball together (one program, each method's lanes one call, two "
          f"passes): {n_compiles}" + ("  (OK)" if compiles_ok else "  (expected exactly 1!)"))
    print("optax-loop jitted step, compiled versions per method: "
          + ", ".join(f"{m} {opt[m]['compiles']}" for m in METHOD_NAMES))
    print()

    # ---- times ----
    e_first = sum(eng[m]["first_s"] for m in METHOD_NAMES)
    e_comp = sum(eng[m]["compiled_s"] for m in METHOD_NAMES)
    e_xla = sum(eng[m]["compile_s"] for m in METHOD_NAMES)
    o_tot = sum(opt[m]["seconds"] for m in METHOD_NAMES)
    p_tot = sum(npy[m]["seconds"] for m in METHOD_NAMES)
    steps = {m: int(eng[m]["iterations"].sum()) for m in METHOD_NAMES}
    print("== times (seconds, wall) ==")
    print(f"{'':<36}" + "".join(f"{m:>12}" for m in METHOD_NAMES) + f"{'total':>12}")

    def row(label, values, total):
        print(f"{label:<36}" + "".join(f"{v:>12.3f}" for v in values) + f"{total:>12.3f}")

    row("engine, first call (compile incl.)", [eng[m]["first_s"] for m in METHOD_NAMES], e_first)
    row("  of which XLA compile", [eng[m]["compile_s"] for m in METHOD_NAMES], e_xla)
    row("  of which trace/lower/dispatch", [eng[m]["first_s"] - eng[m]["compile_s"] - eng[m]["compiled_s"]
                                           for m in METHOD_NAMES], e_first - e_xla - e_comp)
    row("engine, second call (compiled)", [eng[m]["compiled_s"] for m in METHOD_NAMES], e_comp)
    row("optax loop (per config, jitted step)", [opt[m]["seconds"] for m in METHOD_NAMES], o_tot)
    row("NumPy loop (per config)", [npy[m]["seconds"] for m in METHOD_NAMES], p_tot)
    print(f"{'iterations run (sum over configs)':<36}" + "".join(f"{steps[m]:>12d}" for m in METHOD_NAMES)
          + f"{sum(steps.values()):>12d}")
    print(f"(optax loop {1e6 * o_tot / sum(steps.values()):.1f} µs per iteration, NumPy "
          f"{1e6 * p_tot / sum(steps.values()):.1f} µs; the baselines' problems were built beforehand, untimed, in "
          f"{build_s:.2f} s; all {n} configs run by every implementation, no extrapolation)")
    print()

    ratios = [
        ("optax loop / engine (compile incl.)", o_tot / e_first, TARGET_OPTAX_FIRST),
        ("optax loop / engine (compiled)", o_tot / e_comp, TARGET_OPTAX_COMPILED),
        ("NumPy loop / engine (compile incl.)", p_tot / e_first, TARGET_NUMPY_FIRST),
        ("NumPy loop / engine (compiled)", p_tot / e_comp, None),
    ]
    print("== ratios (how many times faster the engine is) ==")
    for label, r, target in ratios:
        tgt = f"target ≥ {target:g}×  {verdict(r >= target)}" if target else "(no target)"
        print(f"{label:<40}{r:>9.1f}×   {tgt}")
    if args.quick:
        print("(--quick: a smaller sweep; the targets are set for the full one)")
    print()

    # ---- part 2 ----
    cli = {"measured": False, "reason": "--skip-cli"}
    if not args.skip_cli:
        print("== whole processes (interpreter start and imports included) ==")
        cli = run_cli_part(kmax, n_seeds, args.cli_repeats)
        if not cli["measured"]:
            print(f"NOT MEASURED: {cli['reason']}")
        else:
            best = {k: min(v) for k, v in cli["times"].items()}
            print(f"each command run {cli['repeats']}× (interleaved, fresh process and folder each time); "
                  "seconds, best first")
            for key in ("sweep_gd", "sweep_gd_warm", "optax_loop", "sweep_plain", "sweep_plain_warm"):
                ts = ", ".join(f"{t:.2f}" for t in sorted(cli["times"][key]))
                print(f"  {cli['cmd'][key]:<86} {ts}  (exit {cli['rc'][key]})")
                for line in cli.get("summary", {}).get(key, [])[:1]:
                    print(f"      its own report: {line}")
            print(f"  (otod sweep --method gd ran in {cli['sweep_precision']}: the CLI's default precision for "
                  "tol 1e-6, so the optax-loop script ran in the same)")
            for key, err in cli["stderr"].items():
                print(f"--- {key} stderr ---\n{err}")
            if "cli_vs_loop_compared" in cli:
                print(f"  iteration counts, otod sweep vs optax-loop script: {cli['cli_vs_loop_mismatches']} "
                      f"mismatches of {cli['cli_vs_loop_compared']} (max |diff| {cli['cli_vs_loop_max_abs_diff']})")
            ok_runs = cli["rc"]["sweep_gd"] == 0 and cli["rc"]["optax_loop"] == 0
            r = best["optax_loop"] / best["sweep_gd"]
            r_warm = best["optax_loop"] / best["sweep_gd_warm"]
            print(f"{'optax-loop script / otod sweep --method gd, cold cache (best)':<60}{r:>8.1f}×   "
                  f"target ≥ {TARGET_CLI_RATIO:g}×  {verdict(ok_runs and r >= TARGET_CLI_RATIO)}")
            print(f"{'optax-loop script / otod sweep --method gd, warm cache (best)':<60}{r_warm:>8.1f}×   "
                  f"target ≥ {TARGET_CLI_RATIO:g}×  {verdict(ok_runs and r_warm >= TARGET_CLI_RATIO)}")
            cli["ratio_best_warm"] = r_warm
            print(f"{'otod sweep condition --k 1..' + str(kmax) + ', cold (best)':<60}{best['sweep_plain']:>7.2f} s   "
                  f"target < {TARGET_CLI_COLD_S:g} s  "
                  f"{verdict(cli['rc']['sweep_plain'] == 0 and best['sweep_plain'] < TARGET_CLI_COLD_S)}")
            cli["ratio_best"] = r
        print(f"load average after: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")
        print()

    if args.json:
        payload = {
            "configs": n, "max_iters": max_iters, "quick": args.quick,
            "engine": {m: {k: v for k, v in eng[m].items() if not isinstance(v, np.ndarray)} for m in METHOD_NAMES},
            "optax_loop_s": {m: opt[m]["seconds"] for m in METHOD_NAMES},
            "numpy_loop_s": {m: npy[m]["seconds"] for m in METHOD_NAMES},
            "ratios": {label: r for label, r, _ in ratios}, "mismatches": total_mismatch, "cli": cli,
        }
        Path(args.json).write_text(json.dumps(payload, indent=2, default=float))

    print("RESULT: " + ("FAIL — iteration counts disagree" if fail else "all iteration counts identical"))
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main())
