"""Checkpoints spaced by loss: ``otod sweep net --branch-at loss:0.5,0.25,0.1`` and
``otod.critical_batch_along_training(losses=(0.5, 0.25, 0.1))`` branch where the training loss has fallen to each
level, not at given steps (Merrill et al. 2025 place their checkpoints along the loss curve too).

The rule, one step for all seeds: each seed's reference run (`otod.nets.model.branch`: plain SGD at (B_ref, η_ref) from
the seed's own start, its minibatch order from the seed's shuffle key) is traced, its full training loss (the mean
over all training examples, the sweep's metric, in float32: the run's own precision) read at every step
t = 0, 1, 2, … before step t is taken; L̄(t) is the mean over the sweep's seeds. The checkpoint of level ℓ is

    t(ℓ) = min { t : L̄(t) ≤ ℓ },   t < `MAX_REFERENCE_STEPS`,

so t(ℓ) = 0 where the mean at the start is already ≤ ℓ, and levels falling on the same step give one checkpoint.
The runs go on in blocks of `BLOCK` steps until every level is reached; a level not reached within
`MAX_REFERENCE_STEPS` steps (or a run that diverges first) is refused in one line (exit 2) that gives the lowest
mean reached and its step, before any sweep runs. The checkpoint itself is then `otod.nets.model.branch.checkpoint` at
t(ℓ): the same SGD steps, so its loss is L̄(t(ℓ)) ≤ ℓ to float32 rounding (the table's loss is the float64 loss of
those float32 weights).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from otod.core.api import OtodError, lazy

jax = lazy("jax")
jnp = lazy("jax.numpy")

#: The cap: a level must be reached by the mean over seeds at a step below this, else it is refused.
MAX_REFERENCE_STEPS = 10_000
#: Steps traced per compiled call (one program for every block).
BLOCK = 500


def first_steps(trace, levels) -> tuple[int | None, ...]:
    """Per level ℓ, the first index t with trace[t] ≤ ℓ, or None where no entry is (NaN never is)."""
    trace = np.asarray(trace, float)
    out = []
    for level in levels:
        hit = np.flatnonzero(trace <= level)
        out.append(int(hit[0]) if hit.size else None)
    return tuple(out)


def seed_start(spec, rng: np.random.Generator) -> tuple:
    """(start, shuffle seed) of the seed whose generator is ``rng``: the draws the sweep's engine makes (a net's:
    its init and architecture's start; a model's: its parameters)."""
    from otod.nets.model.family import seed_starts

    if spec.kind == "model":
        from otod.nets.model.model_problem import seed_starts as model_starts

        drawn = model_starts(spec, rng)
        return drawn["params"], int(drawn["shuffle"])
    drawn = seed_starts(spec, rng)
    return drawn["params"][spec.init][spec.architecture], int(drawn["shuffle"])


@functools.lru_cache(maxsize=8)
def _tracer(reference, lr: float, model=None):
    """(θ_t0, shuffle key, t0) → (θ_{t0+BLOCK}, [L(θ_t) for t = t0 … t0+BLOCK−1]): `BLOCK` reference steps
    (`otod.nets.model.branch.sgd_step`) with the full training loss read before each, in float32; compiled once per
    (net or model, B_ref, η_ref)."""
    from otod.nets.model.branch import sgd_step
    from otod.nets.model.chunked import chunked_mean

    step, opt = sgd_step(reference, lr)
    data = tuple(jnp.asarray(a) for a in reference.training_arrays(np.float32))
    if reference.kind == "model":
        from otod.nets.model.contract import chunk_of

        metric = chunked_mean(reference.loaded().loss, chunk_of(reference.loaded()))
    else:
        metric = chunked_mean(lambda p, batch: reference.mean_loss(p, *batch), data[0].shape[0])

    @jax.jit
    def run(params, key, t0):
        def body(carry, t):
            params, state = carry
            return step(params, state, key, t), metric(params, *data)

        (params, _), losses = jax.lax.scan(body, (params, opt.init(params)), t0 + jnp.arange(BLOCK))
        return params, losses

    return run


def mean_trace(spec, starts, lowest: float) -> np.ndarray:
    """L̄(t), the mean over seeds of the reference runs' float32 training losses at t = 0, 1, …: traced in blocks
    until its least value is ≤ ``lowest`` or `MAX_REFERENCE_STEPS` steps are traced (or the mean is no longer
    finite); ``starts``: a (start, shuffle seed) per seed."""
    from otod.nets.model.branch import identity, reference_spec

    reference = reference_spec(spec)
    run = _tracer(reference, float(spec.branch_lr), identity(reference))
    traces = []
    with jax.enable_x64(False):
        params = [jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), start) for start, _ in starts]
        keys = [jax.random.PRNGKey(int(shuffle)) for _, shuffle in starts]
        for t0 in range(0, MAX_REFERENCE_STEPS, BLOCK):
            block = []
            for i, key in enumerate(keys):
                params[i], losses = run(params[i], key, t0)
                block.append(np.asarray(losses, np.float64))
            traces.append(np.mean(block, axis=0))
            done = np.concatenate(traces)
            if np.nanmin(done) <= lowest or not np.all(np.isfinite(done)):
                break
    return np.concatenate(traces)


def trace_seconds(spec, steps: int) -> float:
    """Estimated seconds of one seed's traced reference run: per step an SGD step of B_ref
    (`otod.nets.model.branch.reference_seconds`) and a forward pass over the n training examples."""
    from otod.nets.model.branch import SECONDS_PER_FLOP, reference_seconds, reference_spec

    reference = reference_spec(spec)
    n = len(reference.training_arrays(np.float32)[0])
    return reference_seconds(spec, steps) + steps * n * reference.flops_per_example() * SECONDS_PER_FLOP


def resolve_levels(config, branching, yes: bool = False):
    """``branching`` with its loss levels turned into checkpoint steps (module docstring): ``steps`` the distinct
    t(ℓ), ``reached`` the (ℓ, t(ℓ)) pairs; refused in one line where a level is not reached, or where tracing the
    seeds' runs to the cap is estimated above an hour (unless ``yes``)."""
    from otod.core.api import refuse_time

    spec = dataclasses.replace(config.problem, branch_step=0, branch_batch=int(branching.batch),
                               branch_lr=float(branching.lr))
    levels = branching.losses
    refuse_time(config.seeds * trace_seconds(spec, MAX_REFERENCE_STEPS), yes, f"--branch-at loss:{levels[-1]:g}: "
                f"tracing the {config.seeds} seeds' reference runs to {MAX_REFERENCE_STEPS:,} steps",
                "give higher loss levels or fewer --seeds")
    starts = [seed_start(spec, np.random.default_rng([config.seed, s])) for s in range(config.seeds)]
    trace = mean_trace(spec, starts, min(levels))
    steps = first_steps(trace, levels)
    for level, step in zip(levels, steps):
        if step is None:
            raise OtodError(unreached(level, trace, branching, config.seeds))
    return dataclasses.replace(branching, steps=tuple(sorted(set(steps))), reached=tuple(zip(levels, steps)))


def unreached(level: float, trace, branching, seeds: int) -> str:
    """The one line refusing a level the mean over seeds never reached."""
    finite = np.isfinite(trace)
    whose = "the seed's reference run" if seeds == 1 else f"the {seeds} seeds' reference runs"
    runs = f"the mean training loss of {whose} (SGD at B = {branching.batch}, lr {branching.lr:g})"
    if not finite.all():
        bad = int(np.flatnonzero(~finite)[0])
        return (f"--branch-at loss:{level:g}: {runs} diverged at step {bad} before reaching {level:g}; use a smaller "
                "--branch-lr or a higher level")
    best = int(np.argmin(trace))
    return (f"--branch-at loss:{level:g}: {runs} reached {trace[best]:.4g} at best (step {best:,}) in "
            f"{len(trace):,} steps, never {level:g}; give a level above {trace[best]:.3g} or a larger --branch-lr")


def describe_level(branching, step: int) -> str:
    """The loss levels whose checkpoint is ``step``, for the line a checkpoint prints ('' where steps were
    given)."""
    levels = [f"{level:g}" for level, t in branching.reached if t == step]
    return f" (first step where the mean training loss ≤ {', '.join(levels)})" if levels else ""

