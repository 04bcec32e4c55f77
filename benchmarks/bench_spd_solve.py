"""Benchmark: the cost of depth kfac's two factor solves, `otod.core.linalg.spd_solve` (Cholesky in XLA's own
operations, one matrix at a time under vmap: the same bits under any OpenBLAS kernel set) against
``jax.numpy.linalg.solve`` (LAPACK's LU through jaxlib: what kfac called before 2026-12-02).

Identical work on both sides: the same float32 SPD factors and right-hand sides (KFAC's shapes at depth 8, width 8,
104 lanes: 104 × 8 pairs of 8 × 8 solves, G⁻¹ U then (A⁻¹ (G⁻¹ U)ᵀ)ᵀ), the same number of solves per call
(``--steps`` chained pairs in one ``fori_loop``, each pair's output fed back so nothing is hoisted). Each side is
compiled once (untimed); then the sides alternate over ``--repeats`` rounds (A B, then B A), each round timing the
best of 3 calls. Prints each side's median µs per lane-step, the per-pair ratios A/B and their median, and the CPU
model. From the repository root:

    python3 benchmarks/bench_spd_solve.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp

from otod.core import linalg
from otod.core.results import cpu_model


def factors(lanes: int, depth: int, width: int):
    """SPD factors A, G (XXᵀ/width + 0.1 I, seeded) and updates U, each [lanes, depth, width, width] float32."""
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    shape = (lanes, depth, width, width)
    x, y = (jax.random.normal(k, shape, jnp.float32) for k in keys[:2])
    eye = jnp.eye(width, dtype=jnp.float32)
    spd = lambda m: m @ jnp.swapaxes(m, -1, -2) / width + 0.1 * eye  # noqa: E731
    return spd(x), spd(y), jax.random.normal(keys[2], shape, jnp.float32)


def chained(solve, steps: int):
    """``steps`` chained KFAC solve pairs on every (lane, layer), the output scaled back to the input's norm."""
    pair = jax.vmap(jax.vmap(lambda a, g, u: jnp.swapaxes(solve(a, jnp.swapaxes(solve(g, u), -1, -2)), -1, -2)))

    def run(a, g, u):
        def body(_, v):
            w = pair(a, g, v)
            return w / jnp.linalg.norm(w, axis=(-2, -1), keepdims=True)
        return jax.lax.fori_loop(0, steps, body, u)

    return jax.jit(run)


def best_of(fn, args, calls: int = 3) -> float:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return min(times)



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--lanes", type=int, default=104)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--width", type=int, default=8)
    args = parser.parse_args()
    inputs = factors(args.lanes, args.depth, args.width)
    sides = {"A spd_solve": chained(linalg.spd_solve, args.steps),
             "B jnp.linalg.solve": chained(jnp.linalg.solve, args.steps)}
    for fn in sides.values():
        jax.block_until_ready(fn(*inputs))  # compile, untimed
    per = args.lanes * args.steps
    seconds = {name: [] for name in sides}
    for r in range(args.repeats):
        for name in (list(sides) if r % 2 == 0 else list(sides)[::-1]):
            seconds[name].append(best_of(sides[name], inputs))
    print(f"CPU: {cpu_model()}, {jax.device_count()} devices; {args.lanes} lanes x {args.depth} layers x "
          f"{args.width}x{args.width}, {args.steps} solve pairs a call, {args.repeats} alternated rounds")
    for name, s in seconds.items():
        print(f"{name}: median {statistics.median(s) / per * 1e6:.1f} µs a lane-step "
              f"({', '.join(f'{t / per * 1e6:.1f}' for t in s)})")
    ratios = [a / b for a, b in zip(*seconds.values())]
    print(f"A/B per pair: {', '.join(f'{q:.2f}' for q in ratios)}; median {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
