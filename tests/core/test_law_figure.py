"""The law panel's fit bands (`otod.core.law_figure`): each chosen law drawn with its pointwise 95% band over the
seed bootstrap's replicate laws, and none where the law has no CI."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PolyCollection

from otod.core.analysis import Bootstrap, analyse
from otod.core.law_figure import draw_series, law_band, law_label, legend_keys
from otod.core.laws import LAWS, law_fit
from otod.core.plotting import plt


def test_a_laws_band_is_the_percentiles_of_its_replicate_laws():
    """100 replicate rows of the `Laws` statistic with a_r = 10 + r/10 (b = 1 for the power law, c = 0.5 for the
    exponential) give the bands 10.2475 and 19.6525 times x and times e^(0.5x); no band without a law."""
    a = 10 + np.arange(100) / 10
    ones, zeros = np.ones(100), np.zeros(100)
    rows = np.column_stack([ones, a, zeros, 0.5 * ones, a, zeros, 5 * ones])
    boot = Bootstrap(None, rows[0], rows, np.empty((0, 5)), False)
    x = np.array([1.0, 2.0, 4.0])
    np.testing.assert_allclose(law_band(boot, "power", x), [10.2475 * x, 19.6525 * x], rtol=1e-12)
    np.testing.assert_allclose(law_band(boot, "exponential", x), [10.2475 * np.exp(0.5 * x),
                                                                   19.6525 * np.exp(0.5 * x)], rtol=1e-12)
    assert law_band(boot, None, x) is None
    assert law_band(boot._replace(deterministic=True), "power", x) is None


def _analysis(seeds: int, spread: float = 0.05):
    """Depths 1–5 of one series whose counts are 10·2^L times 1 + spread·(seed offset), the offsets a different
    permutation at each depth (so resamples move the medians), one learning rate; the laws fitted by AIC."""
    rng = np.random.default_rng(0)
    rows = [{"method": "s", "depth": float(d), "seed": s, "status": "converged", "learning_rate": 0.1,
             "iterations": 10 * 2.0 ** d * (1 + spread * o)}
            for d in range(1, 6) for s, o in enumerate(rng.permutation(np.linspace(-1, 1, seeds)))]
    return analyse(pd.DataFrame(rows), point=("depth",), axis="depth", statistic=lambda x: LAWS,
                   fit=lambda name, boot, stat, summary=None: law_fit(name, boot, "depth"), n_boot=200)


def _hatched(ax) -> list:
    """The hatched bands drawn on ``ax`` (not the legend's empty key)."""
    return [c for c in ax.collections if isinstance(c, PolyCollection) and c.get_hatch() and c.get_paths()]


def test_draw_series_hatches_each_laws_band_and_names_it_once_and_draws_none_without_a_ci():
    """8 seeds: the exponential law (c = ln 2 = 0.69) dotted over depths 1–5 with its hatched band, whose edges
    are `law_band` of the series' bootstrap on the drawn grid and bracket the law; the legend quotes c with its
    CI and names the band once. 3 seeds (no CI) and equal seeds (deterministic): the law alone, no band, no key,
    no CI in the legend."""
    (series,) = _analysis(8).series
    assert series.fit.law == "exponential" and series.fit.exp_c == pytest.approx(np.log(2), abs=0.02)
    fig, ax = plt.subplots()
    marks: set = set()
    draw_series(ax, [series], "depth", marks=marks, curves=True)
    legend_keys(ax, marks)
    (band,) = _hatched(ax)
    ys = band.get_paths()[0].vertices[:, 1]
    grid = np.linspace(1, 5, 50)
    lo, hi = law_band(series.boot, "exponential", grid)
    assert ys.min() == pytest.approx(lo.min()) and ys.max() == pytest.approx(hi.max())
    law = 10 * 2.0 ** grid
    assert np.all(lo <= law * 1.02) and np.all(hi >= law * 0.98) and np.all(hi > lo)
    low, high = series.fit.exp_ci
    assert f"c = {series.fit.exp_c:.2f} [{low:.2f}, {high:.2f}]" in law_label(series.fit)
    assert ax.get_legend_handles_labels()[1].count("hatched: each fit's 95% band (seeds)") == 1
    plt.close(fig)
    for analysis in (_analysis(3), _analysis(8, spread=0.0)):
        (series,) = analysis.series
        fig, ax = plt.subplots()
        marks = set()
        draw_series(ax, [series], "depth", marks=marks, curves=True)
        legend_keys(ax, marks)
        assert series.fit.law == "exponential" and _hatched(ax) == [] and "law-band" not in marks
        assert "[" not in law_label(series.fit) and not any("hatched" in t for t in ax.get_legend_handles_labels()[1])
        plt.close(fig)
