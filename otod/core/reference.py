"""The one reference loop: what a careful user would write by hand, without the engine.

It builds one lane's problem from the same per-seed draws (NumPy's ``default_rng([seed, s])``), steps it one
iteration at a time in Python with the method's *standalone* optax form (``optax.sgd(lr, momentum=β)`` for the
momentum family, not otod's shared `momentum` program), and stops by the same rule as the engine. Tests compare
the engine with it exactly (float64); benchmarks time the engine against it. Stochastic families get the same
per-step keys, fold_in(fold_in(PRNGKey(seed), s), t).
"""

from __future__ import annotations

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


def reference_run(spec, method: Method, point: dict, seed_index: int, *, seed: int = 0,
                  target: Target = Target(), max_iters: int = 10_000, lr: float = 1.0, relative_lr: bool = True,
                  options=None, optimizer: optax.GradientTransformation | None = None) -> ReferenceRun:
    """Run one lane by hand: (iterations at the lane's stop, final metric, status, first hit of each rung)."""
    family = spec.family()
    dtype = np.float64 if jax.config.jax_enable_x64 else np.float32
    drawn = jax.tree.map(lambda a: np.asarray(a, dtype), family.draws(np.random.default_rng([seed, seed_index])))
    problem = family.make({k: dtype(v) for k, v in point.items()}, drawn)
    params = family.init(problem)
    info = family.info(problem, params)
    step = lr * method.reference_lr(info) if relative_lr else dtype(lr)
    if optimizer is None:
        optimizer = method.cheapest(step, info, options)
    metric = jax.jit(family.metric)
    grad = jax.jit(jax.grad(family.metric, argnums=1))
    sample = jax.jit(family.gradient) if family.stochastic else None
    lane_key = jax.random.fold_in(jax.random.PRNGKey(seed), seed_index)
    state = optimizer.init(params)
    f0 = float(metric(problem, params))
    relative = target.kind == "relative"
    scale = (f0 if f0 > 0 else 1.0) if relative else 1.0
    limit = DIVERGENCE_BOUND if relative else DIVERGENCE_BOUND * max(abs(f0), np.finfo(dtype).tiny)
    gap = (1.0 if f0 > 0 else 0.0) if relative else f0
    hits = [0 if gap <= t else None for t in target.ladder]
    t = 0
    while hits[-1] is None and t < max_iters:
        if sample is not None:
            g = sample(problem, params, jax.random.fold_in(lane_key, t))
        else:
            g = grad(problem, params)
        if family.info_every_step:
            info = family.info(problem, params)
            optimizer_t = method.cheapest(step, info, options)
            updates, state = optimizer_t.update(g, state, params)
        else:
            updates, state = optimizer.update(g, state, params)
        params = optax.apply_updates(params, updates)
        t += 1
        if t % target.check_every and t < max_iters:
            continue
        gap = float(metric(problem, params)) / scale
        hits = [t if h is None and gap <= level else h for h, level in zip(hits, target.ladder)]
        if not (math.isfinite(gap) and gap <= limit) and hits[-1] is None:
            return ReferenceRun(t, gap, "diverged", hits)
    status = "converged" if hits[-1] is not None else "censored"
    return ReferenceRun(t, gap, status, hits)
