"""The engine: iterations to target for a whole grid of lanes as one compiled, vmapped program.

One *lane* is one configuration: a point (the traced axis values, e.g. κ or a batch size), a seed, a learning
rate and a method. Its dynamics (`otod.core.dynamics`) are set up and advanced until its metric reaches the
lowest rung of the target's ladder (`otod.core.stopping`); every rung's first-hit iteration is recorded, and the
outcome comes back as data (a status code) so that one bad lane never stops a sweep.

``iterations_to_target`` jit-compiles one program for all lanes (one per device they are dealt to, `dispatch`):
lanes are run in blocks (``lax.map`` over blocks), each block a vmapped set-up and one ``lax.while_loop`` whose
predicate is one scalar (any lane of the block still running). A vmap *of* a while_loop would make the predicate
per-lane and select every carried array on every iteration; here only the per-lane scalars are selected. The
program is keyed on the static problem spec, the methods of one program, the options, the target, the shapes
and the device, never on the sweep values, so a sweep compiles once per program, chunk shape and device however
many values it has.

Per-step random keys are fold_in(fold_in(root, seed), t): common random numbers across methods and learning
rates, and the same numbers whatever the chunking or the block a lane lands in.

With ``group = (rates, seeds)`` the lanes come as whole points laid out [point, rate, seed], and the engine
tunes the learning rate honestly and cheaply: a rate whose median count over seeds can no longer beat the best
rate's already-determined median (unfinished lanes counted as at least t + 1, censored and diverged as worst)
is *pruned*, so its lanes stop. The rate a point finally chooses is the one it would choose without pruning.

A block runs until its slowest lane stops. Where a few lanes outlast the rest (censored at the cap, a rate that
cannot be pruned yet), *compaction* gathers them once every row of the block has at most an eighth of its lanes
running, and runs them alone: a lane's numbers do not depend on the lanes beside it (tested, record for record,
on every engine path), so only the lane-iterations spent waiting go.
"""

from __future__ import annotations

import functools
import heapq
import math
import time
from typing import Any, Callable, Mapping, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from otod.core.device_costs import CPU, trip_costs
from otod.core.devices import watchdog_seconds
from otod.core.errors import Abandoned
from otod.core.lanes import layout, set_up_lanes
from otod.core.stopping import DIVERGENCE_BOUND, RUNNING, STALL_DECREASE, Status, Target, stall_window_of
from otod.core.traces import checkpoints, traced
from otod.core.variants import dynamics_of, program_spec

#: Iterations per trip of the while loop (each with its own check), where not given: None chooses them per device
#: kind by the cost model from the program's predicted trips (`otod.core.device_costs.TripCosts.unroll`: one on
#: a CPU, up to 16 on a GPU). The counts do not depend on it (tested on every engine path).
UNROLL: int | None = None

#: At most this many lanes per block on a CPU (`otod.core.device_costs.CPU`; a GPU's blocks are larger): each
#: block runs its own while_loop, so a block stops with its own slowest lane and its arrays stay in cache.
BLOCK_LANES = CPU.block_lanes

#: A CPU's fixed seconds per trip of a block's while loop (`otod.core.device_costs`), the default of
#: `choose_points_per_block`.
TRIP_SECONDS = CPU.trip_seconds


class Solution(NamedTuple):
    """Per-lane outcome (NumPy arrays): the iteration the lane stopped at, the first-hit iteration of every ladder
    rung (−1: never), the last metric read (relative gap or absolute), the `Status` code and the step size; and
    ``lane_iterations``, the lane-iterations the program executed (each block's iterations × its lanes, padding
    included): against the sum of ``iterations`` it measures the work lost to lanes waiting for their block.

    A family that reads its metric only at ``checks`` (`otod.core.family.Family.checks`) also gets ``trace``
    [lane, checkpoint], the metric (relative gap or absolute) each lane read at every iteration of
    ``checkpoints`` (iteration 0, the start, first) up to where it stopped, NaN after: `otod.core.traces`
    re-derives the counts to any target above the run's own from it. None for the other families."""

    iterations: np.ndarray
    hits: np.ndarray
    final_metric: np.ndarray
    status: np.ndarray
    learning_rate: np.ndarray
    lane_iterations: int = 0
    trace: np.ndarray | None = None
    checkpoints: np.ndarray | None = None


def seed_draws(spec, seed: int, num_seeds: int, dtype) -> dict:
    """The random numbers of seeds 0..num_seeds−1, stacked: seed s draws from ``numpy.random.default_rng([seed,
    s])``, the same at every sweep point (common random numbers: one seed is one problem instance across the
    sweep), and independent of how many seeds run."""
    family = spec.family()
    per_seed = [family.draws(np.random.default_rng([seed, s])) for s in range(num_seeds)]
    return jax.tree.map(lambda *xs: np.stack(xs).astype(dtype), *per_seed)


def unchanged(before, after):
    """Per lane, whether every floating-point leaf of the carry is bit for bit the same after an iteration as
    before it (leaves batched [outer, inner, ...]): the ``"fixed-point"`` stall rule. A deterministic iteration is
    a function of its carry, so a lane at a fixed point stays there for good. Integer leaves are not compared:
    adam's step count only sets its bias corrections, which cannot move a lane whose update rounded to zero
    (that needs |m̂| below rounding against √v̂ + ε, an exactly stationary point). NaN never compares equal, so
    a diverging lane is never a fixed point."""
    same = None
    for a, b in zip(jax.tree.leaves(before), jax.tree.leaves(after)):
        if not jnp.issubdtype(a.dtype, jnp.inexact):
            continue
        eq = jnp.all(a == b, axis=tuple(range(2, a.ndim))) if a.ndim > 2 else a == b
        same = eq if same is None else same & eq
    return same


#: Compaction: once every row of a block (a seed's lanes when the block is laid out by seed, else the whole block)
#: has at most this fraction of its lanes still running, those lanes are gathered and go on alone (`compact_width`),
#: so that a few lanes near the cap do not hold their whole block (issue 20: one censored lane of 104 kept the toy
#: sweep's blocks running to the cap, 72.96 lane-iterations executed per one needed).
COMPACT_FRACTION = 1 / 8

#: Blocks of fewer lanes are never compacted: a second loop costs compile time and saves little.
COMPACT_MIN_LANES = 32


def compact_width(outer: int, inner: int) -> int | None:
    """Lanes per row after compaction, ⌈inner·`COMPACT_FRACTION`⌉ and at least 2, for a block of ``outer`` rows of
    ``inner`` lanes; None where the block is not compacted (under `COMPACT_MIN_LANES` lanes, or rows too short to
    shrink). Not 1: XLA:CPU compiles a product batched over one lane per row as another kernel (a matrix-vector
    product where there was a batched one), which rounds differently (measured: final losses of a rotated
    quadratic differed in their last bits), and compaction must leave every record as it was."""
    if outer * inner < COMPACT_MIN_LANES:
        return None
    narrow = max(2, math.ceil(inner * COMPACT_FRACTION))
    return narrow if narrow < inner else None


def take_lanes(tree, axes, few):
    """The leaves of ``tree`` ([row, lane, ...]) at the lanes ``few`` [row, k] of each row; ``axes`` (0 or None per
    leaf, or 0 for all, as `jax.vmap`'s in_axes) leaves a row's shared leaves (None: [row, ...]) whole."""
    def take(a, axis):
        if axis is None:
            return a
        return jnp.take_along_axis(a, few.reshape(few.shape + (1,) * (a.ndim - 2)), axis=1)

    leaves, treedef = jax.tree.flatten(tree)
    per_leaf = [axes] * len(leaves) if axes is None or isinstance(axes, int) else treedef.flatten_up_to(axes)
    return jax.tree.unflatten(treedef, [take(a, axis) for a, axis in zip(leaves, per_leaf)])


def _medians(x):
    """Median along the last axis (the mean of the two middle values for an even count), inf-aware."""
    s = jnp.sort(x, axis=-1)
    n = x.shape[-1]
    return 0.5 * (s[..., (n - 1) // 2] + s[..., n // 2])


def _prune(status, counts, t, group, by_seed):
    """Mark running lanes of rates that can no longer be chosen as PRUNED (see module docstring). ``status`` and
    ``counts`` are [seed, lane] when ``by_seed`` (lanes of a seed in [point, rate] order), else [1, lane] in
    [point, rate, seed] order."""
    rates, seeds = group
    dtype = jnp.float64 if jax.config.jax_enable_x64 else jnp.float32
    inf = jnp.asarray(jnp.inf, dtype)
    known = counts >= 0
    running = status == RUNNING
    lower = jnp.where(known, counts.astype(dtype), jnp.where(running, (t + 1).astype(dtype), inf))
    upper = jnp.where(known, counts.astype(dtype), inf)

    def grouped(a):  # [point, rate, seed]
        return a.reshape(seeds, -1, rates).transpose(1, 2, 0) if by_seed else a.reshape(-1, rates, seeds)

    lower_med, upper_med = _medians(grouped(lower)), _medians(grouped(upper))
    best = jnp.min(upper_med, axis=1, keepdims=True)
    hopeless = jnp.broadcast_to((lower_med > best)[..., None], (lower_med.shape[0], rates, seeds))
    hopeless = hopeless.transpose(2, 0, 1) if by_seed else hopeless
    return jnp.where(running & hopeless.reshape(status.shape), Status.PRUNED, status).astype(jnp.int32)


def deal(block_costs, devices: int) -> np.ndarray:
    """Which blocks each device runs, device-major (row d: device d's blocks, in run order), from each block's
    predicted cost: longest first, each to the least-loaded device that still has room (Graham's LPT rule under an
    equal block count per device, so that every device's program has one shape). Deterministic: ties go to the lower
    index.

    Measured on the 1 ≤ κ ≤ 10⁴ (25 log-spaced) gd/heavy-ball/nesterov/newton sweep, d = 100, 8 seeds, from the
    blocks' executed trips: the busiest device's trips over an even split are 1.026 on 2 devices and 1.086 on 4,
    against 1.152 and 1.494 for round-robin dealing of the cost-sorted blocks."""
    costs = np.asarray(block_costs, float)
    per_device = len(costs) // devices
    loads = [(0.0, d) for d in range(devices)]
    rows: list[list[int]] = [[] for _ in range(devices)]
    for i in sorted(range(len(costs)), key=lambda i: (-costs[i], i)):
        full = []
        load, d = heapq.heappop(loads)
        while len(rows[d]) == per_device:
            full.append((load, d))
            load, d = heapq.heappop(loads)
        rows[d].append(i)
        heapq.heappush(loads, (load + costs[i], d))
        for entry in full:
            heapq.heappush(loads, entry)
    return np.asarray([sorted(r) for r in rows], np.int32).reshape(-1)


@functools.partial(jax.jit, static_argnames=("spec", "members", "options", "relative_lr", "kind", "check_every",
                                             "primary", "group", "by_seed", "block_lanes", "unroll", "compact",
                                             "trace_length"))
def _grid(spec, members, options, relative_lr, kind, check_every, primary, group, by_seed, block_lanes, unroll,
          compact, trace_length, points, draws, seed_indices, lrs, method_indices, active, root_seed, ladder,
          max_iters, stall_window, variant) -> tuple:
    """All lanes, in blocks of ``block_lanes`` (consecutive lanes) run one after another by ``lax.map`` (see
    `_block`), on the one device that holds the inputs. The outputs are [block, lane, ...].

    One device, always: `dispatch` deals the blocks of a call among several devices as one such program per device,
    never as one program over all of them (``shard_map``). XLA:CPU rounds a multi-device program's depth arithmetic
    otherwise (measured: 8 of 128 depth-5 adam final losses differed by an ulp between 1 and 2 devices; a
    ``shard_map`` over a 1-device mesh rounded like a plain program), and starts it only when every device is
    free."""
    blocks = seed_indices.shape[0] // block_lanes

    def to_blocks(a):
        return a.reshape(blocks, block_lanes, *a.shape[1:])

    per_block = jax.tree.map(to_blocks, (points, seed_indices, lrs, method_indices, active))
    root_key = jax.random.PRNGKey(root_seed)
    solve = functools.partial(_block, spec, members, options, relative_lr, kind, check_every, primary, group, by_seed,
                              unroll, compact, trace_length, draws, root_key, ladder, max_iters, stall_window, variant)
    return jax.lax.map(lambda args: solve(*args), per_block)


def _block(spec, members, options, relative_lr, kind, check_every, primary, group, by_seed, unroll, compact,
           trace_length, draws, root_key, ladder, max_iters, stall_window, variant, points, seed_indices, lrs,
           method_indices, active):
    """One block of lanes: a vmapped set-up (`otod.core.lanes`: laid out [seed, lane] with ``by_seed``, else one
    row), then one ``while_loop`` until no lane runs; with ``compact``, two: the first until every row has at most
    `compact_width` lanes running, the second on those lanes alone (`_compacted_loop`). Returns the per-lane
    outputs and the block's iteration counts at the end of the first loop and at the end."""
    dynamics, fixed_point = _dynamics_of(spec, members, options, relative_lr, variant)
    nest, unnest, drawn = layout(by_seed, group[1] if by_seed else None, draws, seed_indices)
    points, seed_indices, lrs, method_indices, active = jax.tree.map(
        nest, (points, seed_indices, lrs, method_indices, active))
    lanes, const_axes = set_up_lanes(dynamics, by_seed, group[0] if by_seed else None, points, lrs, method_indices,
                                     drawn)
    lane_keys = jax.vmap(jax.vmap(lambda s: jax.random.fold_in(root_key, s)))(seed_indices)
    scale, gap0, limit = _scales(kind, lanes.metric0)
    rules = _rules(dynamics, fixed_point, const_axes, check_every, max_iters, stall_window, ladder.astype(gap0.dtype),
                   scale, limit, group, primary, by_seed)
    hits0 = jnp.where(gap0[..., None] <= rules.ladder, 0, -1).astype(jnp.int32)
    status0 = jnp.where(active, _classify(rules, gap0, hits0, RUNNING), Status.PADDING).astype(jnp.int32)
    zero = jnp.zeros((), jnp.int32)
    trace0 = None
    if trace_length:  # [row, lane, checkpoint]: the start's metric, then NaN until read (`_book`)
        trace0 = (zero, jnp.full(gap0.shape + (trace_length,), jnp.nan, gap0.dtype).at[..., 0].set(gap0))
    init = (zero, lanes.carry, jnp.zeros_like(status0), gap0, hits0, status0, gap0, jnp.zeros_like(status0), trace0)
    narrow = compact_width(*status0.shape) if compact else None
    running = functools.partial(_running, rules)

    def one_iteration(carry):
        t, state, *books = carry
        state, f, check, frozen = _move(rules, lanes.constants, lane_keys, state, t)
        return (t + 1, state) + _book(rules, t + 1, f, check, frozen, *books)

    if narrow is None:
        carry = jax.lax.while_loop(running, _trips(one_iteration, unroll), init)
        t_wide = carry[0]
    else:
        def wide(carry):  # until every row (a seed's lanes when by_seed) has at most ``narrow`` lanes running
            return running(carry) & (jnp.max(jnp.sum(carry[5] == RUNNING, axis=1)) > narrow)

        carry = jax.lax.while_loop(wide, _trips(one_iteration, unroll), init)
        t_wide = carry[0]
        carry = _compacted_loop(rules, lanes.constants, const_axes, lane_keys, carry, narrow, unroll)
    t, _, iterations, gap, hits, status, _, _, trace = carry
    status = jnp.where(status == RUNNING, Status.CENSORED, status).astype(jnp.int32)
    outputs = tuple(unnest(a) for a in (iterations, hits, gap, status, lanes.step_size))
    return outputs + (() if trace is None else (unnest(trace[1]),)) + (t_wide, t)


def trace_checkpoints(spec, members, options, relative_lr, check_every: int, max_iters: int) -> np.ndarray | None:
    """`checkpoints` for a program whose dynamics reads its metric only at the family's ``checks`` (the split path,
    `_rules`), whose lanes keep a trace; None for every other program (no trace: their outputs are as before)."""
    dynamics, fixed_point = _dynamics_of(spec, tuple(members), options, relative_lr)
    if not _splits(dynamics, fixed_point):
        return None
    return checkpoints(dynamics.checks, check_every, max_iters)


def _splits(dynamics, fixed_point: bool) -> bool:
    """Whether a block steps and measures separately, reading the metric only at ``checks`` (see `_rules`)."""
    return dynamics.measure is not None and dynamics.checks is not None and not fixed_point


def _dynamics_of(spec, members, options, relative_lr, variant=0):
    """The block's dynamics (the family's own, else optax's; a `Variants` program's, stepping as its spec
    ``variant``) and whether its stall rule is ``"fixed-point"``, which needs a deterministic family."""
    dynamics, fixed_point = dynamics_of(spec, members, options, relative_lr, variant), spec.family().stall
    if fixed_point == "fixed-point" and dynamics.stochastic:
        raise ValueError("the fixed-point stall rule needs a deterministic family (a sampled gradient moves it)")
    return dynamics, fixed_point == "fixed-point"


def _scales(kind: str, f0):
    """(scale, first gap, divergence limit) per lane from its first metric ``f0``: a ``"relative"`` target reads
    the metric over its start (a start at 0 is met, a negative or NaN one is not a number), an absolute one the
    metric itself, diverged past `DIVERGENCE_BOUND` times its start."""
    if kind == "relative":
        scale = jnp.where(f0 > 0, f0, 1.0)
        gap0 = jnp.where(f0 > 0, 1.0, jnp.where(f0 == 0, 0.0, jnp.nan)).astype(f0.dtype)
        limit = jnp.full_like(f0, DIVERGENCE_BOUND)
    else:
        scale = jnp.ones_like(f0)
        gap0 = f0
        limit = DIVERGENCE_BOUND * jnp.maximum(jnp.abs(f0), jnp.finfo(f0.dtype).tiny)
    return scale, gap0, limit


class _Rules(NamedTuple):
    """What every iteration of a block reads besides its carry: the vmapped dynamics (``advance``, or with
    ``split`` ``step`` and ``measure``), the stall rule, the checks' cadence and cap, the ladder, each lane's
    scale and divergence limit, and the pruning's grouping."""

    stochastic: bool
    fixed_point: bool
    split: bool
    advance: Callable
    step: Callable | None
    measure: Callable | None
    checks: Callable | None
    fold: Callable
    check_every: int
    max_iters: Any
    stall_window: Any
    ladder: Any
    scale: Any
    limit: Any
    group: tuple | None
    primary: int
    by_seed: bool


def _rules(dynamics, fixed_point, const_axes, check_every, max_iters, stall_window, ladder, scale, limit, group,
           primary, by_seed) -> _Rules:
    """The block's `_Rules`, the dynamics vmapped over [row, lane] (a row's shared constants by ``const_axes``).
    Only a family that reads its metric sparsely takes the split path: computed under a cond, the same metric can
    round differently (by an ulp, from XLA's fusion), and the other families' records stay bit for bit as
    before."""
    split = _splits(dynamics, fixed_point)
    step = measure = None
    if split:
        step = jax.vmap(jax.vmap(dynamics.step, in_axes=(const_axes, 0, 0, None)), in_axes=(0, 0, 0, None))
        measure = jax.vmap(jax.vmap(dynamics.measure, in_axes=(const_axes, 0)))
    return _Rules(stochastic=dynamics.stochastic, fixed_point=fixed_point, split=split,
                  advance=jax.vmap(jax.vmap(dynamics.advance, in_axes=(const_axes, 0, 0))), step=step,
                  measure=measure, checks=dynamics.checks,
                  fold=jax.vmap(jax.vmap(jax.random.fold_in, (0, None)), (0, None)), check_every=check_every,
                  max_iters=max_iters, stall_window=stall_window, ladder=ladder, scale=scale, limit=limit,
                  group=group, primary=primary, by_seed=by_seed)


def _classify(rules: _Rules, gap, hits, otherwise):
    """CONVERGED where the lowest rung is hit, DIVERGED where the gap is not finite or past the limit, else
    ``otherwise``."""
    finite = jnp.isfinite(gap) & (gap <= rules.limit)
    return jnp.where(hits[..., -1] >= 0, Status.CONVERGED,
                     jnp.where(finite, otherwise, Status.DIVERGED)).astype(jnp.int32)


def _running(rules: _Rules, carry):
    """Whether the block goes on: under the cap, and some lane running."""
    t, status = carry[0], carry[5]
    return (t < rules.max_iters) & jnp.any(status == RUNNING)


def _trips(one, unroll: int):
    """The while loop's body: ``unroll`` iterations of ``one``. Every count, hit and status is the same at any
    ``unroll``; the last metric read can round otherwise by an ulp, float64 included (XLA:CPU, 4 or 16 copies:
    1–2 of 104 rotated heavy-ball final gaps, 1 of 456 noise-simulator final losses; an optimization barrier
    between the copies did not change that), so the CPU keeps one a trip (`otod.core.device_costs.CPU`)."""
    def trip(carry):
        for _ in range(unroll):
            carry = one(carry)
        return carry

    return trip


def _move(rules: _Rules, constants, keys0, state, t):
    """One iteration of the lanes whose constants, keys and carry are given (all of the block's, or the gathered
    few): their new carry, metric (NaN where not read), whether it is read, and which lanes froze."""
    keys = rules.fold(keys0, t) if rules.stochastic else keys0
    before = state
    if rules.split:
        state = rules.step(constants, state, keys, t)  # t: the block's count, one for all its lanes
        t = t + 1
        check = (((t % rules.check_every) == 0) & rules.checks(t)) | (t >= rules.max_iters)
        f = jax.lax.cond(check, lambda s: rules.measure(constants, s),
                         lambda s: jnp.full(keys0.shape[:2], jnp.nan, rules.ladder.dtype), state)
    else:
        state, f = rules.advance(constants, state, keys)
        check = (((t + 1) % rules.check_every) == 0) | (t + 1 >= rules.max_iters)
    frozen = unchanged(before, state) if rules.fixed_point else None  # a lane that stops is read then, checked or not
    return state, f, check, frozen


def _book(rules: _Rules, t, f, check, frozen, iterations, gap, hits, status, anchor, progress, trace):
    """The book-keeping of iteration t (1-based) over all of the block's lanes, from their metric f: first hits of
    the ladder's rungs, status (converged, diverged, stalled by the family's rule, pruned), the last gap read, and
    with a ``trace`` (checks read so far, [row, lane, checkpoint] buffer) the gap each running lane read at this
    check, in the next slot (the block's ``check`` is one scalar on the split path, so the slot is one for all)."""
    if rules.fixed_point:
        check = check | frozen
    newly = (status == RUNNING) & (t <= rules.max_iters) & check
    gap_t = f / rules.scale
    iterations = jnp.where(newly, t, iterations)
    gap = jnp.where(newly, gap_t, gap)
    hits = jnp.where(newly[..., None] & (gap_t[..., None] <= rules.ladder) & (hits < 0), t, hits)
    status = jnp.where(newly, _classify(rules, gap_t, hits, RUNNING), status)
    if rules.fixed_point:
        status = jnp.where(newly & frozen & (status == RUNNING), Status.STALLED, status)
    else:
        improved = newly & (gap_t < anchor * (1.0 - STALL_DECREASE))
        anchor = jnp.where(improved, gap_t, anchor)
        progress = jnp.where(improved, t, progress)
        status = jnp.where((status == RUNNING) & (t - progress > rules.stall_window), Status.STALLED, status)
    group = rules.group
    if trace is not None:
        trace = traced(trace, check, newly, gap_t)
    if group is not None and group[0] > 1:
        status = jnp.where(check, _prune(status, hits[..., rules.primary], t, group, rules.by_seed), status)
    return iterations, gap, hits, status, anchor, progress, trace


def _compacted_loop(rules: _Rules, constants, const_axes, lane_keys, carry, narrow: int, unroll: int):
    """The second loop of a compacted block: the running lanes of each row first (in lane order), then stopped
    ones as filler, ``narrow`` per row, gathered and run alone until none runs; the book-keeping stays on the whole
    block, so pruning sees every lane's count."""
    status = carry[5]
    few = jnp.argsort(status != RUNNING, axis=1, stable=True)[:, :narrow].astype(jnp.int32)
    rows = jnp.arange(status.shape[0])[:, None]
    constants = take_lanes(constants, const_axes, few)
    keys0 = jnp.take_along_axis(lane_keys, few[..., None], axis=1)

    def spread(values, fill):
        return jnp.full(status.shape, fill, values.dtype).at[rows, few].set(values)

    def one_narrow(carry):
        t, state, *books = carry
        state, f, check, frozen = _move(rules, constants, keys0, state, t)
        frozen = None if frozen is None else spread(frozen, False)
        return (t + 1, state) + _book(rules, t + 1, spread(f, jnp.nan), check, frozen, *books)

    carry = (carry[0], take_lanes(carry[1], 0, few)) + tuple(carry[2:])
    return jax.lax.while_loop(functools.partial(_running, rules), _trips(one_narrow, unroll), carry)


#: Process CPU time per wall second below which CPU devices count as making no progress (1 % of one core). A
#: running XLA:CPU program keeps at least one core busy; a wedged one sits at 0 % (measured: 0.00 s of CPU time
#: over 20 s of the deadlock that `otod.core.linalg` removes).
IDLE_CPU_FRACTION = 0.01


def wait_for_devices(outputs, program: str, stall_seconds: float | None = None, poll: float = 0.02) -> None:
    """Wait until every array of ``outputs`` (a dispatched program's results) is ready, watching the devices.

    Polling, not blocking in XLA, keeps the main thread in Python, so Ctrl-C reaches it. A KeyboardInterrupt
    raised while waiting (the sweep's second Ctrl-C) becomes `Abandoned` (interrupted). On CPU devices the
    watchdog reads the process's CPU time: if it grows by less than `IDLE_CPU_FRACTION` of the wall time for
    ``stall_seconds`` (default `watchdog_seconds`; None or ``off``: no watchdog), the program is wedged and
    `Abandoned` names it. On accelerators the host idles while the device computes, so there is no watchdog.
    The polls start at 1 ms and double up to ``poll`` seconds, so a short program costs no wait."""
    first_ready([outputs], [program], stall_seconds, poll)


def first_ready(outputs: Sequence, programs: Sequence[str], stall_seconds: float | None = None,
                poll: float = 0.02) -> int:
    """The index of the first of several dispatched programs' ``outputs`` to be ready, waiting as
    `wait_for_devices` does (the watchdog names ``programs``, the running ones)."""
    leaves = [[a for a in jax.tree.leaves(o) if hasattr(a, "is_ready")] for o in outputs]
    stall = watchdog_seconds() if stall_seconds is None else stall_seconds
    on_cpu = all(d.platform == "cpu" for ls in leaves for a in ls for d in a.devices())
    since_wall, since_cpu = time.monotonic(), time.process_time()
    nap = min(poll, 1e-3)  # short programs are picked up within a millisecond; long ones polled every ``poll``
    try:
        while True:
            for i, ls in enumerate(leaves):
                if all(a.is_ready() for a in ls):
                    return i
            time.sleep(nap)
            nap = min(poll, 2 * nap)
            if not (on_cpu and stall):
                continue
            wall, cpu = time.monotonic(), time.process_time()
            if cpu - since_cpu >= IDLE_CPU_FRACTION * max(wall - since_wall, poll):
                since_wall, since_cpu = wall, cpu
            elif wall - since_wall >= stall:
                raise Abandoned(f"the {' and the '.join(programs)} made no progress for {wall - since_wall:.0f} s "
                                "(no CPU time used): stopped by the watchdog (OTOD_WATCHDOG_SECONDS sets its time)")
    except KeyboardInterrupt:
        raise Abandoned(f"interrupted while the {' and the '.join(programs)} {'was' if len(programs) == 1 else 'were'}"
                        " running", interrupted=True) from None


def block_size(n_points: int, lanes_per_point: int, block_lanes: int = BLOCK_LANES) -> tuple[int, int]:
    """(points per block, blocks): whole points per block, at most ``block_lanes`` lanes (at least one point),
    points split evenly, consecutive points together (callers order points by predicted cost, so a block's lanes
    finish together)."""
    most = max(1, block_lanes // lanes_per_point)
    blocks = -(-n_points // most)
    return -(-n_points // blocks), blocks


def choose_points_per_block(costs, lanes_per_point: int, lane_seconds: float, trip_seconds: float = TRIP_SECONDS,
                     max_lanes: int = BLOCK_LANES) -> int:
    """The number of whole points per block that minimises the predicted time of running points whose predicted
    iteration counts are ``costs`` (in run order), as consecutive blocks:

        time(p) = Σ_blocks max(costs in block) · (trip_seconds + p · lanes_per_point · lane_seconds).

    Larger blocks pay for lanes idling until their block's slowest lane; smaller ones pay the fixed cost of a loop
    trip more often. Candidates are powers of two up to ``max_lanes`` lanes (always at least one point)."""
    costs = np.asarray(costs, float)
    best, best_time = 1, math.inf
    p = 1
    while True:
        n_blocks = -(-len(costs) // p)
        padded = np.concatenate([costs, np.full(n_blocks * p - len(costs), costs[-1])])
        slowest = padded.reshape(n_blocks, p).max(axis=1)
        seconds = float(slowest.sum()) * (trip_seconds + p * lanes_per_point * lane_seconds)
        if seconds < best_time * (1 - 1e-9):
            best, best_time = p, seconds
        p *= 2
        if p > len(costs) or p * lanes_per_point > max_lanes:
            return best


class Dispatched(NamedTuple):
    """A call `dispatch` has sent to the devices (one program per device) and `collect` has not yet read back."""
    outputs: tuple  # one program's outputs per device, in device order
    order: np.ndarray
    lanes: int  # per block
    rows: int  # per block: seeds with ``by_seed``, else 1
    narrow: int  # lanes per row once compacted (0: not compacted)
    n: int  # lanes asked for (the rest is padding)
    name: str
    stall_seconds: float | None
    checkpoints: np.ndarray | None = None  # the iterations a trace's slots were read at (None: no trace)


def iterations_to_target(spec, members, points: Mapping[str, np.ndarray], seed_indices, lrs, **kw) -> Solution:
    """Run every lane (points[·][i], seed_indices[i], lrs[i], method_indices[i]) as one jit-compiled program.

    ``members`` are the `otod.core.methods.Method`s of one program (``method_indices`` picks each lane's);
    ``points`` maps each traced axis name to its per-lane values. With ``group = (rates, seeds)`` the lanes are
    whole points in [point, rate, seed] order and hopeless rates are pruned (module docstring). Lanes whose
    ``active`` entry is False only fill the compiled shape: they start stopped (status PADDING). Blocks are shared
    among ``devices`` local devices (default: all of them; on a CPU, `otod.core.devices` makes one per core),
    balanced by `deal` on ``costs``, each lane's predicted iterations (default: lanes come in order of cost, so a
    block's position stands for it). With ``compact`` (and a family that is `Family.compactable`), a block whose
    rows have at most `compact_width` lanes still running gathers them and goes on with them alone (`_block`):
    the same records, fewer lane-iterations where a few lanes outlast their block, one more loop to compile.
    Returns a `Solution` of NumPy arrays, one entry per lane. Compiles once per (device, spec, methods, options,
    target, lane count, dtype). ``stall_window`` is the window of the family's ``"window"`` stall rule (default a
    tenth of ``max_iters``, at least 500); the ``"fixed-point"`` rule has none. While the devices run,
    `wait_for_devices` watches them (``stall_seconds``: its watchdog; default `watchdog_seconds`) and lets Ctrl-C
    through; ``program`` names the program in its messages.
    """
    return collect(dispatch(spec, members, points, seed_indices, lrs, **kw))


def dispatch(spec, members, points: Mapping[str, np.ndarray], seed_indices, lrs, *,
             method_indices=None, seed: int = 0, target: Target = Target(), max_iters: int = 10_000,
             relative_lr: bool = True, options=None, group: tuple[int, int] | None = None,
             block_lanes: int | None = None, draws=None, stall_window: int | None = None,
             active=None, devices: int | Sequence | None = None, costs=None,
             stall_seconds: float | None = None, program: str | None = None,
             compact: bool = False, one_device_shape: bool = False, unroll: int | None = None,
             variants: Sequence | None = None) -> Dispatched:
    """`iterations_to_target`'s first half: compile (once per shape and device) and send the call to the devices,
    one single-device program per device with the blocks `deal` gives it, and return without waiting; `collect`
    reads the `Solution` back. ``devices``: the JAX devices to use, or how many of the local ones (default: all),
    at most one per block. With ``one_device_shape`` each device's program has every block's slot, as on one device,
    the blocks it is not dealt padding (whose lanes start stopped and cost a set-up): a program already compiled
    for one device then runs there with no compile, where an even split's shape would compile anew on every device.

    One program per device, not one over all of them: a lane's numbers then do not depend on how many devices
    there are (tested on depth, where a multi-device program rounded otherwise), and each device starts its
    program as soon as it is free. XLA runs a multi-device program only when all of its devices are free
    (measured on 2 CPU devices: two 2-device programs, each with one device 6× busier than the other, take 2.0×
    one program's time when sent together), while programs sent to two devices alone run side by side (two at
    once: 0.51× their time one after another). `otod.core.sweep.run_sweep` keeps a chunk on each device that way.
    The price: a program compiles once per device it runs on.

    ``block_lanes`` (most lanes a block) and ``unroll`` (iterations a trip; else `UNROLL`) default to the cost
    model of the first device's kind (`otod.core.device_costs`). ``variants``: the specs of the static points that
    share ``spec``'s program (`otod.core.variants`: one compile for all of them), ``spec`` among them."""
    members = tuple(members)
    dtype = np.float64 if jax.config.jax_enable_x64 else np.float32
    seed_indices = np.asarray(seed_indices, np.int32)
    n = len(seed_indices)
    method_indices = np.zeros(n, np.int32) if method_indices is None else np.asarray(method_indices, np.int32)
    if draws is None:
        draws = seed_draws(spec, seed, int(seed_indices.max()) + 1, dtype)
    per_point = 1 if group is None else group[0] * group[1]
    if n % per_point:
        raise ValueError(f"{n} lanes are not whole points of {per_point} lanes")
    local = jax.local_devices()
    if devices is None or isinstance(devices, (int, np.integer)):
        devices = local[:max(1, min(len(local) if devices is None else int(devices), n // per_point))]
    loop_costs = trip_costs(list(devices)[0].platform)
    points_per_block, blocks = block_size(n // per_point, per_point, block_lanes or loop_costs.block_lanes)
    devices = list(devices)[:max(1, blocks)]
    count = len(devices)
    per_device = blocks if one_device_shape else -(-blocks // count)
    blocks = per_device * count
    padded = blocks * points_per_block * per_point

    def pad(a):  # repeat the last point's lanes
        a = np.asarray(a)
        extra = padded - n
        if not extra:
            return a
        tail = a[n - per_point:]
        return np.concatenate([a] + [tail] * (extra // per_point))

    def pad_active(a):  # padding lanes start stopped, so they never hold a block back
        a = np.ones(n, bool) if a is None else np.asarray(a, bool)
        return np.concatenate([a, np.zeros(padded - n, bool)])

    lane_costs = np.arange(1, n + 1, dtype=float) if costs is None else np.asarray(costs, float)
    block_costs = (np.concatenate([lane_costs, np.zeros(padded - n)]) * pad_active(active)).reshape(blocks, -1).max(1)
    order = deal(block_costs, count)

    primary = target.index(target.tol)
    checked = trace_checkpoints(spec, members, options, relative_lr, target.check_every, max_iters)
    seeds = None if group is None else group[1]
    by_seed = bool(seeds is not None and jax.tree.leaves(draws)[0].shape[0] >= seeds
                   and np.array_equal(seed_indices.reshape(-1, seeds),
                                      np.broadcast_to(np.arange(seeds), (n // seeds, seeds))))
    compact = bool(compact and spec.family().compactable)
    lanes = points_per_block * per_point
    trips = block_costs[order].reshape(count, -1).sum(1).max() if costs is not None else max_iters * per_device
    unroll = unroll or UNROLL or loop_costs.unroll(trips)
    keyed, variant = program_spec(spec, variants)
    static = (keyed, members, options, relative_lr, target.kind, target.check_every, primary, group, by_seed, lanes,
              unroll, compact, 0 if checked is None else len(checked))
    per_lane = ({k: pad(np.asarray(v, dtype)) for k, v in points.items()}, pad(seed_indices),
                pad(np.asarray(lrs, dtype)), pad(method_indices), pad_active(active))
    scalars = (np.int32(seed), np.asarray(target.ladder, dtype), np.int32(max_iters),
               np.int32(stall_window_of(max_iters) if stall_window is None else stall_window), np.int32(variant))
    stall_seconds = watchdog_seconds() if stall_seconds is None else stall_seconds  # checked before dispatch
    mine = order.reshape(count, -1)

    def device_lanes(a, d):  # device d's blocks' lanes, in its run order
        return a.reshape(blocks, lanes, *a.shape[1:])[mine[d]].reshape(-1, *a.shape[1:])

    outputs = []
    for d, device in enumerate(devices):
        (axis_values, *lane_arrays), draws_d, scalars_d = jax.device_put(
            (jax.tree.map(lambda a: device_lanes(a, d), per_lane), draws, scalars), device)
        # dispatched asynchronously: the device runs while the next one's program compiles, until `collect` waits
        outputs.append(_grid(*static, axis_values, draws_d, *lane_arrays, *scalars_d))
    name = program or f"{getattr(spec, 'kind', type(spec).__name__)} program"
    rows = seeds if by_seed else 1
    where = f"device {devices[0].id}" if count == 1 else f"devices {', '.join(str(d.id) for d in devices)}"
    return Dispatched(tuple(outputs), order, lanes, rows, (compact_width(rows, lanes // rows) or 0) if compact else 0,
                      n, f"{name} on {where}", stall_seconds, checked)


def collect(sent: Dispatched) -> Solution:
    """`iterations_to_target`'s second half: wait for a `dispatch`ed program (`wait_for_devices`: the watchdog
    and Ctrl-C) and return its `Solution`, the lanes back in the order they were asked for."""
    wait_for_devices(sent.outputs, sent.name, sent.stall_seconds)
    back = np.argsort(sent.order)  # device-major blocks back to run order, on the host
    *per_block, t_wide, t_end = (np.concatenate([np.asarray(a) for a in arrays])[back]
                                 for arrays in zip(*sent.outputs))
    t_wide, t_end = t_wide.astype(np.int64), t_end.astype(np.int64)  # [block]: each block's iterations, wide and all
    executed = int(t_wide.sum()) * sent.lanes + int((t_end - t_wide).sum()) * sent.rows * sent.narrow
    lanes = [a.reshape(-1, *a.shape[2:])[:sent.n] for a in per_block]
    trace = lanes.pop() if sent.checkpoints is not None else None
    return Solution(*lanes, lane_iterations=executed, trace=trace, checkpoints=sent.checkpoints)
