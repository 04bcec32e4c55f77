"""The engine: iterations to tolerance for a whole grid of configurations as one compiled, vmapped program.

One *lane* is one configuration (sweep value, seed, learning rate). Its problem is built, its optimizer run in a
``lax.while_loop`` until the relative loss gap (f(x_t) − f*)/(f(x₀) − f*) ≤ tol, and the outcome comes back as
data (a status code, as optimistix returns a result in its solution) so that a vmapped sweep never stops for one
bad lane: converged, censored (hit max_iters) or diverged (non-finite, or the gap grew past a bound).

``iterations_to_tolerance`` jit-compiles ``vmap(lane)`` keyed on the static problem spec, method and options and on
the number of lanes, never on the sweep values, so a sweep compiles once per method and chunk shape however many
values it has.
"""

from __future__ import annotations

import contextlib
import functools
from enum import IntEnum
from typing import Callable, Iterator, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from otod.methods import MethodOptions, method as lookup_method

#: A lane whose gap exceeds this multiple of its starting gap is diverged.
DIVERGENCE_BOUND = 1e10


class Status(IntEnum):
    """Outcome of one lane."""

    CONVERGED = 0
    CENSORED = 1
    DIVERGED = 2


class Solution(NamedTuple):
    """Per-lane outcome: iterations taken, final relative gap, `Status` code, and the learning rate used."""

    iterations: jax.Array
    relative_gap: jax.Array
    status: jax.Array
    learning_rate: jax.Array


def run_to_tolerance(loss: Callable[[jax.Array], jax.Array], x0: jax.Array, optimizer: optax.GradientTransformation,
                     tol, max_iters, divergence_bound=DIVERGENCE_BOUND) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Run one optimizer from x0 until gap_t = loss(x_t)/loss(x₀) ≤ tol; return (iterations, gap, status).

    ``loss`` must return f(x) − f* (zero at the optimum). The loop carries the gradient at x_t, so each iteration
    costs one value-and-gradient and one optimizer update, and the iteration count is the first t with
    gap_t ≤ tol (0 if x₀ already meets it).
    """
    value_and_grad = jax.value_and_grad(loss)
    f0, g0 = value_and_grad(x0)
    safe_f0 = jnp.where(f0 > 0, f0, 1.0)

    def running(carry):
        t, _, _, gap, _ = carry
        return (gap > tol) & (t < max_iters) & jnp.isfinite(gap) & (gap <= divergence_bound)

    def step(carry):
        t, x, state, _, g = carry
        updates, state = optimizer.update(g, state, x)
        x = optax.apply_updates(x, updates)
        f, g = value_and_grad(x)
        return t + 1, x, state, f / safe_f0, g

    init = (jnp.zeros((), jnp.int32), x0, optimizer.init(x0), jnp.where(f0 > 0, 1.0, 0.0).astype(f0.dtype), g0)
    t, _, _, gap, _ = jax.lax.while_loop(running, step, init)
    status = jnp.where(gap <= tol, Status.CONVERGED,
                       jnp.where(jnp.isfinite(gap) & (gap <= divergence_bound), Status.CENSORED, Status.DIVERGED))
    return t, gap, status.astype(jnp.int32)


def lane(problem_spec, method_name: str, options: MethodOptions, relative_lr: bool,
         value, drawn, lr, tol, max_iters) -> Solution:
    """One configuration: build the problem for (value, drawn), the method with its step size, run to tolerance.

    With ``relative_lr`` the lane's ``lr`` multiplies the method's reference step (``--lr theory`` is 1, ``--lr
    tuned`` a grid of multipliers); otherwise it is the step itself.
    """
    family = problem_spec.family()
    problem = family.make(value, drawn)
    curvature = family.curvature(problem)
    m = lookup_method(method_name)
    step_size = lr * m.reference_lr(curvature) if relative_lr else jnp.asarray(lr, curvature.mu.dtype)
    optimizer = m.build(step_size, curvature, options)
    t, gap, status = run_to_tolerance(lambda x: family.loss(problem, x), family.start(problem), optimizer,
                                      tol, max_iters)
    return Solution(t, gap, status, step_size)


@functools.partial(jax.jit, static_argnames=("problem_spec", "method_name", "options", "relative_lr"))
def _grid(problem_spec, method_name, options, relative_lr, values, draws, seed_indices, lrs, tol,
          max_iters) -> Solution:
    def run(value, s, lr):
        drawn = jax.tree.map(lambda a: a[s], draws)
        return lane(problem_spec, method_name, options, relative_lr, value, drawn, lr, tol, max_iters)

    return jax.vmap(run)(values, seed_indices, lrs)


def seed_draws(problem_spec, seed: int, num_seeds: int, dtype) -> dict:
    """The random numbers of seeds 0..num_seeds−1, stacked: seed s draws from ``numpy.random.default_rng([seed,
    s])``, the same at every sweep value (common random numbers: one seed is one problem instance across the
    sweep), and independent of how many seeds run."""
    per_seed = [problem_spec.family().draws(np.random.default_rng([seed, s])) for s in range(num_seeds)]
    return jax.tree.map(lambda *xs: np.stack(xs).astype(dtype), *per_seed)


def iterations_to_tolerance(problem_spec, method_name: str, values, seed_indices, lrs, *, seed: int = 0,
                            tol: float = 1e-6, max_iters: int = 10_000, relative_lr: bool = True,
                            options: MethodOptions = MethodOptions()) -> Solution:
    """Run every lane (values[i], seed_indices[i], lrs[i]) of one method as one jit-compiled vmapped program.

    All three arrays have one entry per lane; the result is a `Solution` of arrays of that length. Compiles once
    per (problem spec, method, options, lane count, dtype).
    """
    lookup_method(method_name)
    dtype = np.float64 if jax.config.jax_enable_x64 else np.float32
    seed_indices = np.asarray(seed_indices, np.int32)
    draws = seed_draws(problem_spec, seed, int(seed_indices.max()) + 1, dtype)
    return _grid(problem_spec, method_name, options, relative_lr, np.asarray(values, dtype), draws, seed_indices,
                 np.asarray(lrs, dtype), dtype(tol), np.int32(max_iters))


@contextlib.contextmanager
def count_compilations() -> Iterator[list[float]]:
    """Count XLA backend compilations inside the block: yields a list that gets one entry (seconds) per compile.

    Uses ``jax.monitoring``'s '/jax/core/compile/backend_compile_duration' event, which fires once per XLA
    compilation (cache hits do not fire).
    """
    durations: list[float] = []

    def listener(event: str, seconds: float, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            durations.append(seconds)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield durations
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
