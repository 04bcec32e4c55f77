"""Benchmark (issue 53, item 2): the exact tr Σ from the layers' per-example norms
(`otod.nets.measure.example_norms`) against the vmapped per-example gradients it replaces
(`otod.nets.measure.noise_scale.gradient_moments`' loop), float64, on the teacher–student relu MLP
16 → width → width → 1 (depth 3) at init.

* ``ab``: ``--rounds`` alternated rounds (A then B on even rounds, B then A on odd), each compiled once before
  the first round: A = Σᵢ |gᵢ − G|² from vmapped gradients (`Problem.example_grads`, chunks of
  `Problem.gradient_chunk`), B = the same sum from the norms (`Problem.centred_square_sum`); seconds per
  variant (medians), the per-round ratio A/B, and their relative difference.
* ``large``: the one-off at P ≥ 10⁶ (width 1000): the seconds of each stage of the exact |G|², tr Σ and
  B_simple (building the problem and the data, the mean gradient G, the norm pass with its compile), and the
  vmapped gradients' seconds an example on ``--vmap-examples`` examples for comparison. Run it under
  ``/usr/bin/time -v`` for the peak memory.

    PYTHONPATH=. python3 benchmarks/bench_example_norms.py ab --width 256 --examples 4000 --rounds 5
    PYTHONPATH=. /usr/bin/time -v python3 benchmarks/bench_example_norms.py large --examples 100000
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time

import numpy as np


def problem_of(width: int, examples: int):
    import jax

    from otod.nets.measure.noise_scale import Problem
    from otod.nets.model.contract import from_spec
    from otod.nets.model.problem import NetSpec

    spec = NetSpec(model="mlp", width=width, depth=3, data="teacher", examples=examples, loss="squared", batch=32)
    with jax.enable_x64(True):
        return Problem.of_model(from_spec(spec, np.float64))


def vmapped_sum(problem, G, count: int | None = None) -> float:
    """Σᵢ |gᵢ − G|² over the first ``count`` examples (all: None), as gradient_moments' loop forms it."""
    import jax.numpy as jnp

    from otod.nets.measure.noise_scale import chunks

    idx = np.arange(problem.n if count is None else count)
    return sum(float(jnp.sum((problem.example_grads(problem.flat, part) - G) ** 2))
               for part in chunks(idx, problem.gradient_chunk()))


def environment() -> str:
    cpu = subprocess.run("lscpu | grep 'Model name'", shell=True, capture_output=True, text=True).stdout.strip()
    return f"{cpu.split(':')[-1].strip()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}"


def ab(width: int, examples: int, rounds: int) -> None:
    import jax

    with jax.enable_x64(True):
        problem = problem_of(width, examples)
        G = problem.mean_grad(problem.flat)
        a, b = vmapped_sum(problem, G), problem.centred_square_sum(G)  # compiles both
        print(f"teacher MLP width {width} depth 3, P = {problem.size:,}, n = {problem.n:,}; {environment()}")
        print(f"Σ|gᵢ − G|²: vmapped {a:.15g}, norms {b:.15g}, relative difference {abs(a - b) / a:.2e}")
        times = {"A": [], "B": []}
        for r in range(rounds):
            for name in ("A", "B") if r % 2 == 0 else ("B", "A"):
                start = time.perf_counter()
                vmapped_sum(problem, G) if name == "A" else problem.centred_square_sum(G)
                times[name].append(time.perf_counter() - start)
            print(f"round {r}: A {times['A'][-1]:.3f} s, B {times['B'][-1]:.3f} s, A/B "
                  f"{times['A'][-1] / times['B'][-1]:.2f}, load {os.getloadavg()[0]:.2f}")
    ratios = [x / y for x, y in zip(times["A"], times["B"])]
    print(f"medians: A (vmapped gradients) {statistics.median(times['A']):.3f} s, B (norms) "
          f"{statistics.median(times['B']):.3f} s; A/B per round {', '.join(f'{r:.2f}' for r in ratios)}; "
          f"median {statistics.median(ratios):.2f}")


def large(width: int, examples: int, vmap_examples: int) -> None:
    import jax

    print(f"start: {environment()}")
    with jax.enable_x64(True):
        start = time.perf_counter()
        problem = problem_of(width, examples)
        built = time.perf_counter()
        G = problem.mean_grad(problem.flat).block_until_ready()
        g2 = float(G @ G)
        graded = time.perf_counter()
        trace = problem.centred_square_sum(G) / problem.n
        normed = time.perf_counter()
        plan, _, chunk = problem._compiled["norms"]
        print(f"teacher MLP width {width} depth 3, P = {problem.size:,}, n = {problem.n:,}; chunk {chunk} examples, "
              f"{plan.example_floats:,} floats an example, fallback leaves {plan.fallback}")
        print(f"|G|² {g2:.10g}   tr Σ {trace:.10g}   B_simple {trace / g2:.10g}")
        print(f"seconds: problem and data {built - start:.1f}, G {graded - built:.1f}, norm pass (with its compile) "
              f"{normed - graded:.1f}; |G|², tr Σ, B_simple in {normed - built:.1f} s after the build, "
              f"{normed - start:.1f} s in all; load {os.getloadavg()[0]:.2f}")
        if vmap_examples:
            vmapped_sum(problem, G, min(8, vmap_examples))  # compile
            begin = time.perf_counter()
            vmapped_sum(problem, G, vmap_examples)
            each = (time.perf_counter() - begin) / vmap_examples
            print(f"vmapped gradients: {1e3 * each:.1f} ms an example ({vmap_examples} examples, chunks of "
                  f"{problem.gradient_chunk()}): {each * problem.n / 60:.0f} min for tr Σ over all n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("ab", "large"))
    parser.add_argument("--width", type=int, default=None)
    parser.add_argument("--examples", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--vmap-examples", type=int, default=64)
    args = parser.parse_args()
    if args.mode == "ab":
        ab(args.width or 256, args.examples or 4000, args.rounds)
    else:
        large(args.width or 1000, args.examples or 100000, args.vmap_examples)
