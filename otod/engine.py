"""The engine: iterations to tolerance for a whole grid of configurations as one compiled, vmapped program.

One *lane* is one configuration (sweep value, seed, learning rate, method). Its problem is built, its optimizer
stepped until the relative loss gap (f(x_t) − f*)/(f(x₀) − f*) ≤ tol, and the outcome comes back as data (a status
code, as optimistix returns a result in its solution) so that a sweep never stops for one bad lane: converged,
censored (hit max_iters) or diverged (non-finite, or the gap grew past a bound).

``iterations_to_tolerance`` jit-compiles one program for all lanes: a vmapped set-up, then one ``lax.while_loop``
over the whole batch whose iterations are a vmapped `lane_step`. It is keyed on the static problem spec, the
methods of one program (gd, gd-opt, heavy-ball and nesterov share one) and the options, and on the number of
lanes, never on the sweep values, so a sweep compiles once per program and chunk shape however many values it has.
"""

from __future__ import annotations

import contextlib
import functools
from enum import IntEnum
from typing import Iterator, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from otod.errors import OtodError
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


def classify(gap, tol, divergence_bound, otherwise):
    """Status of a gap: converged (≤ tol), diverged (non-finite or > bound), else ``otherwise``."""
    status = jnp.where(gap <= tol, Status.CONVERGED,
                       jnp.where(jnp.isfinite(gap) & (gap <= divergence_bound), otherwise, Status.DIVERGED))
    return status.astype(jnp.int32)


class Lane(NamedTuple):
    """Everything one lane fixes before its first iteration (a pytree of arrays): its problem, the curvature the
    methods read, the step size and hyperparameters of its method, and the start (x₀, optimizer state, f(x₀),
    ∇f(x₀))."""

    problem: dict
    curvature: object
    step_size: jax.Array
    hyper: tuple
    x0: jax.Array
    state0: object
    f0: jax.Array
    g0: jax.Array


def set_up_lane(problem_spec, methods: tuple[str, ...], options: MethodOptions, relative_lr: bool, value, drawn,
                lr, method_index=0) -> Lane:
    """Build the problem for (value, drawn), its curvature, the step size, hyperparameters and initial state of
    method ``methods[method_index]`` (the methods of one program differ only in those arrays).

    With ``relative_lr`` the lane's ``lr`` multiplies the method's reference step (``--lr theory`` is 1, ``--lr
    tuned`` a grid of multipliers); otherwise it is the step itself.
    """
    family = problem_spec.family()
    problem = family.make(value, drawn)
    curvature = family.curvature(problem)
    members = [lookup_method(name) for name in methods]
    pick = lambda arrays: jnp.stack(arrays)[method_index] if len(arrays) > 1 else arrays[0]  # noqa: E731
    reference = pick([m.reference_lr(curvature) for m in members])
    hyper = tuple(pick(list(column)) for column in zip(*(m.hyperparameters(curvature) for m in members)))
    step_size = lr * reference if relative_lr else jnp.asarray(lr, curvature.mu.dtype)
    x0 = family.start(problem)
    state0 = members[0].build(step_size, curvature, options, hyper or None).init(x0)
    f0, g0 = jax.value_and_grad(lambda x: family.loss(problem, x))(x0)
    return Lane(problem, curvature, step_size, hyper, x0, state0, f0, g0)


def lane_step(problem_spec, methods: tuple[str, ...], options: MethodOptions, lane: Lane, x, state, g):
    """One iteration of one lane: the optimizer's update from ∇f(x_t), then f and ∇f at x_{t+1}."""
    family = problem_spec.family()
    optimizer = lookup_method(methods[0]).build(lane.step_size, lane.curvature, options, lane.hyper or None)
    updates, state = optimizer.update(g, state, x)
    x = optax.apply_updates(x, updates)
    f, g = jax.value_and_grad(lambda y: family.loss(lane.problem, y))(x)
    return x, state, f, g


RUNNING = -1


#: Iterations per trip of the while loop (each with its own convergence check): fewer trips, fewer kernels.
UNROLL = 2


#: At most this many lanes per block: each block runs its own while_loop, so a block stops with its own slowest lane
#: and its arrays stay in cache (800 gd + 800 heavy-ball lanes at d = 64, float64: 74 ms as one block each, 36 ms
#: as four blocks of 200). Lanes are split evenly into ⌈n/256⌉ blocks.
BLOCK_LANES = 256


@functools.partial(jax.jit, static_argnames=("problem_spec", "methods", "options", "relative_lr", "unroll",
                                             "block_lanes"))
def _grid(problem_spec, methods, options, relative_lr, values, draws, seed_indices, lrs, method_indices, tol,
          max_iters, unroll=UNROLL, block_lanes=BLOCK_LANES) -> Solution:
    """All lanes, in blocks of ``block_lanes`` (the lane count must be a multiple) run one after another by
    ``lax.map`` inside the one compiled program; see `_block`."""
    blocks = values.shape[0] // block_lanes
    per_block = jax.tree.map(lambda a: a.reshape(blocks, block_lanes, *a.shape[1:]),
                             (values, seed_indices, lrs, method_indices))
    solve = functools.partial(_block, problem_spec, methods, options, relative_lr, draws, tol, max_iters, unroll)
    out = jax.lax.map(lambda args: solve(*args), per_block)
    return jax.tree.map(lambda a: a.reshape(blocks * block_lanes, *a.shape[2:]), out)


def _block(problem_spec, methods, options, relative_lr, draws, tol, max_iters, unroll, values, seed_indices, lrs,
           method_indices) -> Solution:
    """One block of lanes at once: a ``while_loop`` over the block whose predicate is one scalar (any lane still
    running and t < max_iters), with each iteration a ``vmap`` of `lane_step`.

    A vmap *of* a while_loop would make the predicate per-lane and select every carried array on every
    iteration; here only the per-lane scalars (iterations, gap, status) are selected. Lanes that have finished
    keep stepping (harmlessly: their outcome is already recorded) until the block's last one finishes.
    """
    def set_up(value, s, lr, m):
        return set_up_lane(problem_spec, methods, options, relative_lr, value,
                           jax.tree.map(lambda a: a[s], draws), lr, m)

    lanes = jax.vmap(set_up)(values, seed_indices, lrs, method_indices)
    step = jax.vmap(functools.partial(lane_step, problem_spec, methods, options))
    safe_f0 = jnp.where(lanes.f0 > 0, lanes.f0, 1.0)
    gap0 = jnp.where(lanes.f0 > 0, 1.0, jnp.where(lanes.f0 == 0, 0.0, jnp.nan)).astype(lanes.f0.dtype)
    status0 = classify(gap0, tol, DIVERGENCE_BOUND, RUNNING)

    def running(carry):
        t, *_, status = carry
        return (t < max_iters) & jnp.any(status == RUNNING)

    def one_iteration(carry):
        t, x, state, g, iterations, gap, status = carry
        x, state, f, g = step(lanes, x, state, g)
        t = t + 1
        active = (status == RUNNING) & (t <= max_iters)
        gap_t = f / safe_f0
        iterations = jnp.where(active, t, iterations)
        gap = jnp.where(active, gap_t, gap)
        status = jnp.where(active, classify(gap_t, tol, DIVERGENCE_BOUND, RUNNING), status)
        return t, x, state, g, iterations, gap, status

    def iterate(carry):
        for _ in range(unroll):
            carry = one_iteration(carry)
        return carry

    init = (jnp.zeros((), jnp.int32), lanes.x0, lanes.state0, lanes.g0, jnp.zeros_like(status0), gap0, status0)
    _, _, _, _, iterations, gap, status = jax.lax.while_loop(running, iterate, init)
    status = jnp.where(status == RUNNING, Status.CENSORED, status).astype(jnp.int32)
    return Solution(iterations, gap, status, lanes.step_size)


def seed_draws(problem_spec, seed: int, num_seeds: int, dtype) -> dict:
    """The random numbers of seeds 0..num_seeds−1, stacked: seed s draws from ``numpy.random.default_rng([seed,
    s])``, the same at every sweep value (common random numbers: one seed is one problem instance across the
    sweep), and independent of how many seeds run."""
    per_seed = [problem_spec.family().draws(np.random.default_rng([seed, s])) for s in range(num_seeds)]
    return jax.tree.map(lambda *xs: np.stack(xs).astype(dtype), *per_seed)


def iterations_to_tolerance(problem_spec, methods: str | tuple[str, ...], values, seed_indices, lrs, *,
                            method_indices=None, seed: int = 0, tol: float = 1e-6, max_iters: int = 10_000,
                            relative_lr: bool = True, options: MethodOptions = MethodOptions()) -> Solution:
    """Run every lane (values[i], seed_indices[i], lrs[i], method_indices[i]) as one jit-compiled program.

    ``methods`` is one method name, or several of one program (`otod.methods.programs`), in which case
    ``method_indices`` says each lane's method. All per-lane arrays have one entry per lane; the result is a
    `Solution` of NumPy arrays of that length. Compiles once per (problem spec, methods, options, lane count, dtype).
    """
    methods = (methods,) if isinstance(methods, str) else tuple(methods)
    if len({lookup_method(m).program or m for m in methods}) != 1:
        raise OtodError(f"methods {', '.join(methods)} do not share one program; run them separately")
    dtype = np.float64 if jax.config.jax_enable_x64 else np.float32
    seed_indices = np.asarray(seed_indices, np.int32)
    method_indices = np.zeros_like(seed_indices) if method_indices is None else np.asarray(method_indices, np.int32)
    draws = seed_draws(problem_spec, seed, int(seed_indices.max()) + 1, dtype)
    n = len(seed_indices)
    blocks = -(-n // BLOCK_LANES)
    block = -(-n // blocks)  # n split evenly: at most blocks − 1 padded lanes
    padded = blocks * block
    pad = lambda a: np.concatenate([a, np.repeat(a[-1:], padded - n, axis=0)])  # noqa: E731  (repeat the last lane)
    solution = _grid(problem_spec, methods, options, relative_lr, pad(np.asarray(values, dtype)), draws,
                     pad(seed_indices), pad(np.asarray(lrs, dtype)), pad(method_indices), dtype(tol),
                     np.int32(max_iters), block_lanes=block)
    return Solution(*(np.asarray(a)[:n] for a in solution))


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
