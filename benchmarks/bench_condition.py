"""Benchmark: the otod engine against per-config loops a user would write, on one condition sweep.

Sweep: κ = 1..KMAX (integers) × SEEDS seeds (default 1..100 × 8), d = 64, methods gd and heavy-ball, tol 1e-6,
lr = theory, log-uniform spectrum, eigen basis, random start. The iteration cap is otod's own automatic cap,
``otod.condition.kind.max_iters`` of the same sweep's `SweepConfig` (2764 for κ ≤ 100; 1000 for κ ≤ 72), and every
implementation gets it.

Part 1 (in one process, float64) runs the sweep four ways, each timed ``--repeats`` times (default 5), alternating
the engine and the baselines (even repeats engine first, odd repeats baselines first):

1. the engine, ``otod.core.engine.iterations_to_target``: gd and heavy-ball are one compiled program (the
   ``momentum`` program), each method's lanes one call of it, as ``otod sweep`` runs them. Every repeat clears
   JAX's caches (``jax.clear_caches``) and times a first pass (the one compilation included; the script checks
   there is exactly one) and a second, compiled pass. The baselines' turn clears the caches too, so each of
   their repeats includes their own compilations, whichever side runs first;
2. ``otod.core.reference.reference_run``, otod's one reference loop (the loop its tests compare the engine with):
   a Python loop per config that steps the method's standalone optax form (``optax.sgd``, with momentum for
   heavy-ball), jitted, until the same stopping rule. The script counts the XLA compilations it makes;
3. ``optax_loop_condition.run`` from the standalone script next to this one (numpy/jax/optax only): a Python loop
   per config over one jitted optax step compiled once per method, i.e. what a user without otod writes;
4. a per-config plain NumPy float64 loop with the same update rules (gd: x ← x − lr·g; heavy-ball: m ← g + βm,
   x ← x − lr·m, optax's sgd-with-momentum form): an independent implementation, written here on purpose.

All four run identical work: the same problems (seed s draws from ``numpy.random.default_rng([0, s])``, as
``otod.core.engine.seed_draws`` does), spectrum, start, step and cap. The NumPy loop's problems are built once,
untimed, from the engine's own family; its step sizes and momenta are computed in NumPy from μ and L and checked
bit for bit against ``METHODS[m].reference_lr`` / ``hyperparameters`` and the engine's ``Solution.learning_rate``.
Iteration counts must be identical for every (κ, seed, method) in every repeat.

Part 2 (whole processes: interpreter start and imports included; each run in a fresh process and folder, nothing
resumed): ``otod sweep condition --k 1..KMAX --method gd --dim 64 --seeds SEEDS --no-plot`` against
``optax_loop_condition.py`` doing the same work at the precision the sweep uses and with otod's cap (passed as
``--max-iters``), alternated ``--repeats`` times; the otod command runs cold (an empty compilation cache) and warm
(the cache the cold run filled). Plain ``otod sweep condition --k 1..KMAX`` is timed too (cold and warm). Counts
from the sweep's results file are compared with the script's.

Every timing prints its runs, their median, the per-pair ratios (same repeat) and the median of those ratios, and
the CPU model. Run from the repository root:

    python3 benchmarks/bench_condition.py [--kmax 100] [--seeds 8] [--repeats 5] [--skip-cli | --skip-inprocess]

Exit status: 0 when all counts match, 1 on any mismatch, 2 on bad input (targets are reported PASS/MISS, not
enforced).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jax
import numpy as np
import optax

import otod.condition  # noqa: F401  (registers the condition sweep)
from otod.condition.kind import max_iters as condition_max_iters
from otod.condition.methods import METHODS, MethodOptions, heavy_ball_momentum
from otod.condition.options import sweep_config_from_options
from otod.core.compilation_cache import count_compilations
from otod.core.engine import iterations_to_target, seed_draws
from otod.core.reference import reference_run
from otod.core.results import cpu_model

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import optax_loop_condition as standalone  # noqa: E402  (the standalone script next to this one)

METHOD_NAMES = ("gd", "heavy-ball")
DIM = 64
TOL = 1e-6
SEED = 0

# Targets (ratios of wall times; larger = engine faster). Set for the full sweep (κ 1..100 × 8 seeds) against a
# per-config loop over one jitted optax step.
TARGET_OPTAX_FIRST = 20.0     # optax loop / engine, engine compile included
TARGET_OPTAX_COMPILED = 100.0  # optax loop / engine, compiled
TARGET_NUMPY_FIRST = 2.0      # NumPy loop / engine, compile included
TARGET_CLI_RATIO = 4.0        # whole process: optax-loop script / otod sweep
TARGET_CLI_COLD_S = 10.0      # whole process: otod sweep condition --k 1..100, cold


def median(xs) -> float:
    return float(statistics.median(xs))


def fmt_runs(xs, unit="") -> str:
    return ", ".join(f"{x:.3f}{unit}" for x in xs)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


# ------------------------------------------------------------------------------------------------------------------
# Part 1: the engine and the in-process baselines
# ------------------------------------------------------------------------------------------------------------------

def run_engine(spec, kappas, seed_idx, target, cap):
    """One repeat: clear JAX's caches, a first pass (compile included), then a compiled pass; both passes run
    gd and heavy-ball as one program, each method's lanes one call."""
    members = tuple(METHODS[m] for m in METHOD_NAMES)
    n = len(kappas)
    points = {"kappa": np.asarray(kappas, np.float64)}
    lrs = np.ones(n, np.float64)

    def one_pass():
        sols, times = {}, {}
        for i, m in enumerate(METHOD_NAMES):
            t0 = time.perf_counter()
            sols[m] = iterations_to_target(spec, members, points, seed_idx, lrs, method_indices=np.full(n, i),
                                           seed=SEED, target=target, max_iters=cap, relative_lr=True,
                                           options=MethodOptions())
            times[m] = time.perf_counter() - t0  # the Solution is NumPy arrays: the work is done
        return sols, times

    jax.clear_caches()
    with count_compilations() as first_compiles:
        first, first_t = one_pass()
    with count_compilations() as second_compiles:
        second, second_t = one_pass()
    return {"first": first_t, "compiled": second_t, "compiles": len(first_compiles),
            "compile_s": float(sum(first_compiles)), "recompiles": len(second_compiles),
            "solutions": [first, second]}


def run_reference(spec, configs, target, cap):
    """otod.core.reference.reference_run for every (κ, seed) and method."""
    out = {}
    for m in METHOD_NAMES:
        iters = np.zeros(len(configs), np.int64)
        with count_compilations() as compiles:
            t0 = time.perf_counter()
            for i, (k, s) in enumerate(configs):
                r = reference_run(spec, METHODS[m], {"kappa": k}, s, seed=SEED, target=target, max_iters=cap,
                                  lr=1.0, relative_lr=True, options=MethodOptions())
                iters[i] = r.iterations
            seconds = time.perf_counter() - t0
        out[m] = {"seconds": seconds, "iterations": iters, "compiles": len(compiles)}
    return out


def run_standalone(kmax, n_seeds, configs, cap):
    """optax_loop_condition.run (float64, as part 1), counts reordered to ``configs``."""
    records, seconds = standalone.run(kmax, n_seeds, DIM, METHOD_NAMES, TOL, cap, "float64")
    counts = {(m, float(k), int(s)): t for m, k, s, t in records}
    return {"seconds": seconds,
            "iterations": {m: np.asarray([counts[(m, float(k), int(s))] for k, s in configs], np.int64)
                           for m in METHOD_NAMES}}


def build_numpy_problems(spec, configs, n_seeds):
    """Per (κ, seed): the engine's problem as float64 NumPy arrays, plus each method's step and β computed in
    NumPy from μ and L. Returns the problems and the number of configs whose NumPy step or β differs (bitwise)
    from ``METHODS[m].reference_lr`` / ``hyperparameters`` / ``heavy_ball_momentum``."""
    fam = spec.family()
    draws = seed_draws(spec, SEED, n_seeds, np.float64)
    problems, mismatched = {}, 0
    for k, s in configs:
        drawn = jax.tree.map(lambda a: a[s], draws)
        p = fam.make({"kappa": np.float64(k)}, drawn)
        x0 = fam.init(p)
        info = fam.info(p, x0)
        c = info["curvature"]
        mu, lip = float(c.mu), float(c.lipschitz)
        lr_gd = 1.0 / lip
        lr_hb = 4.0 / (np.sqrt(lip) + np.sqrt(mu)) ** 2
        r = np.sqrt(lip / mu)
        beta = float(((r - 1) / (r + 1)) ** 2)
        ref = (float(METHODS["gd"].reference_lr(info)), float(METHODS["heavy-ball"].reference_lr(info)),
               float(heavy_ball_momentum(c)), float(METHODS["heavy-ball"].hyperparameters(info)[0]),
               float(METHODS["gd"].hyperparameters(info)[0]))
        if ref != (lr_gd, float(lr_hb), beta, beta, 0.0):
            mismatched += 1
        problems[(k, s)] = {"lam": np.asarray(p["eigenvalues"], np.float64),
                            "x_star": np.asarray(p["x_star"], np.float64),
                            "x0": np.asarray(x0, np.float64),
                            "lr": {"gd": float(lr_gd), "heavy-ball": float(lr_hb)},
                            "beta": {"gd": 0.0, "heavy-ball": beta}}
    return problems, mismatched


def numpy_iterations(lam, x_star, x0, lr, beta, tol, max_iters) -> int:
    """Iterations until ½Σλᵢ(xᵢ−x*ᵢ)² / f(x₀) ≤ tol, float64, optax's sgd (with momentum when β > 0)."""
    d = x0 - x_star
    g = lam * d  # the gradient λ∘(x − x*)
    f0 = 0.5 * np.sum(g * d)
    safe_f0 = f0 if f0 > 0 else 1.0
    gap = 1.0 if f0 > 0 else 0.0
    x = x0.copy()
    mom = np.zeros_like(x0)
    t = 0
    if beta == 0.0:
        while gap > tol and t < max_iters:
            x = x - lr * g
            d = x - x_star
            g = lam * d
            gap = 0.5 * np.sum(g * d) / safe_f0
            t += 1
    else:
        while gap > tol and t < max_iters:
            mom = g + beta * mom
            x = x - lr * mom
            d = x - x_star
            g = lam * d
            gap = 0.5 * np.sum(g * d) / safe_f0
            t += 1
    return t


def run_numpy(configs, problems, cap):
    out = {}
    for m in METHOD_NAMES:
        t0 = time.perf_counter()
        iters = np.asarray([numpy_iterations(problems[c]["lam"], problems[c]["x_star"], problems[c]["x0"],
                                             problems[c]["lr"][m], problems[c]["beta"][m], TOL, cap)
                            for c in configs], np.int64)
        out[m] = {"seconds": time.perf_counter() - t0, "iterations": iters}
    return out


def part_one(kmax, n_seeds, repeats):
    config = sweep_config_from_options(k=f"1..{kmax}", method=",".join(METHOD_NAMES), dim=DIM, seeds=n_seeds,
                                       tol=TOL, seed=SEED)
    cap = condition_max_iters(config)
    spec, target = config.problem, config.target
    kappas_axis = config.values("kappa")
    configs = [(float(k), s) for k in kappas_axis for s in range(n_seeds)]  # value-major, as the engine orders lanes
    kappas = [k for k, _ in configs]
    seed_idx = np.asarray([s for _, s in configs], np.int32)
    n = len(configs)
    print(f"== part 1: in one process, float64; κ = 1..{kmax} × {n_seeds} seeds = {n} configs per method, d = {DIM}, "
          f"methods {', '.join(METHOD_NAMES)}, tol {TOL:g}, lr theory, max_iters {cap} "
          f"(otod.condition.kind.max_iters), {repeats} repeats ==")

    jax.config.update("jax_enable_x64", True)
    jax.block_until_ready(jax.numpy.zeros(3) + 1)  # initialise the backend first: no one-time setup in any timing
    t0 = time.perf_counter()
    problems, bad_hyper = build_numpy_problems(spec, configs, n_seeds)
    build_s = time.perf_counter() - t0

    eng, ref, std, npy = [], [], [], []
    for rep in range(repeats):
        def engine():
            eng.append(run_engine(spec, kappas, seed_idx, target, cap))

        def baselines():
            jax.clear_caches()  # as for the engine: every repeat's loops include their own compilations
            ref.append(run_reference(spec, configs, target, cap))
            std.append(run_standalone(kmax, n_seeds, configs, cap))
            npy.append(run_numpy(configs, problems, cap))

        for run in ((engine, baselines) if rep % 2 == 0 else (baselines, engine)):
            run()
        print(f"  repeat {rep + 1}/{repeats}: engine {sum(eng[-1]['first'].values()):.3f} s first, "
              f"{sum(eng[-1]['compiled'].values()):.3f} s compiled; reference loop "
              f"{sum(r['seconds'] for r in ref[-1].values()):.2f} s; jitted-step loop {std[-1]['seconds']:.2f} s; "
              f"NumPy {sum(r['seconds'] for r in npy[-1].values()):.2f} s", flush=True)

    # ---- agreement ----
    print("\n-- iteration counts --")
    fail = False
    if bad_hyper:
        print(f"WARNING: {bad_hyper} configs whose NumPy step/momentum differ from otod's METHODS (bitwise)")
        fail = True
    lr_mismatch = sum(int(np.sum(np.asarray([problems[c]["lr"][m] for c in configs])
                                 != e["solutions"][0][m].learning_rate))
                      for e in eng for m in METHOD_NAMES)
    print(f"step sizes: NumPy's vs the engine's Solution.learning_rate, {lr_mismatch} bitwise mismatches "
          f"(all repeats); NumPy's vs otod's METHODS, {bad_hyper} configs differ")
    fail |= lr_mismatch > 0
    total_mismatch, worst = 0, 0
    for m in METHOD_NAMES:
        e0 = eng[0]["solutions"][0][m].iterations.astype(np.int64)
        others = ([("engine", e["solutions"][p][m].iterations.astype(np.int64)) for e in eng for p in (0, 1)]
                  + [("reference", r[m]["iterations"]) for r in ref]
                  + [("jitted-step", s["iterations"][m]) for s in std]
                  + [("NumPy", p[m]["iterations"]) for p in npy])
        bad = np.zeros(n, bool)
        by_name = {}
        for name, it in others:
            diff = it != e0
            bad |= diff
            by_name[name] = by_name.get(name, 0) + int(np.sum(diff))
            worst = max(worst, int(np.max(np.abs(it - e0))))
        total_mismatch += int(np.sum(bad))
        status = np.concatenate([e["solutions"][p][m].status for e in eng for p in (0, 1)])
        print(f"{m:>10}: against the engine's first repeat, mismatches: "
              + ", ".join(f"{k} {v}" for k, v in by_name.items())
              + f" (of {n} per run); iterations min/mean/max {e0.min()}/{e0.mean():.1f}/{e0.max()}, "
              f"total {e0.sum()}; engine lanes not converged: {int(np.sum(status != 0))}")
        for i in np.flatnonzero(bad)[:10]:
            k, s = configs[i]
            print(f"            κ={k:g} seed={s}: engine {e0[i]}, reference {ref[0][m]['iterations'][i]}, "
                  f"jitted-step {std[0]['iterations'][m][i]}, NumPy {npy[0][m]['iterations'][i]}")
    print(f"MISMATCHES: {total_mismatch} of {n * len(METHOD_NAMES)} (κ, seed, method) triples")
    if worst > 1:
        print(f"!!!!! LOUD: some iteration counts differ by {worst} > ±1: the implementations disagree, not just "
              "rounding at the tolerance !!!!!")
    fail |= total_mismatch > 0
    compiles = [e["compiles"] for e in eng]
    recompiles = [e["recompiles"] for e in eng]
    compiles_ok = all(c == 1 for c in compiles) and not any(recompiles)
    fail |= not compiles_ok
    print(f"engine XLA compilations per repeat (gd and heavy-ball, one program): first pass {compiles}, compiled "
          f"pass {recompiles}" + ("  (OK)" if compiles_ok else "  (expected exactly 1 and 0!)"))
    ref_compiles = [sum(r[m]["compiles"] for m in METHOD_NAMES) for r in ref]
    print(f"reference loop XLA compilations per repeat: {ref_compiles} for {n * len(METHOD_NAMES)} runs "
          f"({median(ref_compiles) / (n * len(METHOD_NAMES)):.2f} per config)")

    # ---- times ----
    steps = {m: int(eng[0]["solutions"][0][m].iterations.sum()) for m in METHOD_NAMES}
    rows = {
        "engine, first pass (compile incl.)": [dict(e["first"]) for e in eng],
        "  of which XLA compile": [{"total": e["compile_s"]} for e in eng],
        "engine, compiled pass": [dict(e["compiled"]) for e in eng],
        "optax reference loop (reference_run)": [{m: r[m]["seconds"] for m in METHOD_NAMES} for r in ref],
        "optax loop, jitted step (standalone)": [{"total": s["seconds"]} for s in std],
        "NumPy loop": [{m: p[m]["seconds"] for m in METHOD_NAMES} for p in npy],
    }
    totals = {label: [sum(r.values()) for r in runs] for label, runs in rows.items()}
    print(f"\n-- times (seconds, wall; median of {repeats}; every run listed) --")
    print(f"{'':<38}" + "".join(f"{m:>11}" for m in METHOD_NAMES) + f"{'total':>11}   runs (total)")
    for label, runs in rows.items():
        cells = "".join(f"{median([r[m] for r in runs]):>11.3f}" if m in runs[0] else f"{'':>11}"
                        for m in METHOD_NAMES)
        print(f"{label:<38}{cells}{median(totals[label]):>11.3f}   {fmt_runs(totals[label])}")
    print(f"{'iterations run (sum over configs)':<38}" + "".join(f"{steps[m]:>11d}" for m in METHOD_NAMES)
          + f"{sum(steps.values()):>11d}")
    all_steps = sum(steps.values())
    print(f"(per iteration, medians: reference loop "
          f"{1e6 * median(totals['optax reference loop (reference_run)']) / all_steps:.1f} µs, jitted-step loop "
          f"{1e6 * median(totals['optax loop, jitted step (standalone)']) / all_steps:.1f} µs, NumPy "
          f"{1e6 * median(totals['NumPy loop']) / all_steps:.1f} µs; the NumPy problems were built once, untimed, "
          f"in {build_s:.2f} s; every config run by every implementation in every repeat, no extrapolation)")

    first = totals["engine, first pass (compile incl.)"]
    compiled = totals["engine, compiled pass"]
    comparisons = [
        ("reference loop / engine (compile incl.)", totals["optax reference loop (reference_run)"], first,
         TARGET_OPTAX_FIRST),
        ("reference loop / engine (compiled)", totals["optax reference loop (reference_run)"], compiled,
         TARGET_OPTAX_COMPILED),
        ("jitted-step loop / engine (compile incl.)", totals["optax loop, jitted step (standalone)"], first,
         TARGET_OPTAX_FIRST),
        ("jitted-step loop / engine (compiled)", totals["optax loop, jitted step (standalone)"], compiled,
         TARGET_OPTAX_COMPILED),
        ("NumPy loop / engine (compile incl.)", totals["NumPy loop"], first, TARGET_NUMPY_FIRST),
        ("NumPy loop / engine (compiled)", totals["NumPy loop"], compiled, None),
    ]
    print("\n-- ratios: baseline / engine, per pair (same repeat); larger = engine faster --")
    ratios = {}
    for label, a, b, target_ in comparisons:
        pairs = [x / y for x, y in zip(a, b)]
        ratios[label] = {"pairs": pairs, "median": median(pairs), "ratio_of_medians": median(a) / median(b)}
        tgt = f"target ≥ {target_:g}× {verdict(median(pairs) >= target_)}" if target_ else "(no target)"
        print(f"{label:<43} median {median(pairs):>7.1f}×  {tgt:<20} pairs: "
              + ", ".join(f"{x:.1f}" for x in pairs))
    if kmax != 100 or n_seeds != 8:
        print("(a smaller sweep than κ 1..100 × 8 seeds: the targets are set for that one)")
    print()
    payload = {"configs": n, "max_iters": cap, "kmax": kmax, "seeds": n_seeds, "repeats": repeats,
               "times": totals, "ratios": ratios, "mismatches": total_mismatch, "engine_compiles": compiles,
               "reference_compiles": ref_compiles}
    return fail, payload


# ------------------------------------------------------------------------------------------------------------------
# Part 2: whole processes
# ------------------------------------------------------------------------------------------------------------------

def otod_command() -> list[str]:
    exe = shutil.which("otod")
    return [exe] if exe else [sys.executable, "-c", "import sys; from otod.cli import main; sys.exit(main())"]


def timed_process(cmd, cwd, cache: Path | None = None):
    """Run a command as a whole process; ``cache`` is the otod compilation-cache folder it gets (None: off)."""
    env = dict(os.environ, OTOD_COMPILATION_CACHE=str(cache) if cache else "off")
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    return time.perf_counter() - t0, r


def sweep_counts(directory: Path):
    """{(method, κ, seed): iterations} and the meta of the results file an `otod sweep` wrote."""
    counts, meta = {}, {}
    for path in sorted(directory.rglob("condition-*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        meta = data.get("meta", {})
        for rec in data.get("records", []):
            counts[(rec["method"], float(rec["kappa"]), int(rec["seed"]))] = int(rec["iterations"])
    return counts, meta


def part_two(kmax, n_seeds, repeats):
    otod_cmd = otod_command()
    k_arg = f"1..{kmax}"
    check = subprocess.run(otod_cmd + ["sweep", "condition", "--help"], capture_output=True, text=True)
    if check.returncode != 0:
        print(f"== part 2: NOT MEASURED: `otod sweep condition --help` failed: {check.stderr.strip()[-300:]}")
        return False, {"measured": False}
    config = sweep_config_from_options(k=k_arg, method="gd", dim=DIM, seeds=n_seeds, tol=TOL, seed=SEED)
    cap = condition_max_iters(config)
    dtype = "float64" if config.resolved_x64 else "float32"
    sweep_args = ["sweep", "condition", "--k", k_arg, "--method", "gd", "--dim", str(DIM), "--seeds", str(n_seeds),
                  "--no-plot"]
    loop_args = ["--kmax", str(kmax), "--seeds", str(n_seeds), "--dim", str(DIM), "--method", "gd",
                 "--max-iters", str(cap), "--dtype", dtype]
    labels = {"sweep_gd": "otod " + " ".join(sweep_args) + " --out DIR",
              "sweep_gd_warm": "  the same, compilation cache warm",
              "optax_loop": "python3 benchmarks/optax_loop_condition.py " + " ".join(loop_args),
              "sweep_plain": f"otod sweep condition --k {k_arg} --out DIR",
              "sweep_plain_warm": "  the same, compilation cache warm"}
    print(f"== part 2: whole processes (interpreter start and imports included), {repeats} repeats, alternating; "
          f"max_iters {cap} (otod.condition.kind.max_iters), {dtype} (otod's precision rule) ==")
    times = {k: [] for k in labels}
    rc = {k: 0 for k in labels}
    errors, summaries = {}, {}
    compared = mismatched = 0
    meta_ok = True

    def record(key, t, r):
        times[key].append(t)
        rc[key] = max(rc[key], r.returncode)
        if r.returncode:
            errors[key] = (r.stdout + r.stderr)[-1500:]
        line = next((ln for ln in r.stdout.splitlines() if ln.startswith("condition sweep:")), None)
        if line:
            summaries.setdefault(key, line)

    with tempfile.TemporaryDirectory(prefix="otod-bench-") as tmp:
        tmp = Path(tmp)
        for rep in range(repeats):
            base = tmp / f"r{rep}"
            for sub in ("cold", "warm", "loop", "plain-cold", "plain-warm"):
                (base / sub).mkdir(parents=True)

            def otod_gd():
                for key, sub in (("sweep_gd", "cold"), ("sweep_gd_warm", "warm")):
                    t, r = timed_process(otod_cmd + sweep_args + ["--out", str(base / sub / "out")], base / sub,
                                         base / "cache")
                    record(key, t, r)

            def loop():
                t, r = timed_process([sys.executable, str(HERE / "optax_loop_condition.py"), *loop_args,
                                      "--out", str(base / "loop" / "counts.json")], base / "loop")
                record("optax_loop", t, r)

            for run in ((otod_gd, loop) if rep % 2 == 0 else (loop, otod_gd)):
                run()
            for key, sub in (("sweep_plain", "plain-cold"), ("sweep_plain_warm", "plain-warm")):
                t, r = timed_process(otod_cmd + ["sweep", "condition", "--k", k_arg, "--out", str(base / sub / "out")],
                                     base / sub, base / "plain-cache")
                record(key, t, r)
            counts, meta = sweep_counts(base / "cold")
            meta_ok &= (meta.get("precision") == dtype
                        and meta.get("config", {}).get("resolved", {}).get("max_iters") == cap)
            loop_file = base / "loop" / "counts.json"
            if counts and loop_file.exists():
                for m, k, s, t in json.loads(loop_file.read_text())["records"]:
                    compared += 1
                    mismatched += counts.get((m, float(k), int(s))) != t
            print(f"  repeat {rep + 1}/{repeats}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()),
                  flush=True)

    print(f"\n-- seconds per run (median of {repeats}; runs in order) --")
    for key, label in labels.items():
        print(f"  {label:<100} median {median(times[key]):6.2f}   runs {fmt_runs(times[key])}  (exit {rc[key]})")
        if key in summaries:
            print(f"      its own report: {summaries[key]}")
    for key, err in errors.items():
        print(f"--- {key} output (last run that failed) ---\n{err}")
    print(f"  results files: precision and cap as passed to the script ({dtype}, {cap}): "
          + ("yes" if meta_ok else "NO"))
    print(f"  iteration counts, otod sweep vs optax-loop script: {mismatched} mismatches of {compared} "
          f"(all repeats)")
    ok_runs = all(v == 0 for v in rc.values())
    ratios = {}
    print("\n-- ratios: optax-loop script / otod sweep --method gd, per pair (same repeat) --")
    for key, label in (("sweep_gd", "cold cache"), ("sweep_gd_warm", "warm cache")):
        pairs = [a / b for a, b in zip(times["optax_loop"], times[key])]
        ratios[key] = {"pairs": pairs, "median": median(pairs)}
        print(f"  {label:<12} median {median(pairs):5.2f}×  target ≥ {TARGET_CLI_RATIO:g}× "
              f"{verdict(ok_runs and median(pairs) >= TARGET_CLI_RATIO)}   pairs: "
              + ", ".join(f"{x:.2f}" for x in pairs))
    plain = median(times["sweep_plain"])
    print(f"  otod sweep condition --k {k_arg}, cold: median {plain:.2f} s  target < {TARGET_CLI_COLD_S:g} s "
          f"{verdict(rc['sweep_plain'] == 0 and plain < TARGET_CLI_COLD_S)}")
    print()
    fail = mismatched > 0 or not meta_ok or compared == 0 or not ok_runs
    return fail, {"measured": True, "times": times, "ratios": ratios, "mismatches": mismatched,
                  "compared": compared, "rc": rc}


# ------------------------------------------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = standalone.OneLineParser(prog="bench_condition.py", description=__doc__.split("\n\n")[0],
                 epilog="Exit status: 0 all counts identical, 1 a mismatch or a failed run, 2 bad input.")
    ap.add_argument("--kmax", type=standalone.at_least(2), default=None, metavar="K", help="κ = 1..K (default 100)")
    ap.add_argument("--seeds", type=standalone.at_least(1), default=None, metavar="S", help="seeds 0..S−1 (default 8)")
    ap.add_argument("--quick", action="store_true", help="κ = 1..20 × 4 seeds unless --kmax/--seeds say otherwise")
    ap.add_argument("--repeats", type=standalone.at_least(1), default=5, metavar="N",
                    help="timed runs of everything, alternating engine and baseline (default 5)")
    parts = ap.add_mutually_exclusive_group()
    parts.add_argument("--skip-cli", action="store_true", help="part 1 only (in-process)")
    parts.add_argument("--skip-inprocess", action="store_true", help="part 2 only (whole processes)")
    ap.add_argument("--json", metavar="PATH", help="also write the measurements as JSON to PATH")
    args = ap.parse_args(argv)
    kmax = args.kmax or (20 if args.quick else 100)
    n_seeds = args.seeds or (4 if args.quick else 8)
    if args.json:
        folder = Path(args.json).expanduser().resolve().parent
        if not folder.is_dir() or not os.access(folder, os.W_OK):
            ap.error(f"argument --json: cannot write into {folder}")

    print(f"otod condition benchmark; date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; jax {jax.__version__} ({jax.default_backend()}), "
          f"optax {optax.__version__}, numpy {np.__version__}, python {platform.python_version()}")
    print(f"load average (1, 5, 15 min) before: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(f"command: python3 benchmarks/bench_condition.py{' ' + ' '.join(sys.argv[1:]) if sys.argv[1:] else ''}")
    print()

    fail, payload = False, {"cpu": cpu_model(), "kmax": kmax, "seeds": n_seeds, "repeats": args.repeats}
    if not args.skip_inprocess:
        f1, payload["in_process"] = part_one(kmax, n_seeds, args.repeats)
        fail |= f1
    if not args.skip_cli:
        f2, payload["whole_process"] = part_two(kmax, n_seeds, args.repeats)
        fail |= f2
    print(f"load average after: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    if args.json:
        Path(args.json).write_text(json.dumps(payload, indent=2, default=float))
    print("RESULT: " + ("FAIL: iteration counts disagree, or a run failed" if fail
                        else "all iteration counts identical"))
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main())
