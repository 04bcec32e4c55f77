"""The condition sweep written the way a user without otod would: a Python loop over configs, one jitted optax step.

For every κ = 1..kmax and seed 0..seeds−1 it builds the quadratic f(x) = ½ Σ λᵢ (xᵢ − x*ᵢ)² (log-uniform eigenvalues
λᵢ = κ^{i/(d−1)}, eigen basis, random start scaled to ‖x₀ − x*‖² = d; the same random numbers as otod's
``QuadraticSpec``: seed s draws from ``numpy.random.default_rng([0, s])``), runs ``optax.sgd`` at the theory step
until f(x_t)/f(x₀) ≤ tol or max_iters, and records the iteration count. The step function is jitted once per method;
the problem arrays and hyper-parameters are its arguments, so it is not recompiled per config.

Standalone on purpose (imports only numpy, jax and optax): ``benchmarks/bench_condition.py`` times it as a whole
process against ``otod sweep condition``.

    python benchmarks/optax_loop_condition.py --kmax 100 --seeds 8 --dim 64 --method gd [--dtype float32] [--out F]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kmax", type=int, default=100)
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--method", default="gd", help="comma-separated: gd, heavy-ball")
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--max-iters", type=int, default=None, help="default max(1000, ⌈2·κmax·ln(1/tol)⌉)")
    ap.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    ap.add_argument("--out", help="write the iteration counts as JSON here")
    args = ap.parse_args(argv)

    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    dtype = jnp.float64 if args.dtype == "float64" else jnp.float32
    d, tol = args.dim, args.tol
    max_iters = args.max_iters or int(max(1000, math.ceil(2.0 * args.kmax * math.log(1.0 / tol))))
    methods = args.method.split(",")

    def loss(x, lam, x_star):
        z = x - x_star
        return 0.5 * jnp.sum(lam * z * z)

    @jax.jit
    def make(kappa, x_star, normal):
        lam = kappa ** (jnp.arange(d, dtype=dtype) / (d - 1))
        z = normal * jnp.sqrt(d / jnp.sum(normal * normal))
        x0 = x_star + z
        mu, lip = jnp.min(lam), jnp.max(lam)
        return lam, x0, loss(x0, lam, x_star), mu, lip

    def optimizer(method, lr, beta):
        return optax.sgd(lr) if method == "gd" else optax.sgd(lr, momentum=beta)

    steps = {}
    for m in methods:
        if m not in ("gd", "heavy-ball"):
            print(f"unknown method {m!r}: use gd or heavy-ball", file=sys.stderr)
            return 2

        def step(params, state, lam, x_star, lr, beta, m=m):
            grads = jax.grad(loss)(params, lam, x_star)
            updates, state = optimizer(m, lr, beta).update(grads, state, params)
            params = optax.apply_updates(params, updates)
            return params, state, loss(params, lam, x_star)

        steps[m] = jax.jit(step)

    draws = []
    for s in range(args.seeds):
        rng = np.random.default_rng([0, s])
        x_star = rng.standard_normal(d)
        normal = rng.standard_normal(d)
        draws.append((jnp.asarray(x_star, dtype), jnp.asarray(normal, dtype)))

    t0 = time.perf_counter()
    records = []
    for m in methods:
        for k in range(1, args.kmax + 1):
            for s in range(args.seeds):
                x_star, normal = draws[s]
                lam, x, f0, mu, lip = make(jnp.asarray(k, dtype), x_star, normal)
                if m == "gd":
                    lr, beta = 1.0 / lip, jnp.zeros((), dtype)
                else:
                    r = jnp.sqrt(lip / mu)
                    lr, beta = 4.0 / (jnp.sqrt(lip) + jnp.sqrt(mu)) ** 2, ((r - 1) / (r + 1)) ** 2
                state = optimizer(m, 1.0, 0.0).init(x)
                f0 = float(f0)
                safe_f0 = f0 if f0 > 0 else 1.0
                gap, t = (1.0 if f0 > 0 else 0.0), 0
                while gap > tol and t < max_iters:
                    x, state, f = steps[m](x, state, lam, x_star, lr, beta)
                    t += 1
                    gap = float(f) / safe_f0
                records.append((m, k, s, t))
    seconds = time.perf_counter() - t0
    its = np.asarray([r[3] for r in records])
    print(f"{len(records)} configs ({', '.join(methods)}; κ 1..{args.kmax} × {args.seeds} seeds, d {d}, "
          f"{args.dtype}): {its.sum()} iterations in {seconds:.2f} s, mean {its.mean():.1f}, max {its.max()}")
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"dtype": args.dtype, "seconds": seconds,
                       "records": [[k, s, t] for m_, k, s, t in records if m_ == methods[0]],
                       "all_records": records}, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
