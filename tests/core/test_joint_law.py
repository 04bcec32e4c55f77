"""The joint law of the critical batch over a data × parameters grid (`otod.core.joint_law`): S(B) records drawn
from a known law (per cell S(B, ε) = S_min (1 + B_crit/B)/(r(2 − r)) with B_crit = scale·D^a·P^b, a few rates per
batch on the nets' grid so the choice of rate matters, log-normal seed noise as the nets' fixture has it:
`benchmarks/bootstrap_coverage.py`) give back their exponents inside the intervals, and the verdict the intervals
decide; Zhang et al.'s critical batch equals its closed form on an exact hyperbola; each cell's B_crit is the one a
single batch sweep's analysis reads."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest

from otod.core import analysis as core
from otod.core.critical_batch import analyse_batches
from otod.core.joint_law import (ABOVE, INSIDE, analyse_grid, detectable_difference, verdict,
                                 zhang_critical_batch)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bootstrap_coverage import BATCHES, GridLaw, Noise, grid_records, lr_grid  # noqa: E402

#: Two decades of D and of P, four values each.
DATA = (100.0, 464.0, 2154.0, 10000.0)
PARAMS = (1e3, 4.64e3, 2.15e4, 1e5)
N_BOOT = 200


def grid_cube(frame) -> core.Cube:
    (cube,) = core.cubes(frame, ("examples", "dim", "batch"))
    return cube


@pytest.mark.parametrize("b_crit", [3.0, 40.0, 600.0, 1000.0])
@pytest.mark.parametrize("batches", [BATCHES, np.array([3.0, 5.0, 11.0, 30.0, 70.0, 250.0, 900.0])])
def test_zhangs_critical_batch_on_an_exact_hyperbola_is_its_closed_form(b_crit, batches):
    """On S = S_min (1 + B_crit/B) the overhead over linear scaling from B_0 is R(B) = (B + B_crit)/(B_0 +
    B_crit); R = 1.2 at B = 1.2·B_0 + 0.2·B_crit, which the function returns to 1e-12 wherever that lies inside
    the grid, and +∞ (beyond the grid) where it lies past the largest batch; the order of the batches does not
    matter."""
    steps = 70.0 * (1 + b_crit / batches)
    expected = 1.2 * batches.min() + 0.2 * b_crit
    found = zhang_critical_batch(batches[::-1], steps[::-1])
    if expected <= batches.max():
        assert found == pytest.approx(expected, rel=1e-12)
    else:
        assert found == math.inf


def test_zhangs_critical_batch_is_the_first_crossing_and_nan_without_two_points():
    """Steps that cross 1.2 × linear scaling, fall back under it and cross again: the first crossing counts (the
    batches up to it all stay within 20%); the smallest batch with steps is B_0 (a NaN there is skipped)."""
    b = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    # R = S·B/(S_0·B_0) = 1, 1.1, 1.4, 1.0, 2.0: crosses 1.2 between B = 2 and 4, a third of the way
    steps = np.array([100.0, 55.0, 35.0, 12.5, 12.5])
    assert zhang_critical_batch(b, steps) == pytest.approx(2.0 + (1.2 - 1.1) / (1.4 - 1.1) * 2.0, rel=1e-12)
    # without B = 1, B_0 = 2: R(4) = 35·4/(55·2) = 1.27, so the crossing lies between 2 and 4
    r4 = 35.0 * 4 / (55.0 * 2)
    assert zhang_critical_batch(b, np.r_[np.nan, steps[1:]]) == pytest.approx(2.0 + 0.2 / (r4 - 1) * 2.0, rel=1e-12)
    assert math.isnan(zhang_critical_batch(b, [np.nan, np.nan, 30.0, np.nan, np.nan]))


@pytest.mark.parametrize("a_ci, b_ci, d_ci, answer", [
    ((0.3, 0.7), (-0.1, 0.2), (0.2, 0.7), "grows with D"),
    ((-0.1, 0.2), (0.3, 0.7), (-0.7, -0.2), "grows with P"),
    ((0.3, 0.7), (0.1, 0.6), (-0.1, 0.5), "both"),
    ((0.3, 0.7), (0.1, 0.2), (0.1, 0.5), "both"),
    ((-0.1, 0.2), (-0.2, 0.3), (-0.3, 0.3), "neither"),
    ((-0.4, -0.1), (-0.2, 0.3), (-0.5, 0.1), "neither"),
    ((0.3, 0.7), (-0.1, 0.6), (-0.2, 0.5), "cannot tell"),
    ((-0.1, 0.6), (0.3, 0.7), (-0.5, 0.2), "cannot tell"),
    ((0.3, 0.7), (-0.1, 0.9), (-0.5, -0.05), "cannot tell"),  # b may exceed a: D's growth is not D's alone
    ((0.3, 0.7), (math.nan, math.nan), (math.nan, math.nan), "no CI"),
])
def test_the_verdict_is_what_the_three_intervals_decide(a_ci, b_ci, d_ci, answer):
    """The table of `verdict`'s rules: an exponent grows where its interval lies above 0; one growing with the
    a − b interval on its side is that variable's; one growing with a − b holding 0 cannot tell; both growing is
    both; none growing is neither. The detectable difference comes exactly where a − b holds 0."""
    mid = lambda ci: sum(ci) / 2  # noqa: E731
    found = verdict((mid(a_ci), a_ci), (mid(b_ci), b_ci), (mid(d_ci), d_ci))
    assert found.answer == answer
    holds_zero = d_ci[0] <= 0 <= d_ci[1]
    assert (found.detectable is not None) == holds_zero
    assert "flat" not in str(found)


def test_an_interval_holding_zero_is_said_as_its_upper_bound_rounded_up():
    found = verdict((0.5, (0.42, 0.58)), (0.02, (-0.05, 0.2341)), (0.48, (0.3, 0.6)))
    assert found.answer == "grows with D"
    assert "grows with D as D^0.50 [0.42, 0.58]" in found.lines[0]
    assert found.lines[1].startswith("grows no faster than P^0.24 ")


def test_the_detectable_difference_is_found_with_80_percent_power():
    """δ = half-width·(z_0.975 + z_0.8)/z_0.975: with the estimate N(δ, SE²), SE = half-width/z_0.975, an interval
    of that half-width excludes 0 with probability Φ(δ/SE − z) + Φ(−δ/SE − z) = 0.80 (to 1e-6: the far tail is
    ~1e-8)."""
    ci = (-0.3, 0.5)
    z = NormalDist().inv_cdf(0.975)
    delta = detectable_difference(ci)
    assert delta == pytest.approx(0.4 * (z + NormalDist().inv_cdf(0.8)) / z, rel=1e-12)
    se = 0.4 / z
    power = NormalDist().cdf(delta / se - z) + NormalDist().cdf(-delta / se - z)
    assert power == pytest.approx(0.8, abs=1e-6)


def test_noise_free_records_on_a_fine_rate_grid_give_back_the_exponents():
    """One seed (deterministic: each interval is the estimate), rates 64 per decade so each batch's best rate is
    within 10^(1/128) of ε_opt, and S_min = 10⁴ so rounding to whole steps is ≤ 5·10⁻⁵: each cell's B_crit
    (38 to 175) within 0.5% of the law (0.2% in tests/core/test_bootstrap_coverage.py), a = 0.5 and b = −0.3
    within 0.005, and the law's answer "grows with D" (P's exponent falls); each cell's Zhang critical batch is
    1.2·B_0 + 0.2·B_crit of its law within 1%."""
    grid = GridLaw(scale=30.0, a=0.5, b=-0.3, s_min=1e4)
    frame = grid_records(grid, DATA[:3], PARAMS[:3], Noise(0.0, 0.0), 1, np.random.default_rng(0),
                         rates=lr_grid(64))
    found = analyse_grid(grid_cube(frame), n_boot=N_BOOT)
    law = found.mccandlish
    assert law.a == pytest.approx(0.5, abs=5e-3) and law.b == pytest.approx(-0.3, abs=5e-3)
    assert law.a_ci == (law.a, law.a) and law.cells == 9 and not law.left_out
    assert law.verdict().answer == "grows with D"
    for cell in found.cells:
        b_crit = grid.at(cell.data, cell.params).b_crit
        assert cell.values["mccandlish"] == pytest.approx(b_crit, rel=5e-3)
        assert cell.values["zhang"] == pytest.approx(1.2 * BATCHES[0] + 0.2 * b_crit, rel=1e-2)


def test_the_joint_fit_recovers_growth_with_data_and_bounds_the_growth_with_parameters():
    """B_crit = 0.8·D^0.5·P^0 (8 to 80 over the grid, inside the batches 4..256), 8 seeds, log-SD 0.6 of which the
    seed shares 3/4, the nets' 4 rates per decade: a = 0.5 and b = 0 lie inside their 95% intervals, the answer is
    "grows with D" and the P exponent is said as an upper bound. A swapped D and P would put 0.5 in b's interval
    and fail."""
    frame = grid_records(GridLaw(0.8, 0.5, 0.0), DATA, PARAMS, Noise(), 8, np.random.default_rng(1))
    found = analyse_grid(grid_cube(frame), n_boot=N_BOOT)
    law = found.mccandlish
    assert law.cells == 16 and law.rows > 0.9 * N_BOOT
    assert law.a_ci[0] <= 0.5 <= law.a_ci[1] and law.b_ci[0] <= 0.0 <= law.b_ci[1]
    said = law.verdict()
    assert said.answer == "grows with D" and said.detectable is None
    assert said.lines[1].startswith(f"grows no faster than P^{math.ceil(law.b_ci[1] * 100) / 100:.2f}")
    assert all(c.places["mccandlish"] == INSIDE for c in found.cells)


def test_equal_exponents_on_a_narrow_parameter_axis_cannot_be_told_apart():
    """a = b = 0.5 with D over two decades but P over only 1.1×: a's interval lies above 0, b's (about ±3 wide)
    holds 0 and so does a − b's, so the answer is "cannot tell", with the smallest detectable |a − b| from the
    a − b interval (several times the b = 0 grid's: P's spread is 40 times smaller)."""
    frame = grid_records(GridLaw(0.8 / 1000 ** 0.5, 0.5, 0.5), DATA, (1000.0, 1100.0), Noise(), 8,
                         np.random.default_rng(2))
    law = analyse_grid(grid_cube(frame), n_boot=N_BOOT).mccandlish
    assert law.a_ci[0] <= 0.5 <= law.a_ci[1] and law.b_ci[0] <= 0.5 <= law.b_ci[1]
    said = law.verdict()
    assert said.answer == "cannot tell"
    assert said.detectable == pytest.approx(detectable_difference(law.difference_ci), rel=1e-12)
    assert said.detectable > 1.0 and f"{said.detectable:.2f}" in said.lines[2]


def test_each_cells_b_crit_and_replicates_are_the_batch_sweep_analysis_s():
    """The grid's one bootstrap resamples the seed columns once for every cell, as each panel of a batch sweep's
    analysis does from the same bootstrap seed (`analyse_batches`, panels by D and P): each cell's B_crit and its
    replicates are that analysis's, bitwise."""
    frame = grid_records(GridLaw(0.8, 0.5, 0.0), DATA[:2], PARAMS[:2], Noise(), 5, np.random.default_rng(3))
    found = analyse_grid(grid_cube(frame), n_boot=60, seed=4)
    sweep = analyse_batches(frame, {}, axis="batch", point=("dim", "examples", "batch"), by=("dim", "examples"),
                            n_boot=60, seed=4)
    n = len(found.cells)
    for series in sweep.series:
        panel = dict(series.panel)
        (c,) = [i for i, cell in enumerate(found.cells)
                if (cell.data, cell.params) == (panel["examples"], panel["dim"])]
        assert found.cells[c].values["mccandlish"] == series.critical.b_crit
        np.testing.assert_array_equal(found.boot.replicates[:, c], series.critical.replicates[:, 1])
        assert found.boot.replicates.shape == (60, 2 * n)


def test_a_cell_whose_b_crit_lies_beyond_its_batches_is_left_out_of_the_law():
    """The cell (D, P) = (10⁴, 10⁵) measured only at B = 4..16 has McCandlish's B_crit 80 beyond them: it is
    marked above its batches and left out of that law, which fits the other 8 cells. Each law leaves out exactly
    the cells whose own value is not inside their batches (Zhang's, read off three noisy medians, may or may not
    cross 1.2 there: its true R(16) = 96/84 = 1.14)."""
    frame = grid_records(GridLaw(0.8, 0.5, 0.0), DATA[1:], PARAMS[1:], Noise(), 5, np.random.default_rng(5))
    cut = (frame["examples"] == DATA[-1]) & (frame["dim"] == PARAMS[-1]) & (frame["batch"] > 16)
    found = analyse_grid(grid_cube(frame[~cut].reset_index(drop=True)), n_boot=N_BOOT)
    last = found.cells[-1]
    assert (last.data, last.params) == (DATA[-1], PARAMS[-1])
    assert last.places["mccandlish"] == ABOVE and last.batches == (4.0, 16.0)
    assert found.mccandlish.cells == 8
    assert found.mccandlish.left_out == ((DATA[-1], PARAMS[-1], ABOVE),)
    for name, law in found.laws.items():
        out = tuple((c.data, c.params, c.places[name]) for c in found.cells if c.places[name] != INSIDE)
        assert law.left_out == out and law.cells == 9 - len(out)
