"""Held-out targets for the data regimes of a net sweep (``otod sweep net --regime stream|finite``): the data as the
batch-size papers mean it.

Zhang et al. 2024 ("How does critical batch size scale in pre-training?", arXiv:2410.21676, §2) fix the data before
they measure: for a model and a number of training tokens D, the target is the held-out loss that a reference run
(a small batch at its tuned learning rate) reaches after seeing D tokens; the critical batch is then read off the
steps that larger batches need to reach that same held-out loss. So D is an input of the sweep, not a product of
its fit (the stream's older view, D = 2·S_min·B_crit examples seen at B_crit, put B_crit on both axes of its law).

Here, for each cell (D, width) of a grid: the reference run is the sweep's own lane at the smallest batch of the
grid, B_ref (the same start, the same minibatches, drawn by `otod.core.engine.seed_draws` and the family's
gradient, `otod.nets.model.family`), run for ⌊D/B_ref⌋ steps (D/B_ref·B_ref ≤ D examples seen) at every lr of the
sweep's grid and every seed; the held-out loss (`otod.nets.model.problem.NetSpec.held_out_arrays`, the same set
for every D and seed) is read at the end, its median over the seeds taken per lr, and the lowest median is the
cell's target (its lr the reference's tuned one). Two regimes:

* ``stream``: fresh teacher examples every step, never repeated (`otod.nets.model.data.stream_batch`: step t's
  batch drawn from fold_in(seed's key, t)); the reference has seen D distinct examples;
* ``finite``: a training set of the first D examples (nested sets, `otod.nets.model.data`), repeated over epochs
  by the sweep's lanes; the reference's ⌊D/B_ref⌋ steps are one epoch, so it too has seen each example once.

The targets are rounded to `DIGITS` significant digits (so shares of one grid run on machines whose float32 sums
differ in the last bits still build one config) and stored in the spec (``held_out_targets``), so a results file
keeps them and ``otod merge``, ``otod fit`` and a resumed run never recompute them.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from otod.core.api import OtodError, lazy

jax = lazy("jax")
jnp = lazy("jax.numpy")
optax = lazy("optax")

REGIMES = ("stream", "finite")
#: Significant digits of a stored target.
DIGITS = 6


def reference_steps(examples: int, batch: int) -> int:
    """The reference run's steps for D examples at batch B_ref: ⌊D/B_ref⌋ (at least one)."""
    return max(1, int(examples) // int(batch))


def reference_spec(spec, width: int, examples: int, batch: int):
    """The spec the reference run of cell (D = ``examples``, ``width``) trains: the stream does not read its
    training set, so its reference is one spec per width (one compiled program for every D)."""
    return dataclasses.replace(spec, width=int(width), examples=None if spec.stream else int(examples),
                               batch=int(batch), held_out_targets=None, reference_batch=None)


@functools.lru_cache(maxsize=32)
def _program(spec, method: str, lrs: tuple, seeds: int, seed: int, options):
    """The jitted reference: steps → held-out losses [lr, seed] after that many steps of every lane."""
    from otod.core.api import METHODS, Step, lane_start, seed_problem_draws

    family = spec.family()
    members = (METHODS[method],)
    draws = seed_problem_draws(spec, seed, seeds, np.float32)
    x_held, y_held = spec.held_out_arrays(np.float32)
    build = members[0].build

    def lane(drawn, lr, steps):
        (problem, info, step_size, hyper), params, state = lane_start(family, members, options, True, {}, drawn, lr,
                                                                      0)

        def body(t, carry):
            params, state = carry
            g = family.gradient(problem, params, Step(None, t))
            updates, state = build(step_size, info, options, hyper).update(g, state, params)
            return optax.apply_updates(params, updates), state

        params, _ = jax.lax.fori_loop(0, steps, body, (params, state))
        return spec.mean_loss(params, jnp.asarray(x_held), jnp.asarray(y_held), problem["residual"])

    per_seed = jax.vmap(lane, in_axes=(0, None, None))
    per_lr = jax.vmap(per_seed, in_axes=(None, 0, None))
    lr_values = jnp.asarray(lrs, jnp.float32)
    return jax.jit(lambda steps: per_lr(draws, lr_values, steps))


def reference_losses(spec, steps: int, lrs, seeds: int, seed: int, method: str = "sgd", options=None) -> np.ndarray:
    """The held-out loss [lr, seed] of the reference lanes of ``spec`` (batch ``spec.batch``) after ``steps``
    steps, +∞ where a lane diverged (not finite)."""
    from otod.core.api import NoiseOptions

    program = _program(spec, method, tuple(float(v) for v in lrs), int(seeds), int(seed), options or NoiseOptions())
    losses = np.asarray(program(jnp.asarray(steps, jnp.int32)), float)
    return np.where(np.isfinite(losses), losses, np.inf)


def best_target(losses: np.ndarray, lrs) -> tuple[float, float]:
    """(target, lr): the lowest median over seeds of ``losses`` [lr, seed], and the lr that gives it (the smaller
    lr of equals)."""
    medians = np.median(losses, axis=1)
    best = int(np.argmin(medians))
    return float(medians[best]), float(lrs[best])


def rounded(value: float) -> float:
    return float(f"{value:.{DIGITS}g}")


def reference_table(spec, sizes, widths, batch: int, lrs, seeds: int, seed: int, method: str = "sgd",
                    options=None) -> str:
    """The ``held_out_targets`` text of every cell (D in ``sizes``, width in ``widths``): "D:width:loss:lr"
    entries joined by ";" (module docstring). Refuses, in one line, a D below the reference batch or a cell whose
    reference diverged at every lr."""
    entries = []
    for width in widths:
        for d in sizes:
            d = int(d)
            if d < batch:
                raise OtodError(f"--examples {d}: fewer than the reference batch {batch} (the grid's smallest "
                                f"--batch), which sees D examples in ⌊D/{batch}⌋ steps; use --examples ≥ {batch}")
            cell = reference_spec(spec, int(width), d, batch)
            losses = reference_losses(cell, reference_steps(d, batch), lrs, seeds, seed, method, options)
            target, lr = best_target(losses, lrs)
            if not np.isfinite(target):
                raise OtodError(f"--regime: the reference run (batch {batch}, width {int(width)}, D = {d}) diverged "
                                f"at every lr of --lr-grid; add smaller steps, e.g. --lr-grid 0.001..1:13:log")
            entries.append(f"{d}:{int(width)}:{rounded(target)!r}:{lr!r}")
    return ";".join(entries)


def parse_table(text: str) -> dict[tuple[int, int], tuple[float, float]]:
    """``held_out_targets`` text → {(D, width): (target, lr)}."""
    table = {}
    for entry in str(text).split(";"):
        d, width, loss, lr = entry.split(":")
        table[int(d), int(width)] = (float(loss), float(lr))
    return table


def target_of(text: str, examples, width) -> tuple[float, float]:
    """(target, reference lr) of the cell (``examples``, ``width``) in a ``held_out_targets`` text."""
    table = parse_table(text)
    key = (int(examples), int(width))
    if key not in table:
        raise OtodError(f"no held-out target for D = {examples}, width {width} (the grid's cells: "
                        f"{', '.join(f'{d}×{w}' for d, w in table)})")
    return table[key]
