"""How one lane moves: the default dynamics (an optax transformation stepping a family's parameters) and the
shape every dynamics has, so a family may bring its own (the noisy quadratic model's exact moment recursion).

A `Dynamics` is two pure functions the engine vmaps:

* ``set_up(point, drawn, lr, method_index) -> Lane``: the lane's constants (its problem, what methods read, its
  step size and hyperparameters), its initial carry and its starting metric;
* ``advance(constants, carry, key) -> (carry, metric)``: one iteration; ``key`` is the lane's per-step key
  (used only when ``stochastic``).

A dynamics whose metric costs more than its step (a net's full training loss against a minibatch gradient) also
gives ``step(constants, carry, key, t) -> carry`` and ``measure(constants, carry) -> metric``, with
``advance = (step, then measure)``; ``t`` is the block's iteration count, the same unbatched scalar for every lane
(all lanes of a block step together), so a step may branch on it with a real ``lax.cond`` (a net draws its
minibatch order once per epoch); and ``checks(t)``, a scalar predicate saying at which iterations the metric is
read at all (besides the target's ``check_every`` and the cap). The engine then computes the metric under a
``lax.cond`` on the block's iteration count, so an iteration that reads nothing pays only for its step.

A sampled-gradient lane (the noise sweeps, the nets) passes its family's sampler a `Step` (the per-step key, t and
what an `Order` holds), and fixes its constants and start with `lane_start`.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import optax

from otod.core.family import Family
from otod.core.methods import Method


class Lane(NamedTuple):
    """Everything one lane fixes before its first iteration (a pytree of arrays)."""

    constants: Any
    carry: Any
    metric0: jax.Array
    step_size: jax.Array


class Dynamics(NamedTuple):
    """``prepare(point, drawn)`` and ``set_up_prepared(prepared, lr, method_index)``, where given, split
    ``set_up`` into what depends on the point and the seed alone (the problem, what methods read: a spectrum, an
    eigendecomposition) and the rest, so the engine prepares once for all of a point's learning rates."""

    set_up: Callable[..., Lane]
    advance: Callable[..., tuple[Any, jax.Array]]
    stochastic: bool = False
    prepare: Callable[..., Any] | None = None
    set_up_prepared: Callable[..., Lane] | None = None
    step: Callable[..., Any] | None = None
    measure: Callable[..., jax.Array] | None = None
    checks: Callable[[jax.Array], jax.Array] | None = None


def optax_dynamics(family: Family, members: tuple[Method, ...], options, relative_lr: bool) -> Dynamics:
    """An optax method stepping the family's parameters.

    With an exact gradient the carry holds ∇f(x_t), computed with f(x_t) in one ``value_and_grad`` (stopping
    reads f, the next update reads ∇f). With a sampled gradient the carry holds only (x_t, state) and each step
    samples g_t with its own key, while stopping reads the exact metric. The methods of one program differ only in
    their step size and hyperparameters, picked per lane by ``method_index``; with ``relative_lr`` the lane's
    ``lr`` multiplies the method's reference step, otherwise it is the step itself.
    """
    build = members[0].build
    value_and_grad = family.value_and_grad or jax.value_and_grad(family.metric, argnums=1)

    def prepare(point, drawn):
        problem = family.make(point, drawn)
        params = family.init(problem)
        return problem, params, family.info(problem, params)

    def set_up_prepared(prepared, lr, method_index) -> Lane:
        problem, params, info = prepared
        pick = lambda arrays: jnp.stack(arrays)[method_index] if len(arrays) > 1 else arrays[0]  # noqa: E731
        hyper = tuple(pick(list(column)) for column in zip(*(m.hyperparameters(info) for m in members)))
        if relative_lr:
            step_size = lr * pick([jnp.asarray(m.reference_lr(info), lr.dtype) for m in members])
        else:
            step_size = lr
        state = build(step_size, info, options, hyper or None).init(params)
        if family.stochastic:
            metric0 = family.metric(problem, params)
            carry = (params, state)
        else:
            metric0, g0 = value_and_grad(problem, params)
            carry = (params, state, g0)
        return Lane((problem, info, step_size, hyper), carry, metric0, step_size)

    def set_up(point, drawn, lr, method_index) -> Lane:
        return set_up_prepared(prepare(point, drawn), lr, method_index)

    def advance(constants, carry, key):
        problem, info, step_size, hyper = constants
        if family.stochastic:
            params, state = carry
            g = family.gradient(problem, params, key)
        else:
            params, state, g = carry
        if family.info_every_step:
            info = family.info(problem, params)
        updates, state = build(step_size, info, options, hyper or None).update(g, state, params)
        params = optax.apply_updates(params, updates)
        if family.stochastic:
            return (params, state), family.metric(problem, params)
        f, g = value_and_grad(problem, params)
        return (params, state, g), f

    return Dynamics(set_up, advance, family.stochastic, prepare, set_up_prepared)


# -- what a sampled-gradient lane shares: its per-step argument and its start ---------------------------------


class Step(NamedTuple):
    """The lane's per-step key and the iteration t (0-based): sampling without replacement needs to know where in
    its epoch a step falls. ``order``: what the family's `Order` holds for step t (None: the family has none, or
    the caller steps without the dynamics' carry, and the gradient draws what it needs from the key and t)."""

    key: object
    t: object
    order: Any = None


class Order(NamedTuple):
    """State a family's sampler keeps in the lane's carry between steps, so that it need not redraw it each step
    (an epoch's minibatch order changes once per epoch). ``start(problem)``: the held value before the first
    step; ``refresh(problem, held, t)``: the value step t reads (as ``Step.order``), which the carry then keeps."""

    start: Callable[[Any], Any]
    refresh: Callable[[Any, Any, Any], Any]


def lane_start(family, members, options, relative_lr: bool, point, drawn, lr, method_index):
    """What a lane of a sampled-gradient dynamics fixes before its first step: the constants (problem, what the
    methods read, the step size, the hyperparameters of the lane's method), its initial parameters and optimizer
    state. ``relative_lr``: the lane's ``lr`` multiplies its method's reference step, else it is the step."""
    build = members[0].build
    problem = family.make(point, drawn)
    params = family.init(problem)
    info = family.info(problem, params)
    pick = lambda arrays: jnp.stack(arrays)[method_index] if len(arrays) > 1 else arrays[0]  # noqa: E731
    hyper = tuple(pick([jnp.asarray(a, lr.dtype) for a in column])
                  for column in zip(*(m.hyperparameters(info) for m in members)))
    if relative_lr:
        step_size = lr * pick([jnp.asarray(m.reference_lr(info), lr.dtype) for m in members])
    else:
        step_size = lr
    state = build(step_size, info, options, hyper).init(params)
    return (problem, info, step_size, hyper), params, state
