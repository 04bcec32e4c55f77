"""The noise sweeps' estimates before anything is built (`otod.noise.options.check_resources`): the defaults fit
a small machine, sizes that cannot fit are refused, and the constants copied to avoid importing JAX stay in step
with their sources."""

import pytest

from otod.core.errors import OtodError
from otod.noise import options as O

DEFAULT_EXACT = dict(mode="exact", problem="nqm", dims=(10_000.0,), batch_count=11,
                     methods=("sgd", "heavy-ball", "precond:0.5", "ema"), beta_count=1,
                     rates=len(O.DEFAULT_LR_GRID), cap=O.EXACT_MAX_ITERS, seeds=1, x64=None)


def test_the_default_exact_sweep_fits_in_4_gib_and_runs_in_minutes():
    """Its measured peak was 1.63 GB and its run 24 s; the estimate must agree to within a factor of two."""
    need = max(O.exact_cost(1e4, 11, 42, O.EXACT_MAX_ITERS, O.components(m))[0] for m in DEFAULT_EXACT["methods"])
    assert 0.8e9 < need < 3.3e9
    O.check_resources(**DEFAULT_EXACT, available=4 * 2 ** 30)


def test_a_huge_dimension_is_refused_on_memory_and_a_long_beta_grid_on_time():
    with pytest.raises(OtodError, match="--dim 1e\\+09.*GiB of memory"):
        O.check_resources(**{**DEFAULT_EXACT, "dims": (1e9,)}, available=64 * 2 ** 30)
    with pytest.raises(OtodError, match="pass --yes"):
        O.check_resources(**{**DEFAULT_EXACT, "beta_count": 400}, available=2 ** 50)
    O.check_resources(**{**DEFAULT_EXACT, "beta_count": 400}, available=2 ** 50, yes=True)


def test_the_simulator_estimate_names_seeds_and_examples():
    simulate = dict(mode="simulate", problem="regression", dims=(16.0,), batch_count=9, methods=("sgd",),
                    beta_count=1, rates=42, cap=10 ** 6, seeds=8, x64=None)
    O.check_resources(**simulate, available=2 ** 30)
    with pytest.raises(OtodError, match="--seeds 8 --examples 1e\\+09"):
        O.check_resources(**simulate, examples=1e9, available=64 * 2 ** 30)


def test_block_lanes_matches_the_engine():
    from otod.core.engine import BLOCK_LANES

    assert O.BLOCK_LANES == BLOCK_LANES
