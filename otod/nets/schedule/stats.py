"""Steps and examples to the final target of a batch schedule and of every constant batch, with the seed bootstrap
that re-makes every selection (`otod.nets.schedule.batch_schedule`).

From the records of the schedule's phases (one `otod.core.analysis.Cube` per phase: its one batch, every (lr, β),
every seed) and of the constant-batch sweep (one cube: every batch), the quantities are

    S_sched = Σ_k S_k,        E_sched = Σ_k B_k · S_k,          S_k = the median over seeds of phase k's steps at
                                                                      its chosen (lr, β) (the sweep's one choice),
    S_const(B), E_const(B) = B · S_const(B)                      (each batch at its own chosen (lr, β)),
    best constant           B* = argmin_B S_const(B)             (the fewest serial steps of any constant batch),
    best within the budget  B° = argmin {S_const(B) : E_const(B) ≤ E_sched}  (fewest steps on no more examples),

and the ratios S_sched / S_const(B*) and S_sched / S_const(B°). B° is coarse (the grid's batches are a factor
apart), so beside it the constant batches' frontier at the schedule's examples: S_front(E_sched), interpolated
linearly in (log E, log S) between the two points of the constant batches' Pareto frontier (no other batch takes
fewer steps on fewer examples) that bracket E_sched, and S_sched / S_front(E_sched). Beyond the frontier's ends
it is flat: past its most examples, its last point's steps; below its fewest, its first point's (no constant batch
reaches the target on so few examples; taking the cheapest one's steps favours the constant batches). So a
replicate in which the schedule uses fewer examples than any constant batch still counts, where B°, which needs a
constant batch within the schedule's examples, is NaN in it and left out of its interval. A median that is only a lower bound (a censored lane
among those it rests on) is +∞, so a sum that holds one is +∞ and that batch is never the best.

The bootstrap draws the seed columns with replacement once per replicate and uses the same draw in every phase and
in the constant sweep (seed s is one start throughout: the schedule's phase 1 and the constant sweep start from the
same weights); in every replicate each phase and each constant batch re-chooses its (lr, β) on the drawn seeds by
the core's rule (`otod.core.analysis.choose`), and B* and B° are re-chosen, so the intervals cover the selection.
What the bootstrap does not redo: phase k's records start where phase k−1's full-sample choice left each seed (a
resample that would choose another setting there would need other starts, i.e. another run), so the interval is
conditional on the earlier phases' full-sample choices.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: The quantities' names, in the order `quantities` returns them.
NAMES = ("schedule_steps", "schedule_examples", "best_batch", "best_steps", "best_examples", "ratio",
         "budget_batch", "budget_steps", "budget_examples", "budget_ratio", "frontier_steps", "frontier_ratio")


def full_medians(choice) -> np.ndarray:
    """[point] the median over every seed at each point's chosen setting (a `otod.core.analysis.Choice`, made once
    by the sweep's analysis), +∞ where only a lower bound."""
    return np.where(choice.bound, np.inf, choice.median)


def resampled(cube, cols: np.ndarray) -> np.ndarray:
    """[replicate, point] the median over each replicate's drawn seed columns ``cols`` [replicate, seed] at the
    setting that replicate re-chooses at each point, +∞ where a lower bound: the core bootstrap's resample
    (`otod.core.analysis.rechosen`), for every point."""
    from otod.core.api import rechosen

    return rechosen(cube)(cols)


def quantities(phase_steps: np.ndarray, phase_batches, constant_steps: np.ndarray, batches) -> dict:
    """The module docstring's quantities from [replicate, phase] and [replicate, batch] medians (+∞: a lower bound,
    NaN: none), each [replicate]; a batch index is returned as its batch size (NaN where none qualifies)."""
    phase_steps = np.asarray(phase_steps, float)
    constant = np.asarray(constant_steps, float)
    b_phase, b = np.asarray(phase_batches, float), np.asarray(batches, float)
    with np.errstate(invalid="ignore"):
        steps = np.where(np.isnan(phase_steps).any(-1), np.nan, phase_steps.sum(-1))
        examples = np.where(np.isnan(phase_steps).any(-1), np.nan, (phase_steps * b_phase).sum(-1))
    usable = np.isfinite(constant)
    best = _best(constant, usable, b)
    within = usable & (constant * b <= examples[:, None])
    budget = _best(constant, within, b)
    out = {"schedule_steps": steps, "schedule_examples": examples}
    for name, (batch, s) in (("best", best), ("budget", budget)):
        with np.errstate(invalid="ignore", divide="ignore"):
            out.update({f"{name}_batch": batch, f"{name}_steps": s, f"{name}_examples": s * batch,
                        f"{name}_ratio" if name == "budget" else "ratio": steps / s})
    front = np.array([frontier_steps(e, constant[i] * b, constant[i]) for i, e in enumerate(examples)])
    with np.errstate(invalid="ignore", divide="ignore"):
        out.update(frontier_steps=front, frontier_ratio=steps / front)
    return {k: out[k] for k in NAMES}


def frontier_steps(examples: float, constant_examples: np.ndarray, constant_steps: np.ndarray) -> float:
    """The constant batches' Pareto frontier of (examples, steps) interpolated linearly in logs at ``examples``,
    flat beyond its ends (module docstring); NaN where ``examples`` is not finite or no batch reached the target."""
    keep = np.isfinite(constant_steps) & (constant_steps > 0)
    e, s = constant_examples[keep], constant_steps[keep]
    if not (np.isfinite(examples) and e.size):
        return math.nan
    order = np.lexsort((s, e))
    e, s = e[order], s[order]
    on = s < np.minimum.accumulate(np.concatenate([[np.inf], s[:-1]]))  # fewer steps than every cheaper batch
    e, s = e[on], s[on]
    return float(np.exp(np.interp(np.log(examples), np.log(e), np.log(s))))  # np.interp is flat beyond the ends


def _best(steps: np.ndarray, allowed: np.ndarray, batches: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(batch, steps) of the fewest steps among the ``allowed`` [replicate, batch] (the smaller batch of equals);
    NaN where none is allowed."""
    masked = np.where(allowed, steps, np.inf)
    index = np.argmin(masked, axis=-1)
    some = allowed.any(-1)
    at = np.take_along_axis(masked, index[:, None], -1)[:, 0]
    return np.where(some, batches[index], np.nan), np.where(some, at, np.nan)


def replicate_columns(seeds: int, n_boot: int, seed: int = 0) -> np.ndarray:
    """[replicate, seed] the seed columns each replicate draws (with replacement): the core bootstrap's draws
    (`otod.core.analysis.seed_draws`)."""
    from otod.core.api import seed_draws

    return np.concatenate(seed_draws(seeds, n_boot, seed) or [np.zeros((0, seeds), np.int64)])


@dataclass(frozen=True)
class Comparison:
    """The quantities from every seed (``estimate``: name → value), per phase (``phase_steps``) and per constant
    batch (``constant_steps``), and their ``replicates`` (name → [replicate]; ``phase_replicates`` [replicate,
    phase], ``constant_replicates`` [replicate, batch]); ``no_ci``: why there is no interval (None where there is)."""

    estimate: dict
    phase_steps: np.ndarray
    constant_steps: np.ndarray
    replicates: dict
    phase_replicates: np.ndarray
    constant_replicates: np.ndarray
    no_ci: str | None

    def ci(self, name: str, level: float = 0.95) -> tuple[float, float]:
        return interval(self.replicates[name], self.estimate[name], self.no_ci, level)


def interval(values, estimate: float, no_ci: str | None, level: float = 0.95) -> tuple[float, float]:
    """The percentile interval of the replicates ``values`` (NaN replicates left out; +∞ kept: an end at +∞ says
    that more than the tail's share of resamples did not reach the target); NaN where there is no interval."""
    values = np.asarray(values, float)
    values = values[~np.isnan(values)]
    if no_ci is not None or not values.size or not np.isfinite(estimate):
        return math.nan, math.nan
    tail = 100 * (1 - level) / 2
    with np.errstate(invalid="ignore"):
        ends = np.percentile(values, [tail, 100 - tail])
    return tuple(float(np.percentile(values, q, method="higher")) if np.isnan(v) else float(v)
                 for v, q in zip(ends, (tail, 100 - tail)))


def compare(phase_choices, phase_batches, constant_choice, *, n_boot: int = 1000, seed: int = 0) -> Comparison:
    """`Comparison` of the schedule's phases (their choices, `otod.core.analysis.Choice`: each sweep's one choice,
    made by its analysis, and their batches) against the constant sweep's choice: the schedule-vs-constant
    quantities as a statistic of the core's seed resample, one draw shared by every cube."""
    from otod.core.api import no_ci_reason

    constant_cube = constant_choice.cube
    batches = constant_cube.x("batch")
    phases = np.array([[full_medians(c)[0] for c in phase_choices]])
    constant = full_medians(constant_choice)[None, :]
    estimate = {k: float(v[0]) for k, v in quantities(phases, phase_batches, constant, batches).items()}
    seeds = constant_cube.count.shape[-1]
    if any(c.cube.count.shape[-1] != seeds for c in phase_choices):
        raise ValueError("every phase and the constant sweep must hold the same seeds")
    cols = replicate_columns(seeds, n_boot, seed)
    phase_rep = np.stack([resampled(c.cube, cols)[:, 0] for c in phase_choices], axis=1)
    constant_rep = resampled(constant_cube, cols)
    replicates = quantities(phase_rep, phase_batches, constant_rep, batches)
    return Comparison(estimate, phases[0], constant[0], replicates, phase_rep, constant_rep, no_ci_reason(seeds))
