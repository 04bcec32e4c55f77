"""A schedule of batch size and learning rate on the noisy quadratic model, evaluated exactly.

A schedule is a list of phases, each a batch B_k and a learning rate η_k held for n_k steps (the last phase runs
until the target or the cap). On the NQM (Zhang, Li, Nado, Martens, Sachdeva, Dahl, Shallue & Grosse 2019, "Which
algorithmic choices matter at which batch sizes?"; `otod.noise.theory`) every eigendirection i moves on its own:
SGD preconditioned by H^{−p} (p = 0: plain SGD) takes θᵢ ← θᵢ − η hᵢ^{−p}(hᵢ θᵢ + ξᵢ), ξᵢ ~ N(0, cᵢ/B), so the
second moment sᵢ = E θᵢ² follows

    s_{t+1} = (1 − xₜ)² s_t + qₜ,   xₜ = ηₜ hᵢ^{1−p},   qₜ = ηₜ² hᵢ^{−2p} cᵢ / Bₜ,

and within a phase (x, q constant, a = (1 − x)²) it has the closed form

    s_{t0+n} = aⁿ s_{t0} + q (1 − aⁿ)/(1 − a)     (q·n at a = 1),

the same as at constant batch (`theory.sgd_second_moment`), started from the state the previous phase left. The
expected loss after t steps is L_t = ½ Σᵢ hᵢ sᵢ,t, exactly (float64, no sampling); the examples after t steps are
Σ_{s<t} B_s.

**Steps to target** is the first t with L_t ≤ target. Within a phase each sᵢ,t is monotone in t (it moves
geometrically towards its floor q/(1 − a), or away from it where a > 1), so over steps [t₁, t₂] the loss is at least
½ Σᵢ hᵢ min(sᵢ,t₁, sᵢ,t₂); a branch and bound over the phase's steps prunes every interval whose bound is above
the target and so finds the first crossing exactly, also where the loss rises for a while (a larger lr after a
smaller one lifts the floor of the fast directions) and falls again. Where every direction falls (the usual
case) the loss is monotone and the search gallops (1, 2, 4, ... steps) to the first power of two at or under the
target, then bisects.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from otod.core.api import OtodError
from otod.noise import theory


@dataclass(frozen=True)
class Phase:
    """One phase: batch B ≥ 1 (real-valued: the NQM's noise is c/B), learning rate η > 0, and its length in steps
    (None: until the target or the cap; only the last phase)."""

    batch: float
    lr: float
    steps: int | None = None


@dataclass(frozen=True)
class BatchSchedule:
    """Piecewise-constant batch and learning rate: ``phases`` in order; every phase but the last has a length,
    and the last runs on to the target or the cap."""

    phases: tuple[Phase, ...]

    def __post_init__(self):
        if not self.phases:
            raise OtodError("a schedule needs at least one phase, e.g. 64:1.0:2000,1024:1.0")
        for k, p in enumerate(self.phases):
            if not (math.isfinite(p.batch) and p.batch >= 1):
                raise OtodError(f"phase {k + 1}: batch {p.batch:g} must be a number ≥ 1, e.g. 64:1.0:2000")
            if not (math.isfinite(p.lr) and p.lr > 0):
                raise OtodError(f"phase {k + 1}: learning rate {p.lr:g} must be a number > 0, e.g. 64:1.0:2000")
            if p.steps is None and k < len(self.phases) - 1:
                raise OtodError(f"phase {k + 1}: every phase but the last needs its steps, e.g. 64:1.0:2000")
            if p.steps is not None and k == len(self.phases) - 1:
                raise OtodError(f"phase {k + 1}: the last phase runs to the target or the cap; give it no steps, "
                                "e.g. 64:1.0:2000,1024:1.0")
            if p.steps is not None and p.steps < 0:
                raise OtodError(f"phase {k + 1}: steps {p.steps} must be ≥ 0, e.g. 64:1.0:2000")

    def describe(self) -> str:
        """``B×n @ η, …`` in the order run; the last phase ``B @ η`` runs on (``…``)."""
        parts = []
        for p in self.phases:
            length = "…" if p.steps is None else f"{p.steps}"
            parts.append(f"B {p.batch:.4g} × {length} @ lr {p.lr:.6g}")
        return ", ".join(parts)


def constant(batch: float, lr: float) -> BatchSchedule:
    """One phase: batch and lr held to the target."""
    return BatchSchedule((Phase(float(batch), float(lr)),))


def doubling_warmup(first_batch: float, final_batch: float, phase_steps: int, lr: float) -> BatchSchedule:
    """A batch warmup that doubles the batch every ``phase_steps`` steps from ``first_batch`` until it reaches
    ``final_batch`` (the last doubling capped there), at one lr (Smith, Kindermans, Ying & Le 2017, "Don't decay the
    learning rate, increase the batch size"; Merrill et al. 2025's batch warmup)."""
    if not (1 <= first_batch <= final_batch):
        raise OtodError(f"a doubling warmup needs 1 ≤ first batch ≤ final batch, got {first_batch:g} and "
                        f"{final_batch:g}, e.g. 16 and 1024")
    batches = [float(first_batch)]
    while batches[-1] < final_batch:
        batches.append(min(2.0 * batches[-1], float(final_batch)))
    phases = [Phase(b, float(lr), int(phase_steps)) for b in batches[:-1]] + [Phase(batches[-1], float(lr))]
    return BatchSchedule(tuple(phases))


class ScheduleRun(NamedTuple):
    """Steps to target (−1: not reached within the cap), the examples Σ B_t they took (to the cap where not
    reached), the expected loss where the run ended, and whether it diverged."""

    steps: int
    examples: float
    loss: float
    diverged: bool


class _PhaseState:
    """One phase from the state s: s_t = s∞ + aᵗ (s − s∞) with s∞ = q/(1 − a), written as aᵗ s + q·g(t)
    (g = (1 − aᵗ)/(1 − a), t at a = 1), and its loss ½ Σ h s_t."""

    def __init__(self, q: theory.Quadratic, phase: Phase, s: np.ndarray, power: float):
        x = theory.contraction(q, phase.lr, power)
        self.noise = theory.noise_variance(q, phase.lr, phase.batch, power)
        self.s = s
        self.weight = 0.5 * q.h
        with np.errstate(divide="ignore"):
            self.log_a = np.log((1.0 - x) ** 2)
        self.one_minus_a = 1.0 - (1.0 - x) ** 2
        #: every direction falls towards its floor (a < 1 and s above it): the loss is monotone in t
        floor_gap = self.s * self.one_minus_a - self.noise  # (s − s∞)(1 − a): ≥ 0 where s falls
        self.falling = bool(np.all((self.one_minus_a > 0) & (floor_gap >= 0)))
        if self.falling:  # L_t = ½ Σ h s∞ + Σ ½ h (s − s∞) aᵗ: one exp and one dot product per t
            floor = self.noise / self.one_minus_a
            self.floor_loss = float(self.weight @ floor)
            self.gap_weight = self.weight * (self.s - floor)

    def moments(self, t: int) -> np.ndarray:
        if t == 0:
            return self.s
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            at = np.exp(t * self.log_a)
            g = np.where(np.abs(self.one_minus_a) > 1e-300, -np.expm1(t * self.log_a) / self.one_minus_a, float(t))
            return at * self.s + self.noise * g

    def loss(self, t: int) -> float:
        if t == 0:
            return float(self.s @ self.weight)
        if self.falling:  # a < 1 in every direction: no overflow
            return self.floor_loss + float(self.gap_weight @ np.exp(t * self.log_a))
        with np.errstate(over="ignore", invalid="ignore"):
            return float(self.moments(t) @ self.weight)

    def bound(self, first: int, last: int) -> float:
        """A lower bound on the loss over steps first..last (each sᵢ,t is monotone in t)."""
        with np.errstate(over="ignore", invalid="ignore"):
            return float(np.minimum(self.moments(first), self.moments(last)) @ self.weight)

    def first_crossing(self, length: int, target: float) -> int | None:
        """The first t in 1..length with loss ≤ target, or None (module docstring: bisection or branch and
        bound)."""
        if length < 1:
            return None
        if self.falling:  # galloping: 1, 2, 4, ... steps until at or under the target, then bisection
            lo, hi = 0, 1  # loss(lo) > target (the phase's start was checked)
            while hi < length and not self.loss(hi) <= target:
                lo, hi = hi, min(2 * hi, length)
            if not self.loss(hi) <= target:
                return None
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if self.loss(mid) <= target:
                    hi = mid
                else:
                    lo = mid
            return hi
        return self._branch(0, length, target)

    def _branch(self, lo: int, hi: int, target: float) -> int | None:
        if hi - lo == 1:
            return hi if self.loss(hi) <= target else None
        if not self.bound(lo + 1, hi) <= target:
            return None
        mid = (lo + hi) // 2
        found = self._branch(lo, mid, target)
        return found if found is not None else self._branch(mid, hi, target)


def run_to_target(q: theory.Quadratic, schedule: BatchSchedule, target: float, max_steps: int = 10 ** 8,
                  power: float = 0.0) -> ScheduleRun:
    """Steps and examples to the first t with exact expected loss ≤ target under ``schedule`` (module
    docstring), phase by phase in closed form; −1 steps where the cap ``max_steps`` comes first."""
    s = np.array(q.s0, float)
    start, examples = 0, 0.0
    loss = float(0.5 * q.h @ s)
    if loss <= target:
        return ScheduleRun(0, 0.0, loss, False)
    for k, phase in enumerate(schedule.phases):
        length = max_steps - start if phase.steps is None else min(int(phase.steps), max_steps - start)
        state = _PhaseState(q, phase, s, power)
        hit = state.first_crossing(length, target)
        if hit is not None:
            return ScheduleRun(start + hit, examples + phase.batch * hit, state.loss(hit), False)
        s = state.moments(length)
        start, examples = start + length, examples + phase.batch * length
        loss = float(s @ state.weight) if np.all(np.isfinite(s)) else math.inf
        if start >= max_steps:
            break
    initial = float(0.5 * q.h @ q.s0)
    diverged = not (math.isfinite(loss) and loss < 1e10 * initial)
    return ScheduleRun(-1, examples, loss, diverged)


def losses(q: theory.Quadratic, schedule: BatchSchedule, steps, power: float = 0.0) -> np.ndarray:
    """The exact expected loss after each of ``steps`` (whole numbers ≥ 0, any order), under ``schedule``: the
    state at each phase's start in closed form, then the closed form within the phase."""
    steps = np.asarray(steps, np.int64)
    out = np.empty(steps.shape, float)
    s, start = np.array(q.s0, float), 0
    for k, phase in enumerate(schedule.phases):
        end = None if phase.steps is None else start + int(phase.steps)
        state = _PhaseState(q, phase, s, power)
        inside = (steps >= start) & ((steps < end) if end is not None else True)
        if k == 0:
            inside |= steps < start
        for i in np.flatnonzero(inside):
            out.flat[i] = state.loss(int(steps.flat[i]) - start)
        if end is None:
            break
        s, start = state.moments(end - start), end
    return out


def examples_after(schedule: BatchSchedule, steps: int) -> float:
    """Σ_{t<steps} B_t: the examples the first ``steps`` steps of ``schedule`` take."""
    total, start = 0.0, 0
    for k, phase in enumerate(schedule.phases):
        length = steps - start if phase.steps is None else phase.steps
        take = max(0, min(length, steps - start))
        total += phase.batch * take
        start += take
        if start >= steps:
            break
    return total

