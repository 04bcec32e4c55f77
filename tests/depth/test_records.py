"""(lr, β) chosen by the median over seeds: β with the lowest median, censored lanes worst, ties to the smaller β."""

from __future__ import annotations

from otod.depth.records import choose_beta


def rows(beta, counts, censored=()):
    return [{"depth": 2.0, "init": 0.0, "method": "heavy-ball", "beta": beta, "seed": s,
             "iterations": c, "status": "censored" if s in censored else "converged"} for s, c in enumerate(counts)]


def test_the_beta_with_the_lowest_median_wins_not_the_luckiest_seed():
    """β = 0.9 has the single best seed (1) but a median of 50; β = 0.5 has median 20 and wins."""
    records = rows(0.5, [20, 20, 21]) + rows(0.9, [1, 50, 60])
    assert {r["beta"] for r in choose_beta(records, ("depth", "init"))} == {0.5}


def test_censored_lanes_count_as_worst_and_ties_go_to_the_smaller_beta():
    records = rows(0.0, [30, 30, 30]) + rows(0.5, [5, 5, 5], censored=(0, 1)) + rows(0.9, [30, 30, 30])
    assert {r["beta"] for r in choose_beta(records, ("depth", "init"))} == {0.0}
