"""The condition sweep written the way a user without otod would: a Python loop over configs, one jitted optax step.

For every κ = 1..kmax and seed 0..seeds−1 it builds the quadratic f(x) = ½ Σ λᵢ (xᵢ − x*ᵢ)² (log-uniform eigenvalues
λᵢ = κ^{i/(d−1)}, eigen basis, random start scaled to ‖x₀ − x*‖² = d; the same random numbers as otod's
``QuadraticSpec``: seed s draws x* then the start's Gaussian vector from ``numpy.random.default_rng([0, s])``),
runs ``optax.sgd`` at the theory step (gd: 1/L; heavy-ball: 4/(√L+√μ)² with momentum ((√κ−1)/(√κ+1))²) until
f(x_t)/f(x₀) ≤ tol or ``--max-iters`` iterations, and records the iteration count. The step function is jitted once
per method; the problem arrays and hyper-parameters are its arguments, so it is not recompiled per config.

Standalone on purpose (imports only numpy, jax and optax): ``benchmarks/bench_condition.py`` times it as a whole
process against ``otod sweep condition``, passing otod's iteration cap as ``--max-iters`` (required: this script
has no cap formula of its own), and also calls `run` in its own process.

    python benchmarks/optax_loop_condition.py --kmax 100 --seeds 8 --dim 64 --method gd --max-iters 2764 \\
        [--dtype float32] [--out counts.json]
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

METHODS = ("gd", "heavy-ball")


def run(kmax: int, seeds: int, dim: int, methods, tol: float, max_iters: int, dtype: str = "float32"):
    """Run the sweep; returns ([(method, κ, seed, iterations), ...], seconds of the loop over configs).

    The step functions are jitted (and compiled on first use) inside the timed part, as in a user's script."""
    if dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    jdtype = jnp.float64 if dtype == "float64" else jnp.float32
    d = dim

    def loss(x, lam, x_star):
        z = x - x_star
        return 0.5 * jnp.sum(lam * z * z)

    @jax.jit
    def make(kappa, x_star, normal):
        lam = kappa ** (jnp.arange(d, dtype=jdtype) / (d - 1))
        z = normal * jnp.sqrt(d / jnp.sum(normal * normal))
        x0 = x_star + z
        return lam, x0, loss(x0, lam, x_star), jnp.min(lam), jnp.max(lam)

    def optimizer(method, lr, beta):
        return optax.sgd(lr) if method == "gd" else optax.sgd(lr, momentum=beta)

    draws = []
    for s in range(seeds):
        rng = np.random.default_rng([0, s])
        x_star = rng.standard_normal(d)
        normal = rng.standard_normal(d)
        draws.append((jnp.asarray(x_star, jdtype), jnp.asarray(normal, jdtype)))

    t0 = time.perf_counter()
    records = []
    for m in methods:
        def step(params, state, lam, x_star, lr, beta, m=m):
            grads = jax.grad(loss)(params, lam, x_star)
            updates, state = optimizer(m, lr, beta).update(grads, state, params)
            params = optax.apply_updates(params, updates)
            return params, state, loss(params, lam, x_star)

        step = jax.jit(step)
        for k in range(1, kmax + 1):
            for s in range(seeds):
                x_star, normal = draws[s]
                lam, x, f0, mu, lip = make(jnp.asarray(k, jdtype), x_star, normal)
                if m == "gd":
                    lr, beta = 1.0 / lip, jnp.zeros((), jdtype)
                else:
                    r = jnp.sqrt(lip / mu)
                    lr, beta = 4.0 / (jnp.sqrt(lip) + jnp.sqrt(mu)) ** 2, ((r - 1) / (r + 1)) ** 2
                state = optimizer(m, 1.0, 0.0).init(x)
                f0 = float(f0)
                safe_f0 = f0 if f0 > 0 else 1.0
                gap, t = (1.0 if f0 > 0 else 0.0), 0
                while gap > tol and t < max_iters:
                    x, state, f = step(x, state, lam, x_star, lr, beta)
                    t += 1
                    gap = float(f) / safe_f0
                records.append((m, k, s, t))
    return records, time.perf_counter() - t0


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


def at_least(minimum: int):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is below {minimum}")
        return value
    return parse


def main(argv=None) -> int:
    ap = OneLineParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kmax", type=at_least(1), default=100, help="κ = 1..KMAX (default 100)")
    ap.add_argument("--seeds", type=at_least(1), default=8, help="seeds 0..SEEDS−1 (default 8)")
    ap.add_argument("--dim", type=at_least(2), default=64, help="dimension d (default 64)")
    ap.add_argument("--method", default="gd", help="comma-separated: gd, heavy-ball (default gd)")
    ap.add_argument("--tol", type=float, default=1e-6, help="relative loss gap to reach (default 1e-6)")
    ap.add_argument("--max-iters", type=at_least(1), required=True,
                    help="iteration cap (required; bench_condition.py passes otod's automatic cap)")
    ap.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    ap.add_argument("--out", help="write the iteration counts as JSON here")
    args = ap.parse_args(argv)
    methods = args.method.split(",")
    bad = [m for m in methods if m not in METHODS]
    if bad:
        ap.error(f"argument --method: unknown method {bad[0]!r}; use gd or heavy-ball")
    if not (0.0 < args.tol < 1.0 and math.isfinite(args.tol)):
        ap.error(f"argument --tol: {args.tol:g} must lie strictly between 0 and 1")

    records, seconds = run(args.kmax, args.seeds, args.dim, methods, args.tol, args.max_iters, args.dtype)
    its = np.asarray([r[3] for r in records])
    print(f"{len(records)} configs ({', '.join(methods)}; κ 1..{args.kmax} × {args.seeds} seeds, d {args.dim}, "
          f"{args.dtype}, max_iters {args.max_iters}): {its.sum()} iterations in {seconds:.2f} s, "
          f"mean {its.mean():.1f}, max {its.max()}")
    if args.out:
        try:
            with open(args.out, "w") as fh:
                json.dump({"dtype": args.dtype, "seconds": seconds, "max_iters": args.max_iters,
                           "records": [list(r) for r in records]}, fh)
        except OSError as e:
            print(f"{ap.prog}: cannot write --out {args.out}: {e.strerror}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
