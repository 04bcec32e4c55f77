"""The one reference loop: what a careful user would write by hand, without the engine.

It builds one lane's problem from the same per-seed draws (NumPy's ``default_rng([seed, s])``), steps it one
iteration at a time in Python with the method's *standalone* optax form (``optax.sgd(lr, momentum=β)`` for the
momentum family, not otod's shared `momentum` program), and stops by the same rule as the engine. Tests compare
the engine with it exactly (float64). Stochastic families get the same
per-step keys, fold_in(fold_in(PRNGKey(seed), s), t) (``step_of(key, t)`` makes what a family's sampler takes
from them: the noise families take the key and t), and a family with a ``checks`` schedule reads its metric only
where the schedule says, as the engine does.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import numpy as np
import optax

from otod.core.methods import Method
from otod.core.stopping import DIVERGENCE_BOUND, Target


class ReferenceRun(NamedTuple):
    iterations: int
    final_metric: float
    status: str
    hits: list


@functools.lru_cache(maxsize=None)
def _jitted(method: Method, options, spec):
    """One iteration's pieces, jitted once per (method, options, problem spec) and reused across lanes: the
    optimizer is rebuilt inside from the lane's step and info, exactly as a user's jitted step would be; a
    stochastic family's sampled gradient too (``spec.family()`` builds its functions anew at each call, so a
    sampler jitted per lane compiled per lane)."""

    @jax.jit
    def update(step, info, g, state, params):
        updates, state = method.cheapest(step, info, options).update(g, state, params)
        return optax.apply_updates(params, updates), state

    @jax.jit
    def init(step, info, params):
        return method.cheapest(step, info, options).init(params)

    family = spec.family()
    sample = jax.jit(family.gradient) if family.stochastic else None
    return update, init, jax.jit(family.metric), jax.jit(jax.grad(family.metric, argnums=1)), sample


@functools.lru_cache(maxsize=None)
def _set_up(spec):
    """The lane's set-up, the family's ``make`` and ``info``, jitted once per problem spec (whatever the method):
    one program each instead of one per operation (measured: the Kronecker family's set-up, run op by op, compiled
    its dozens of operations in 1.3 s of CPU on its first lanes)."""
    family = spec.family()
    return jax.jit(family.make), jax.jit(family.info)


def reference_run(spec, method: Method, point: dict, seed_index: int, *, seed: int = 0,
                  target: Target = Target(), max_iters: int = 10_000, lr: float = 1.0, relative_lr: bool = True,
                  options=None, optimizer: optax.GradientTransformation | None = None,
                  step_of=lambda key, t: key) -> ReferenceRun:
    """Run one lane by hand: (iterations at the lane's stop, final metric, status, first hit of each rung)."""
    family = spec.family()
    dtype = np.float64 if jax.config.jax_enable_x64 else np.float32
    drawn = jax.tree.map(lambda a: np.asarray(a, dtype), family.draws(np.random.default_rng([seed, seed_index])))
    make, info_of = _set_up(spec)
    problem = make({k: dtype(v) for k, v in point.items()}, drawn)
    params = family.init(problem)
    info = info_of(problem, params)
    step = lr * method.reference_lr(info) if relative_lr else dtype(lr)
    update, init, metric, grad, sample = _jitted(method, options, spec)
    if optimizer is not None:
        update = jax.jit(lambda step, info, g, state, x: _apply(optimizer, g, state, x))
        state = optimizer.init(params)
    else:
        state = init(step, info, params)
    lane_key = jax.random.fold_in(jax.random.PRNGKey(seed), seed_index)
    f0 = float(metric(problem, params))
    relative = target.kind == "relative"
    scale = (f0 if f0 > 0 else 1.0) if relative else 1.0
    limit = DIVERGENCE_BOUND if relative else DIVERGENCE_BOUND * max(abs(f0), np.finfo(dtype).tiny)
    gap = (1.0 if f0 > 0 else 0.0) if relative else f0
    hits = [0 if gap <= t else None for t in target.ladder]
    t = 0
    while hits[-1] is None and t < max_iters:
        if sample is not None:
            g = sample(problem, params, step_of(jax.random.fold_in(lane_key, t), dtype(t)))
        else:
            g = grad(problem, params)
        if family.info_every_step:
            info = info_of(problem, params)
        params, state = update(step, info, g, state, params)
        t += 1
        read = t % target.check_every == 0 and (family.checks is None or bool(family.checks(t)))
        if not read and t < max_iters:
            continue
        gap = float(metric(problem, params)) / scale
        hits = [t if h is None and gap <= level else h for h, level in zip(hits, target.ladder)]
        if not (math.isfinite(gap) and gap <= limit) and hits[-1] is None:
            return ReferenceRun(t, gap, "diverged", hits)
    status = "converged" if hits[-1] is not None else "censored"
    return ReferenceRun(t, gap, status, hits)


def _apply(optimizer, g, state, params):
    updates, state = optimizer.update(g, state, params)
    return optax.apply_updates(params, updates), state
