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
for every D and seed) is read at the end, and the lr is chosen by the core's one rule (`otod.core.analysis.chosen`:
the lowest median over the seeds, a diverged lane +∞, ties to the smaller lr), its median there (diverged seeds left
out) the cell's target. The reference is tuned: where the chosen lr is the smallest or largest tried, the search
runs the rates beyond that end at the grid's own end ratio (`otod.core.bracket.ladder`), a block of as many rates as
the grid holds at a time (one compiled program for every round), until the choice is interior or at a true limit
(the next larger rate diverged on most seeds: `otod.core.analysis.lr_places`), or `REFERENCE_STEPS` steps are
used up (then the table says ``grid end`` and the report warns). Two regimes:

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
from typing import Callable

import numpy as np
import pandas as pd

from otod.core.api import OtodError, lazy

jax = lazy("jax")
jnp = lazy("jax.numpy")
optax = lazy("optax")

REGIMES = ("stream", "finite")
#: Significant digits of a stored target.
DIGITS = 6
#: Steps of the grid's end ratio the reference's lr search may take beyond each end of --lr-grid: the core
#: bracket's default (`otod.core.bracket.DEFAULT_STEPS`, 12); for --lr-grid 0.03..3:9:log (ratio 10^0.25) that is
#: three decades each way, 3·10⁻⁵ to 3,000.
REFERENCE_STEPS = 12


def reference_steps(examples: int, batch: int) -> int:
    """The reference run's steps for D examples at batch B_ref: ⌊D/B_ref⌋ (at least one)."""
    return max(1, int(examples) // int(batch))


def reference_spec(spec, width: int, examples: int, batch: int):
    """The spec the reference run of cell (D = ``examples``, ``width``) trains: the stream does not read its
    training set, so its reference is one spec per width (one compiled program for every D)."""
    return dataclasses.replace(spec, width=int(width), examples=None if spec.stream else int(examples),
                               batch=int(batch), held_out_targets=None, reference_batch=None)


@functools.lru_cache(maxsize=32)
def _program(specs: tuple, method: str, seeds: int, seed: int, options):
    """The jitted reference: (lrs, steps, which) → held-out losses [lr, seed] after that many steps of every lane of
    ``specs[which]`` (the rates an argument, so every block of as many rates reuses one compiled program). ``specs``:
    the reference specs of one width (`reference_spec`), whose training sets differ (the finite regime's D) and
    nothing else their lanes read (the start, the held-out set): one program steps all of them, the step's
    minibatch and gradient under ``lax.switch`` on ``which`` (one value for the call, so the switch runs one branch),
    as the sweep's own program switches between batch sizes (`otod.core.variants`); the 2 × 2 grid of
    tests/nets/conftest.py compiled 4 reference programs, now 2, its held-out targets the same."""
    from otod.core.api import METHODS, Step, lane_start, seed_problem_draws

    spec = specs[0]
    families = [s.family() for s in specs]
    family = families[0]
    members = (METHODS[method],)
    draws = seed_problem_draws(spec, seed, seeds, np.float32)
    x_held, y_held = spec.held_out_arrays(np.float32)
    build = members[0].build

    def lane(drawn, lr, steps, which):
        (problem, info, step_size, hyper), params, state = lane_start(family, members, options, True, {}, drawn, lr,
                                                                      0)

        def body(t, carry):
            params, state = carry
            branches = [lambda f=f: f.gradient(problem, params, Step(None, t)) for f in families]
            g = branches[0]() if len(branches) == 1 else jax.lax.switch(which, branches)
            updates, state = build(step_size, info, options, hyper).update(g, state, params)
            return optax.apply_updates(params, updates), state

        params, _ = jax.lax.fori_loop(0, steps, body, (params, state))
        return spec.mean_loss(params, jnp.asarray(x_held), jnp.asarray(y_held), problem["residual"])

    per_seed = jax.vmap(lane, in_axes=(0, None, None, None))
    per_lr = jax.vmap(per_seed, in_axes=(None, 0, None, None))
    return jax.jit(lambda lrs, steps, which: per_lr(draws, lrs, steps, which))


def reference_losses(spec, steps: int, lrs, seeds: int, seed: int, method: str = "sgd", options=None,
                     group=None) -> np.ndarray:
    """The held-out loss [lr, seed] of the reference lanes of ``spec`` (batch ``spec.batch``) after ``steps``
    steps, +∞ where a lane diverged (not finite); ``group``: the reference specs whose one program runs it
    (`_program`; default ``spec`` alone), ``spec`` among them."""
    from otod.core.api import NoiseOptions

    specs = tuple(group) if group else (spec,)
    program = _program(specs, method, int(seeds), int(seed), options or NoiseOptions())
    lr_values = jnp.asarray([float(v) for v in lrs], jnp.float32)
    losses = np.asarray(program(lr_values, jnp.asarray(steps, jnp.int32), jnp.asarray(specs.index(spec), jnp.int32)),
                        float)
    return np.where(np.isfinite(losses), losses, np.inf)


def reference_choice(losses: dict[float, np.ndarray]):
    """The core's choice (`otod.core.analysis.chosen`, `otod.core.analysis.Choice` of one point) over the
    reference's lanes ``losses`` ({lr: held-out loss per seed}, +∞ where diverged): the lanes as records (the loss
    in the score's place, ``iterations``; status converged where finite, else diverged), so the choice is the
    sweep's own rule and its ``lr_on_edge`` and `otod.core.analysis.lr_places` say where it lies."""
    from otod.core.api import chosen, cubes

    rows = [{"method": "reference", "learning_rate": float(lr), "seed": s, "iterations": float(loss),
             "status": "converged" if np.isfinite(loss) else "diverged"}
            for lr, per_seed in losses.items() for s, loss in enumerate(np.asarray(per_seed, float))]
    return chosen(cubes(pd.DataFrame(rows), ())[0])


def tuned_reference(losses_at: Callable[[list[float]], np.ndarray], lrs, steps: int = REFERENCE_STEPS
                    ) -> tuple[float, float, str, dict]:
    """(target, lr, place, lanes): the reference tuned over ``lrs`` and the rates beyond them (module docstring).
    ``losses_at(rates)`` → held-out losses [rate, seed] (+∞ where diverged); each round after the first runs the
    next ``len(lrs)`` rates of `otod.core.bracket.ladder` beyond the chosen end not yet tried (padded with the last,
    so every round has one shape), up to ``steps`` steps. ``place``: `otod.core.analysis.lr_places` (interior,
    limit, or grid end where the steps ran out); ``lanes``: {lr: losses} of every rate tried. Target +∞ where
    every lane diverged."""
    from otod.core.api import ladder, lr_places

    grid = tuple(sorted(float(v) for v in lrs))
    lanes = dict(zip(grid, np.asarray(losses_at(list(grid)), float)))
    while True:
        choice = reference_choice(lanes)
        rate = float(choice.cube.rates[choice.index[0]])
        if not choice.lr_on_edge[0]:
            break
        side = 1 if rate >= max(lanes) else -1
        beyond = [r for r in ladder(grid, side, steps) if r not in lanes][:len(grid)]
        if not beyond:
            break
        block = beyond + [beyond[-1]] * (len(grid) - len(beyond))
        lanes.update(zip(beyond, np.asarray(losses_at(block), float)[:len(beyond)]))
    target = float(choice.median[0]) if np.isfinite(choice.median[0]) and not choice.bound[0] else np.inf
    return target, rate, str(lr_places(choice)[0]), lanes


def rounded(value: float) -> float:
    return float(f"{value:.{DIGITS}g}")


def reference_table(spec, sizes, widths, batch: int, lrs, seeds: int, seed: int, method: str = "sgd",
                    options=None) -> str:
    """The ``held_out_targets`` text of every cell (D in ``sizes``, width in ``widths``): "D:width:loss:lr:place"
    entries joined by ";" (module docstring; the reference tuned by `tuned_reference`). Refuses, in one line, a D below the reference batch or a cell whose
    reference diverged at every lr."""
    entries = []
    for width in widths:
        group = tuple(dict.fromkeys(reference_spec(spec, int(width), int(d), batch) for d in sizes
                                    if int(d) >= batch))  # one program for the width's cells (`_program`)
        for d in sizes:
            d = int(d)
            if d < batch:
                raise OtodError(f"--examples {d}: fewer than the reference batch {batch} (the grid's smallest "
                                f"--batch), which sees D examples in ⌊D/{batch}⌋ steps; use --examples ≥ {batch}")
            cell = reference_spec(spec, int(width), d, batch)
            steps = reference_steps(d, batch)
            target, lr, place, _ = tuned_reference(
                lambda rates: reference_losses(cell, steps, rates, seeds, seed, method, options, group), lrs)
            if not np.isfinite(target):
                raise OtodError(f"--regime: the reference run (batch {batch}, width {int(width)}, D = {d}) diverged "
                                f"at every lr of --lr-grid; add smaller steps, e.g. --lr-grid 0.001..1:13:log")
            entries.append(f"{d}:{int(width)}:{rounded(target)!r}:{lr!r}:{place}")
    return ";".join(entries)


def parse_table(text: str) -> dict[tuple[int, int], tuple[float, float]]:
    """``held_out_targets`` text → {(D, width): (target, lr)}."""
    table = {}
    for entry in str(text).split(";"):
        d, width, loss, lr = entry.split(":")[:4]
        table[int(d), int(width)] = (float(loss), float(lr))
    return table


def reference_places(text: str) -> dict[tuple[int, int], str | None]:
    """``held_out_targets`` text → {(D, width): where the reference's lr lies} (`otod.core.analysis.PLACES`;
    None in a table written before the reference was tuned, whose entries have four fields)."""
    places = {}
    for entry in str(text).split(";"):
        fields = entry.split(":")
        places[int(fields[0]), int(fields[1])] = fields[4] if len(fields) > 4 else None
    return places


def target_of(text: str, examples, width) -> tuple[float, float]:
    """(target, reference lr) of the cell (``examples``, ``width``) in a ``held_out_targets`` text."""
    table = parse_table(text)
    key = (int(examples), int(width))
    if key not in table:
        raise OtodError(f"no held-out target for D = {examples}, width {width} (the grid's cells: "
                        f"{', '.join(f'{d}×{w}' for d, w in table)})")
    return table[key]
