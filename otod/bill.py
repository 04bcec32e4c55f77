"""The whole bill: FLOPs to tolerance = iterations × FLOPs of one iteration of that method on that problem.

One iteration of the engine's loop is one value-and-gradient of the loss and one optimizer update
(``otod.engine.run_to_tolerance``). Its FLOPs are XLA's own count of exactly that body, compiled on its own for a
single lane (`otod.cost.xla.compiled_cost`): a while loop's body is counted once by XLA, so counting the body is
counting one iteration. Set-up (building H, KFAC's factor inverses, H⁻¹ for Newton) is outside the body and is
not in the count, as a real optimizer amortises it; it is reported apart as ``setup_flops``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np
import optax

from otod.cost.xla import compiled_cost
from otod.engine import seed_draws
from otod.methods import MethodOptions, method as lookup_method


class IterationCost(NamedTuple):
    """XLA FLOPs (transcendentals apart) of one iteration, and of building the optimizer's state once."""

    method: str
    flops: float
    transcendentals: float
    setup_flops: float


def iteration_cost(problem_spec, method_name: str, kappa: float, options: MethodOptions = MethodOptions(),
                   x64: bool = False) -> IterationCost:
    """XLA's count of one iteration (value-and-gradient + update + apply) of ``method_name`` on one problem of
    ``problem_spec`` at condition number ``kappa``."""
    m = lookup_method(method_name)
    family = problem_spec.family()
    with jax.enable_x64(x64):
        dtype = np.float64 if x64 else np.float32
        drawn = jax.tree.map(lambda a: a[0], seed_draws(problem_spec, 0, 1, dtype))
        problem = family.make(dtype(kappa), drawn)
        curvature = family.curvature(problem)
        optimizer = m.build(m.reference_lr(curvature), curvature, options)
        x0 = family.start(problem)
        value_and_grad = jax.value_and_grad(lambda x: family.loss(problem, x))

        def one_iteration(x, state, g):
            updates, state = optimizer.update(g, state, x)
            x = optax.apply_updates(x, updates)
            return value_and_grad(x), state

        state = optimizer.init(x0)
        _, g0 = value_and_grad(x0)
        body = compiled_cost(one_iteration, x0, state, g0)
        setup = compiled_cost(optimizer.init, x0)
    return IterationCost(method_name, body.flops, body.transcendentals, setup.flops)


def flops_per_iteration(problem_spec, methods, kappa: float, options: MethodOptions = MethodOptions(),
                        x64: bool = False) -> dict[str, float]:
    """``{method: FLOPs of one iteration}`` for the given methods (see `iteration_cost`)."""
    return {m: iteration_cost(problem_spec, m, kappa, options, x64).flops for m in methods}
