"""Wall-clock time of one training iteration on the current device: forward, backward and update.

Each part is its own jitted program, timed after warm-up (compilation and first runs excluded) with
``block_until_ready``, ``repeats`` times; we report the median and the spread (25th–75th percentile, min, max):

* forward  = ``loss(params, x, y)``;
* backward = the pullback of ``jax.vjp`` applied to the cotangent 1.0, with the forward's residuals already
  computed (the gradient passes alone, the time counterpart of "value_and_grad − forward");
* update   = one optax step, ``optimizer.update`` + ``optax.apply_updates``;
* value_and_grad = forward and backward fused in one program, for comparison.

Precision: ``float32``, or ``bfloat16`` mixed precision (inputs and every layer's computation in bfloat16,
float32 master weights, gradients, optimizer state and loss). A published measurement (Li et al., "PyTorch
Distributed: Experiences on Accelerating Data Parallel Training", VLDB 2020, fig. 6: ResNet50 and BERT on V100) puts the backward pass at ≈ 3× the forward and the
optimizer step small; we report the backward/forward time ratio next to the FLOP ratio. The same code runs
unchanged on GPU: it times whatever ``jax.devices()[0]`` is.

Before allocating anything, `check_fits` estimates the memory the timing needs and refuses (`OtodError`) a model
too large for the device, pointing at ``otod flops``, which needs no memory.
"""

from __future__ import annotations

import math
import time
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from otod.cost import models as M
from otod.cost.flops import update_step
from otod.cost.optimizers import OPTIMIZERS, make_optimizer
from otod.core.api import OtodError, memory_available

PRECISIONS = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}


class Timing(NamedTuple):
    """Seconds per call over the timed repeats."""

    median: float
    q25: float
    q75: float
    min: float
    max: float
    repeats: int


def time_call(fn, args: tuple, warmup: int = 2, repeats: int = 10) -> Timing:
    """Median and spread of the wall-clock time of ``fn(*args)`` (jitted), after ``warmup`` untimed calls."""
    for _ in range(max(warmup, 1)):
        jax.block_until_ready(fn(*args))
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        samples.append(time.perf_counter() - start)
    s = np.asarray(samples)
    return Timing(float(np.median(s)), float(np.percentile(s, 25)), float(np.percentile(s, 75)),
                  float(s.min()), float(s.max()), repeats)


def check_precision(name: str):
    key = str(name).strip().lower()
    if key not in PRECISIONS:
        raise OtodError(f"--precision {name}: unknown precision; known: {', '.join(PRECISIONS)}, "
                        "e.g. --precision float32,bfloat16")
    return key


def activation_elements(network: M.Network) -> int:
    """Elements of every layer output of one example (what a backward pass keeps as residuals, roughly)."""
    s, total = network.input_shape, 0
    for layer in network.layers:
        out = layer.out_shape(s)
        if isinstance(layer, M.Repeat):
            total += math.prod(out) * layer.times * max(len(layer.layers), 1)
        elif isinstance(layer, M.TransformerBlock):
            t, d = s
            total += t * d * (8 + 2 * layer.mlp_ratio) + 2 * layer.heads * t * t
        else:
            total += math.prod(out)
        s = out
    return total + math.prod(network.input_shape)


def memory_needed(network: M.Network, batch: int, optimizer: str, precision: str = "float32") -> int:
    """Bytes the timing holds at its peak (an estimate): float32 params, gradients, optimizer state, their updated
    copies and one temporary, 4·P·(4 + 2·slots), plus activations and residuals, 2·batch·A·4."""
    p = network.n_params()
    slots = OPTIMIZERS[optimizer].state_slots if optimizer in OPTIMIZERS else 2
    item = jnp.dtype(PRECISIONS[precision]).itemsize
    return int(4 * p * (4 + 2 * slots) + 2 * batch * activation_elements(network) * max(item, 4))


def check_fits(network: M.Network, batch: int, optimizer: str, precision: str = "float32",
               available: int | None = None, fraction: float = 0.8) -> None:
    """Raise `OtodError` when timing ``network`` would need more than ``fraction`` of the free memory."""
    available = memory_available() if available is None else available
    need = memory_needed(network, batch, optimizer, precision)
    if available is not None and need > fraction * available:
        raise OtodError(f"--model {network.name} --batch {batch} --optimizer {optimizer}: too large to time in "
                        f"memory (needs ~{need / 2**30:.1f} GiB, {available / 2**30:.1f} GiB free); "
                        f"FLOPs still work: otod flops --model {network.name} --batch {batch}")


class ProfileRow(NamedTuple):
    """Times of one model × batch × optimizer × precision, in seconds (medians and spreads)."""

    model: str
    batch: int
    optimizer: str
    precision: str
    device: str
    forward_s: float
    forward_q25_s: float
    forward_q75_s: float
    backward_s: float
    backward_q25_s: float
    backward_q75_s: float
    update_s: float
    update_q25_s: float
    update_q75_s: float
    value_and_grad_s: float
    repeats: int
    time_ratio: float          # (backward + update) / forward, as the FLOP ratio
    backward_forward_time: float  # backward / forward alone


def profile_one(network: M.Network, batch: int, optimizer: str = "sgd", precision: str = "float32",
                warmup: int = 2, repeats: int = 10, seed: int = 0, fused: bool = True) -> ProfileRow:
    """Time forward, backward and update of ``network`` on a random batch on the current device.

    ``fused=False`` neither compiles nor times ``value_and_grad`` (its column is NaN): the time-split figure shows
    the three parts only, and on the conv nets the fused program is about 40 % of the timing's calls."""
    precision = check_precision(precision)
    check_fits(network, batch, optimizer, precision)
    dtype = PRECISIONS[precision]
    kp, kx, ky = jax.random.split(jax.random.PRNGKey(seed), 3)
    params = jax.jit(network.init)(kp)
    x = jax.random.normal(kx, (batch,) + tuple(network.input_shape), jnp.float32).astype(dtype)
    y = jax.random.randint(ky, (batch,), 0, network.classes)
    f = partial(M.loss, network)

    forward = jax.jit(f)
    vjp_forward = jax.jit(lambda p, x, y: jax.vjp(lambda q: f(q, x, y), p)[1])
    pullback = jax.jit(lambda pb: pb(jnp.ones((), jnp.float32))[0])
    opt = make_optimizer(optimizer)
    state = opt.init(params)
    update = jax.jit(update_step(opt))

    pb = vjp_forward(params, x, y)
    grads = pullback(pb)
    t_fwd = time_call(forward, (params, x, y), warmup, repeats)
    t_bwd = time_call(pullback, (pb,), warmup, repeats)
    t_upd = time_call(update, (params, grads, state), warmup, repeats)
    t_vag = (time_call(jax.jit(jax.value_and_grad(f)), (params, x, y), warmup, repeats).median if fused
             else float("nan"))
    device = jax.devices()[0]
    return ProfileRow(network.name, batch, optimizer, precision, getattr(device, "device_kind", str(device)),
                      t_fwd.median, t_fwd.q25, t_fwd.q75, t_bwd.median, t_bwd.q25, t_bwd.q75,
                      t_upd.median, t_upd.q25, t_upd.q75, t_vag, repeats,
                      (t_bwd.median + t_upd.median) / t_fwd.median, t_bwd.median / t_fwd.median)
