"""The bill of a net sweep: XLA's FLOPs of one training iteration at each batch (the cost obstacle's count,
`otod.cost.flops.iteration_flops`: forward, backward and the optimizer's update of one minibatch step, lowered
on abstract shapes), times the steps to target, gives FLOPs to target; B × steps gives examples to target."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from otod.core.api import lazy

jax = lazy("jax")
jnp = lazy("jax.numpy")
optax = lazy("optax")


def optimizer(method: str):
    """The method in its cheapest optax form (a step of 0.1; the count does not depend on it)."""
    if method == "adam":
        return optax.adam(0.1)
    return optax.sgd(0.1, momentum=0.9 if method == "heavy-ball" else None)


#: The fields of otod's own net (`otod.nets.model.problem.NetSpec`) that its step's program does not read: the step
#: sees one minibatch of ``batch`` examples (the count's argument), each of the training set's shape whatever its
#: size D, and never the held-out targets. A grid's cells at one width and depth (D varies) share one count: the
#: 2 × 2 grid of tests/nets/conftest.py lowered and compiled 12 steps for 6 programs.
UNREAD = ("examples", "batch", "held_out_targets", "reference_batch")


def step_key(spec):
    """What keys a step's FLOPs: otod's net without its `UNREAD` fields, else (a user's model) the spec itself."""
    if getattr(spec, "kind", None) != "net" or not dataclasses.is_dataclass(spec):
        return spec
    return type(spec), tuple((f.name, getattr(spec, f.name)) for f in dataclasses.fields(spec) if f.name not in UNREAD)


def iteration_flops(spec, method: str, batch: int) -> float:
    """XLA's FLOPs of one minibatch step of ``method`` at batch ``batch`` on the net ``spec`` (float32; otod's net
    or a user's model, `otod.nets.model.model_problem.ModelProblem`: both give their start, arrays and mean loss),
    counted once per `step_key`."""
    key = step_key(spec)
    _SPECS.setdefault(key, spec)
    return _counted(key, method, int(batch))


#: The first spec seen under each `step_key` (the one `_counted` lowers).
_SPECS: dict = {}


@functools.lru_cache(maxsize=256)
def _counted(key, method: str, batch: int) -> float:
    from otod.core.api import abstract
    from otod.cost.flops import iteration_flops as count

    spec = _SPECS[key]
    opt = optimizer(method)
    params = jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), spec.initial_params(np.random.default_rng(0)))
    arrays = spec.training_arrays(np.float32)

    def step(params, state, *batch):
        g = jax.grad(spec.mean_loss)(params, *batch)
        updates, state = opt.update(g, state, params)
        return optax.apply_updates(params, updates), state

    shapes = [jax.ShapeDtypeStruct((batch,) + a.shape[1:], a.dtype) for a in arrays]
    return float(count(step, abstract(params), abstract(opt.init(params)), *shapes))


def layer_rule_flops(spec, batch: int) -> float:
    """The analytic FLOPs of one SGD step by the layer rule of the cost obstacle (Hobbhahn & Sevilla 2021,
    `otod.cost.flops`): forward 2·fan_in·fan_out per example and dense layer (convolutions: per output pixel);
    backward 1:1 for the first layer (no gradient with respect to the data) and 2:1 for the others; the update 2 per
    parameter. It leaves out the elementwise work (biases, activations, the loss), so XLA's count lies above it:
    by 2–10% on the nets of the tests (27% on a CNN of 4 channels,
    where the elementwise work is a larger share). NaN for a user's model and the transformer (its attention is not a
    dense layer of the rule)."""
    if spec.kind == "model" or spec.model == "transformer":  # a user's model, the transformer: no layer list
        return float("nan")
    pixels = float(np.prod(spec.dataset().image)) if spec.model == "cnn" else 1.0
    layers = [2.0 * np.prod(s[:-1]) * s[-1] * (pixels if len(s) == 4 else 1.0) for s in spec.shapes()]
    forward = sum(layers)
    backward = layers[0] + 2.0 * sum(layers[1:])
    return float(batch * (forward + backward) + 2.0 * spec.parameter_count)


def recorded_flops(config) -> dict:
    """XLA's FLOPs of one step per method and batch (``{method: {"B": flops}}``) of a sweep of a user's model,
    counted at run time and stored in the results file, so that its report reads back without the model (a
    model given in Python, a file moved)."""
    return {m: {f"{b:g}": iteration_flops(config.spec_at({"batch": b}), m, int(b)) for b in config.values("batch")}
            for m in config.methods}


def bill_rows(spec_at, method: str, batches, steps, flops: dict | None = None) -> list[dict]:
    """Per batch: FLOPs per iteration, steps, FLOPs to target and examples to target (NaN where no count);
    ``spec_at(batch)`` gives the net at that batch; ``flops``: the counts recorded at run time (a user's model:
    `recorded_flops`), read in place of counting them again."""
    rows = []
    for b, s in zip(batches, steps):
        if flops is not None:
            per = float(flops.get(method, {}).get(f"{b:g}", np.nan))
            rule = np.nan
        else:
            per = iteration_flops(spec_at(int(b)), method, int(b))
            rule = layer_rule_flops(spec_at(int(b)), int(b)) if method == "sgd" else np.nan
        ok = np.isfinite(s)
        rows.append({"batch": float(b), "flops_per_iteration": per, "layer_rule_flops": rule, "steps": float(s),
                     "flops_to_target": per * s if ok else np.nan, "examples_to_target": b * s if ok else np.nan})
    return rows
