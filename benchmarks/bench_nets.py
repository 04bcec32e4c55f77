"""Benchmark the net sweep (the engine: every (B, seed) lane of a net in one compiled program per B) against a
per-config optax loop on identical work.

Identical work: the same net (digits, MLP width 32, depth 2), the same starts and minibatch order (the family's
draws and sampler, the same per-step keys), the same step (one fixed lr, so the engine prunes nothing), the same
cap and the same check schedule (the loss read every step to 32, then 2^(⌊log₂ t⌋ − 5) apart). The loop is what a
careful user writes: per batch size one jitted step (the family's sampled gradient, then optax.sgd) and one jitted
loss, compiled once and reused for every seed, and a Python loop over steps, lane after lane. Counts are checked
equal lane by lane.

Both sides are timed warm (a first untimed run compiles), then A and B alternate over ``--repeats`` runs;
medians, per-pair ratios and the CPU model are printed. Run from the repository root:
python3 benchmarks/bench_nets.py
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
os.environ.setdefault("OTOD_COMPILATION_CACHE", "off")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--lr", type=float, default=0.5)
    args = parser.parse_args()

    import optax

    from otod.core.results import cpu_model

    import otod.nets  # noqa: F401  (registers the net sweep)
    from otod.core.engine import iterations_to_target
    from otod.nets.sweep.kind import METHODS
    from otod.nets.sweep.options import net_config
    from otod.core.dynamics import Step

    config = net_config(batch="8..1024:8:log", seeds=args.seeds, lr=str(args.lr), target="0.1", max_iters="20000")
    batches = [int(b) for b in config.values("batch")]
    specs = [config.spec_at({"batch": b}) for b in batches]
    method = METHODS["sgd"]

    def engine():
        counts = []
        for spec in specs:
            sol = iterations_to_target(spec, (method,), {"beta": np.zeros(args.seeds)}, np.arange(args.seeds),
                                       np.full(args.seeds, args.lr), target=config.target,
                                       max_iters=config.resolved_max_iters, relative_lr=False,
                                       options=config.options, seed=config.seed)
            counts.append(np.asarray(sol.iterations))
        return np.concatenate(counts)

    import jax

    from otod.nets.model.family import CHECK_BITS, checks

    assert all(bool(checks(t)) == (t % (1 << max(0, t.bit_length() - 1 - CHECK_BITS)) == 0) for t in range(1, 5000))

    opt = optax.sgd(args.lr)
    compiled = {}
    for spec in specs:
        family = spec.family()

        def step(problem, params, state, key, t, family=family):
            g = family.gradient(problem, params, Step(key, t))
            updates, state = opt.update(g, state, params)
            return optax.apply_updates(params, updates), state

        compiled[spec] = (family, jax.jit(step), jax.jit(family.metric))

    def lane(spec, s):
        family, step, metric = compiled[spec]
        drawn = jax.tree.map(lambda a: np.asarray(a, np.float32), family.draws(np.random.default_rng([config.seed, s])))
        problem = family.make({"beta": np.float32(0)}, drawn)
        params = family.init(problem)
        state = opt.init(params)
        lane_key = jax.random.fold_in(jax.random.PRNGKey(config.seed), s)
        for t in range(1, config.resolved_max_iters + 1):
            params, state = step(problem, params, state, jax.random.fold_in(lane_key, t - 1), np.float32(t - 1))
            if t % (1 << max(0, t.bit_length() - 1 - CHECK_BITS)) == 0 and \
                    float(metric(problem, params)) <= config.target.tol:
                return t
        return config.resolved_max_iters

    def loop():
        return np.asarray([lane(spec, s) for spec in specs for s in range(args.seeds)])

    a, b = engine(), loop()  # compile both
    assert np.array_equal(a, b), (a, b)
    lane_iterations = int(a.sum())
    fast, slow = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        a = engine()
        t1 = time.perf_counter()
        b = loop()
        t2 = time.perf_counter()
        assert np.array_equal(a, b)
        fast.append(t1 - t0)
        slow.append(t2 - t1)
    ratios = np.array(slow) / np.array(fast)
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; load {os.getloadavg()[0]:.1f}")
    print(f"{len(a)} lanes (B = {', '.join(map(str, batches))} × {args.seeds} seeds, lr {args.lr}), "
          f"{lane_iterations} lane-iterations, counts equal lane by lane")
    print(f"engine: median {np.median(fast):.3f} s ({1e9 * np.median(fast) / lane_iterations:.0f} ns per "
          f"lane-iteration); runs {', '.join(f'{x:.3f}' for x in fast)}")
    print(f"loop:   median {np.median(slow):.3f} s; runs {', '.join(f'{x:.3f}' for x in slow)}")
    print(f"loop / engine per pair: {', '.join(f'{r:.2f}' for r in ratios)}; median {np.median(ratios):.2f}")


if __name__ == "__main__":
    main()
