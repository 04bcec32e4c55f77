"""Benchmark (issue 20, item 2): where a depth lane-iteration's time goes, below the engine.

The roofline replay of ``otod sweep depth --depth 4,8 --init xavier --seeds 8`` measures the whole engine per
executed lane-iteration; `bench_small_products.py` measures one 8×8 product. Between the two: this script runs,
on the same problem (depth 8, width 8, xavier, 104 lanes = 13 seeds × 8 rates, as one of the sweep's blocks),
a ``lax.fori_loop`` of a fixed number of iterations of

* ``forward``: the metric alone (`otod.depth.linear` family's ``metric``: the product W_L⋯W_1, its error, the trace);
* ``gradient``: the family's ``value_and_grad`` (the written-out reverse mode the engine runs);
* ``gd step``: the gradient and the gd update ``W ← W − η·s·∇`` (η the reference step × rate, s the loss scale),

each vmapped over the lanes, compiled once, timed warm; rounds alternate the forms (forward on even rounds, backward
on odd), best of 3 calls a round, median over rounds, in ns per lane-iteration. No while loop, no stopping rule,
no book-keeping; and ``engine``: `otod.core.engine.iterations_to_target` on the same lanes (8 seeds × 13 rates of
gd, a tolerance of 1e-30 that no lane meets, the cap at ``--iterations``), per executed lane-iteration (its
``Solution.lane_iterations``). What is left between ``gd step`` and ``engine`` is the engine's own (its while
loop, the stopping rule and stall test, the optax state and book-keeping in the carry). ``engine, window stall``
is the same call with the family's stall rule set to ``"window"`` instead of ``"fixed-point"`` (a timing only: its
records differ), which prices the fixed-point test (`otod.core.engine.unchanged`: every float of the carry
compared with the iteration before's).

    python3 benchmarks/bench_depth_breakdown.py --rounds 5
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def lanes(depth: int, width: int, count: int):
    """``count`` lanes of the deep-linear problem at the xavier init: the problem pytrees and start weights,
    stacked (seed s = lane % 13)."""
    import jax
    import jax.numpy as jnp

    from otod.depth.linear import DeepLinearSpec, init_code

    spec = DeepLinearSpec(depth=depth, width=width)
    family = spec.family()
    problems = []
    for lane in range(count):
        drawn = {k: jnp.asarray(v, jnp.float32) for k, v in spec.draws(np.random.default_rng(lane % 13)).items()}
        problems.append(family.make({"init": float(init_code("xavier"))}, drawn))
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *problems)
    start = jax.vmap(family.init)(stacked)
    return family, stacked, start


def forms(family, depth: int, iterations: int):
    """The three jitted loops, each ``(problems, weights, rates) -> weights or a scalar``."""
    import jax
    import jax.numpy as jnp

    from otod.depth.linear import reference_step, singular_values

    step = reference_step(depth, float(np.max(singular_values(8, 2.0))))

    def forward(problems, weights, rates):
        def body(_, acc):
            return acc + jax.vmap(family.metric)(problems, weights + acc[:, None, None, None] * 0.0)
        return jax.lax.fori_loop(0, iterations, body, jnp.zeros(weights.shape[0], weights.dtype))

    def gradient(problems, weights, rates):
        def body(_, w):
            f, g = jax.vmap(family.value_and_grad)(problems, w)
            return w + 0.0 * g  # keeps the dependence without moving the weights
        return jax.lax.fori_loop(0, iterations, body, weights)

    def gd_step(problems, weights, rates):
        def body(_, w):
            f, g = jax.vmap(family.value_and_grad)(problems, w)
            scale = problems["zero_loss"][:, None, None, None]
            return w - (step * rates)[:, None, None, None] * scale * g
        return jax.lax.fori_loop(0, iterations, body, weights)

    return {"forward": jax.jit(forward), "gradient": jax.jit(gradient), "gd step": jax.jit(gd_step)}


def engine_call(depth: int, lanes_count: int, iterations: int, stall: str = "fixed-point"):
    """The engine on ``lanes_count`` gd lanes (seeds × 13 rates, xavier) under the family's ``stall`` rule: a
    function returning the executed lane-iterations of one call."""
    import dataclasses

    from otod.core.engine import iterations_to_target
    from otod.depth.kind import depth_target
    from otod.depth.linear import DeepLinearSpec, init_code
    from otod.depth.methods import METHODS, MethodOptions

    rates = np.geomspace(0.1, 3.0, 13)
    seeds = np.repeat(np.arange(lanes_count // 13), 13)
    lrs = np.tile(rates, lanes_count // 13)
    @dataclasses.dataclass(frozen=True)
    class Stall(DeepLinearSpec):
        def family(self):
            return super().family()._replace(stall=stall)

    spec = Stall(depth=depth, width=8)

    def call():
        sol = iterations_to_target(spec, (METHODS["gd"],), {"init": np.full(len(seeds), float(init_code("xavier"))),
                                                            "beta": np.zeros(len(seeds))},
                                   seeds, lrs, target=depth_target(1e-30), max_iters=iterations,
                                   options=MethodOptions())
        return int(sol.lane_iterations)
    return call


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--depth", type=int, default=8)
    p.add_argument("--lanes", type=int, default=104)
    p.add_argument("--iterations", type=int, default=2000)
    args = p.parse_args()
    import jax

    from otod.core.results import cpu_model

    family, problems, start = lanes(args.depth, 8, args.lanes)
    rates = jax.numpy.asarray(np.tile(np.geomspace(0.1, 3.0, 8), args.lanes // 8 + 1)[:args.lanes], np.float32)
    loops = forms(family, args.depth, args.iterations)
    for f in loops.values():  # compile
        jax.block_until_ready(f(problems, start, rates))
    engines = {"engine": engine_call(args.depth, args.lanes, args.iterations),
               "engine, window stall": engine_call(args.depth, args.lanes, args.iterations, "window")}
    executed = {name: call() for name, call in engines.items()}  # compiles
    print(f"engine: {executed} lane-iterations executed a call ({args.lanes * args.iterations} at the cap)")
    names = [*loops, *engines]
    times = {name: [] for name in names}
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; jax {jax.__version__}; depth {args.depth}, width 8, "
          f"{args.lanes} lanes, {args.iterations} iterations a call; load before {os.getloadavg()[0]:.2f}")
    for r in range(args.rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            best = float("inf")
            for _ in range(3):
                t = time.perf_counter()
                if name in engines:
                    assert engines[name]() == executed[name]
                else:
                    jax.block_until_ready(loops[name](problems, start, rates))
                best = min(best, time.perf_counter() - t)
            work = executed[name] if name in engines else args.lanes * args.iterations
            times[name].append(best / work * 1e9)
    print(f"load after {os.getloadavg()[0]:.2f}\n")
    print("| form | ns per lane-iteration, median (runs) |\n|---|---|")
    for name in names:
        runs = times[name]
        print(f"| {name} | {np.median(runs):.0f} ({', '.join(f'{v:.0f}' for v in runs)}) |")


if __name__ == "__main__":
    main()
