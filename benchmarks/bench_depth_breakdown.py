"""Benchmark (issue 20, item 2): where a depth lane-iteration's time goes, below the engine.

The roofline replay of ``otod sweep depth --depth 4,8 --init xavier --seeds 8`` measures the whole engine per
executed lane-iteration; `bench_small_products.py` measures one 8×8 product. Between the two, this script runs
one block of the engine's own lanes (depth 8, width 8, xavier, 8 seeds × 13 gd rates = 104 lanes: the seeds'
draws from `otod.core.engine.seed_draws`, the rates multiples 0.1–1 of the reference step, where no lane
diverges) for a fixed number of iterations, as

* ``forward``: the metric alone (the family's ``metric``: the product W_L⋯W_1, its error, the trace);
* ``gradient``: the family's ``value_and_grad`` (the written-out reverse mode the engine runs);
* ``gd step``: the gradient and the gd update ``W ← W − η·m·s·∇`` (η the reference step, m the lane's multiple,
  s the loss scale), the step gd takes in the engine;

each a ``lax.fori_loop`` vmapped over the lanes; and ``engine``: `otod.core.engine.iterations_to_target` on the
same lanes, with a tolerance of 1e-30 that no lane meets and the cap at ``--iterations``, so every lane runs to
the cap (checked: its executed lane-iterations equal lanes × iterations, the loops' count). What is left between
``gd step`` and ``engine`` is the engine's own (its while loop, the stopping rule and stall test, the optax state
and book-keeping in the carry). ``engine, window stall`` is the same call with the family's stall rule set to
``"window"`` instead of ``"fixed-point"`` (a timing only: its records may differ), which prices the fixed-point
test (`otod.core.engine.unchanged`: every float of the carry compared with the iteration before's).

Compiled once, timed warm; rounds alternate the forms (forward on even rounds, backward on odd), best of 3 calls
a round, median over rounds, in ns per lane-iteration, one device.

    python3 benchmarks/bench_depth_breakdown.py --rounds 5
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time

import numpy as np

SEEDS = 8
RATES = np.geomspace(0.1, 1.0, 13)


def spec_with(depth: int, stall: str = "fixed-point"):
    """The depth-``depth`` width-8 deep-linear spec whose family stalls by ``stall``."""
    from otod.depth.linear import DeepLinearSpec

    @dataclasses.dataclass(frozen=True)
    class Stall(DeepLinearSpec):
        def family(self):
            return super().family()._replace(stall=stall)

    return Stall(depth=depth, width=8)


def lane_arrays():
    """Per lane (seed-major, as the engine's [point, rate, seed] order leaves them for one point): seed, rate."""
    return np.tile(np.arange(SEEDS), len(RATES)), np.repeat(RATES, SEEDS)


def problems_of(spec):
    """The engine's problems for the lanes of `lane_arrays`: ``make`` on each seed's draws, at the xavier init."""
    import jax
    import jax.numpy as jnp

    from otod.core.engine import seed_draws
    from otod.depth.linear import init_code

    family = spec.family()
    drawn = seed_draws(spec, 0, SEEDS, np.float32)
    seeds, _ = lane_arrays()
    per_lane = jax.tree.map(lambda a: jnp.asarray(a[seeds]), drawn)
    problems = jax.vmap(lambda d: family.make({"init": jnp.float32(init_code("xavier"))}, d))(per_lane)
    return family, problems, jax.vmap(family.init)(problems)


def loops(family, depth: int, iterations: int):
    """The three jitted loops, each ``(problems, weights, multiples) -> weights or metrics``."""
    import jax
    import jax.numpy as jnp

    from otod.depth.linear import reference_step, singular_values

    step = reference_step(depth, float(np.max(singular_values(8, 2.0))))

    def forward(problems, weights, multiples):
        def body(_, acc):  # acc·0 keeps each iteration's metric from being hoisted out of the loop
            return acc + jax.vmap(family.metric)(problems, weights + acc[:, None, None, None] * 0.0)
        return jax.lax.fori_loop(0, iterations, body, jnp.zeros(weights.shape[0], weights.dtype))

    def gradient(problems, weights, multiples):
        def body(_, w):
            _, g = jax.vmap(family.value_and_grad)(problems, w)
            return w + 0.0 * g  # keeps the dependence without moving the weights
        return jax.lax.fori_loop(0, iterations, body, weights)

    def gd_step(problems, weights, multiples):
        def body(_, w):
            _, g = jax.vmap(family.value_and_grad)(problems, w)
            scale = problems["zero_loss"][:, None, None, None]
            return w - (step * multiples)[:, None, None, None] * scale * g
        return jax.lax.fori_loop(0, iterations, body, weights)

    return {"forward": jax.jit(forward), "gradient": jax.jit(gradient), "gd step": jax.jit(gd_step)}


def engine_call(spec, iterations: int):
    """The engine on the lanes of `lane_arrays` (gd): a function returning the executed lane-iterations of one
    call."""
    from otod.core.engine import iterations_to_target
    from otod.depth.kind import depth_target
    from otod.depth.linear import init_code
    from otod.depth.methods import METHODS, MethodOptions

    seeds, multiples = lane_arrays()

    def call():
        sol = iterations_to_target(spec, (METHODS["gd"],), {"init": np.full(len(seeds), float(init_code("xavier"))),
                                                            "beta": np.zeros(len(seeds))},
                                   seeds, multiples, target=depth_target(1e-30), max_iters=iterations,
                                   options=MethodOptions(), devices=1)
        return int(sol.lane_iterations)
    return call


def checked(call, executed: int):
    """``call`` (an engine call returning its executed lane-iterations) that asserts it executed ``executed``."""
    def run():
        assert call() == executed
    return run


def alternated(calls: dict, rounds: int, units: int) -> dict[str, list[float]]:
    """ns per unit of work of each call (name → a function of no arguments), best of 3 calls a round, ``rounds``
    rounds alternating the order (forward on even rounds, backward on odd)."""
    names = list(calls)
    times = {name: [] for name in names}
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            best = float("inf")
            for _ in range(3):
                t = time.perf_counter()
                calls[name]()
                best = min(best, time.perf_counter() - t)
            times[name].append(best / units * 1e9)
    return times


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--depth", type=int, default=8)
    p.add_argument("--iterations", type=int, default=2000)
    args = p.parse_args()
    import jax

    from otod.core.results import cpu_model

    family, problems, start = problems_of(spec_with(args.depth))
    multiples = jax.numpy.asarray(lane_arrays()[1], np.float32)
    lanes = len(multiples)
    forms = loops(family, args.depth, args.iterations)
    for f in forms.values():  # compile
        jax.block_until_ready(f(problems, start, multiples))
    engines = {"engine": engine_call(spec_with(args.depth), args.iterations),
               "engine, window stall": engine_call(spec_with(args.depth, "window"), args.iterations)}
    for name, call in engines.items():  # compile, and check the engine did the loops' work
        executed = call()
        assert executed == lanes * args.iterations, (name, executed, lanes * args.iterations)
    names = [*forms, *engines]
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; jax {jax.__version__}; depth {args.depth}, width 8, "
          f"{lanes} lanes, {args.iterations} iterations a call, every form {lanes * args.iterations} "
          f"lane-iterations; load before {os.getloadavg()[0]:.2f}")
    calls = {**{name: (lambda f=f: jax.block_until_ready(f(problems, start, multiples))) for name, f in forms.items()},
             **{name: checked(call, lanes * args.iterations) for name, call in engines.items()}}
    times = alternated(calls, args.rounds, lanes * args.iterations)
    print(f"load after {os.getloadavg()[0]:.2f}\n")
    print("| form | ns per lane-iteration, median (runs) |\n|---|---|")
    for name in names:
        runs = times[name]
        print(f"| {name} | {np.median(runs):.0f} ({', '.join(f'{v:.0f}' for v in runs)}) |")


if __name__ == "__main__":
    main()
