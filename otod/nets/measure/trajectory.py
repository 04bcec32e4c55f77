"""Checkpoints along one training run of a net: where the curvature and the gradient noise are measured (at
init, during training and at the end).

One lane of what the sweep runs, written as a plain loop (a ``lax.scan`` of optax steps on minibatches drawn
without replacement per epoch, with the sweep family's own sampler), so a checkpoint is the parameters the sweep
would have reached at that step with the same seed, batch and step.
"""

from __future__ import annotations

import numpy as np

from otod.core.api import lazy

jax = lazy("jax")
jnp = lazy("jax.numpy")
optax = lazy("optax")


def train(spec, steps, lr: float, seed: int = 0, s: int = 0, momentum: float = 0.0, dtype=np.float32) -> list:
    """The parameters after each of ``steps`` (sorted step counts, 0 = the start) of SGD (heavy-ball with
    ``momentum``) at step ``lr`` on minibatches of ``spec.batch``, from seed ``s``'s start under root ``seed``:
    a list of (step, params) pairs, params as NumPy pytrees."""
    from otod.nets.model.family import minibatch, seed_starts, start_of

    steps = sorted({int(t) for t in steps})
    x, y = (jnp.asarray(a) for a in spec.training_arrays(dtype))
    drawn = seed_starts(spec, np.random.default_rng([seed, s]))
    params = jax.tree.map(lambda a: jnp.asarray(a, dtype), start_of(spec, drawn))
    key = jax.random.PRNGKey(int(drawn["shuffle"]))
    opt = optax.sgd(lr, momentum=momentum or None)
    grad = jax.grad(lambda p, xb, yb: spec.mean_loss(p, xb, yb))

    @jax.jit
    def run(params, state, t0, t1):
        def body(carry, t):
            params, state = carry
            idx = minibatch(key, t, spec.batch, x.shape[0])
            updates, state = opt.update(grad(params, x[idx], y[idx]), state, params)
            return (optax.apply_updates(params, updates), state), None

        return jax.lax.fori_loop(t0, t1, lambda t, c: body(c, t)[0], (params, state))

    out, state, t = [], opt.init(params), 0
    for target in steps:
        if target > t:
            params, state = run(params, state, t, target)
            t = target
        out.append((t, jax.tree.map(np.asarray, params)))
    return out


def model_start(model, seed: int = 0):
    """A contract model's start for root ``seed`` (`otod.nets.model.contract`): ``model.params`` at seed 0 or where the
    model has no ``init``; ``init(PRNGKey(seed))`` at other seeds where it has one."""
    if model.init is None or seed == 0:
        return model.params
    return model.init(jax.random.PRNGKey(int(seed)))


def train_model(model, steps, lr: float, batch: int, seed: int = 0, momentum: float = 0.0) -> list:
    """`train` for a contract model (`otod.nets.model.contract.Model`): SGD (heavy-ball with ``momentum``) at step
    ``lr`` on minibatches of ``batch`` examples drawn without replacement per epoch (the sweep's sampler,
    `otod.nets.model.family.minibatch`, keyed by fold_in(PRNGKey(seed), 1)), from `model_start`: a list of (step,
    params) pairs at the sorted ``steps``, in the model's dtype."""
    from otod.nets.model.family import minibatch

    steps = sorted({int(t) for t in steps})
    data, n = model.data, model.examples
    params = model_start(model, seed)
    key = jax.random.fold_in(jax.random.PRNGKey(int(seed)), 1)
    opt = optax.sgd(lr, momentum=momentum or None)
    grad = jax.grad(model.loss)

    @jax.jit
    def run(params, state, t0, t1):
        def body(t, carry):
            params, state = carry
            idx = minibatch(key, t, batch, n)
            updates, state = opt.update(grad(params, tuple(a[idx] for a in data)), state, params)
            return optax.apply_updates(params, updates), state

        return jax.lax.fori_loop(t0, t1, body, (params, state))

    out, state, t = [], opt.init(params), 0
    for target in steps:
        if target > t:
            params, state = run(params, state, t, target)
            t = target
        out.append((t, params))
    return out
