"""The whole bill: FLOPs to tolerance = iterations × FLOPs of one iteration of that method on that problem.

One iteration is one optimizer update, its application and one value-and-gradient of the loss, for a single
lane, with the method in its cheapest optax form (`otod.methods.Method.cheapest`: ``optax.sgd(lr)`` for gd, not
the engine's shared momentum program with β = 0, which would bill gd for multiplications by zero). Its FLOPs are
XLA's cost analysis of that program compiled on its own (`otod.cost.xla.compiled_cost`; the lowered, unoptimised
HLO over-counts what runs, e.g. a product the compiler computes once but the code writes twice). Counting the
body alone is counting one iteration (XLA counts a while body once). Set-up (building H, KFAC's factor inverses,
the eigendecomposition for Newton) is outside the body and not in the count, as a real optimizer amortises it.
"""

from __future__ import annotations

from typing import NamedTuple

import functools

import jax
import numpy as np

import optax

from otod.cost.xla import compiled_cost
from otod.engine import seed_draws, set_up_lane
from otod.methods import MethodOptions, method as lookup_method


class IterationCost(NamedTuple):
    """XLA FLOPs of one iteration, with transcendental operations (sqrt, exp) counted apart, as XLA does."""

    method: str
    flops: float
    transcendentals: float


def iteration_cost(problem_spec, method_name: str, kappa: float, options: MethodOptions = MethodOptions(),
                   x64: bool = False) -> IterationCost:
    """XLA's count of one iteration of ``method_name`` (update + apply + value-and-gradient) on a problem of
    ``problem_spec`` at condition number ``kappa`` (see module docstring). The lane is traced abstractly
    (``jax.eval_shape``): nothing is computed and the only compiles are the counted programs."""
    m = lookup_method(method_name)
    family = problem_spec.family()
    with jax.enable_x64(x64):
        dtype = np.float64 if x64 else np.float32
        drawn = jax.tree.map(lambda a: a[0], seed_draws(problem_spec, 0, 1, dtype))
        set_up = functools.partial(set_up_lane, problem_spec, (method_name,), options, True)
        lane = jax.eval_shape(set_up, dtype(kappa), drawn, dtype(1.0))

        optimizer_of = lambda lane: m.cheapest(lane.step_size, lane.curvature, options)  # noqa: E731
        state = jax.eval_shape(lambda lane, x: optimizer_of(lane).init(x), lane, lane.x0)

        def one_iteration(lane, x, state, g):
            updates, state = optimizer_of(lane).update(g, state, x)
            f, g = jax.value_and_grad(lambda y: family.loss(lane.problem, y))(optax.apply_updates(x, updates))
            return f, g, state

        body = compiled_cost(one_iteration, lane, lane.x0, state, lane.g0)
    return IterationCost(method_name, body.flops, body.transcendentals)


def flops_per_iteration(problem_spec, methods, kappa: float, options: MethodOptions = MethodOptions(),
                        x64: bool = False) -> dict[str, float]:
    """``{method: FLOPs of one iteration}`` for the given methods (see `iteration_cost`)."""
    return {m: iteration_cost(problem_spec, m, kappa, options, x64).flops for m in methods}
