"""Benchmark: the otod engine against a per-config optax loop, on one depth sweep.

Sweep: depth 1..DMAX (a static axis: one compiled program per depth) × inits identity, xavier, small × SEEDS
seeds × the lr multipliers in --lr-grid (of the reference step η = 1/(L·s_max^{2(L−1)/L})), gd, width 8,
κ_Φ = 2, tol 1e-6, float64, cap --max-iters. Identical work on both sides:

A. the engine, ``otod.core.engine.iterations_to_target``: per depth, every (init, lr, seed) lane in one call of
   one compiled program (no learning-rate pruning and no stall rule: the family's window rule with a window past
   the cap in place of its fixed-point rule, so every lane runs to its own stop, exactly as the loop does);
B. ``otod.core.reference.reference_run``: a Python loop per config over the method's standalone optax form
   (jitted once per depth), stopping by the same rule.

Each side is timed --repeats times, alternating which runs first; the engine's first repeat includes its
compilations (reported separately: the compile count per depth), later repeats reuse them, as the loop reuses its
jitted step. Counts must be identical for every lane in every repeat. Prints each run, medians, per-pair ratios
and their median, and the CPU model. From the repository root:

    python3 benchmarks/bench_depth.py [--dmax 12] [--seeds 4] [--lr-grid 0.5,1,2] [--max-iters 500] [--repeats 5]

Exit status 0 when all counts match, 1 otherwise.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time

import jax
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout's otod
jax.config.update("jax_enable_x64", True)

from otod.core.compilation_cache import count_compilations  # noqa: E402
from otod.core.engine import iterations_to_target  # noqa: E402
from otod.core.reference import reference_run  # noqa: E402
from otod.depth.kind import depth_target  # noqa: E402
from otod.depth.linear import DeepLinearSpec, init_code  # noqa: E402
from otod.depth.methods import METHODS, MethodOptions  # noqa: E402
from otod.core.results import cpu_model  # noqa: E402

INITS = ("identity", "xavier", "small")


@dataclasses.dataclass(frozen=True)
class NoStallSpec(DeepLinearSpec):
    """The deep-linear family with the window stall rule, which a window past the cap turns off (the family's own
    fixed-point rule would stop a lane whose step rounds to zero, where the loop runs on to the cap)."""

    def family(self):
        return super().family()._replace(stall="window")


def lanes(seeds: int, grid):
    combos = [(c, lr, s) for c in INITS for lr in grid for s in range(seeds)]
    return (np.array([float(init_code(c)) for c, _, _ in combos]), np.array([lr for _, lr, _ in combos]),
            np.array([s for _, _, s in combos]))


def engine(dmax, seeds, grid, cap):
    inits, lrs, seed_idx = lanes(seeds, grid)
    counts, compiles = {}, {}
    for depth in range(1, dmax + 1):
        with count_compilations() as c:
            sol = iterations_to_target(NoStallSpec(depth=depth), (METHODS["gd"],),
                                       {"init": inits, "beta": np.zeros(len(lrs))}, seed_idx, lrs,
                                       target=depth_target(1e-6), max_iters=cap, options=MethodOptions(),
                                       stall_window=cap + 1)
        counts[depth] = sol.iterations.tolist()
        compiles[depth] = len(c)
    return counts, compiles


def loop(dmax, seeds, grid, cap):
    inits, lrs, seed_idx = lanes(seeds, grid)
    counts = {}
    for depth in range(1, dmax + 1):
        spec = DeepLinearSpec(depth=depth)
        counts[depth] = [reference_run(spec, METHODS["gd"], {"init": c, "beta": 0.0}, int(s),
                                       target=depth_target(1e-6), max_iters=cap, lr=float(lr),
                                       options=MethodOptions()).iterations
                         for c, lr, s in zip(inits, lrs, seed_idx)]
    return counts


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dmax", type=int, default=12)
    p.add_argument("--seeds", type=int, default=4)
    p.add_argument("--lr-grid", default="0.5,1,2")
    p.add_argument("--max-iters", type=int, default=500)
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args(argv)
    grid = [float(v) for v in a.lr_grid.split(",")]
    n_lanes = a.dmax * len(INITS) * len(grid) * a.seeds
    print(f"depth 1..{a.dmax} × {len(INITS)} inits × {a.seeds} seeds × {len(grid)} lrs = {n_lanes} lanes, "
          f"cap {a.max_iters}, float64; CPU: {cpu_model()}")
    times = {"engine": [], "loop": []}
    reference = None
    ok = True
    for r in range(a.repeats):
        order = ("engine", "loop") if r % 2 == 0 else ("loop", "engine")
        for side in order:
            t0 = time.perf_counter()
            if side == "engine":
                counts, compiles = engine(a.dmax, a.seeds, grid, a.max_iters)
                if r == 0:
                    print("engine compilations per depth:", compiles)
            else:
                counts = loop(a.dmax, a.seeds, grid, a.max_iters)
            times[side].append(time.perf_counter() - t0)
            reference = reference or counts
            if counts != reference:
                ok = False
                print(f"repeat {r} {side}: counts differ")
        print(f"repeat {r}: engine {times['engine'][-1]:.2f} s, loop {times['loop'][-1]:.2f} s")
    ratios = [lp / e for e, lp in zip(times["engine"], times["loop"])]
    total = sum(sum(v) for v in reference.values())
    print(f"lane-iterations per run: {total}")
    print(f"engine: runs {[round(t, 2) for t in times['engine']]}, median {statistics.median(times['engine']):.2f} s "
          f"(median without the first, compiling, run: {statistics.median(times['engine'][1:]):.2f} s)")
    print(f"loop:   runs {[round(t, 2) for t in times['loop']]}, median {statistics.median(times['loop']):.2f} s")
    print(f"loop/engine per pair: {[round(x, 1) for x in ratios]}, median {statistics.median(ratios):.1f}×")
    print("counts identical in every repeat" if ok else "COUNT MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
