"""The condition sweep written the way a user without otod would, in three forms of increasing care.

For every κ = 1..kmax and seed 0..seeds−1 it builds the quadratic f(x) = ½ (x − x*)ᵀ Q diag(λ) Qᵀ (x − x*)
(log-uniform eigenvalues λᵢ = κ^{i/(d−1)}; Q = I in the eigen basis, a Haar-random rotation per seed in the rotated
basis; random start x₀ = x* + Q z with ‖z‖² = d; the same random numbers as otod's ``QuadraticSpec``: seed s draws
x*, the start's Gaussian vector, its random signs and then the rotation from ``numpy.random.default_rng([0, s])``),
runs ``optax.sgd`` at the theory step (gd: 1/L; heavy-ball: 4/(√L+√μ)² with momentum ((√κ−1)/(√κ+1))², Polyak
1964) until f(x_t)/f(x₀) ≤ tol or ``--max-iters`` iterations, and records the iteration count. Every form carries
(f, ∇f) from one ``value_and_grad`` per iteration, so the rotated basis costs two d×d matrix-vector products per
iteration (Qᵀ(x − x*) and Q(λ∘z)), as in otod's engine.

The three forms (``--loop``):

* ``step``: a Python loop per config over one jitted optax step (compiled once per method and shape), reading the
  loss back every iteration: what most users write;
* ``while``: one ``jax.jit`` of a function that runs the whole loop of one config inside ``lax.while_loop`` and
  returns its count, compiled once per method and shape and called once per config: the careful JAX user's script;
* ``buckets``: the prototype-class kernel: lanes sorted by predicted cost (κ, gd's count grows like κ), cut into
  buckets of ``--bucket`` lanes (default 32, the last padded by repeating its last lane), each bucket one call of
  ``jit(vmap(per-lane while_loop))`` (vmap turns the loop's predicate into a per-lane one: XLA runs the bucket
  until its slowest lane and selects the finished lanes' carries).

Standalone on purpose (imports only numpy, jax and optax): ``benchmarks/bench_condition.py`` times it as a whole
process against ``otod sweep condition``, passing otod's iteration cap as ``--max-iters`` (required: this script
has no cap formula of its own), and calls `run`, `run_while` and `run_buckets` in its own process.

    python3 benchmarks/optax_loop_condition.py --kmax 100 --seeds 8 --dim 64 --method gd --max-iters 2764 \\
        [--basis rotated] [--loop step|while|buckets] [--dtype float32] [--out counts.json]
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

METHODS = ("gd", "heavy-ball")
BASES = ("eigen", "rotated")
LOOPS = ("step", "while", "buckets")
BUCKET = 32


def haar_orthogonal(rng: np.random.Generator, dim: int) -> np.ndarray:
    """A Haar-random orthogonal matrix: QR of a Gaussian matrix, R's diagonal signs folded into Q (Mezzadri 2007)."""
    q, r = np.linalg.qr(rng.standard_normal((dim, dim)))
    return q * np.sign(np.diagonal(r))[None, :]


def draws(seeds: int, dim: int, basis: str, dtype: str) -> dict:
    """Seed s's random numbers, stacked over seeds: x*, the start's Gaussian vector and (rotated) the rotation."""
    x_star, normal, rotation = [], [], []
    for s in range(seeds):
        rng = np.random.default_rng([0, s])
        x_star.append(rng.standard_normal(dim))
        normal.append(rng.standard_normal(dim))
        rng.choice([-1.0, 1.0], size=dim)  # the start's random signs: drawn (and unused) to keep the stream aligned
        if basis == "rotated":
            rotation.append(haar_orthogonal(rng, dim))
    out = {"x_star": np.stack(x_star).astype(dtype), "normal": np.stack(normal).astype(dtype)}
    if basis == "rotated":
        out["rotation"] = np.stack(rotation).astype(dtype)
    return out


def loss(x, lam, x_star, rotation):
    z = x - x_star if rotation is None else rotation.T @ (x - x_star)
    return 0.5 * jnp.sum(lam * z * z)


value_and_grad = jax.value_and_grad(loss)


def optimizer(method: str, lr, beta) -> optax.GradientTransformation:
    return optax.sgd(lr) if method == "gd" else optax.sgd(lr, momentum=beta)


def make(kappa, x_star, normal, rotation):
    """The problem of one config: eigenvalues, start, f(x₀), ∇f(x₀), μ and L."""
    d = x_star.shape[-1]
    lam = kappa ** (jnp.arange(d, dtype=x_star.dtype) / (d - 1))
    z = normal * jnp.sqrt(d / jnp.sum(normal * normal))
    x0 = x_star + (z if rotation is None else rotation @ z)
    f0, g0 = value_and_grad(x0, lam, x_star, rotation)
    return lam, x0, f0, g0, jnp.min(lam), jnp.max(lam)


def hyperparameters(method: str, mu, lip):
    """The theory step and momentum from μ and L (Nesterov 2018 §2.1; Polyak 1964)."""
    if method == "gd":
        return 1.0 / lip, jnp.zeros_like(lip)
    r = jnp.sqrt(lip / mu)
    return 4.0 / (jnp.sqrt(lip) + jnp.sqrt(mu)) ** 2, ((r - 1) / (r + 1)) ** 2


def step(method, x, state, g, lam, x_star, rotation, lr, beta):
    """One optax iteration; returns the new (x, state, f, ∇f)."""
    updates, state = optimizer(method, lr, beta).update(g, state, x)
    x = optax.apply_updates(x, updates)
    f, g = value_and_grad(x, lam, x_star, rotation)
    return x, state, f, g


def lane_count(method: str, tol: float, max_iters: int):
    """The whole loop of one config as a function of (κ, x*, normal, rotation): its iteration count, computed with
    ``lax.while_loop`` (gap = f/f₀, stopping at gap ≤ tol or t = max_iters)."""

    def count(kappa, x_star, normal, rotation):
        lam, x0, f0, g0, mu, lip = make(kappa, x_star, normal, rotation)
        lr, beta = hyperparameters(method, mu, lip)
        scale = jnp.where(f0 > 0, f0, 1.0)
        gap0 = jnp.where(f0 > 0, 1.0, 0.0).astype(f0.dtype)

        def running(carry):
            t, _, _, _, gap = carry
            return (gap > tol) & (t < max_iters)

        def body(carry):
            t, x, state, g, _ = carry
            x, state, f, g = step(method, x, state, g, lam, x_star, rotation, lr, beta)
            return t + 1, x, state, g, f / scale

        state0 = optimizer(method, lr, beta).init(x0)
        t, *_ = jax.lax.while_loop(running, body, (jnp.zeros((), jnp.int32), x0, state0, g0, gap0))
        return t

    return count


def configs(kmax: int, seeds: int) -> list[tuple[int, int]]:
    """(κ, seed) pairs, value-major (the order otod's sweep lays its lanes out)."""
    return [(k, s) for k in range(1, kmax + 1) for s in range(seeds)]


def per_seed(drawn: dict) -> list[tuple]:
    """(x*, normal, rotation or None) of every seed as device arrays, made once before the loop over configs."""
    rotation = drawn.get("rotation")
    return [(jnp.asarray(drawn["x_star"][s]), jnp.asarray(drawn["normal"][s]),
             None if rotation is None else jnp.asarray(rotation[s])) for s in range(len(drawn["x_star"]))]


def run(kmax: int, seeds: int, dim: int, methods, tol: float, max_iters: int, dtype: str = "float32",
        basis: str = "eigen"):
    """``--loop step``: returns ([(method, κ, seed, iterations), ...], seconds of the loop over configs).

    The jitted functions are compiled on first use inside the timed part, as in a user's script."""
    _precision(dtype)
    arrays = per_seed(draws(seeds, dim, basis, dtype))
    t0 = time.perf_counter()
    records = []
    jmake = jax.jit(make)
    for m in methods:
        jstep = jax.jit(lambda *a, m=m: step(m, *a))
        for k, s in configs(kmax, seeds):
            x_star, normal, rotation = arrays[s]
            lam, x, f0, g, mu, lip = jmake(np.asarray(k, dtype), x_star, normal, rotation)
            lr, beta = hyperparameters(m, mu, lip)
            state = optimizer(m, lr, beta).init(x)
            f0 = float(f0)
            safe_f0 = f0 if f0 > 0 else 1.0
            gap, t = (1.0 if f0 > 0 else 0.0), 0
            while gap > tol and t < max_iters:
                x, state, f, g = jstep(x, state, g, lam, x_star, rotation, lr, beta)
                t += 1
                gap = float(f) / safe_f0
            records.append((m, k, s, t))
    return records, time.perf_counter() - t0


def run_while(kmax: int, seeds: int, dim: int, methods, tol: float, max_iters: int, dtype: str = "float32",
              basis: str = "eigen"):
    """``--loop while``: one jitted ``lax.while_loop`` per config (compiled once per method and shape); same
    return as `run`. The counts are collected as device arrays and read once at the end (JAX dispatches ahead)."""
    _precision(dtype)
    arrays = per_seed(draws(seeds, dim, basis, dtype))
    t0 = time.perf_counter()
    records = []
    for m in methods:
        count = while_kernel(m, tol, max_iters)
        pending = [(k, s, count(np.asarray(k, dtype), *arrays[s])) for k, s in configs(kmax, seeds)]
        records += [(m, k, s, int(t)) for k, s, t in pending]
    return records, time.perf_counter() - t0


def run_buckets(kmax: int, seeds: int, dim: int, methods, tol: float, max_iters: int, dtype: str = "float32",
                basis: str = "eigen", bucket: int = BUCKET):
    """``--loop buckets``: the prototype-class kernel (module docstring); same return as `run`, plus the
    lane-iterations the buckets executed (Σ over buckets of the bucket size × its slowest lane's count)."""
    _precision(dtype)
    drawn = {k: jnp.asarray(v) for k, v in draws(seeds, dim, basis, dtype).items()}
    rotation = drawn.get("rotation")
    t0 = time.perf_counter()
    records, executed = [], 0
    cfg = configs(kmax, seeds)
    order = sorted(range(len(cfg)), key=lambda i: (cfg[i][0], i))  # predicted cost: gd's count grows like κ
    order += [order[-1]] * (-len(order) % bucket)
    kappas = np.asarray([cfg[i][0] for i in order], dtype)
    seed_idx = np.asarray([cfg[i][1] for i in order], np.int32)
    for m in methods:
        kernel = bucket_kernel(m, tol, max_iters)
        pending = [kernel(kappas[b:b + bucket], seed_idx[b:b + bucket], drawn["x_star"], drawn["normal"], rotation)
                   for b in range(0, len(order), bucket)]
        counts = [np.asarray(p) for p in pending]
        executed += sum(bucket * int(c.max()) for c in counts)
        by_config = dict(zip(order, np.concatenate(counts).tolist()))
        records += [(m, k, s, int(by_config[i])) for i, (k, s) in enumerate(cfg)]
    return records, time.perf_counter() - t0, executed


@functools.lru_cache(maxsize=None)
def while_kernel(method: str, tol: float, max_iters: int):
    """`lane_count` jitted: one config per call (the same jitted function for every call with these arguments)."""
    return jax.jit(lane_count(method, tol, max_iters))


@functools.lru_cache(maxsize=None)
def bucket_kernel(method: str, tol: float, max_iters: int):
    """One bucket: ``jit(vmap(lane_count))`` over lanes (κ, seed index), the seeds' arrays gathered by index."""
    lane = jax.vmap(lane_count(method, tol, max_iters))

    @jax.jit
    def kernel(kappa, seed_index, x_star, normal, rotation):
        return lane(kappa, x_star[seed_index], normal[seed_index],
                    None if rotation is None else rotation[seed_index])

    return kernel


def _precision(dtype: str) -> None:
    if dtype == "float64":
        jax.config.update("jax_enable_x64", True)


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
    ap.add_argument("--basis", choices=BASES, default="eigen", help="eigen (diagonal H) or rotated (dense H)")
    ap.add_argument("--loop", choices=LOOPS, default="step", help="step (default), while or buckets")
    ap.add_argument("--bucket", type=at_least(1), default=BUCKET, help=f"lanes per bucket (default {BUCKET})")
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

    sweep = (args.kmax, args.seeds, args.dim, methods, args.tol, args.max_iters, args.dtype, args.basis)
    if args.loop == "buckets":
        records, seconds, _ = run_buckets(*sweep, bucket=args.bucket)
    else:
        records, seconds = (run if args.loop == "step" else run_while)(*sweep)
    its = np.asarray([r[3] for r in records])
    print(f"{len(records)} configs ({', '.join(methods)}; κ 1..{args.kmax} × {args.seeds} seeds, d {args.dim}, "
          f"{args.basis} basis, {args.dtype}, max_iters {args.max_iters}, loop {args.loop}): {its.sum()} iterations "
          f"in {seconds:.2f} s, mean {its.mean():.1f}, max {its.max()}")
    if args.out:
        try:
            with open(args.out, "w") as fh:
                json.dump({"dtype": args.dtype, "basis": args.basis, "loop": args.loop, "seconds": seconds,
                           "max_iters": args.max_iters, "records": [list(r) for r in records]}, fh)
        except OSError as e:
            print(f"{ap.prog}: cannot write --out {args.out}: {e.strerror}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
