"""The net sweep's lanes against the one reference loop (`otod.core.reference.reference_run`), shared by the tests
of otod's nets, the stream and a user's model: one comparison, in one place; and a branch's reference SGD run
written out by hand (`plain_sgd`), shared by the tests of checkpoints (`otod.nets.model.branch`) and of checkpoints spaced
by loss (`otod.nets.along.levels`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from otod.core.dynamics import Step
from otod.core.reference import reference_run
from otod.nets.sweep.kind import METHODS


def compare_with_reference(config, records) -> int:
    """Every SGD lane's count, status and final loss equal the reference loop's (float64; plain optax.sgd
    stepping the family's sampled gradient with the same keys, the metric read on the same schedule); a pruned
    lane (stopped once its lr could not win) only bounds the loop's count. Returns the lanes compared exactly."""
    compared = 0
    with jax.enable_x64(True):
        for r in records:
            spec = config.spec_at({"batch": r["batch"]})
            ref = reference_run(spec, METHODS["sgd"], {"beta": 0.0}, r["seed"], seed=config.seed,
                                target=config.target, max_iters=config.resolved_max_iters, lr=r["learning_rate"],
                                relative_lr=False, optimizer=optax.sgd(r["learning_rate"]),
                                step_of=lambda key, t: Step(key, t))
            if r["status"] == "pruned":
                assert ref.iterations >= r["iterations"], r
                continue
            assert (r["iterations"], r["status"]) == (ref.iterations, ref.status), r
            assert r["final_loss"] == pytest.approx(ref.final_metric, rel=1e-9)
            compared += 1
    return compared


def plain_sgd(spec, start, shuffle, steps: int, batch: int, lr: float, trace: bool = False):
    """The reference run written out independently, for a net (`otod.nets.model.problem.NetSpec`) or a user's model
    (`otod.nets.model.model_problem.ModelProblem`) alike: a Python loop of θ ← θ − η ∇L_B(θ) in float32, epoch e's order
    the permutation of fold_in(PRNGKey(shuffle), e), step t taking ranks [pB, (p + 1)B) of its position p in an
    epoch of ⌊n/B⌋ steps. Returns θ after ``steps`` steps (float64 leaves holding the float32 values) and, with
    ``trace``, the full training loss (one call over all examples, float32) before each step t = 0 … steps − 1."""
    with jax.enable_x64(False):
        data = tuple(jnp.asarray(a) for a in spec.training_arrays(np.float32))
        n = data[0].shape[0]
        per_epoch = n // batch
        key = jax.random.PRNGKey(int(shuffle))
        params = jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), start)
        grad = jax.jit(jax.grad(lambda p, *xs: spec.mean_loss(p, *xs)))
        loss = jax.jit(lambda p: spec.mean_loss(p, *data))
        losses = []
        for t in range(steps):
            if trace:
                losses.append(float(loss(params)))
            order = np.asarray(jax.random.permutation(jax.random.fold_in(key, t // per_epoch), n))
            idx = order[(t % per_epoch) * batch:(t % per_epoch + 1) * batch]
            g = grad(params, *(a[idx] for a in data))
            params = jax.tree.map(lambda p, gi: p - np.float32(lr) * gi, params, g)
        params = jax.tree.map(lambda p: np.asarray(p, np.float64), params)
    return (params, np.asarray(losses)) if trace else params


def gap(a, b) -> float:
    """The largest |a − b| over two parameter pytrees' leaves."""
    return max(float(np.max(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64))))
               for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))
