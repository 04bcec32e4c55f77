"""Benchmark (issue 38, item 2): a lane-major layout for the depth gradient's small products, against the engine's.

The depth engine's step at width 8, depth 8 is 25 products of 8 × 8 matrices per lane (`otod.depth.linear.
metric_and_gradient`: the forward prefixes W_l⋯W_1, EΣ, and two products a layer backward), run under the
engine's ``vmap``, so the lanes are the arrays' major axis and each product is a YNNPACK dot or a multiply-add chain
over an 8-float minor axis. Issue 38 asks for the lanes as the innermost, vectorised axis with the products written
as fused multiply-adds over it, or whatever measures fastest. The forms, each the gradient of the same metric
(0.5 tr(EΣEᵀ)/L₀, E = W_8⋯W_1 − Φ) on the same lanes, in float32:

* ``engine``: the family's ``value_and_grad`` vmapped over the lanes (what the engine runs);
* ``chains, lanes major``: every product a chain of multiply-adds over k (a[:, k]·b[k, :] summed), vmapped;
* ``chains, lanes minor``: the same chains on [8, 8, lanes] arrays, not vmapped: each multiply-add is over the
  lane axis, the innermost and contiguous one;
* ``einsum, lanes minor``: the products as ``einsum("ikl,kjl->ijl")`` on [8, 8, lanes] arrays (dot_general with
  the lanes a batch dimension, wherever XLA:CPU puts it).

Then the engine itself (`otod.core.engine.iterations_to_target`, gd, on the same block, a tolerance no lane meets,
so every lane runs ``--iterations``) as it is and with the square net's ``value_and_grad`` replaced by the
lanes-minor chains (``engine loop, lanes-minor gradient``): a ``custom_vmap`` whose rule merges the engine's two
vmaps (seed rows × rate lanes) into one minor axis of all 104 lanes, moving the lanes there and back each
iteration, since the engine's carry keeps them major. (Without ``--repeat``.)

Every form's gradient is checked against the engine's to float32 rounding (relative 1e-4 of the largest entry) before
timing. Each form runs ``--iterations`` gradients in a jitted ``fori_loop`` on one block of the engine's own lanes
(`bench_depth_breakdown.problems_of`: 8 seeds × 13 rates = 104 lanes, xavier), or that block repeated
``--repeat`` times; forms alternate over ``--rounds`` rounds (forward on even rounds, backward on odd), best of 3
calls a round, and the table prints ns per lane-iteration (median and runs) and each form's per-round ratio to the
engine's form, with the CPU model and load. From the repository root:

    python3 benchmarks/bench_lane_major.py --rounds 5
    python3 benchmarks/bench_lane_major.py --rounds 5 --repeat 10
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout's otod
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from bench_depth_breakdown import alternated, problems_of, spec_with  # noqa: E402
from otod.core.results import cpu_model  # noqa: E402


def chain(a, b, lanes_minor: bool, transpose_a: bool = False, transpose_b: bool = False):
    """a·b (aᵀb, abᵀ) of [n, n] matrices, or of [n, n, lanes] arrays where ``lanes_minor``, as one chain of
    multiply-adds over k."""
    tail = (slice(None),) if lanes_minor else ()

    def col(x, k, transposed):  # x[:, k] (x[k, :] if transposed) as a column
        return (x[(k, slice(None), None) + tail] if transposed else x[(slice(None), k, None) + tail])

    def row(x, k, transposed):  # x[k, :] (x[:, k] if transposed) as a row
        return (x[(None, slice(None), k) + tail] if transposed else x[(None, k, slice(None)) + tail])

    total = col(a, 0, transpose_a) * row(b, 0, transpose_b)
    for k in range(1, a.shape[0]):
        total = total + col(a, k, transpose_a) * row(b, k, transpose_b)
    return total


def einsum(a, b, transpose_a: bool = False, transpose_b: bool = False):
    """a·b of [n, n, lanes] arrays as one einsum with the lanes a batch dimension."""
    return jnp.einsum(("kil" if transpose_a else "ikl") + "," + ("jkl" if transpose_b else "kjl") + "->ijl", a, b)


def gradient(product, p, params, depth: int):
    """(The metric, its gradient) of one lane (``params`` [depth, n, n]) or of all lanes on the minor axis
    (``params`` [depth, n, n, lanes]), every product by ``product(a, b, transpose_a, transpose_b)``:
    E = W_D⋯W_1 − Φ, f = ½ tr(EΣEᵀ)/L₀, ∂f/∂P = c(EΣ + EΣᵀ), c = 1/(2L₀), ∂f/∂W_l = (W_D⋯W_{l+1})ᵀ ∂f/∂P (W_{l−1}⋯W_1)ᵀ."""
    w = p["offset"][None] + params
    prefix = [None, w[0]]
    for layer in range(1, depth):
        prefix.append(product(w[layer], prefix[-1]))
    e = prefix[-1] - p["phi"]
    e_sigma = product(e, p["sigma"])
    f = 0.5 * jnp.sum(e_sigma * e, (0, 1)) / p["zero_loss"]
    dp = (0.5 / p["zero_loss"]) * (e_sigma + product(e, p["sigma"], False, True))
    grads = [None] * depth
    for layer in range(depth - 1, 0, -1):
        grads[layer] = product(dp, prefix[layer], False, True)
        dp = product(w[layer], dp, True, False)
    grads[0] = dp
    return f, jnp.stack(grads)


def forms(family, depth: int, iterations: int) -> dict:
    """Each form as a jitted ``(problems, weights) -> weights`` running ``iterations`` gradients, and a function
    giving its gradient once [lanes, depth, n, n] for the check."""
    minor = lambda a: jnp.moveaxis(a, 0, -1)  # noqa: E731  [lanes, …] → […, lanes]
    major = lambda a: jnp.moveaxis(a, -1, 0)  # noqa: E731

    def lanes_major(vg):
        def loop(problems, weights):
            def body(_, w):
                return w + 0.0 * jax.vmap(vg)(problems, w)[1]
            return jax.lax.fori_loop(0, iterations, body, weights)
        return jax.jit(loop), jax.jit(lambda problems, weights: jax.vmap(vg)(problems, weights)[1])

    def lanes_minor(product):
        def fields(problems):
            return {k: (minor(problems[k]) if k != "zero_loss" else problems[k])
                    for k in ("phi", "sigma", "offset", "zero_loss")}

        def loop(problems, weights):
            p = fields(problems)

            def body(_, w):
                return w + 0.0 * gradient(product, p, w, depth)[1]
            return major(jax.lax.fori_loop(0, iterations, body, minor(weights)))
        return jax.jit(loop), jax.jit(lambda problems, weights: major(gradient(product, fields(problems),
                                                                                 minor(weights), depth)[1]))

    chained = lambda lm: lambda a, b, ta=False, tb=False: chain(a, b, lm, ta, tb)  # noqa: E731
    return {"engine": lanes_major(family.value_and_grad),
            "chains, lanes major": lanes_major(lambda p, w: gradient(chained(False), p, w, depth)),
            "chains, lanes minor": lanes_minor(chained(True)),
            "einsum, lanes minor": lanes_minor(einsum)}


FIELDS = ("phi", "sigma", "offset", "zero_loss")


def value_and_grad(depth: int):
    """A family's ``value_and_grad(p, params)`` (one lane: f and ∂f/∂W [depth, n, n]) whose vmaps compute every
    lane at once with the lanes minor (`gradient` by lanes-minor `chain`s): the first vmap's rule broadcasts the fields shared
    across its lanes, and every further vmap (the engine's [row, lane]) is merged into the same lane axis, so the
    minor axis holds all the block's lanes; one lane alone is a block of one."""
    def block(p, params):  # leaves [lanes, ...] → (f [lanes], ∂f/∂W [lanes, depth, n, n])
        q = {k: jnp.moveaxis(p[k], 0, -1) for k in FIELDS}
        f, g = gradient(lambda a, b, ta=False, tb=False: chain(a, b, True, ta, tb), q,
                        jnp.moveaxis(params, 0, -1), depth)
        return f, jnp.moveaxis(g, -1, 0)

    merged = merging(block)

    @jax.custom_batching.custom_vmap
    def one(p, params):
        f, g = block(*jax.tree.map(lambda x: jnp.asarray(x)[None], ({k: p[k] for k in FIELDS}, params)))
        return f[0], g[0]

    @one.def_vmap
    def rule(size, in_batched, p, params):
        p_batched, params_batched = in_batched
        args = ({k: p[k] for k in FIELDS}, params)
        flags = ({k: p_batched[k] for k in FIELDS}, params_batched)
        return merged(*jax.tree.map(lambda x, b: spread(x, b, size), args, flags)), (True, True)

    return one


def spread(x, batched: bool, size: int):
    """``x`` with a leading axis of ``size`` lanes (broadcast where it is shared by them)."""
    x = jnp.asarray(x)
    return x if batched else jnp.broadcast_to(x, (size,) + x.shape)


def merging(fn):
    """``fn`` (leaves [lanes, ...] → outputs [lanes, ...]) whose vmap merges the new axis into the lane axis: a
    vmap of size m over leaves [m, lanes, ...] runs ``fn`` once on [m·lanes, ...] (unbatched leaves broadcast)."""
    @jax.custom_batching.custom_vmap
    def merged(*args):
        return fn(*args)

    @merged.def_vmap
    def rule(size, in_batched, *args):
        full = jax.tree.map(lambda x, b: spread(x, b, size), args, tuple(in_batched))
        lanes = jax.tree.leaves(full)[0].shape[1]
        out = merged(*jax.tree.map(lambda x: x.reshape((size * lanes,) + x.shape[2:]), full))
        return jax.tree.map(lambda x: x.reshape((size, lanes) + x.shape[1:]), out), jax.tree.map(lambda _: True, out)

    return merged


def engine_forms(depth: int, iterations: int) -> dict:
    """The engine on the block (`bench_depth_breakdown.engine_call`, gd, a tolerance no lane meets), as it is and
    with the square net's gradient replaced by the lanes-minor `value_and_grad`: each a call returning its executed
    lane-iterations."""
    import otod.depth.linear as linear
    from bench_depth_breakdown import engine_call

    as_is = engine_call(spec_with(depth), iterations)
    own = linear.metric_and_gradient
    lanes_minor = value_and_grad(depth)

    def replaced():
        linear.metric_and_gradient = lambda p, params, d: lanes_minor(p, params)
        try:
            return as_is()
        finally:
            linear.metric_and_gradient = own
    return {"engine loop, as it is": as_is, "engine loop, lanes-minor gradient": replaced}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=1, help="the block of 104 lanes, repeated")
    args = parser.parse_args()

    family, problems, start = problems_of(spec_with(args.depth))
    problems = jax.tree.map(lambda a: jnp.concatenate([a] * args.repeat), problems)
    start = jnp.concatenate([start] * args.repeat)
    lanes = start.shape[0]
    built = forms(family, args.depth, args.iterations)
    reference = np.asarray(built["engine"][1](problems, start))
    for name, (loop, once) in built.items():  # the same gradient, and compiled
        error = np.max(np.abs(np.asarray(once(problems, start)) - reference)) / np.max(np.abs(reference))
        assert error < 1e-4, (name, error)
        jax.block_until_ready(loop(problems, start))
    engines = engine_forms(args.depth, args.iterations) if args.repeat == 1 else {}
    for name, call in engines.items():  # compiled, and every lane ran every iteration
        assert call() == lanes * args.iterations, name
    names = [*built, *engines]
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; jax {jax.__version__}; depth {args.depth}, width 8, "
          f"{lanes} lanes, {args.iterations} gradients a call; load before {os.getloadavg()[0]:.2f}")
    calls = {**{name: (lambda loop=loop: jax.block_until_ready(loop(problems, start)))
                for name, (loop, _) in built.items()}, **engines}
    times = alternated(calls, args.rounds, lanes * args.iterations)
    print(f"load after {os.getloadavg()[0]:.2f}\n")
    print("| form | ns per lane-iteration, median (runs) | engine's form / form per round | median |\n|---|---|---|---|")
    for name in names:
        runs = np.asarray(times[name])
        base = "engine loop, as it is" if name in engines else "engine"
        ratios = np.asarray(times[base]) / runs
        print(f"| {name} | {np.median(runs):.0f} ({', '.join(f'{v:.0f}' for v in runs)}) | "
              f"{', '.join(f'{v:.2f}' for v in ratios)} | {np.median(ratios):.2f}× |")


if __name__ == "__main__":
    main()
