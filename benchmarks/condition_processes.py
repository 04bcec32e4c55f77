"""Part 2 of ``bench_condition.py`` (issue 8): whole processes, interpreter start and imports included, a fresh
process and folder each, cold (every otod run gets a fresh empty compilation cache), and the report helpers both
parts print with.

* ``otod sweep condition --k 1..KMAX --method gd --dim 64 --seeds SEEDS --basis rotated`` against
  ``optax_loop_condition.py --basis rotated`` (the per-config jitted-step script on the same dense problem, same
  cap and precision), alternated ``--repeats`` times, iteration counts compared record by record;
* plain ``otod sweep condition --k 1..KMAX`` cold in the same repeats;
* the peak memory (max RSS of the child, ``getrusage(RUSAGE_CHILDREN)``) of one
  ``otod sweep condition --k 1..1e4:200:log --seeds 64 --no-plot``;
* executed/needed lane-iterations from the results file's metadata, for the default grid, ``--k 1..1e4:25:log``
  and ``--lr tuned``.

Run through ``bench_condition.py`` (``--skip-inprocess`` runs this part alone); the otod commands run this
checkout's code (``python3 -m otod`` with the repository root first on PYTHONPATH).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

METHOD = "gd"
TOL = 1e-6
SEED = 0

# Targets of issue 8 measured by whole processes (ratios: larger = otod faster).
TARGET_CLI_ROTATED = 10.0   # whole process, cold: optax script / otod sweep --basis rotated
TARGET_CLI_COLD_S = 1.5     # whole process: otod sweep condition --k 1..100, cold
TARGET_PEAK_MIB = 400.0     # otod sweep condition --k 1..1e4:200:log --seeds 64 --no-plot
TARGET_EFFICIENCY = 1.15    # executed / needed lane-iterations

MEMORY_SWEEP = ("--k", "1..1e4:200:log", "--seeds", "64", "--no-plot")
MEMORY_SWEEP_QUICK = ("--k", "1..1e3:50:log", "--seeds", "8", "--no-plot")
EFFICIENCY_SWEEPS = (("default grid", ()), ("--k 1..1e4:25:log", ("--k", "1..1e4:25:log")),
                     ("--lr tuned", ("--lr", "tuned")))


def median(xs) -> float:
    return float(statistics.median(xs))


def fmt_runs(xs) -> str:
    return ", ".join(f"{x:.3f}" for x in xs)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def load() -> str:
    return ", ".join(f"{v:.2f}" for v in os.getloadavg())


def compare(label: str, numerator, denominator, target: float | None, *, at_most: bool = False) -> dict:
    """Per-pair ratios numerator/denominator (same repeat), printed with their median and the target's verdict."""
    pairs = [a / b for a, b in zip(numerator, denominator)]
    m = median(pairs)
    if target is None:
        tgt = "(no target)"
    else:
        tgt = f"target {'≤' if at_most else '≥'} {target:g}× {verdict(m <= target if at_most else m >= target)}"
    print(f"  {label:<50} median {m:>7.2f}×  {tgt:<20}  pairs: " + ", ".join(f"{x:.2f}" for x in pairs))
    return {"pairs": pairs, "median": m, "target": target, "pass": None if target is None else
            bool(m <= target if at_most else m >= target)}


def child_env(cache: Path | None) -> dict:
    """The environment of a child process: this checkout first on PYTHONPATH, the compilation cache given."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return dict(os.environ, PYTHONPATH=path, OTOD_COMPILATION_CACHE=str(cache) if cache else "off")


OTOD = [sys.executable, "-m", "otod"]


def timed_process(cmd, cwd, cache: Path | None = None):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=child_env(cache))
    return time.perf_counter() - t0, r


def peak_rss_mib(cmd, cwd, cache: Path | None) -> tuple[float, int, str]:
    """Max RSS (MiB) of ``cmd`` run as the only child of a fresh wrapper process (getrusage(RUSAGE_CHILDREN))."""
    wrapper = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
               "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    r = subprocess.run([sys.executable, "-c", wrapper, *cmd], cwd=cwd, capture_output=True, text=True,
                       env=child_env(cache))
    try:
        rc, kib = (int(x) for x in r.stdout.split()[-2:])
    except ValueError:
        return float("nan"), 1, (r.stdout + r.stderr)[-1500:]
    return kib / 1024.0, rc, r.stderr[-1500:]


def results_file(directory: Path) -> dict:
    """The first condition results file under ``directory`` (Parquet, the default, or JSON) as {"meta", "records"}
    (`otod.core.results.load`); {} where there is none."""
    from otod.core.results import load

    for path in sorted([*directory.rglob("condition-*.parquet"), *directory.rglob("condition-*.json")]):
        try:
            loaded = load(path)
        except Exception:  # noqa: BLE001  (a partial or foreign file: try the next)
            continue
        return {"meta": loaded.meta, "records": list(loaded.records)}
    return {}


def sweep_counts(data: dict) -> dict:
    return {(rec["method"], float(rec["kappa"]), int(rec["seed"])): int(rec["iterations"])
            for rec in data.get("records", [])}


def find_efficiency(meta, path: str = "") -> dict:
    """Every entry of the metadata whose key names an efficiency or a count of lane-iterations, by its path; the
    pre-run ``estimate`` (a prediction, not a count) and the config are skipped."""
    found = {}
    if isinstance(meta, dict):
        for k, v in meta.items():
            where = f"{path}.{k}" if path else k
            if where in ("estimate", "config"):
                continue
            if "efficiency" in k.lower() or "lane_iteration" in k.lower():
                found[where] = v
            else:
                found.update(find_efficiency(v, where))
    elif isinstance(meta, list):
        for i, v in enumerate(meta):
            found.update(find_efficiency(v, f"{path}[{i}]"))
    return found


def efficiency_ratio(entries: dict) -> float | None:
    """executed/needed lane-iterations from the metadata entries `find_efficiency` found: Σ executed / Σ needed over
    every mapping with ``executed`` and ``needed`` counts (per chunk or in total: the ratio is the same), else a
    number under a key naming an efficiency (or a mapping's ``ratio`` / ``efficiency``); None when the entries
    have no such shape."""
    pairs = [(float(v["executed"]), float(v["needed"])) for v in entries.values() if isinstance(v, dict)
             and isinstance(v.get("executed"), (int, float)) and isinstance(v.get("needed"), (int, float))]
    if pairs and sum(n for _, n in pairs) > 0:
        return sum(e for e, _ in pairs) / sum(n for _, n in pairs)
    for key, v in entries.items():
        if isinstance(v, (int, float)) and "efficiency" in key.lower():
            return float(v)
        if isinstance(v, dict):
            for name in ("ratio", "efficiency", "executed_over_needed"):
                if isinstance(v.get(name), (int, float)):
                    return float(v[name])
    return None


def commands(kmax: int, seeds: int) -> tuple[dict, int, str]:
    """The three timed commands as argument lists (``rotated`` and ``plain`` after ``python3 -m otod``,
    ``script`` whole), the iteration cap every one of them gets (otod's own automatic cap) and the precision."""
    from otod.condition.kind import max_iters as condition_max_iters
    from otod.condition.options import sweep_config_from_options

    k_arg = f"1..{kmax}"
    config = sweep_config_from_options(k=k_arg, method=METHOD, dim=64, seeds=seeds, basis="rotated", tol=TOL,
                                       seed=SEED)
    cap = condition_max_iters(config)
    dtype = "float64" if config.resolved_x64 else "float32"
    argv = {"rotated": ["sweep", "condition", "--k", k_arg, "--method", METHOD, "--dim", "64", "--seeds", str(seeds),
                        "--basis", "rotated"],
            "script": [sys.executable, str(HERE / "optax_loop_condition.py"), "--kmax", str(kmax), "--seeds",
                       str(seeds), "--dim", "64", "--method", METHOD, "--basis", "rotated", "--max-iters", str(cap),
                       "--dtype", dtype],
            "plain": ["sweep", "condition", "--k", k_arg]}
    return argv, cap, dtype


class Runs:
    """The alternated runs' seconds, exit codes, last failure output and each command's own one-line report."""

    def __init__(self, keys):
        self.times = {k: [] for k in keys}
        self.rc = {k: 0 for k in keys}
        self.errors, self.summaries = {}, {}

    def record(self, key, t, r):
        self.times[key].append(t)
        self.rc[key] = max(self.rc[key], r.returncode)
        if r.returncode:
            self.errors[key] = (r.stdout + r.stderr)[-1500:]
        line = next((ln for ln in r.stdout.splitlines() if ln.startswith("condition sweep:")), None)
        if line:
            self.summaries.setdefault(key, line)


def alternated_runs(argv: dict, repeats: int, tmp: Path) -> tuple[Runs, int, int, dict]:
    """``repeats`` rounds of the three commands (the order reversed every other round), each in its own folder
    and otod's with a fresh compilation cache; the rotated sweep's counts checked against the script's. Returns
    the runs, (records compared, mismatched) and the first plain run's results metadata."""
    runs = Runs(("rotated", "script", "plain"))
    compared = mismatched = 0
    plain_meta = {}
    for rep in range(repeats):
        base = tmp / f"r{rep}"
        for sub in ("rotated", "script", "plain"):
            (base / sub).mkdir(parents=True)

        def otod_rotated():
            runs.record("rotated", *timed_process(OTOD + argv["rotated"] + ["--out", str(base / "rotated" / "out")],
                                                  base / "rotated", base / "cache-rotated"))

        def optax_script():
            runs.record("script", *timed_process(argv["script"] + ["--out", str(base / "script" / "counts.json")],
                                                 base / "script"))

        def otod_plain():
            runs.record("plain", *timed_process(OTOD + argv["plain"] + ["--out", str(base / "plain" / "out")],
                                                base / "plain", base / "cache-plain"))

        for run in ((otod_rotated, optax_script, otod_plain) if rep % 2 == 0
                    else (otod_plain, optax_script, otod_rotated)):
            run()
        counts = sweep_counts(results_file(base / "rotated"))
        loop_file = base / "script" / "counts.json"
        if counts and loop_file.exists():
            for m, k, s, t in json.loads(loop_file.read_text())["records"]:
                compared += 1
                mismatched += counts.get((m, float(k), int(s))) != t
        if rep == 0:
            plain_meta = results_file(base / "plain").get("meta", {})
        print(f"  repeat {rep + 1}/{repeats} (load {load()}): "
              + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in runs.times.items()), flush=True)
    return runs, compared, mismatched, plain_meta


def peak_memory(sweep, tmp: Path, quick: bool) -> tuple[float, int, float]:
    """Max RSS (MiB), exit code and seconds of one cold ``otod sweep condition`` over ``sweep``, printed."""
    (tmp / "mem").mkdir()
    t0 = time.perf_counter()
    peak, mem_rc, mem_err = peak_rss_mib(OTOD + ["sweep", "condition", *sweep, "--out", str(tmp / "mem" / "out")],
                                         tmp / "mem", tmp / "cache-mem")
    mem_s = time.perf_counter() - t0
    print(f"\n-- peak memory (max RSS of the child, getrusage(RUSAGE_CHILDREN)), one cold run --\n"
          f"  otod sweep condition {' '.join(sweep)}: {peak:.0f} MiB in {mem_s:.1f} s (exit {mem_rc})  "
          + (f"target < {TARGET_PEAK_MIB:g} MiB {verdict(mem_rc == 0 and peak < TARGET_PEAK_MIB)}"
             if not quick else "(a smaller sweep than the target's)"))
    if mem_rc:
        print(f"--- output ---\n{mem_err}")
    return peak, mem_rc, mem_s


def lane_efficiency(plain_meta: dict, kmax: int, tmp: Path) -> dict:
    """executed/needed lane-iterations of the plain run (its metadata) and of `EFFICIENCY_SWEEPS`' other sweeps
    (run here, cold), printed against `TARGET_EFFICIENCY`; {} where the metadata records none."""
    print("\n-- executed / needed lane-iterations (from the results file's metadata) --")
    efficiency = {}
    found = find_efficiency(plain_meta)
    if not found:
        print("  not measured: the results file's metadata has no efficiency / lane_iterations entry yet "
              "(the engine change that records it has not landed in this checkout)")
        return efficiency
    efficiency["default grid" if kmax == 100 else f"--k 1..{kmax}"] = found
    for label, extra in EFFICIENCY_SWEEPS[1:]:
        out = tmp / ("eff" + str(len(efficiency)))
        out.mkdir()
        _, r = timed_process(OTOD + ["sweep", "condition", *extra, "--no-plot", "--out", str(out / "out")],
                             out, tmp / "cache-eff")
        efficiency[label] = find_efficiency(results_file(out).get("meta", {})) if r.returncode == 0 else {
            "error": (r.stdout + r.stderr)[-300:]}
    for label, entries in efficiency.items():
        waste = efficiency_ratio(entries)
        efficiency[label] = {"entries": entries, "ratio": waste}
        shown = sorted(entries.items(), key=lambda kv: not isinstance(kv[1], dict))[:3]
        more = f" (+{len(entries) - len(shown)} more entries)" if len(entries) > len(shown) else ""
        print(f"  {label}: " + "; ".join(f"{k} = {json.dumps(v, default=str)[:200]}" for k, v in shown) + more)
        print("      executed/needed: " + ("not understood (read the entries above)" if waste is None else
                                          f"{waste:.3f}  target ≤ {TARGET_EFFICIENCY:g} "
                                          f"{verdict(waste <= TARGET_EFFICIENCY)}"))
    return efficiency


def part_two(kmax: int, seeds: int, repeats: int, quick: bool) -> tuple[bool, dict]:
    """Every whole-process measurement above, printed; (failed, the measurements)."""
    argv, cap, dtype = commands(kmax, seeds)
    labels = {"rotated": "otod " + " ".join(argv["rotated"]) + " --out DIR",
              "script": "python3 benchmarks/optax_loop_condition.py " + " ".join(argv["script"][2:]) + " --out FILE",
              "plain": "otod " + " ".join(argv["plain"]) + " --out DIR"}
    print(f"== part 2: whole processes (interpreter start and imports included), {repeats} repeats alternating, "
          f"every otod run with a fresh empty compilation cache (cold); cap {cap}, {dtype} ==")
    with tempfile.TemporaryDirectory(prefix="otod-bench-") as tmp:
        tmp = Path(tmp)
        runs, compared, mismatched, plain_meta = alternated_runs(argv, repeats, tmp)
        times, rc = runs.times, runs.rc
        print(f"\n-- seconds per run (median of {repeats}; runs in order) --")
        for key, label in labels.items():
            print(f"  {label}\n      median {median(times[key]):6.2f}   runs {fmt_runs(times[key])}  (exit {rc[key]})")
            if key in runs.summaries:
                print(f"      its own report: {runs.summaries[key]}")
        for key, err in runs.errors.items():
            print(f"--- {key} output (last run that failed) ---\n{err}")
        print(f"  iteration counts, otod sweep --basis rotated vs the optax script: {mismatched} mismatches of "
              f"{compared} (all repeats)")
        ok_runs = all(v == 0 for v in rc.values())
        print("\n-- ratios, per pair (same repeat) --")
        ratio = compare("optax script / otod sweep --basis rotated, cold", times["script"], times["rotated"],
                        TARGET_CLI_ROTATED)
        ratio["pass"] = bool(ratio["pass"] and ok_runs)
        plain_s = median(times["plain"])
        plain_ok = rc["plain"] == 0 and plain_s < TARGET_CLI_COLD_S
        print(f"  otod sweep condition --k 1..{kmax}, cold: median {plain_s:.2f} s  target < {TARGET_CLI_COLD_S:g} s "
              f"{verdict(plain_ok)}")
        sweep = MEMORY_SWEEP_QUICK if quick else MEMORY_SWEEP
        peak, mem_rc, mem_s = peak_memory(sweep, tmp, quick)
        efficiency = lane_efficiency(plain_meta, kmax, tmp)
    print()
    fail = mismatched > 0 or compared == 0 or not ok_runs or mem_rc != 0
    return fail, {"labels": labels, "times": times, "rc": rc, "mismatches": mismatched, "compared": compared,
                  "ratio_script_over_rotated": ratio, "plain_cold_median_s": plain_s, "plain_cold_pass": plain_ok,
                  "peak_rss_mib": peak, "peak_sweep": list(sweep), "quick": quick, "peak_seconds": mem_s,
                  "efficiency": efficiency}
