"""A sweep's records at another target, re-derived from its lanes' traces (`otod.core.traces`): part of the
analysis, not the engine.

`retarget` re-derives every record a run at τ would have written, by replaying the engine's book-keeping
(`otod.core.engine._book`) on the traces: first hit of τ, divergence, the ``"window"`` stall rule, and the
``--lr tuned`` pruning (a rate whose median count over seeds can no longer beat the best rate's is stopped),
which depends on the target and so is decided again at τ. A lane's numbers do not depend on its target, so the
replay gives a run at τ's records exactly, except where the run's own pruning stopped a lane that a run at τ
would have run on: its outcome at τ is not in its trace, it is counted as pruned, and ``attrs["undetermined"]``
counts such lanes (the report says so).
"""

from __future__ import annotations

import math

import numpy as np

from otod.core.analysis import rates_of
from otod.core.config import read_config
from otod.core.errors import OtodError
from otod.core.stopping import DIVERGENCE_BOUND, STALL_DECREASE, Target, stall_window_of
from otod.core.traces import TRACE_ITERATIONS, trace_field, trace_matrix


def has_traces(results) -> bool:
    """Whether every record of a sweep holds its trace (and the file the checkpoints' iterations)."""
    meta = results.meta
    field = trace_field(read_config(meta).target.kind)
    column = results.table.column(field)
    return TRACE_ITERATIONS in meta and column is not None and column.present is None


def below_target(tol: float, target: Target) -> OtodError:
    """The refusal of a target below the run's own lowest rung: the lanes stopped there."""
    option = "--tol" if target.kind == "relative" else "--target"
    own = min(target.ladder)
    return OtodError(f"{option} {tol:g}: below this run's target {own:g}; its lanes stopped there, so their traces "
                     f"end there: rerun the sweep with {option} {tol:g}")


def refuse_reached_at_start(values: np.ndarray, tol: float, target: Target) -> None:
    """Refuse a training-loss target at or above a lane's start loss (its trace's first value, iteration 0): that
    lane reaches it before any step, so its count is 0 (a fit on zeros: ``otod fit --target`` above every start
    gave nothing but 0)."""
    if target.kind != "absolute" or not len(values):
        return
    starts = values[:, 0].astype(float)
    lowest = float(np.nanmin(starts)) if np.isfinite(starts).any() else math.nan
    if lowest <= tol:
        raise OtodError(f"--target {tol:g}: at or above the start loss {lowest:.4g} of a lane of this run (the "
                        f"lowest of its {len(starts)} lanes' iteration-0 losses), which would count 0 iterations; "
                        f"give a target below {lowest:.4g}")


def retarget(frame, meta: dict, tol: float):
    """The records (``frame``, with their traces) as a run at target ``tol`` would have written them: iterations,
    status, the final metric and ``hits[0]`` (module docstring). ``attrs``: the target, the run's own and the
    number of lanes whose outcome the traces do not determine."""
    config = read_config(meta)
    target = config.target
    if tol < min(target.ladder) * (1 - 1e-12):
        raise below_target(tol, target)
    dtype = np.float64 if meta.get("precision") == "float64" else np.float32
    iterations = np.asarray(meta[TRACE_ITERATIONS], np.int64)
    values, lengths = trace_matrix(frame[trace_field(target.kind)], dtype, len(iterations))
    refuse_reached_at_start(values, tol, target)
    points = ["method"] + [n for n, _ in config.axes if n in frame]
    last = np.zeros(len(frame), np.int64)
    status = np.empty(len(frame), object)
    hit = np.full(len(frame), -1, np.int64)
    undetermined = 0
    keys = frame[points[0]].astype(str)
    for name in points[1:]:  # the fields' texts joined by "|", column by column (a row-wise join took 0.6 s a file)
        keys = keys + "|" + frame[name].astype(str)
    for _, rows in frame.groupby(keys.to_numpy(), sort=False).indices.items():
        rates, seeds = rates_of(frame.iloc[rows]), frame["seed"].to_numpy()[rows]
        order = rows[np.lexsort((seeds, rates))]
        n_rates, n_seeds = len(np.unique(rates)), len(np.unique(seeds))
        if n_rates * n_seeds != len(rows):
            raise OtodError(f"cannot re-read the records at {tol:g}: a point holds {len(rows)} records, not "
                            f"{n_rates} rates × {n_seeds} seeds")
        replay = Replay(values[order].reshape(n_rates, n_seeds, -1), lengths[order].reshape(n_rates, n_seeds),
                        frame["status"].to_numpy(object)[order].reshape(n_rates, n_seeds), iterations,
                        np.asarray(tol, dtype), target.kind, stall_window_of(config.resolved.max_iters))
        replay.run()
        last[order], status[order], hit[order] = replay.last.ravel(), replay.status.ravel(), replay.hit.ravel()
        undetermined += int(replay.undetermined.sum())
    final = values[np.arange(len(frame)), last].astype(float)
    gap_name = "final_gap" if target.kind == "relative" else "final_loss"
    out = frame.drop(columns=[c for c in frame if c == "hits" or c.startswith("hits[")])
    out = out.assign(iterations=iterations[last], status=status,
                     **{gap_name: np.where(np.isfinite(final), final, np.nan),
                        "hits[0]": np.where(hit >= 0, hit, np.nan)})
    out.attrs.update(frame.attrs)
    out.attrs["retarget"] = {"target": float(tol), "run_target": float(target.tol),
                             "undetermined": undetermined}
    return out


class Replay:
    """One point's lanes [rate, seed] replayed at a target (see `retarget`): each checkpoint in turn, the
    engine's order of book-keeping (`otod.core.engine._book`): the stall rule between checks, the read, the
    first hit and divergence, the stall rule's progress, then the pruning of hopeless rates."""

    def __init__(self, values, lengths, run_status, iterations, tol, kind: str, window: int):
        self.values, self.lengths, self.run_status, self.iterations = values, lengths, run_status, iterations
        self.tol, self.window = tol, window
        shape = lengths.shape
        dtype = values.dtype
        f0 = values[..., 0]
        self.limit = (np.full(shape, DIVERGENCE_BOUND, dtype) if kind == "relative" else
                      (dtype.type(DIVERGENCE_BOUND) * np.maximum(np.abs(f0), np.finfo(dtype).tiny)).astype(dtype))
        self.keep = dtype.type(1.0 - STALL_DECREASE)
        self.running = np.ones(shape, bool)
        self.status = np.full(shape, "running", object)
        self.last = np.zeros(shape, np.int64)
        self.hit = np.full(shape, -1, np.int64)
        self.anchor, self.progress = f0.copy(), np.zeros(shape, np.int64)
        self.undetermined = np.zeros(shape, bool)
        self.stop(f0 <= tol, "converged", 0)
        self.hit[f0 <= tol] = 0
        self.stop(self.running & ~(np.isfinite(f0) & (f0 <= self.limit)), "diverged", 0)

    def stop(self, which, status: str, slot: int | None) -> None:
        """Stop the running lanes ``which`` with ``status``, their last read at ``slot`` (None: as it was)."""
        which = which & self.running
        self.status[which] = status
        if slot is not None:
            self.last[which] = slot
        self.running &= ~which

    def run(self) -> None:
        t_all = self.iterations
        for j in range(1, len(t_all)):
            if not self.running.any():
                break
            t = t_all[j]
            self.stop(t - 1 - self.progress > self.window, "stalled", None)  # stalled between checks
            unknown = self.running & (j >= self.lengths)  # the run stopped it sooner: its own pruning
            self.undetermined |= unknown
            self.stop(unknown, "pruned", None)
            read = self.running.copy()
            v = self.values[..., j]
            reached = read & (v <= self.tol)
            self.hit[reached] = t
            self.last[read] = j
            self.stop(reached, "converged", None)
            self.stop(read & ~(np.isfinite(v) & (v <= self.limit)), "diverged", None)
            improved = read & self.running & (v < self.anchor * self.keep)
            self.anchor = np.where(improved, v, self.anchor)
            self.progress = np.where(improved, t, self.progress)
            self.stop(t - self.progress > self.window, "stalled", None)
            if self.values.shape[0] > 1:
                self.stop(self.hopeless(t), "pruned", None)
        self.stop(self.running, "censored", None)

    def hopeless(self, t) -> np.ndarray:
        """The running lanes of rates whose median count over seeds can no longer beat the best rate's
        (`otod.core.engine._prune`: unfinished lanes count as at least t + 1, stopped unconverged ones as ∞)."""
        known = self.hit >= 0
        lower = np.where(known, self.hit, np.where(self.running, t + 1, np.inf))
        upper = np.where(known, self.hit, np.inf)
        best = np.min(_median(upper))
        return self.running & (_median(lower) > best)[:, None]


def _median(x: np.ndarray) -> np.ndarray:
    """The median over the last axis as the engine takes it: the mean of the two middle values (inf-aware)."""
    s = np.sort(x, axis=-1)
    n = x.shape[-1]
    return 0.5 * (s[..., (n - 1) // 2] + s[..., n // 2])
