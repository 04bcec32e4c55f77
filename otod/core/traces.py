"""Each lane's metric at its checkpoints (its *trace*), and a sweep's records at another target re-derived from it.

A family whose dynamics reads the metric only at its ``checks`` (`otod.core.family.Family.checks`: a net reads its
full training loss at every iteration up to 32, then 32 times per doubling of t) keeps, per lane, the metric read
at every checkpoint up to where the lane stopped (`otod.core.engine.Solution.trace`, a fixed-size buffer in the
block's carry). Its records hold it as ``loss_trace`` (an absolute target: the loss) or ``gap_trace`` (a relative
one: f/f₀ − ...), and the results file's metadata the checkpoints' iterations (``trace_iterations``, 0 first).

Steps to another target τ (`steps_to`) are then the first checkpoint whose value is ≤ τ, compared in the run's
precision as the engine compares (float32(loss) ≤ float32(τ)); censored where none is. Only for τ at or above
the run's own lowest rung: a lane stopped there, so its trace ends there.

The engine writes traces (`checkpoints`, `traced`, `trace_lists`); the analysis re-reads them at another
target (`otod.core.retarget`): this module imports no analysis, so the engine returns data only.
"""

from __future__ import annotations

import functools
import json
import math

import numpy as np

from otod.core.lazy import lazy

jax = lazy("jax")
jnp = lazy("jax.numpy")

#: The results metadata key of the checkpoints' iterations (every trace's slot k was read at iteration [k]).
TRACE_ITERATIONS = "trace_iterations"


def checkpoints(checks, check_every: int, max_iters: int) -> np.ndarray:
    """The iterations at which a split dynamics reads its metric (`otod.core.engine._move`): 0 (the start), then
    every t ≤ ``max_iters`` with t a multiple of ``check_every`` where ``checks(t)`` holds, and the cap itself. A
    lane's trace holds its metric at these iterations, in order, up to where it stopped."""
    return _checkpoints(checks, int(check_every), int(max_iters)).copy()


@functools.lru_cache(maxsize=32)
def _checkpoints(checks, check_every: int, max_iters: int) -> np.ndarray:
    t = np.arange(1, max_iters + 1, dtype=np.int64)
    read = np.asarray(jax.jit(jax.vmap(checks))(jnp.asarray(t, jnp.int32)), bool)
    read = (read & (t % check_every == 0)) | (t == max_iters)
    return np.concatenate([[0], t[read]])


def traced(trace, check, newly, gap_t):
    """The trace after a check: slot n + 1 (n: checks read so far) gets each running lane's gap, NaN for a lane
    that stopped; nothing changes where ``check`` is false."""
    n, values = trace
    n = n + check.astype(n.dtype)
    slot = jax.lax.dynamic_index_in_dim(values, n, axis=-1, keepdims=False)
    column = jnp.where(check & newly, gap_t.astype(values.dtype), slot)
    return n, jax.lax.dynamic_update_index_in_dim(values, column, n, axis=-1)


def trace_field(kind: str) -> str:
    """The record field of a lane's trace: ``gap_trace`` for a relative target, ``loss_trace`` for an absolute
    one (as ``final_gap`` and ``final_loss``)."""
    return "gap_trace" if kind == "relative" else "loss_trace"


def trace_lists(trace, checkpoints, last) -> list[list]:
    """Each lane's trace (rows of ``trace``) up to its last read, at iteration ``last`` (one of ``checkpoints``),
    as Python floats written in the shortest decimal of the trace's own precision (a float32 loss in 9 digits, not
    17: the same number back in that precision) and None where not finite (JSON has no NaN)."""
    trace = np.asarray(trace)
    lengths = np.searchsorted(np.asarray(checkpoints), np.asarray(last), side="right")
    texts, finite = trace.astype(str), np.isfinite(trace)
    return [[float(v) if ok else None for v, ok in zip(texts[i, :k].tolist(), finite[i, :k].tolist())]
            for i, k in enumerate(lengths.tolist())]


def trace_matrix(column, dtype, slots: int) -> tuple[np.ndarray, np.ndarray]:
    """(values [lane, slot] in ``dtype``, NaN past a lane's end or where None; each lane's length) from a trace
    column: lists, or their JSON text (a Parquet or npz file's json column)."""
    rows = [json.loads(v) if isinstance(v, str) else v for v in column]
    lengths = np.asarray([len(r) for r in rows], np.int64)
    values = np.full((len(rows), slots), np.nan)
    for i, r in enumerate(rows):
        values[i, :len(r)] = [math.nan if v is None else v for v in r]
    return values.astype(dtype), lengths


def steps_to(trace, checkpoints, tol: float, dtype=np.float32) -> int | None:
    """The iteration of the first checkpoint whose value is ≤ ``tol`` (in ``dtype``, the run's precision, as the
    engine compares its metric with the target), or None where no value is (censored at ``tol``)."""
    values = np.asarray([math.nan if v is None else v for v in trace], float).astype(dtype)
    reached = np.flatnonzero(values <= np.asarray(tol, dtype))
    return int(np.asarray(checkpoints)[reached[0]]) if reached.size else None
