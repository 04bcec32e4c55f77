"""The net sweep's lanes against the one reference loop (`otod.core.reference.reference_run`), shared by the tests
of otod's nets, the stream and a user's model: one comparison, in one place."""

from __future__ import annotations

import jax
import optax
import pytest

from otod.core.dynamics import Step
from otod.core.reference import reference_run
from otod.nets.kind import METHODS


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
