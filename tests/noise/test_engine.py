"""The simulator (the engine running otod.noise's families, methods and dynamics) against the exact theory."""

from __future__ import annotations

import numpy as np

from otod.core.engine import iterations_to_target
from otod.core.stopping import Status, Target
from otod.noise import theory
from otod.core.stochastic import METHODS, NoiseOptions, power_of, theory_name
from otod.noise.problems import NQMSpec


CASES = [("sgd", 0.0, 0.5), ("heavy-ball", 0.9, 0.05), ("precond:0.5", 0.0, 0.3), ("ema", 0.9, 0.5)]


def test_monte_carlo_mean_loss_matches_the_exact_recursion_within_three_standard_errors(x64):
    """For sgd, heavy-ball, precond:0.5 and ema (one compiled program), 512 seeds each (θ₀ ~ N(0, I) and the
    noise both random) run exactly 40 steps at B = 4 on a d = 20 NQM (an unreachable target censors them at the
    cap); each method's mean exact loss is the recursion's E loss₄₀ within 3 standard errors."""
    seeds, steps, batch = 512, 40, 4.0
    spec = NQMSpec(dim=20)
    n = seeds * len(CASES)
    members = tuple(METHODS[m] for m, _, _ in CASES)
    sol = iterations_to_target(spec, members, {"batch": np.full(n, batch),
                                               "beta": np.repeat([b for _, b, _ in CASES], seeds)},
                               np.tile(np.arange(seeds), len(CASES)), np.repeat([lr for _, _, lr in CASES], seeds),
                               method_indices=np.repeat(np.arange(len(CASES)), seeds), relative_lr=False,
                               target=Target(1e-300, kind="absolute"), max_iters=steps,
                               options=NoiseOptions(horizon=steps))
    assert np.all(sol.status == Status.CENSORED) and np.all(sol.iterations == steps)
    q = spec.quadratic()
    for i, (method, beta, lr) in enumerate(CASES):
        p = power_of(method)
        rec = theory.recursion(theory_name(method), q, np.array([lr]), p, beta)
        exact = theory.loss_at(rec, q, theory.noise_variance(q, np.array([lr]), np.array([batch]), p), steps)[0]
        losses = sol.final_metric[i * seeds:(i + 1) * seeds]
        se = losses.std(ddof=1) / np.sqrt(seeds)
        assert abs(losses.mean() - exact) < 3 * se, (method, losses.mean(), exact, se)


def test_exact_and_simulated_steps_to_target(x64):
    """d = 100 NQM, target 0.1, SGD at the exact path's best lr for each B (2^(k/4) grid), 32 seeds.

    Where the curvature limits the steps (B = 256, 1024) the exact count lies within the 10–90% range of the
    simulated counts. Where the noise does (B = 1, 16) the exact path answers a different question: it counts the
    steps until the *expected* loss reaches the target, while a simulated run stops at its random loss's first
    passage, which comes earlier (the best lr puts the noise floor near the target): the simulated median is
    below the exact count there, by 23% at B = 1 (1322 against 1726) and 20% at B = 16 (99 against 124) on
    2026-12-02; asserted within 15–30% (docs/noise.md quotes it)."""
    spec = NQMSpec(dim=100)
    q = spec.quadratic()
    batches, seeds, target = np.array([1.0, 16.0, 256.0, 1024.0]), 32, 0.1
    grid = 2.0 ** (np.arange(-40, 2) / 4)
    table = theory.method_hitting_steps("sgd", q, grid, batches, target, 10 ** 6).astype(float)
    table[table < 0] = np.inf
    exact, lrs = table.min(1), grid[table.argmin(1)]
    n = len(batches) * seeds
    sol = iterations_to_target(spec, (METHODS["sgd"],), {"batch": np.repeat(batches, seeds), "beta": np.zeros(n)},
                               np.tile(np.arange(seeds), len(batches)), np.repeat(lrs, seeds), relative_lr=False,
                               target=Target(target, kind="absolute"), max_iters=20_000, options=NoiseOptions())
    assert np.all(sol.status == Status.CONVERGED)
    for i, e in enumerate(exact):
        counts = sol.iterations[i * seeds:(i + 1) * seeds]
        low, median, high = np.percentile(counts, [10, 50, 90])
        if batches[i] >= 256:
            assert low <= e <= high, (batches[i], e, low, high)
        else:
            assert 0.15 <= 1 - median / e <= 0.30, (batches[i], e, median)
