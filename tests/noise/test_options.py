"""The noise sweeps' estimates before anything is built (`otod.noise.options.check_resources`): the defaults fit
a small machine, sizes that cannot fit are refused, and the constants copied to avoid importing JAX stay in step
with their sources."""

import pytest

from otod.core.errors import OtodError
from otod.noise import options as O

DEFAULT_EXACT = dict(mode="exact", problem="nqm", dims=(10_000.0,), batch_count=11,
                     methods=("sgd", "heavy-ball", "precond:0.5", "ema"), beta_count=len(O.DEFAULT_BETAS),
                     rates=len(O.DEFAULT_LR_GRID), cap=O.EXACT_MAX_ITERS, seeds=1, x64=None, lr_lattice=True,
                     beta_lattice=True)


def _default_operations() -> float:
    return sum(O.exact_cost(1e4, 11, cap=O.EXACT_MAX_ITERS,
                            **O.exact_plan(m, len(O.DEFAULT_LR_GRID), len(O.DEFAULT_BETAS), True, True))[1]
               for m in DEFAULT_EXACT["methods"])


def test_the_default_exact_sweep_fits_in_a_small_machine_and_runs_in_a_minute():
    """The default exact sweep (d = 10⁴, B = 1…1024, the four methods, lr and β searched, β bracketed towards 1):
    `exact_cost` counts 5.7·10¹⁰ operations; measured 100.6 s of CPU on a heavily shared 2-core machine (the search
    that stopped β at 0.999 counted 3.9·10¹⁰ and took 18.2 s on it when quieter: 4.2–8.6·10⁻¹⁰ s per counted
    operation by method), so `EXACT_SECONDS_PER_FLOAT` (10⁻⁹) must estimate between 20 s and 2 min; its blocks
    hold under 100 MB."""
    assert 4.5e10 < _default_operations() < 7e10
    assert 20 < _default_operations() * O.EXACT_SECONDS_PER_FLOAT < 120
    need = max(O.exact_cost(1e4, 11, cap=O.EXACT_MAX_ITERS,
                            **O.exact_plan(m, len(O.DEFAULT_LR_GRID), len(O.DEFAULT_BETAS), True, True))[0]
               for m in DEFAULT_EXACT["methods"])
    assert 20e6 < need < 100e6
    O.check_resources(**DEFAULT_EXACT, available=2 ** 30)


def test_the_exact_memory_estimate_bounds_the_traced_peak_within_a_factor_of_two():
    """One exact search (ema, lr and β searched, d = 2000, 3 batches) under tracemalloc, which sees NumPy's
    arrays: its peak lies between half the estimate and the estimate (measured 65 MB against 71 MB)."""
    import tracemalloc

    import numpy as np

    from otod.noise import search, theory

    q = theory.nqm(2000)
    tracemalloc.start()
    search.exact_search("ema", q, np.array([1.0, 16.0, 256.0]), 0.01, O.EXACT_MAX_ITERS, 1.0, 0.0,
                        search.Axis(True, search.DEFAULT_LR_INDICES[::2]),
                        search.Axis(True, search.DEFAULT_BETA_INDICES[::2]))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    estimate = O.exact_cost(2000, 3, cap=O.EXACT_MAX_ITERS, **O.exact_plan("ema", 57, 7, True, True))[0]
    assert estimate / 2 < peak <= estimate, (peak, estimate)


def test_a_huge_dimension_is_refused_on_memory_and_a_long_beta_grid_on_time():
    with pytest.raises(OtodError, match="--dim 1e\\+09.*GiB of memory"):
        O.check_resources(**{**DEFAULT_EXACT, "dims": (1e9,)}, available=64 * 2 ** 30)
    with pytest.raises(OtodError, match="pass --yes"):
        O.check_resources(**{**DEFAULT_EXACT, "beta_count": 1000, "beta_lattice": False}, available=2 ** 50)
    O.check_resources(**{**DEFAULT_EXACT, "beta_count": 1000, "beta_lattice": False}, available=2 ** 50, yes=True)


def test_the_simulator_estimate_names_seeds_and_examples():
    simulate = dict(mode="simulate", problem="regression", dims=(16.0,), batch_count=9, methods=("sgd",),
                    beta_count=1, rates=42, cap=10 ** 6, seeds=8, x64=None)
    O.check_resources(**simulate, available=2 ** 30)
    with pytest.raises(OtodError, match="--seeds 8 --examples 1e\\+09"):
        O.check_resources(**simulate, examples=1e9, available=64 * 2 ** 30)


def test_block_lanes_matches_the_engine():
    from otod.core.engine import BLOCK_LANES

    assert O.BLOCK_LANES == BLOCK_LANES
