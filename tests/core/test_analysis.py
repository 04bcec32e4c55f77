"""The one analysis pipeline (`otod.core.analysis`) against brute-force loops written here: the selection of
(lr, β) per point, its edge flags, the seed bootstrap that re-selects in every resample, the line fit and the
deterministic check."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from otod.core.analysis import (analyse, at_rung, bootstrap, chosen, cubes, deterministic, fit_line, frame_of,
                                mark_selection, nan_median, power_law, resampled_medians, select, sorted_rows, summary)

LOWER = ("censored", "stalled")


# -- a reference selection, one record at a time -----------------------------------------------------------------


def rate_of(r: dict) -> float:
    return r["lr_multiplier"] if r.get("lr_multiplier") is not None else r["learning_rate"]


def score(rows: list[dict]) -> float:
    """The median over the seeds run, lanes that did not converge (censored, stalled, diverged, pruned) as +∞."""
    return float(np.median([r["iterations"] if r["status"] == "converged" else math.inf for r in rows]))


def median_there(rows: list[dict]) -> tuple[float, bool]:
    """(median, whether it is only a lower bound) at a setting: censored and stalled lanes as +∞, diverged and
    pruned lanes left out."""
    values = [math.inf if r["status"] in LOWER else r["iterations"] for r in rows
              if r["status"] in ("converged",) + LOWER]
    if not values:
        return math.nan, False
    m = float(np.median(values))
    return m, math.isinf(m)


def reference_choice(settings: dict) -> tuple:
    """The setting (rate, β) a point keeps: the lowest score, ties to the smaller rate then β; where nothing
    converges on more than half the seeds, rate 1 at its smallest β, else the smallest (rate, β) tried."""
    best = min(settings, key=lambda k: (score(settings[k]), k[0], k[1]))
    if math.isinf(score(settings[best])):
        ones = sorted(k for k in settings if k[0] == 1.0)
        best = ones[0] if ones else min(settings)
    return best


def reference_select(records: list[dict], point: tuple[str, ...]) -> dict[int, tuple[bool, bool]]:
    """id → (lr_on_edge, beta_on_edge) of every record the reference keeps."""
    groups: dict = {}
    for r in records:
        key = (r["method"],) + tuple(r[f] for f in point if f != "beta")
        groups.setdefault(key, {}).setdefault((rate_of(r), r.get("beta", 0.0)), []).append(r)
    kept = {}
    for settings in groups.values():
        best = reference_choice(settings)
        m, bound = median_there(settings[best])
        finite = math.isfinite(m) and not bound
        rates = sorted({k[0] for k in settings if k[1] == best[1]})
        betas = sorted({k[1] for k in settings})
        lr_edge = finite and len(rates) > 1 and best[0] in (rates[0], rates[-1])
        beta_edge = finite and len(betas) > 1 and best[1] in (betas[0], betas[-1])
        kept.update({r["id"]: (lr_edge, beta_edge) for r in settings[best]})
    return kept


def random_records(rng: np.random.Generator, *, seeds: int = 5, drop: float = 0.1) -> list[dict]:
    """Two methods over 4 κ, β ∈ {0, 0.9} with an lr grid that depends on β (0.5, 1, 2 at β = 0; 0.25, 0.5 at
    0.9), counts from a small range (ties), and every status: converged, censored, stalled, diverged, pruned; a few
    lanes not run at all. One point fails everywhere (the reference step's fallback), one has no rate 1."""
    grids = {0.0: (0.5, 1.0, 2.0), 0.9: (0.25, 0.5)}
    statuses = ["converged"] * 6 + ["censored", "stalled", "diverged", "pruned"]
    records = []
    for method in ("gd", "heavy-ball"):
        for kappa in (1.0, 10.0, 100.0, 1000.0):
            for beta, rates in grids.items():
                for rate in rates:
                    if method == "heavy-ball" and kappa == 10.0 and rate == 1.0:
                        continue  # no reference step at this point
                    for seed in range(seeds):
                        if rng.random() < drop:
                            continue
                        status = "censored" if kappa == 1000.0 and method == "gd" else statuses[rng.integers(10)]
                        records.append({"id": len(records), "method": method, "kappa": kappa, "beta": beta,
                                        "lr_multiplier": rate, "learning_rate": rate / kappa, "seed": seed,
                                        "iterations": int(rng.integers(3, 9)) * 10, "status": status})
    return records


@pytest.mark.parametrize("seed", range(12))
def test_selection_is_the_reference_rule(seed):
    records = random_records(np.random.default_rng(seed))
    frame = frame_of(records)
    picked = select(frame, ("kappa", "beta"))
    reference = reference_select(records, ("kappa", "beta"))
    assert sorted(picked["id"].tolist()) == sorted(reference)
    assert picked["id"].tolist() == sorted(picked["id"].tolist())  # in frame order
    flags = dict(zip(picked["id"].tolist(), zip(picked["lr_on_edge"].tolist(), picked["beta_on_edge"].tolist())))
    assert flags == reference
    marked = mark_selection(frame, ("kappa", "beta"))
    assert set(marked.loc[marked["selected"], "id"]) == set(reference)
    assert not (marked.loc[~marked["selected"], ["lr_on_edge", "beta_on_edge"]].to_numpy().any())


def test_the_fallback_and_a_point_without_rate_one_are_exercised():
    records = random_records(np.random.default_rng(0), drop=0.0)
    kept = reference_select(records, ("kappa", "beta"))
    at_1000 = {(r["lr_multiplier"], r["beta"]) for r in records if r["id"] in kept and r["kappa"] == 1000.0
               and r["method"] == "gd"}
    assert at_1000 == {(1.0, 0.0)}  # every lane censored: the reference step
    no_one = {r["lr_multiplier"] for r in records if r["id"] in kept and r["kappa"] == 10.0
              and r["method"] == "heavy-ball"}
    assert 1.0 not in no_one


def test_the_luckiest_seed_does_not_win_and_ties_go_to_the_smaller_rate_then_beta():
    """Rate 2 has the single best seed (3) but median 50; rate 1 has median 20 and wins. Two settings with equal
    medians: the smaller rate; equal rates: the smaller β."""
    def rec(rate, beta, seed, it, status="converged"):
        return {"method": "gd", "kappa": 5.0, "lr_multiplier": rate, "beta": beta, "seed": seed, "iterations": it,
                "status": status}

    lucky = [rec(1.0, 0.0, s, i) for s, i in enumerate((20, 20, 21))] + \
        [rec(2.0, 0.0, s, i) for s, i in enumerate((3, 50, 60))]
    assert select(frame_of(lucky), ("kappa",))["iterations"].tolist() == [20, 20, 21]
    ties = [rec(r, b, s, 10) for r, b in ((3.0, 0.0), (1.0, 0.9), (1.0, 0.5)) for s in range(3)]
    picked = select(frame_of(ties), ("kappa",))
    assert set(zip(picked["lr_multiplier"], picked["beta"])) == {(1.0, 0.5)}


def test_edge_flags():
    """A chosen rate at either end of its β's grid is on the edge, at an inner rate it is not; a chosen β at
    either end of the β tried is; a chosen setting whose median is only a lower bound flags nothing."""
    def point(kappa, counts, status="converged"):
        return [{"method": "gd", "kappa": kappa, "lr_multiplier": rate, "beta": beta, "seed": s, "iterations": c,
                 "status": status} for (rate, beta), c in counts.items() for s in range(3)]

    records = point(1.0, {(0.5, 0.0): 30, (1.0, 0.0): 20, (2.0, 0.0): 10, (1.0, 0.5): 40}) + \
        point(2.0, {(0.5, 0.0): 30, (1.0, 0.0): 10, (2.0, 0.0): 20, (1.0, 0.5): 5}) + \
        point(3.0, {(0.5, 0.0): 30, (1.0, 0.0): 10, (2.0, 0.0): 20}) + \
        point(4.0, {(0.5, 0.0): 30, (1.0, 0.0): 10}, status="censored")
    s = summary(chosen(cubes(frame_of(records), ("kappa",))[0]), "kappa")
    assert s[["rate", "beta"]].to_numpy().tolist() == [[2.0, 0.0], [1.0, 0.5], [1.0, 0.0], [1.0, 0.0]]
    assert s["lr_on_edge"].tolist() == [True, False, False, False]  # at κ = 2 β = 0.5 has one rate only
    assert s["beta_on_edge"].tolist() == [True, True, False, False]  # κ = 3: one β tried; κ = 4: a lower bound
    assert s["lr_on_edge"].tolist()[3] is False  # rate 1 is the largest at κ = 4, but its median is only a bound
    assert s["lower_bound"].tolist() == [False, False, False, True]


# -- the bootstrap against a brute-force loop --------------------------------------------------------------------


def brute_force_medians(records: list[dict], kappas: list[float], n_boot: int, seed: int, seeds: int) -> np.ndarray:
    """[replicate, point]: draw the seed columns as the bootstrap does, rebuild every point's records from the
    drawn seeds (a seed drawn twice counts twice), re-choose the setting by the reference rule, take the median
    there (lower bounds and non-positive medians as NaN); a point whose median over every seed is NaN so is NaN in
    every replicate."""
    cols = np.random.default_rng(seed).integers(0, seeds, (n_boot, seeds))
    by = {}
    for r in records:
        by.setdefault(r["kappa"], {}).setdefault((rate_of(r), r.get("beta", 0.0)), {})[r["seed"]] = r

    def medians(drawn):
        out = np.full(len(kappas), np.nan)
        for i, kappa in enumerate(kappas):
            settings = {k: [lanes[s] for s in drawn if s in lanes] for k, lanes in by[kappa].items()}
            settings = {k: v for k, v in settings.items() if v}
            m, bound = median_there(settings[reference_choice(settings)]) if settings else (math.nan, False)
            out[i] = m if math.isfinite(m) and not bound and m > 0 else np.nan
        return out

    every = np.isfinite(medians(range(seeds)))
    return np.stack([np.where(every, medians(drawn), np.nan) for drawn in cols])


@pytest.mark.parametrize("seed", range(4))
def test_bootstrap_replicates_equal_the_brute_force_loop_bitwise(seed):
    rng = np.random.default_rng(100 + seed)
    records = [r for r in random_records(rng, seeds=6, drop=0.05) if r["method"] == "heavy-ball"]
    (cube,) = cubes(frame_of(records), ("kappa",))
    boot = bootstrap(cube, "kappa", power_law(), n_boot=60, seed=seed)
    assert not boot.deterministic
    expected = brute_force_medians(records, [1.0, 10.0, 100.0, 1000.0], 60, seed, 6)
    np.testing.assert_array_equal(boot.medians, expected)
    np.testing.assert_array_equal(boot.replicates, power_law()(cube.x("kappa"), expected))


def test_a_point_whose_median_is_a_lower_bound_stays_out_of_every_replicate():
    """κ = 1, 10, 100 converge at 3√κ (±10% by seed); at κ = 1000 four of 8 seeds converge at 30 iterations and four
    are censored at 20000, so its median is only a bound and the estimate fits the first three points (b ≈ 0.5).
    A resample that draws five converged seeds there would fit 30 as that point's median, a flatter line: it must
    not. Every
    replicate leaves κ = 1000 out, and the 95% interval holds the estimate (it did not when the points were redone
    per replicate)."""
    rng = np.random.default_rng(3)
    records = []
    for kappa in (1.0, 10.0, 100.0, 1000.0):
        for s in range(8):
            hard = kappa == 1000.0 and s >= 4
            easy = 30 if kappa == 1000.0 else round(3 * kappa ** 0.5 * rng.uniform(0.9, 1.1))
            count = 20000 if hard else easy
            records.append({"method": "gd", "kappa": kappa, "lr_multiplier": 1.0, "beta": 0.0, "seed": s,
                            "iterations": count, "status": "censored" if hard else "converged"})
    (cube,) = cubes(frame_of(records), ("kappa",))
    boot = bootstrap(cube, "kappa", power_law(), n_boot=400)
    assert not boot.deterministic
    assert np.isnan(boot.medians[:, 3]).all()
    assert np.isfinite(boot.medians[:, :3]).all()
    low, high = boot.ci(0)
    assert low <= boot.estimate[0] <= high, (low, boot.estimate[0], high)


def test_only_the_points_a_power_law_reads_are_resampled():
    records = [r for r in random_records(np.random.default_rng(7), seeds=6) if r["method"] == "heavy-ball"]
    (cube,) = cubes(frame_of(records), ("kappa",))
    every = bootstrap(cube, "kappa", power_law(), n_boot=40)
    some = bootstrap(cube, "kappa", power_law(10.0), n_boot=40)
    assert np.isnan(some.medians[:, 0]).all()
    np.testing.assert_array_equal(some.medians[:, 1:], every.medians[:, 1:])


def steady_and_spread(shift: int) -> list[dict]:
    """κ = 10, 100, 1000, two rates with about the same median count ≈ 3√κ: rate 0.5 steady (every seed within 3%
    of it, median 1.015·3√κ), rate 1 spread (four seeds at 0.6·3√κ, four at 1.6·3√κ: median 1.1·3√κ), its fast seeds
    a different four at each κ (``shift``). From every seed the steady rate wins at every κ; a resample that draws
    more of the spread rate's fast seeds chooses it."""
    rows = []
    for i, k in enumerate((10.0, 100.0, 1000.0)):
        fast = {(shift + i + j) % 8 for j in range(4)}
        for s in range(8):
            for rate, factor in ((0.5, 1.0 + 0.01 * (s // 2)), (1.0, 0.6 if s in fast else 1.6)):
                rows.append({"method": "gd", "kappa": k, "lr_multiplier": rate, "seed": s, "status": "converged",
                             "iterations": float(round(30 * k ** 0.5 * factor))})
    return rows


@pytest.mark.parametrize("shift", range(4))
def test_a_ci_that_re_selects_is_wider_than_one_at_the_selection_from_every_seed(shift):
    """The interval that keeps the rate chosen from every seed resamples the steady rate alone: narrow. The one
    that re-chooses in every resample also sees the spread rate win: the selection is part of the estimator.
    (Where several rates share one distribution the re-chosen interval is not wider: the median of the luckiest of
    k rates varies less than one rate's median; what it corrects there is the luck, not the width.)"""
    frame = frame_of(steady_and_spread(shift))
    (aware,) = cubes(frame, ("kappa",))
    (fixed,) = cubes(select(frame, ("kappa",)), ("kappa",))
    assert aware.rates[chosen(aware).index].tolist() == [0.5, 0.5, 0.5]
    wide, narrow = bootstrap(aware, "kappa", power_law()), bootstrap(fixed, "kappa", power_law())
    assert wide.estimate[0] == narrow.estimate[0]  # the same selection from every seed
    width = lambda b: b.ci(0)[1] - b.ci(0)[0]  # noqa: E731
    assert width(wide) > 3 * width(narrow)
    assert (wide.medians < narrow.medians.min(0)).any()  # resamples where the spread rate's fast seeds won


def test_deterministic_is_every_seed_alike_at_every_setting():
    """Identical seeds at every point and setting: deterministic, and the CI is the estimate. One seed differing
    at a setting that is not chosen is enough to make it not deterministic (it could change the choice)."""
    rows = [{"method": "gd", "kappa": k, "lr_multiplier": rate, "seed": s, "status": "converged",
             "iterations": int(k * (2 if rate == 1.0 else 3))} for k in (10.0, 100.0) for rate in (1.0, 2.0)
            for s in range(4)]
    (cube,) = cubes(frame_of(rows), ("kappa",))
    assert deterministic(cube)
    boot = bootstrap(cube, "kappa", power_law())
    assert boot.deterministic and boot.ci(0) == (boot.estimate[0], boot.estimate[0]) == pytest.approx((1.0, 1.0))
    rows[-1] = {**rows[-1], "iterations": 301}
    (cube,) = cubes(frame_of(rows), ("kappa",))
    assert not deterministic(cube)
    assert deterministic(cube, np.array([True, False]))
    rows[-1] = {**rows[-1], "iterations": 300, "status": "stalled"}
    assert not deterministic(cubes(frame_of(rows), ("kappa",))[0])


def test_fit_line_equals_numpy_polyfit_and_ignores_non_finite_entries():
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 5, (20, 9))
    y = 1.5 - 0.7 * x + rng.normal(0, 0.1, x.shape)
    y[rng.random(y.shape) < 0.2] = np.nan
    y[0, :] = np.nan
    y[1, 1:] = np.nan
    slope, intercept, rss = fit_line(x, y)
    for i in range(2, len(x)):
        ok = np.isfinite(y[i])
        b, a = np.polyfit(x[i, ok], y[i, ok], 1)
        assert slope[i] == pytest.approx(b, rel=1e-12) and intercept[i] == pytest.approx(a, rel=1e-12)
        assert rss[i] == pytest.approx(np.sum((y[i, ok] - a - b * x[i, ok]) ** 2), rel=1e-9)
    assert np.isnan(slope[:2]).all() and np.isnan(fit_line([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])[0])


def test_at_rung_reads_the_hit_columns_and_censors_lanes_that_missed_the_rung():
    records = [{"method": "gd", "kappa": 1.0, "seed": s, "iterations": 40, "status": st, "hits": h}
               for s, (st, h) in enumerate((("converged", [5, 40]), ("converged", [7, None]),
                                            ("diverged", [None, None])))]
    for frame in (frame_of(records), pd.DataFrame.from_records(records)):  # columns hits[k], or one list column
        at = at_rung(frame, 1)
        assert at["status"].tolist() == ["converged", "censored", "diverged"]
        assert at["iterations"].tolist() == [40, 40, 40]
        assert at_rung(frame, 0)["iterations"].tolist() == [5, 7, 40]


def test_one_analysis_groups_static_points_and_fits_each():
    """Two dimensions (a static axis): one group each, sorted, each with its own chosen records and fit."""
    rows = [{**r, "dim": d, "iterations": r["iterations"] * (1 if d == 4 else 2)}
            for d in (8, 4) for r in steady_and_spread(0)]
    analysis = analyse(frame_of(rows), point=("kappa", "dim"), axis="kappa", by=("dim",),
                       fit=lambda name, boot, stat, summary: boot.estimate[0], n_boot=50)
    assert [g.heading for g in analysis.groups] == ["dim = 4", "dim = 8"]
    for group in analysis.groups:
        assert len(group.chosen) == 3 * 8 and set(group.chosen["dim"]) == {group.key[0]}
        assert set(group.chosen["lr_multiplier"]) == {0.5} and group.fits[0] == pytest.approx(0.5, abs=0.01)
        assert group.summary["value"].tolist() == [10.0, 100.0, 1000.0]
    assert len(analysis.chosen) == 48


# -- the bootstrap's medians -------------------------------------------------------------------------------------


def test_nan_median_equals_numpys_with_nan_and_infinity():
    """Odd and even counts, NaN left out, +∞ (a censored lane) counted as a value, all-NaN rows NaN."""
    rng = np.random.default_rng(0)
    a = rng.integers(1, 50, (300, 7, 9)).astype(float)
    a[rng.random(a.shape) < 0.2] = np.nan
    a[rng.random(a.shape) < 0.1] = np.inf
    a[0, 0] = np.nan
    with np.errstate(invalid="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            expected = np.nanmedian(a, axis=-1)
    np.testing.assert_array_equal(nan_median(a), expected)


def test_resampled_medians_equal_the_medians_of_the_gathered_resamples_bitwise():
    """The bootstrap's counting shortcut gives exactly what gathering each replicate's columns and taking their
    NaN-ignoring median gives: odd and even numbers of seeds, NaN (diverged) and +∞ (censored) lanes, an all-NaN
    point, and one seed."""
    rng = np.random.default_rng(1)
    for points, seeds in ((40, 9), (40, 8), (25, 1), (300, 64)):
        a = np.round(rng.lognormal(3, 1, (points, seeds)))
        a[rng.random(a.shape) < 0.15] = np.nan
        a[rng.random(a.shape) < 0.05] = np.inf
        a[0] = np.nan
        cols = rng.integers(0, seeds, (50, seeds))
        expected = nan_median(a[:, cols].transpose(1, 0, 2))
        np.testing.assert_array_equal(resampled_medians(sorted_rows(a), cols), expected)


def test_a_fits_band_is_the_pointwise_percentiles_of_its_replicate_curves_and_absent_without_a_ci():
    """A drawn fit's 95% band (`pointwise_band`, `Bootstrap.band`): at each x the 2.5 and 97.5 percentiles over the
    replicate curves. 100 replicates a_r·x with a_r = 10 + r/10 give 10.2475·x and 19.6525·x (numpy's linear
    percentiles of 10, 10.1, …, 19.9); replicates not finite at every x are left out (the band is unchanged by
    10 NaN and +∞ rows); none with fewer than 20 finite replicates, where the bootstrap is deterministic, or
    where its seeds are too few for a CI (3 seeds: `no_ci_reason`)."""
    from types import SimpleNamespace

    from otod.core.analysis import Bootstrap, pointwise_band

    a = 10 + np.arange(100) / 10
    x = np.array([1.0, 3.0, 10.0])
    lo, hi = pointwise_band(a[:, None] * x[None, :])
    np.testing.assert_allclose(lo, 10.2475 * x, rtol=1e-12)
    np.testing.assert_allclose(hi, 19.6525 * x, rtol=1e-12)
    rows = np.column_stack([np.ones(100), a, np.zeros(100)])  # (b, a, RMS) of a·x^b: the PowerLaw statistic's rows
    bad = np.array([[np.nan, 1.0, 0.0]] * 5 + [[1.0, np.inf, 0.0]] * 5)
    seeds = SimpleNamespace(cube=SimpleNamespace(count=np.zeros((3, 1, 8))))

    def boot(replicates, deterministic=False, choice=seeds):
        return Bootstrap(choice, np.array([1.0, 15.0, 0.0]), replicates, np.empty((0, 3)), deterministic)

    line = lambda r: r[:, 1:2] * x[None, :] ** r[:, 0:1]  # noqa: E731
    lo, hi = boot(np.vstack([rows, bad])).band(line)
    np.testing.assert_allclose([lo, hi], [10.2475 * x, 19.6525 * x], rtol=1e-12)
    assert boot(rows[:19]).band(line) is None and boot(np.vstack([rows[:19], bad])).band(line) is None
    assert boot(rows[:20]).band(line) is not None
    assert boot(np.empty((0, 3)), deterministic=True).band(line) is None
    few = SimpleNamespace(cube=SimpleNamespace(count=np.zeros((3, 1, 3))))
    assert boot(rows, choice=few).band(line) is None


# -- where a choice lies (lr_places, beta_places) -----------------------------------------------------------------


def lanes_at(rates_statuses: list[tuple[float, float, str, int]], seeds: int = 3) -> pd.DataFrame:
    """Records of one point: (rate, β, status, iterations) per setting, the same on every seed."""
    return pd.DataFrame([{"kappa": 10.0, "method": "gd", "seed": s, "lr_multiplier": r, "beta": b, "status": st,
                          "iterations": it} for r, b, st, it in rates_statuses for s in range(seeds)])


@pytest.mark.parametrize("settings, expected", [
    # the best (rate 1) has a slower, converging rate above it: inside the rates tried
    ([(0.5, 0.0, "converged", 40), (1.0, 0.0, "converged", 20), (2.0, 0.0, "converged", 30)], "interior"),
    # the rate above the best diverged: no larger step is stable, the stability limit
    ([(0.5, 0.0, "converged", 40), (1.0, 0.0, "converged", 20), (2.0, 0.0, "diverged", 5)], "limit"),
    # the best is the largest tried: the end of the grid (the best may lie beyond)
    ([(0.5, 0.0, "converged", 40), (1.0, 0.0, "converged", 20), (2.0, 0.0, "converged", 10)], "grid end"),
    # the best is the smallest tried
    ([(0.5, 0.0, "converged", 10), (1.0, 0.0, "converged", 20), (2.0, 0.0, "diverged", 5)], "grid end"),
    # the rate above diverged at another β only: at the chosen β it is the largest tried, so on the edge
    ([(0.5, 0.0, "converged", 40), (1.0, 0.0, "converged", 20), (2.0, 0.9, "diverged", 5)], "grid end"),
])
def test_lr_places_say_interior_limit_or_grid_end(settings, expected):
    from otod.core.analysis import lr_places

    (cube,) = cubes(lanes_at(settings), ["kappa"])
    assert lr_places(chosen(cube)).tolist() == [expected]


def test_a_choice_on_a_listed_grid_end_is_a_list_end_and_is_reported_so():
    from otod.core.analysis import lr_places

    frame = lanes_at([(0.5, 0.0, "converged", 40), (1.0, 0.0, "converged", 10)])
    (cube,) = cubes(frame, ["kappa"])
    assert lr_places(chosen(cube), given=True).tolist() == ["list end"]
    rows = analyse(frame, point=["kappa"], axis="kappa", n_boot=0, given=("lr",))
    assert rows.groups[0].summary["lr_place"].tolist() == ["list end"]
    assert set(rows.chosen["lr_place"]) == {"list end"} and len(rows.chosen) == 3  # every seed's record says it


def test_beta_places_zero_is_its_limit_and_the_top_a_list_or_grid_end():
    from otod.core.analysis import beta_places

    low = lanes_at([(1.0, 0.0, "converged", 10), (1.0, 0.9, "converged", 20)])
    high = lanes_at([(1.0, 0.0, "converged", 20), (1.0, 0.9, "converged", 10)])
    inside = lanes_at([(1.0, 0.0, "converged", 20), (1.0, 0.5, "converged", 10), (1.0, 0.9, "converged", 15)])
    assert beta_places(chosen(cubes(low, ["kappa"])[0])).tolist() == ["limit"]
    assert beta_places(chosen(cubes(high, ["kappa"])[0])).tolist() == ["grid end"]
    assert beta_places(chosen(cubes(high, ["kappa"])[0]), given=True).tolist() == ["list end"]
    assert beta_places(chosen(cubes(inside, ["kappa"])[0])).tolist() == ["interior"]
