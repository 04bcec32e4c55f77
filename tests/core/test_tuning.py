"""Learning-rate selection by the median over seeds, and pruning that never changes the choice."""

import numpy as np
import pytest

from otod.condition.options import condition_sweep
from otod.condition.quadratic import QuadraticSpec
from otod.core.sweep import run_sweep
from otod.core.tuning import choose_rate, selected

from tests.conftest import SMALL_ROTATED


def rec(rate, seed, iterations, status="converged"):
    return {"kappa": 5.0, "method": "gd", "lr_multiplier": rate, "seed": seed, "iterations": iterations,
            "status": status}


def test_the_rate_with_the_lowest_median_wins_not_the_luckiest_seed():
    """Rate 2 has the single best seed (3 iterations) but a worse median (50) than rate 1 (20): rate 1 wins.
    Per-seed best would have picked rate 2 for seed 0 and reported 3."""
    records = [rec(1.0, 0, 20), rec(1.0, 1, 20), rec(1.0, 2, 21),
               rec(2.0, 0, 3), rec(2.0, 1, 50), rec(2.0, 2, 60)]
    assert choose_rate(records)[0] == 1.0
    assert [r["iterations"] for r in selected(records, ("kappa",))] == [20, 20, 21]


def test_censored_lanes_count_as_worst_and_ties_go_to_the_smaller_rate():
    records = [rec(0.5, 0, 10), rec(0.5, 1, 999, "censored"), rec(0.5, 2, 999, "censored"),
               rec(1.0, 0, 10), rec(1.0, 1, 10), rec(1.0, 2, 10),
               rec(3.0, 0, 10), rec(3.0, 1, 10), rec(3.0, 2, 10)]
    rate, edge = choose_rate(records)
    assert rate == 1.0 and not edge


def test_a_rate_on_the_grid_edge_is_flagged():
    records = [rec(0.5, 0, 30), rec(1.0, 0, 20), rec(3.0, 0, 10)]
    assert choose_rate(records) == (3.0, True)


@pytest.fixture(scope="module")
def tuned_pair(tmp_path_factory):
    """The same tuned sweep with pruning (the engine's default under --lr tuned) and with every lane run to the
    end (the sweep split so that each rate is its own one-rate sweep)."""
    values = tuple(np.geomspace(1, 300, 6))
    grid = (0.25, 0.5, 1.0, 1.5, 1.9)
    kw = dict(methods=("gd", "nesterov"), problem=SMALL_ROTATED, seeds=5)
    out = tmp_path_factory.mktemp("tuned")
    pruned = run_sweep(condition_sweep(values, lr="tuned", lr_grid=grid, **kw), out_dir=out)
    full = [{k: v for k, v in r.items() if not k.startswith("lr_selected")}
            for g in grid for r in run_sweep(condition_sweep(values, lr="tuned", lr_grid=(g,), **kw),
                                             out_dir=out).records]
    return pruned, full


def test_pruning_keeps_the_choice_and_the_counts_at_the_chosen_rate(tuned_pair):
    pruned, full = tuned_pair
    key = lambda r: (r["kappa"], r["method"], r["seed"])  # noqa: E731
    chosen = sorted(selected(pruned.records, ("kappa",)), key=key)
    reference = sorted(selected(full, ("kappa",)), key=key)
    assert [(r["lr_multiplier"], r["iterations"], r["status"]) for r in chosen] == \
        [(r["lr_multiplier"], r["iterations"], r["status"]) for r in reference]
    assert all(r["lr_selected"] for r in chosen)


def test_pruning_saves_lane_iterations(tuned_pair):
    """Rates that can no longer win stop early: far fewer lane-iterations than running every lane out."""
    pruned, full = tuned_pair
    assert any(r["status"] == "pruned" for r in pruned.records)
    assert sum(r["iterations"] for r in pruned.records) < 0.7 * sum(r["iterations"] for r in full)


def test_tuned_is_never_worse_than_the_reference_step_on_the_same_seeds(tmp_path):
    """The default grid holds multiplier 1, so each κ's tuned median is at most --lr theory's."""
    spec = QuadraticSpec(dim=12, spectrum="two-point", start="equal-loss")
    values = (1.0, 10.0, 100.0)
    tuned = selected(run_sweep(condition_sweep(values, methods=("gd",), problem=spec, seeds=3, lr="tuned"),
                               out_dir=tmp_path).records, ("kappa",))
    theory = run_sweep(condition_sweep(values, methods=("gd",), problem=spec, seeds=3), out_dir=tmp_path).records
    for k in values:
        t = np.median([r["iterations"] for r in tuned if r["kappa"] == k])
        th = np.median([r["iterations"] for r in theory if r["kappa"] == k])
        assert t <= th
    assert np.median([r["iterations"] for r in tuned if r["kappa"] == 1.0]) == 1
