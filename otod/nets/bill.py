"""The bill of a net sweep: XLA's FLOPs of one training iteration at each batch (the cost obstacle's count,
`otod.cost.flops.iteration_flops`: forward, backward and the optimizer's update of one minibatch step, lowered
on abstract shapes), times the steps to target, gives FLOPs to target; B × steps gives examples to target."""

from __future__ import annotations

import functools

import numpy as np

from otod.core.lazy import lazy

jax = lazy("jax")
jnp = lazy("jax.numpy")
optax = lazy("optax")


def optimizer(method: str):
    """The method in its cheapest optax form (a step of 0.1; the count does not depend on it)."""
    if method == "adam":
        return optax.adam(0.1)
    return optax.sgd(0.1, momentum=0.9 if method == "heavy-ball" else None)


@functools.lru_cache(maxsize=256)
def iteration_flops(spec, method: str, batch: int) -> float:
    """XLA's FLOPs of one minibatch step of ``method`` at batch ``batch`` on the net ``spec`` (float32)."""
    from otod.core.xla import abstract
    from otod.cost.flops import iteration_flops as count

    opt = optimizer(method)
    params = jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), spec.initial_params(np.random.default_rng(0)))
    x, y = spec.training_arrays(np.float32)

    def step(params, state, xb, yb):
        g = jax.grad(spec.mean_loss)(params, xb, yb)
        updates, state = opt.update(g, state, params)
        return optax.apply_updates(params, updates), state

    xb = jax.ShapeDtypeStruct((batch,) + x.shape[1:], x.dtype)
    yb = jax.ShapeDtypeStruct((batch,) + y.shape[1:], y.dtype)
    return float(count(step, abstract(params), abstract(opt.init(params)), xb, yb))


def bill_rows(spec_at, method: str, batches, steps) -> list[dict]:
    """Per batch: FLOPs per iteration, steps, FLOPs to target and examples to target (NaN where no count);
    ``spec_at(batch)`` gives the net at that batch."""
    rows = []
    for b, s in zip(batches, steps):
        per = iteration_flops(spec_at(int(b)), method, int(b))
        ok = np.isfinite(s)
        rows.append({"batch": float(b), "flops_per_iteration": per, "steps": float(s),
                     "flops_to_target": per * s if ok else np.nan, "examples_to_target": b * s if ok else np.nan})
    return rows
