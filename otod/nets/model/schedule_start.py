"""Where a phase of a batch schedule starts: every seed's parameters where the schedule's earlier phases left them.

A batch schedule (`otod.nets.schedule.batch_schedule`) runs phase k as an ordinary net sweep at its batch B_k, through the core
engine, from a start that is not the seed's initial weights but the end of phases 1..k−1: a start, like a
checkpoint (`otod.nets.model.branch`), not a new kind of sweep. The spec's ``schedule_start`` field holds those earlier
phases as text (`encode`), so the start is a pure function of the spec and the seed, enters the config's digest
(the results file of phase k names its history) and reads back from a results file:

    "seed=R;B₁:method:η₁:β₁:n₁(0),n₁(1),…;B₂:…"

R is the sweep's root seed, and each earlier phase j gives its batch B_j, its method, the step size η_j and
momentum β_j chosen there by the core's rule, and the steps n_j(s) seed s took to that phase's milestone (the
engine's record at the chosen setting). Seed s's start of phase k is then: its initial weights, phase 1's lane
replayed for n₁(s) steps, phase 2's replayed from there for n₂(s) steps, … (`replay_phase`): the lane's own set-up
and step (`otod.nets.model.family.net_dynamics`, the engine's code, one lane, float32 as the sweep runs), with a fresh
optimizer state (momentum at zero) in each phase, as the sweep of that phase starts its lanes.

Minibatch order: phase 1 reads the seed's own shuffle seed (so a one-phase schedule is the constant-batch sweep,
record for record); phase j ≥ 2 reads `phase_shuffle` (a seed drawn from the seed's shuffle seed and j), so a new
phase does not replay the first epoch's order of the phase before it.

Which seed a draw is: the engine draws seed s from ``default_rng([R, s])``; `seed_index` recognises the generator by
its state before anything is drawn. Replayed starts are cached per (net, history, seed).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from otod.core.api import OtodError, lazy

jax = lazy("jax")
jnp = lazy("jax.numpy")

#: Replayed starts kept: (net, history up to phase j, seed) → parameters after phase j.
CACHE_SIZE = 256
_replayed: OrderedDict = OrderedDict()


@dataclass(frozen=True)
class PhaseRun:
    """One finished phase as the next one starts from it: ``batch`` B_j, ``method``, the chosen absolute step
    ``lr`` η_j and momentum ``beta`` β_j, and ``steps`` n_j(s) per seed s (the engine's count at the chosen
    setting: to the milestone, or where the lane stopped short of it)."""

    batch: int
    method: str
    lr: float
    beta: float
    steps: tuple[int, ...]


def encode(seed: int, runs) -> str:
    """The ``schedule_start`` text of the phases ``runs`` (module docstring), floats by ``repr`` (exact)."""
    parts = [f"seed={int(seed)}"]
    for r in runs:
        parts.append(f"{int(r.batch)}:{r.method}:{float(r.lr)!r}:{float(r.beta)!r}:"
                     + ",".join(str(int(n)) for n in r.steps))
    return ";".join(parts)


def decode(text: str) -> tuple[int, tuple[PhaseRun, ...]]:
    """(root seed, phases) of a ``schedule_start`` text; a malformed one is refused in one line."""
    try:
        head, *rest = str(text).split(";")
        if not head.startswith("seed=") or not rest:
            raise ValueError
        runs = []
        for part in rest:
            batch, method, lr, beta, steps = part.split(":")
            runs.append(PhaseRun(int(batch), method, float(lr), float(beta),
                                 tuple(int(n) for n in steps.split(","))))
        seed = int(head[len("seed="):])
    except ValueError:
        raise OtodError(f"schedule_start {text!r}: not a batch schedule's history; it reads "
                        "'seed=R;B:method:lr:beta:n0,n1,…;…'") from None
    if any(r.batch < 1 or not (math.isfinite(r.lr) and r.lr > 0) or min(r.steps) < 0
           or len(r.steps) != len(runs[0].steps) for r in runs):
        raise OtodError(f"schedule_start {text!r}: every phase needs a batch ≥ 1, a step size > 0 and a step count "
                        "≥ 0 for each of the same seeds")
    return seed, tuple(runs)


def phase_shuffle(shuffle, phase: int) -> np.ndarray:
    """The minibatch-order seed of phase ``phase`` (0-based): the seed's own for phase 0, else one drawn from
    ``default_rng([shuffle, phase])`` in the range the seed's own is drawn from (`otod.nets.model.family.seed_starts`)."""
    if phase == 0:
        return np.asarray(shuffle)
    drawn = np.random.default_rng([int(np.asarray(shuffle)), int(phase)]).integers(0, 2 ** 24)
    return np.array(float(drawn), np.asarray(shuffle).dtype)


def seed_index(rng: np.random.Generator, seed: int, seeds: int) -> int:
    """Which seed s < ``seeds`` of root ``seed`` the generator ``rng`` (not yet drawn from) is:
    ``default_rng([seed, s])``; refused where it is none of them."""
    state = rng.bit_generator.state
    for s in range(seeds):
        if np.random.default_rng([seed, s]).bit_generator.state == state:
            return s
    raise OtodError(f"a batch schedule's phase was recorded for seeds 0..{seeds - 1} of root seed {seed}; this start "
                    f"is none of them (run the schedule with the same --seed and --seeds)")


def base_spec(spec):
    """The net without its history: what phase 1 trains."""
    return dataclasses.replace(spec, schedule_start=None)


@functools.lru_cache(maxsize=16)
def _loop(spec, method: str, options):
    """(constants, carry, n) → carry after n steps of one lane of the net sweep at ``spec`` (its batch), compiled
    once per (net, batch, method, options), n traced: the engine's lane step (`otod.nets.model.family.net_dynamics`)."""
    from otod.core.api import METHODS
    from otod.nets.model.family import net_family

    family = net_family(spec)
    dynamics = family.dynamics(family, (METHODS[method],), options, False)
    key = jax.random.PRNGKey(0)  # a net's step draws no random numbers of the engine's key

    @jax.jit
    def run(constants, carry, n):
        return jax.lax.fori_loop(0, n, lambda _, c: dynamics.step(constants, c, key, c[3]), carry)

    return dynamics, run


def replay_phase(spec, drawn: dict, run: PhaseRun, steps: int, options):
    """Seed's parameters after ``steps`` steps of phase ``run`` from the draws ``drawn`` (one seed's, the start the
    spec reads already replaced): the lane set up as the engine sets it up (absolute step η, β, fresh optimizer
    state) and stepped in float32, at the engine's matmul precision (`otod.core.precision.exact_float32`) wherever
    it is called from: the sweep's config check reads seed 0's start outside the engine, and its replay, cached,
    is the start the engine runs (and one precision compiles the loop once, not once per caller). NumPy float64
    leaves holding float32 values."""
    from otod.core.api import exact_float32

    phase = dataclasses.replace(base_spec(spec), batch=int(run.batch))
    dynamics, loop = _loop(phase, run.method, options)
    with jax.enable_x64(False), exact_float32():
        cast = jax.tree.map(lambda a: jnp.asarray(np.asarray(a, np.float32)), drawn)
        lane = dynamics.set_up({"beta": jnp.asarray(run.beta, jnp.float32)}, cast, jnp.asarray(run.lr, jnp.float32),
                               jnp.asarray(0, jnp.int32))
        carry = loop(lane.constants, lane.carry, jnp.asarray(int(steps), jnp.int32))
        return jax.tree.map(lambda a: np.asarray(a, np.float64), carry[0])


def with_start(spec, drawn: dict, params, shuffle) -> dict:
    """One seed's draws with the start the spec reads (its init and architecture) and the shuffle seed replaced."""
    starts = {init: dict(arches) for init, arches in drawn["params"].items()}
    starts[spec.init][spec.architecture] = params
    return {**drawn, "params": starts, "shuffle": shuffle}


def schedule_draws(spec, drawn: dict, s: int, options=None) -> dict:
    """Seed s's draws for the phase ``spec.schedule_start`` leads to: its start replayed through every earlier
    phase (cached), its shuffle seed `phase_shuffle` of that phase."""
    from otod.core.api import NoiseOptions

    options = NoiseOptions() if options is None else options
    seed, runs = decode(spec.schedule_start)
    base = base_spec(spec)
    params = drawn["params"][spec.init][spec.architecture]
    for j, run in enumerate(runs):
        key = (base, encode(seed, runs[:j + 1]), s, options)
        if key not in _replayed:
            phase_draws = with_start(spec, drawn, params, phase_shuffle(drawn["shuffle"], j))
            _replayed[key] = replay_phase(spec, phase_draws, run, run.steps[s], options)
        _replayed.move_to_end(key)
        params = _replayed[key]
    while len(_replayed) > CACHE_SIZE:
        _replayed.popitem(last=False)
    return with_start(spec, drawn, params, phase_shuffle(drawn["shuffle"], len(runs)))


def draws_for(spec, family_draws):
    """A family's ``draws`` (rng → one seed's draws) made to start where the schedule's earlier phases left the
    seed (`schedule_draws`)."""
    seed, runs = decode(spec.schedule_start)

    def draws(rng):
        s = seed_index(rng, seed, len(runs[0].steps))
        return schedule_draws(spec, family_draws(rng), s)

    return draws


def schedule_family(spec, family):
    """The net family of ``spec`` with every seed's start replaced by where its earlier phases left it."""
    return family._replace(draws=draws_for(spec, family.draws))


def start_params(spec, rng: np.random.Generator):
    """A scheduled spec's start for the seed whose generator is ``rng``."""
    from otod.nets.model.family import seed_starts

    drawn = draws_for(spec, lambda r: seed_starts(spec, r))(rng)
    return drawn["params"][spec.init][spec.architecture]
