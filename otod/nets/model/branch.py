"""A checkpoint as a start: the net sweep's seeds start from checkpoints of their reference runs instead of their
initial weights, so that an ordinary S(B) sweep through the core engine measures the critical batch at a point of
training (Merrill et al. 2025, "Critical batch size revisited": branch short runs at several batch sizes from
checkpoints of one run).

The reference run of seed s (root ``seed``) is one lane of the sweep written as a plain loop: plain SGD
(θ ← θ − η_ref ∇L_B(θ), no momentum) at batch ``branch_batch`` and step ``branch_lr`` = η_ref, from the seed's
own start (`otod.nets.model.family.seed_starts` of ``default_rng([seed, s])``, the engine's draws), on minibatches drawn
without replacement within each epoch from the seed's shuffle key (`otod.nets.model.family.minibatch`), in float32
(JAX's default, whatever the sweep's precision). It is `otod.nets.measure.trajectory.train` at batch ``branch_batch``
with the same seed, so its checkpoints are those ``otod noise-scale --model mlp`` and ``otod curvature --model
mlp`` measure at with ``--lr η_ref --batch B_ref``.

The branch at batch B is then the plain sweep's lane with its start replaced: the seed's shuffle key and the
engine's minibatch order from the branch's step 0 on, a fresh optimizer state (momentum, Adam's moments and the lr
schedule start at zero), every (lr, β) of the grid. At ``branch_step`` = 0 no step is taken and the branch is the
plain sweep, record for record.

A user's model (`otod.nets.model.model_problem.ModelProblem`, ``--model FILE.py:NAME``) branches the same way: its seed's
start (``init(key_s)``, or the given ``params`` for every seed where it has no ``init``) and shuffle seed are its
family's draws, its reference run the same loop with the model's ``loss(params, batch)`` on its training data (the
first N where ``--examples`` cuts it; floats in float32, integers such as labels or tokens kept), and the branch
replaces the draws' start, which for a model is the whole parameter pytree.

Checkpoints are cached by reference run (the net, B_ref, η_ref, the shuffle seed and the start's bytes) and step:
the engine draws one seed's start once per batch of the sweep (a batch is a static shape), and the run to the
checkpoint is the same for all; a later checkpoint continues the run from the latest one cached (SGD has no state to
carry, so the steps are the same as from the start).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
from collections import OrderedDict

import numpy as np

from otod.core.api import OtodError, exact_float32, lazy

jax = lazy("jax")
jnp = lazy("jax.numpy")
optax = lazy("optax")

#: Reference runs whose checkpoints are kept (one per seed of the running sweeps; each holds its checkpoints).
CACHE_SIZE = 64
_checkpoints: OrderedDict = OrderedDict()


def check_branch(spec, examples: int) -> None:
    """Refuse, in one line, a branch that is not all three of (step ≥ 0 whole, 1 ≤ batch ≤ the training set,
    a finite step size > 0), or one on the stream (whose minibatches are indexed by the step: a branch would need
    the reference run's)."""
    step, batch, lr = spec.branch_step, spec.branch_batch, spec.branch_lr
    if step is None or batch is None or lr is None:
        raise OtodError("a branch needs its step, its reference batch and its reference lr (--branch-at, "
                        "--branch-batch, --branch-lr), e.g. --branch-at 0,100,1000")
    if not (isinstance(step, (int, np.integer)) and not isinstance(step, bool) and step >= 0):
        raise OtodError(f"--branch-at {step}: need whole step counts ≥ 0, e.g. --branch-at 0,100,1000")
    if not (isinstance(batch, (int, np.integer)) and 1 <= batch <= examples):
        raise OtodError(f"--branch-batch {batch}: need a whole number from 1 to the {examples} training examples, "
                        "e.g. --branch-batch 32")
    if not (isinstance(lr, (int, float, np.floating)) and math.isfinite(lr) and lr > 0):
        raise OtodError(f"--branch-lr {lr}: the reference run's step must be a positive number, e.g. --branch-lr 0.1")
    if getattr(spec, "stream", None):
        raise OtodError("--branch-at: branches from checkpoints of a finite training set; drop --stream")


def reference_spec(spec):
    """The net the reference run trains: ``spec`` at batch ``branch_batch``, unbranched."""
    return dataclasses.replace(spec, batch=int(spec.branch_batch), branch_step=None, branch_batch=None,
                               branch_lr=None)


def identity(reference):
    """What, besides the spec, names the loss a reference run steps on: a user's model as given (compared by
    identity, since its digest hashes its numbers, not its code; None where it is loaded again from its file, whose
    bytes the digest hashes); None for otod's own nets (the spec says all)."""
    return reference.model if reference.kind == "model" else None


def sgd_step(reference, lr: float):
    """(step(params, state, key, t) → (params, state), the optimizer): one reference SGD step on minibatch t of
    the shuffle ``key`` (`otod.nets.model.family.minibatch`), the training data in float32 (integers kept)."""
    from otod.nets.model.family import minibatch

    data = tuple(jnp.asarray(a) for a in reference.training_arrays(np.float32))
    n, batch = data[0].shape[0], int(reference.batch)
    opt = optax.sgd(lr)
    grad = jax.grad(lambda p, *xs: reference.mean_loss(p, *xs))

    def step(params, state, key, t):
        idx = minibatch(key, t, batch, n)
        updates, state = opt.update(grad(params, *(a[idx] for a in data)), state, params)
        return optax.apply_updates(params, updates), state

    return step, opt


@functools.lru_cache(maxsize=8)
def _runner(reference, lr: float, model=None):
    """The reference run's loop, compiled once per (net or model, batch, lr): (θ_t0, shuffle key, t0, t1) → θ_t1,
    the step counts traced (one program for every checkpoint). Plain SGD has no state, so a run continued from a
    cached checkpoint takes the same steps as one from the start."""
    step, opt = sgd_step(reference, lr)

    @jax.jit
    def run(params, key, t0, t1):
        def body(t, carry):
            return step(*carry, key, t)

        return jax.lax.fori_loop(t0, t1, body, (params, opt.init(params)))[0]

    return run


def start_digest(params) -> str:
    """SHA-256 (16 hex digits) of a start's leaves' bytes, the cache's key for the seed's start."""
    h = hashlib.sha256()
    for leaf in jax.tree.leaves(params):
        h.update(np.ascontiguousarray(np.asarray(leaf)).tobytes())
    return h.hexdigest()[:16]


def checkpoint(spec, start, shuffle) -> tuple:
    """The parameters after ``spec.branch_step`` steps of the reference run (module docstring) from ``start`` (a
    seed's initial weights) with the minibatch order of the seed's ``shuffle`` seed: NumPy float64 leaves holding
    float32 values (the sweep casts them to its precision exactly); at step 0, ``start`` itself. Cached per run and step; a later checkpoint
    of a cached run continues from its latest earlier one."""
    reference, lr, step = reference_spec(spec), float(spec.branch_lr), int(spec.branch_step)
    if step == 0:  # the start itself, unrounded: a float64 sweep's branch at 0 is its plain sweep too
        return jax.tree.map(lambda a: np.asarray(a, np.float64), start)
    run_key = (reference, identity(reference), lr, int(shuffle), start_digest(start))
    done = _checkpoints.setdefault(run_key, {})
    _checkpoints.move_to_end(run_key)
    if step not in done:
        t0 = max((t for t in done if t < step), default=0)
        with jax.enable_x64(False), exact_float32():  # the engine's matmul precision, wherever it is asked for
            params = jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), done[t0] if t0 else start)
            params = _runner(reference, lr, identity(reference))(params, jax.random.PRNGKey(int(shuffle)), t0, step)
            done[step] = jax.tree.map(lambda a: np.asarray(a, np.float64), params)
    while len(_checkpoints) > CACHE_SIZE:
        _checkpoints.popitem(last=False)
    return done[step]


def branch_draws(spec, drawn: dict) -> dict:
    """One seed's draws (`otod.nets.model.family.seed_starts`; a model's, `otod.nets.model.model_problem.seed_starts`) with the
    start the sweep reads (a net's: the spec's init and architecture; a model's: its parameters) replaced by its
    checkpoint; the shuffle seed is kept, so the branch draws the plain sweep's minibatch order."""
    if spec.kind == "model":
        return {**drawn, "params": checkpoint(spec, drawn["params"], drawn["shuffle"])}
    params = {init: dict(arches) for init, arches in drawn["params"].items()}
    start = params[spec.init][spec.architecture]
    params[spec.init][spec.architecture] = checkpoint(spec, start, drawn["shuffle"])
    return {**drawn, "params": params}


def start_params(spec, rng: np.random.Generator):
    """A branched spec's start for the seed whose generator is ``rng``: its checkpoint."""
    from otod.nets.model.family import seed_starts

    if spec.kind == "model":
        return branch_draws(spec, reference_spec(spec).family().draws(rng))["params"]
    return branch_draws(spec, seed_starts(spec, rng))["params"][spec.init][spec.architecture]


def start_of_seed(spec, seed: int, s: int):
    """Seed s of root ``seed``'s start as the engine draws it (``default_rng([seed, s])``), for otod's nets and a
    user's model; a branched spec's: its checkpoint."""
    from otod.nets.model.family import seed_starts, start_of

    rng = np.random.default_rng([seed, s])
    if spec.branched:
        return start_params(spec, rng)
    if spec.kind == "model":  # a user's model: its parameter pytree as the model sweep's family draws it
        return spec.family().draws(rng)["params"]
    return start_of(spec, seed_starts(spec, rng))


def branch_family(spec, family):
    """The net family of ``spec`` with every seed's start replaced by its checkpoint (`branch_draws`); the
    reference run's estimated time (`otod.nets.measure.noise_scale.train_seconds`) joins the per-seed estimate."""
    return family._replace(draws=lambda rng: branch_draws(spec, family.draws(rng)),
                           seconds_per_seed=family.seconds_per_seed + reference_seconds(spec, spec.branch_step))


#: Seconds per reference step and per forward-and-backward flop: `otod.nets.measure.noise_scale`'s measured
#: SECONDS_PER_STEP and SECONDS_PER_FLOP (10,000 SGD steps of B = 32 on the default net took 6.2 s), repeated here
#: since that module imports the spec, which imports this one.
SECONDS_PER_STEP, SECONDS_PER_FLOP = 6e-4, 1e-10


def reference_seconds(spec, steps: int) -> float:
    """Estimated seconds of one seed's reference run to ``steps``: per step, the overhead and 3 × the forward
    flops of B_ref examples (`otod.nets.measure.noise_scale.train_seconds`' rule)."""
    reference = reference_spec(spec)
    return int(steps) * (SECONDS_PER_STEP + 3 * reference.batch * reference.flops_per_example() * SECONDS_PER_FLOP)


def checkpoint_losses(spec, seed: int, seeds: int) -> tuple[float, ...]:
    """The full training loss (float64) at each seed's checkpoint, seeds 0..seeds−1 of root ``seed``."""
    return tuple(spec.initial_loss(seed, s) for s in range(seeds))
