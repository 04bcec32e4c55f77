"""The engine's layout of lanes: per-seed matrices stay one per seed, and the seed-major layout gives the same
numbers as one row of lanes each holding its own seed's draws."""

import jax
import numpy as np
import pytest

from otod.condition.methods import METHODS, MethodOptions
from otod.core.dynamics import optax_dynamics
from otod.core.engine import iterations_to_target, lane_dependent, seed_draws
from otod.core.stopping import Target

from tests.conftest import KRONECKER_PERTURBED, SMALL_ROTATED


def test_a_seeds_rotation_is_found_to_depend_on_the_seed_alone():
    """The set-up of a rotated quadratic reads the rotation from the seed's draws and κ from the lane: the
    rotation (in the problem and in the curvature Newton reads) is shared by the seed's lanes, the eigenvalues
    and the start are not."""
    family = SMALL_ROTATED.family()
    dynamics = optax_dynamics(family, (METHODS["newton"],), None, True)
    drawn = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape[1:], a.dtype),
                         seed_draws(SMALL_ROTATED, 0, 1, np.float32))
    lane = (({"kappa": jax.ShapeDtypeStruct((), np.float32)}), jax.ShapeDtypeStruct((), np.float32),
            jax.ShapeDtypeStruct((), np.int32))

    def set_up(point, lr, m, drawn):
        return dynamics.set_up(point, drawn, lr, m)

    shape = jax.eval_shape(set_up, *lane, drawn)
    dependent = jax.tree.unflatten(jax.tree.structure(shape), lane_dependent(set_up, lane, (drawn,)))
    problem, info = dependent.constants[0], dependent.constants[1]
    assert problem["rotation"] is False and info["curvature"].hessian_eigenvectors is False
    assert problem["eigenvalues"] is True and problem["x_star"] is False


@pytest.mark.parametrize("spec,method,rates", [(SMALL_ROTATED, "nesterov", 1), (SMALL_ROTATED, "adam", 3),
                                               (KRONECKER_PERTURBED, "kfac", 1), (KRONECKER_PERTURBED, "gd", 3)])
def test_seed_major_layout_gives_the_numbers_of_one_row_of_lanes(spec, method, rates, x64):
    """Whole points (rates × 4 seeds) run seed-major (shared per-seed arrays) and, with each point's seeds in
    another order so no such layout exists, as one row of lanes each holding its own seed's draws: identical
    counts and statuses, pruning of learning rates included. In float64: batched products by seed and per-lane
    ones round differently, and in float32 that can move a count by one and so the moment a rate is pruned."""
    seeds, kappas = 4, np.array([2.0, 30.0, 300.0])
    grid = [(k, r, s) for k in kappas for r in range(rates) for s in range(seeds)]
    v = np.array([g[0] for g in grid])
    r = np.array([(0.5, 1.0, 2.0)[g[1]] if rates > 1 else 1.0 for g in grid])
    s = np.array([g[2] for g in grid])
    kw = dict(target=Target(1e-6), max_iters=3000, block_lanes=2 * rates * seeds, group=(rates, seeds),
              options=MethodOptions())
    seed_major = iterations_to_target(spec, (METHODS[method],), {"kappa": v}, s, r, **kw)
    flip = (np.arange(len(s)) // seeds) * seeds + (seeds - 1 - s)  # each (point, rate)'s seeds reversed
    one_row = iterations_to_target(spec, (METHODS[method],), {"kappa": v[flip]}, s[flip], r[flip], **kw)
    back = np.argsort(flip)
    assert np.array_equal(seed_major.iterations, one_row.iterations[back])
    assert np.array_equal(seed_major.status, one_row.status[back])


@pytest.mark.parametrize("devices", [2, 4])
def test_blocks_shared_among_host_devices_give_the_records_of_one(tmp_path, devices):
    """The same sweep in a process with 2 or 4 CPU devices (its blocks dealt among them by shard_map) and in this
    one (one device): identical records, and the results file says how many devices there were."""
    import json
    import os
    import subprocess
    import sys

    from otod.condition.options import condition_sweep
    from otod.core.sweep import run_sweep
    from tests.conftest import SMALL_RANDOM

    config = condition_sweep((1.0, 3.0, 10.0, 30.0, 100.0, 300.0), methods=("gd", "nesterov"), problem=SMALL_RANDOM,
                             seeds=4)
    here = run_sweep(config, path=tmp_path / "one.json")
    assert here.meta["environment"]["device_count"] == 1
    probe = ("import otod.condition\nfrom otod.condition.options import condition_sweep\n"
             "from otod.core.sweep import run_sweep\nfrom tests.conftest import SMALL_RANDOM\n"
             "run_sweep(condition_sweep((1.0, 3.0, 10.0, 30.0, 100.0, 300.0), methods=('gd', 'nesterov'), "
             f"problem=SMALL_RANDOM, seeds=4), path={str(tmp_path / 'many.json')!r})\n")
    env = {**os.environ, "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}",
           "OTOD_COMPILATION_CACHE": "off"}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    there = json.loads((tmp_path / "many.json").read_text())
    assert there["meta"]["environment"]["device_count"] == devices
    assert there["records"] == here.records


def test_deal_balances_blocks_by_predicted_cost_with_equal_counts_per_device():
    """`deal` is a permutation giving every device the same number of blocks; its busiest device carries no more
    than round-robin's on cost-sorted blocks with padding (cost 0) last, and is optimal on small cases (brute
    force over every equal-count split)."""
    import itertools

    from otod.core.engine import deal

    for costs, devices in (([1, 2, 4, 0], 2), ([1, 2, 3, 5, 8, 13, 0, 0], 2), ([1, 1, 2, 3, 5, 8, 13, 21], 4),
                           ([3, 3, 3, 3, 3, 3], 3)):
        order = deal(costs, devices)
        assert sorted(order.tolist()) == list(range(len(costs)))
        rows = np.asarray(costs)[order].reshape(devices, -1)
        round_robin = np.asarray(costs).reshape(-1, devices).sum(0).max()
        assert rows.sum(1).max() <= round_robin
        per = len(costs) // devices
        best = min(max(sum(costs[i] for i in perm[d * per:(d + 1) * per]) for d in range(devices))
                   for perm in itertools.permutations(range(len(costs))))
        assert rows.sum(1).max() == best
