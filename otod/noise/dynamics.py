"""How a lane of the noise sweep moves: an optax step on a sampled gradient, a learning-rate schedule, and the
EMA of iterates the loss is read on (`otod.core.dynamics.Dynamics` shape).

The carry is (θ, optimizer state, θ̃, t, held): each step samples g_t at θ_t with the lane's per-step key, t (so
a family can sample without replacement within an epoch) and, where the family has an `Order` (a minibatch order
kept for a whole epoch), what it holds for step t (``held``: () without one); takes the update with step
η·schedule(t), and averages θ̃ ← γθ̃ + (1 − γ)θ (γ = 0: θ̃ = θ exactly). Stopping reads the exact loss at θ̃
(``measure``), at the iterations the family's ``checks`` allows (every one where it gives none).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

from otod.core.api import Dynamics, Lane, Order, Step, ema_decay, lane_start, schedule_factor


def noise_dynamics(family, members, options, relative_lr: bool, order: Order | None = None) -> Dynamics:
    build = members[0].build
    factor = schedule_factor(options.schedule, options.horizon)

    def set_up(point, drawn, lr, method_index) -> Lane:
        constants, params, state = lane_start(family, members, options, relative_lr, point, drawn, lr, method_index)
        held = () if order is None else order.start(constants[0])
        carry = (params, state, params, jnp.zeros((), jnp.int32), held)
        return Lane(constants, carry, family.metric(constants[0], params), constants[2])

    def step(constants, carry, key, block_t=None):
        problem, info, step_size, hyper = constants
        params, state, average, t, held = carry
        t_float = t.astype(step_size.dtype)
        if order is not None:
            held = order.refresh(problem, held, t_float)
        g = family.gradient(problem, params, Step(key, t_float, None if order is None else held))
        lr_t = step_size * jnp.asarray(factor(t), step_size.dtype)
        updates, state = build(lr_t, info, options, hyper).update(g, state, params)
        params = optax.apply_updates(params, updates)
        gamma = ema_decay(hyper)
        average = jax.tree.map(lambda a, p: gamma * a + (1 - gamma) * p, average, params)
        return params, state, average, t + 1, held

    def measure(constants, carry):
        return family.metric(constants[0], carry[2])

    def advance(constants, carry, key):
        carry = step(constants, carry, key)
        return carry, measure(constants, carry)

    return Dynamics(set_up, advance, stochastic=True, step=step, measure=measure, checks=family.checks)
