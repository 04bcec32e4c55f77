"""Shared test problems and helpers (one place, so tests across modules use the same instances)."""

from __future__ import annotations

import os

# The CLI turns on JAX's persistent compilation cache in ~/.cache; tests keep out of the home directory.
os.environ.setdefault("OTOD_COMPILATION_CACHE", "off")

import jax  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
import pytest  # noqa: E402

from otod.problems import KroneckerSpec, QuadraticSpec  # noqa: E402

#: The worst case for first-order methods, with every eigendirection holding the same share of the loss:
#: the measured exponents approach theory fastest here.
TWO_POINT = QuadraticSpec(dim=20, spectrum="two-point", start="equal-loss")
SMALL_RANDOM = QuadraticSpec(dim=16, spectrum="log-uniform", start="random")
SMALL_ROTATED = QuadraticSpec(dim=16, spectrum="log-uniform", start="random", basis="rotated")
KRONECKER_EXACT = KroneckerSpec(rows=4, cols=5, perturbation=0.0)


@pytest.fixture
def x64():
    with jax.enable_x64(True):
        yield


def reference_iterations(spec, method_name: str, kappa: float, seed_index: int, *, seed: int = 0,
                         tol: float = 1e-6, max_iters: int = 10_000, lr_multiplier: float = 1.0):
    """A plain per-config loop with optax, written without the engine: what a user would write by hand.

    Builds the same problem (same per-seed draws) and steps it one iteration at a time in Python, with optax's own
    ``optax.sgd`` for the first-order methods (not otod's `momentum`, so the test is independent of it) and the
    method's transformation otherwise; returns (iterations, final gap) by the engine's rule: the first t with
    f(x_t)/f(x₀) ≤ tol.
    """
    from otod.methods import METHODS, MethodOptions, method

    family = spec.family()
    dtype = np.float64 if jax.config.jax_enable_x64 else np.float32
    drawn = jax.tree.map(lambda a: np.asarray(a, dtype), family.draws(np.random.default_rng([seed, seed_index])))
    problem = family.make(dtype(kappa), drawn)
    curvature = family.curvature(problem)
    m = method(method_name)
    lr = lr_multiplier * m.reference_lr(curvature)
    if m.program == "momentum":
        beta, nesterov = (float(h) for h in m.hyperparameters(curvature))
        optimizer = optax.sgd(lr, momentum=beta or None, nesterov=bool(nesterov))
    else:
        optimizer = m.build(lr, curvature, MethodOptions())
    assert METHODS[method_name] is m
    loss = jax.jit(lambda x: family.loss(problem, x))
    grad = jax.jit(jax.grad(lambda x: family.loss(problem, x)))
    x = family.start(problem)
    state = optimizer.init(x)
    f0 = float(loss(x))
    t, gap = 0, 1.0
    while gap > tol and t < max_iters:
        updates, state = optimizer.update(grad(x), state, x)
        x = optax.apply_updates(x, updates)
        t += 1
        gap = float(loss(x)) / f0
    return t, gap
