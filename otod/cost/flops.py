"""FLOPs of one training iteration: forward, backward and update, by XLA's count and by the layer formulas.

Definitions (Hobbhahn & Sevilla, "What's the backward-forward FLOP ratio for neural networks?", Epoch AI 2021):

* forward  = XLA's count of the compiled ``loss(params, x, y)`` (logits + softmax cross-entropy);
* backward = count of ``value_and_grad(loss)`` minus the forward count (the gradient passes only);
* update   = count of one optimizer step, ``optax.<opt>.update`` then ``optax.apply_updates``, on a params
  pytree (independent of the batch: gradients are aggregated before the update);
* ratio    = (backward + update) / forward — the update is counted into the backward pass, as the Epoch text does:
  "backward / forward = (FIRST + 2·OTHER + UPDATE) / (FIRST + OTHER)", which lies in [1, 3] for SGD.

Everything is lowered with abstract shapes (`jax.ShapeDtypeStruct`, `jax.eval_shape` for the parameters), so a
616M-parameter LinearNet is counted without allocating it. XLA counts ``transcendentals`` (exp, log, sqrt,
rsqrt) apart from ``flops``; they are reported in their own columns and are not in the ratio.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from otod.cost import models as M
from otod.core.api import Cost, OtodError, compiled_cost
from otod.cost.optimizers import make_optimizer, optimizer as optimizer_entry



def abstract_batch(network: M.Network, batch: int, dtype=jnp.float32):
    """Shapes of one batch: inputs (batch, *input_shape) in ``dtype``, integer labels (batch,)."""
    return (jax.ShapeDtypeStruct((batch,) + tuple(network.input_shape), dtype),
            jax.ShapeDtypeStruct((batch,), jnp.int32))


def pass_costs(network: M.Network, batch: int) -> tuple[Cost, Cost]:
    """XLA's cost of the forward program and of the backward passes (value_and_grad − forward)."""
    params = network.abstract_params()
    x, y = abstract_batch(network, batch)
    f = partial(M.loss, network)
    forward = compiled_cost(f, params, x, y)
    both = compiled_cost(jax.value_and_grad(f), params, x, y)
    return forward, both - forward


def update_step(optimizer: optax.GradientTransformation):
    """One optimizer iteration on a params pytree: (params, grads, state) -> (params', state')."""

    def step(params, grads, state):
        updates, state = optimizer.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    return step


def update_cost(network: M.Network, optimizer: str) -> Cost:
    """XLA's cost of one optimizer update of ``network``'s parameters (abstract: nothing allocated)."""
    opt = make_optimizer(optimizer)
    params = network.abstract_params()
    state = jax.eval_shape(opt.init, params)
    return compiled_cost(update_step(opt), params, params, state)


class FlopsRow(NamedTuple):
    """One model × batch × optimizer: XLA's and the formula's FLOPs of one iteration, and the ratio."""

    model: str
    batch: int
    optimizer: str
    params: int
    forward_xla: float
    backward_xla: float
    update_xla: float
    transcendentals_forward: float
    transcendentals_backward: float
    transcendentals_update: float
    forward_formula: float
    backward_formula: float
    update_formula: float
    first_layer_share: float      # the formula's first-layer share of forward FLOPs
    ratio_xla: float              # (backward + update) / forward
    ratio_formula: float
    iteration_flops_xla: float    # forward + backward + update
    note: str


def differences(network: M.Network, batch: int, optimizer: str, fwd: tuple[float, float],
                bwd: tuple[float, float], upd: tuple[float, float], transcendentals: float,
                update_transcendentals: float = 0.0) -> str:
    """Where XLA's count and the layer formula differ, and why (from the network's structure).

    * padded convolutions: XLA counts only the kernel taps that land inside the image; the formula counts all;
    * a contraction of length 1 (batch 1 weight gradients xᵀδ, or OneNet's 1-input first layer) is an outer
      product, which XLA counts as 1 FLOP (a multiply) per output, the formula as 2;
    * pooling (max comparisons, average sums, and their backward scatter), biases, ReLUs and the loss are counted
      by XLA and left out of the formula as "negligible";
    * transcendentals (exp/log of the softmax, rsqrt of LayerNorm, Adam's sqrt) are counted apart;
    * Adam: optax's update is 13 FLOP + 1 sqrt per parameter by XLA's count (measured here), Epoch's estimate 18;
      SGD with momentum 4 FLOP per parameter, as the formula.
    """
    rel = lambda a, b: (a - b) / b * 100 if b else 0.0
    parts = [f"fwd {rel(*fwd):+.1f}%, bwd {rel(*bwd):+.1f}%, upd {rel(*upd):+.1f}%"]
    layers = _flat_layers(network.layers)
    dense = [l for l in layers if isinstance(l, M.Dense)]
    if any(isinstance(l, M.Conv) and l.padding for l in layers):
        parts.append("padding taps skipped by XLA")
    if batch == 1 and (dense or any(isinstance(l, M.TransformerBlock) for l in layers)):
        parts.append("batch-1 dense weight gradients are outer products (1 FLOP/weight, not 2)")
    if network.input_shape == (1,) and dense:
        parts.append("1-input first layer is an outer product (1 FLOP/weight)")
    if any(isinstance(l, (M.MaxPool, M.GlobalAvgPool)) for l in layers):
        parts.append("pooling counted by XLA only")
    parts.append("bias/ReLU/loss counted by XLA only")
    if transcendentals:
        parts.append(f"{transcendentals:.3g} transcendentals counted apart")
    if optimizer == "adam":
        n = network.n_params()
        parts.append(f"Adam: XLA {upd[0] / n:.1f} FLOP + {update_transcendentals / n:.1f} sqrt/param vs Epoch ~18")
    return "; ".join(parts)


def _flat_layers(layers):
    out = []
    for l in layers:
        out.extend(_flat_layers(l.layers) if isinstance(l, M.Repeat) else [l])
    return out


def flops_row(network: M.Network, batch: int, optimizer: str, passes: tuple[Cost, Cost], update: Cost) -> FlopsRow:
    """Assemble one row from XLA's pass and update costs and the analytic count."""
    forward, backward = passes
    a = M.analytic_flops(network, batch)
    upd_formula = optimizer_entry(optimizer).update_flops_per_param * a.params
    ratio_xla = (backward.flops + update.flops) / forward.flops if forward.flops else float("nan")
    ratio_formula = (a.backward + upd_formula) / a.forward if a.forward else float("nan")
    trans = forward.transcendentals + backward.transcendentals + update.transcendentals
    note = differences(network, batch, optimizer, (forward.flops, a.forward), (backward.flops, a.backward),
                       (update.flops, upd_formula), trans, update.transcendentals)
    return FlopsRow(network.name, batch, optimizer, a.params, forward.flops, backward.flops, update.flops,
                    forward.transcendentals, backward.transcendentals, update.transcendentals,
                    a.forward, a.backward, upd_formula, a.first_layer_forward / a.forward if a.forward else 0.0,
                    ratio_xla, ratio_formula, forward.flops + backward.flops + update.flops, note)


def check_batches(batches) -> tuple[int, ...]:
    """Batch sizes as positive integers, or `OtodError` naming the bad one."""
    out = []
    for b in batches:
        try:
            value = int(str(b).strip())
        except ValueError:
            value = 0
        if value < 1 or str(b).strip() != str(value):
            raise OtodError(f"--batch {b}: batch sizes must be integers ≥ 1, e.g. --batch 1,4,16")
        out.append(value)
    if not out:
        raise OtodError("--batch: give at least one batch size, e.g. --batch 1,4,16")
    return tuple(out)


def flops_table(networks: list[M.Network], batches, optimizers, workers: int | None = None) -> list[FlopsRow]:
    """Rows for every network × batch × optimizer. Each distinct program is compiled once (passes per network ×
    batch, updates per network × optimizer), compiles running on ``workers`` threads (default: one per CPU)."""
    batches = check_batches(batches)
    for o in optimizers:
        make_optimizer(o)
    optimizers = [str(o).strip().lower() for o in optimizers]
    workers = workers or os.cpu_count() or 1
    with ThreadPoolExecutor(max_workers=workers) as pool:
        passes = {(i, b): pool.submit(pass_costs, n, b) for i, n in enumerate(networks) for b in batches}
        updates = {(i, o): pool.submit(update_cost, n, o) for i, n in enumerate(networks) for o in optimizers}
        return [flops_row(n, b, o, passes[i, b].result(), updates[i, o].result())
                for i, n in enumerate(networks) for b in batches for o in optimizers]


def iteration_flops(step_fn, *abstract_args) -> float:
    """FLOPs of one call of a whole training step (forward + backward + update), for the sweep tables:
    iterations × this = the serial bill. ``abstract_args`` may be `jax.ShapeDtypeStruct` pytrees."""
    return compiled_cost(step_fn, *abstract_args).flops
