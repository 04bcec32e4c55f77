"""Why the nets obstacle's CNN is slow on CPU: the time of one SGD step (B = 32, float32, jitted, warm) of the CNN
against the MLP at a similar parameter count, one lane and 34 lanes under a vmap (the sweep's lanes at 2 seeds ×
17 lrs), and the convolution written three ways:

* ``im2col``: `otod.nets.model.models.convolve`, the 9 shifted copies of the padded image concatenated and multiplied by
  the [9·c_in, c_out] weight (what the package runs);
* ``lax.conv``: ``jax.lax.conv_general_dilated`` in NHWC/HWIO (XLA's own convolution);
* ``toeplitz``: the whole 8×8 SAME convolution of a one-channel image as one dense [64, 64·c_out] matrix built
  from the weight (one big GEMM, 64/9 ≈ 7× the multiply-adds).

Nets: CNN width 16, depth 2 (one 3×3 convolution of 16 channels, 2×2 average pool, dense; P = 2,730) and MLP
width 32, depth 2 (P = 2,410), both on the digits. Variants alternate within each round (``--rounds``, default
5); medians and per-round ratios to the MLP are printed with the CPU model and the analytic FLOPs per example.

    PYTHONPATH=. python3 benchmarks/bench_cnn.py [--rounds 5] [--width 16]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))


def conv_lax(h, w):
    import jax

    return jax.lax.conv_general_dilated(h, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def conv_toeplitz(h, w):
    """The SAME 3×3 convolution of one-channel images h [n, H, W, 1] as h [n, H·W] @ T [H·W, H·W·c_out]."""
    import jax.numpy as jnp

    n, height, width = h.shape[:3]
    shift = np.zeros((height * width, 9, height * width), np.float32)
    for p in range(height * width):
        i, j = divmod(p, width)
        for k in range(9):
            ii, jj = i + k // 3 - 1, j + k % 3 - 1
            if 0 <= ii < height and 0 <= jj < width:
                shift[ii * width + jj, k, p] = 1.0
    t = jnp.einsum("ikp,kc->ipc", jnp.asarray(shift, h.dtype), w.reshape(9, -1)).reshape(height * width, -1)
    return (h.reshape(n, -1) @ t).reshape(n, height, width, -1)


def stepper(spec, lanes: int, conv=None):
    """A jitted SGD step of ``lanes`` copies of ``spec``'s net (B = 32 consecutive examples from i·32), warm."""
    import jax
    import jax.numpy as jnp

    from otod.nets.model import models

    x, y = (jnp.asarray(a) for a in spec.training_arrays(np.float32))
    p0 = jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), spec.initial_params(np.random.default_rng(0)))
    original = models.convolve
    models.convolve = conv or original
    try:
        def step(p, i):
            idx = (jnp.arange(32) + i * 32) % x.shape[0]
            g = jax.grad(spec.mean_loss)(p, x[idx], y[idx])
            return jax.tree.map(lambda a, b: a - 0.01 * b, p, g)

        params = jax.tree.map(lambda a: jnp.stack([a] * lanes), p0)
        f = jax.jit(jax.vmap(step, (0, None))).lower(params, 0).compile()
    finally:
        models.convolve = original
    jax.block_until_ready(f(params, 0))
    return f, params


def timed(f, params, reps: int) -> float:
    import jax

    start = time.perf_counter()
    for i in range(reps):
        params = f(params, i)
    jax.block_until_ready(params)
    return (time.perf_counter() - start) / reps


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--width", type=int, default=16)
    args = parser.parse_args()

    from otod.core.results import cpu_model
    from otod.nets.model.problem import NetSpec

    cnn, mlp = NetSpec(model="cnn", width=args.width), NetSpec(model="mlp", width=32)
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores")
    print(f"CNN width {args.width}: P = {cnn.parameter_count:,}, {cnn.flops_per_example():,.0f} FLOPs/example forward;"
          f" MLP width 32: P = {mlp.parameter_count:,}, {mlp.flops_per_example():,.0f}")
    for lanes, reps in ((1, 300), (34, 20)):
        variants = {"mlp": stepper(mlp, lanes), "cnn im2col": stepper(cnn, lanes),
                    "cnn lax.conv": stepper(cnn, lanes, conv_lax), "cnn toeplitz": stepper(cnn, lanes, conv_toeplitz)}
        times = {k: [] for k in variants}
        for _ in range(args.rounds):
            for name, (f, params) in variants.items():
                times[name].append(timed(f, params, reps))
        print(f"{lanes} lane{'s' if lanes > 1 else ''}, B = 32 step (ms; median over {args.rounds} rounds, then the "
              "median and range of the per-round ratio to the MLP):")
        base = np.array(times["mlp"])
        for name, t in times.items():
            t = np.array(t)
            r = t / base
            print(f"  {name:<13} {1e3 * np.median(t):8.3f} ms   × {np.median(r):5.2f} [{r.min():.2f}, {r.max():.2f}]")


if __name__ == "__main__":
    main()
