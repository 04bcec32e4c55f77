"""Benchmark: one matrix per LAPACK call (`otod.core.linalg`, the deadlock fix) against jaxlib's batched calls.

Identical work on both sides: the same engine call (`otod.core.engine.iterations_to_target`), problem, seeds,
steps and cap; only the LAPACK calls inside the compiled program differ.

A. one matrix per call (`otod.core.linalg` as shipped: a custom_vmap rule maps the batch with lax.map);
B. batched (`otod.core.linalg`'s functions replaced by jax.numpy.linalg's for this process: jaxlib fans a batch
   out over XLA:CPU's intra-op pool).

Cases: the perturbed Kronecker sweep of the README (eigh of H in every block's set-up; gd, κ = 1..1000 at 7
log-spaced points, 8 seeds, 10 × 10, ε = 0.1), and per-layer KFAC on the deep linear net (two solves per layer in
every iteration; depth 4 and 8, width 8, orthogonal init, 64 seeds, lr 1). B runs on one device only: with one device per core it is
the program that deadlocks (2 devices: 4 of 6 runs of the README command hung). A runs on one device (the like-for-
like pair) and on every core (what otod runs). Each run is its own process: it compiles (untimed), then times one
engine call; the sides alternate over --repeats rounds (even rounds A1, B1, An; odd rounds reversed); counts
must be identical in every run. Prints medians, per-pair ratios and their
median, the CPU model and the load. From the repository root:

    python3 benchmarks/bench_linalg.py [--repeats 5]

Exit status 0 when all counts match, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from otod.core import devices  # noqa: E402

devices.use_every_core()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from otod.core import linalg  # noqa: E402
from otod.core.engine import iterations_to_target  # noqa: E402
from otod.core.stopping import Target  # noqa: E402

SHIPPED = {name: getattr(linalg, name) for name in ("eigh", "eigvalsh", "inv", "solve", "svd")}
BATCHED = {"eigh": lambda a: tuple(jnp.linalg.eigh(a)), "eigvalsh": jnp.linalg.eigvalsh, "inv": jnp.linalg.inv,
           "solve": jnp.linalg.solve, "svd": lambda a: tuple(jnp.linalg.svd(a))}


def kronecker_case():
    from otod.condition.kronecker import KroneckerSpec
    from otod.condition.methods import METHODS

    spec = KroneckerSpec(rows=10, cols=10, perturbation=0.1)
    kappas, seeds = np.geomspace(1, 1000, 7), 8
    v, s = np.repeat(kappas, seeds), np.tile(np.arange(seeds), len(kappas))
    return lambda n: iterations_to_target(spec, (METHODS["gd"],), {"kappa": v}, s, np.ones_like(v),
                                          target=Target(1e-6), max_iters=20_000, devices=n)


def depth_kfac_case():
    from otod.depth.kind import depth_target
    from otod.depth.linear import DeepLinearSpec, init_code
    from otod.depth.methods import METHODS, MethodOptions

    seeds = 64

    def run(n):
        out = []
        for depth in (4, 8):
            spec = DeepLinearSpec(depth=depth, width=8)
            code = np.full(seeds, init_code("orthogonal"), float)
            out.append(iterations_to_target(spec, (METHODS["kfac"],), {"init": code, "beta": np.zeros(seeds)},
                                            np.arange(seeds), np.ones(seeds), target=depth_target(1e-6),
                                            max_iters=5000, options=MethodOptions(), devices=n))
        return out

    return run


def counts(solution) -> list:
    sols = solution if isinstance(solution, list) else [solution]
    return [s.iterations.tolist() for s in sols]


CASES = {"kronecker": ("perturbed Kronecker, eps = 0.1 (eigh in every block's set-up)", kronecker_case),
         "depth-kfac": ("depth 4 and 8 per-layer KFAC (solves in every iteration)", depth_kfac_case)}
SIDES = {"A1": ("A one matrix per call, 1 device", SHIPPED, 1), "B1": ("B batched, 1 device", BATCHED, 1),
         "An": ("A one matrix per call, every core", SHIPPED, None)}


def one_run(case: str, side: str) -> None:
    """In this process: compile (untimed), then time one engine call; print seconds and counts as JSON."""
    import json

    _, functions, n = SIDES[side]
    n = n or len(jax.local_devices())
    for name, fn in functions.items():
        setattr(linalg, name, fn)
    fn = CASES[case][1]()
    fn(n)
    t0 = time.perf_counter()
    out = fn(n)
    print(json.dumps({"seconds": time.perf_counter() - t0, "counts": counts(out), "devices": n}))


def main() -> int:
    import json
    import subprocess

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--run", nargs=2, metavar=("CASE", "SIDE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        one_run(*args.run)
        return 0
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
    print(f"# {cpu}, {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}; load {os.getloadavg()[0]:.2f}; "
          f"python {platform.python_version()}, jax {jax.__version__}; one process per run (compile untimed)")
    ok = True
    for case, (title, _) in CASES.items():
        times = {side: [] for side in SIDES}
        reference = None
        for r in range(args.repeats):
            for side in (list(SIDES) if r % 2 == 0 else list(reversed(SIDES))):
                proc = subprocess.run([sys.executable, __file__, "--run", case, side], capture_output=True,
                                      text=True, timeout=600)
                if proc.returncode != 0:
                    print(proc.stderr[-2000:])
                    return 1
                result = json.loads(proc.stdout.strip().splitlines()[-1])
                times[side].append(result["seconds"])
                reference = reference or result["counts"]
                ok &= result["counts"] == reference
        print(f"\n## {title}")
        for side, ts in times.items():
            print(f"{SIDES[side][0]:36s} median {statistics.median(ts):7.3f} s   runs "
                  f"{', '.join(f'{t:.3f}' for t in ts)}")
        ratios = [a / b for a, b in zip(times["A1"], times["B1"])]
        print(f"A/B on 1 device, per pair: {', '.join(f'{q:.2f}' for q in ratios)}; median "
              f"{statistics.median(ratios):.2f}")
        ratios = [a / b for a, b in zip(times["An"], times["B1"])]
        print(f"A on every core / B on 1 device, per pair: {', '.join(f'{q:.2f}' for q in ratios)}; median "
              f"{statistics.median(ratios):.2f}")
        print(f"counts identical in every run: {ok}")
    print(f"\n# load after {os.getloadavg()[0]:.2f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
