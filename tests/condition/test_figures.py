"""Figures: files written, and what the legend tells about left-out lanes."""

import math

from otod.condition.figures import fit_label, zigzag_figure, zigzag_paths
from otod.core.fit import PowerLawFit


def fit(**kw):
    base = dict(method="gd", exponent=1.0, ci_low=0.9, ci_high=1.1, prefactor=1.0, points=5, excluded_censored=0,
                excluded_diverged=0, theory_grid=1.0, theory_asymptotic=1.0)
    return PowerLawFit(**{**base, **kw})


def test_legend_says_how_many_lanes_were_left_out_and_when_there_is_no_fit():
    assert "left out" not in fit_label(fit())
    assert "3 censored, 2 diverged lanes left out" in fit_label(fit(excluded_censored=3, excluded_diverged=2))
    assert "no fit" in fit_label(fit(exponent=math.nan, ci_low=math.nan, ci_high=math.nan, excluded_censored=8))


def test_zigzag_newton_takes_one_step_and_gd_zigzags(tmp_path):
    """Newton's step H⁻¹g lands on the optimum at once; gd with step 2/(L+μ) on κ = 10 contracts by 9/11 a step,
    so it needs ⌈ln(f₀/1e-8)/(2 ln(11/9))⌉-ish steps, dozens; heavy-ball fewer."""
    paths = zigzag_paths(10.0)
    assert len(paths["newton"]) == 2
    assert len(paths["heavy-ball"]) < len(paths["gd, step 2/(L+μ)"]) and len(paths["gd, step 2/(L+μ)"]) > 30
    files = zigzag_figure(tmp_path / "z")
    assert [f.name for f in files] == ["z.png", "z.pdf"] and all(f.stat().st_size > 0 for f in files)


# -- issue 17: figures that say what they show ---------------------------------------------------------------------

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from otod.core import plotting  # noqa: E402
from otod.core.plotting import plt  # noqa: E402


def _sweep(tmp_path_factory, **options):
    from otod.condition.options import sweep_config_from_options
    from otod.core.sweep import run_sweep

    base = dict(k="1..100:4:log", method="gd,heavy-ball", seeds=2, max_iters=200)
    return run_sweep(sweep_config_from_options(**{**base, **options}), out_dir=tmp_path_factory.mktemp("res"))


@pytest.fixture(scope="module")
def static_sweep(tmp_path_factory):
    """d = 4, 8, 16 as a static axis."""
    return _sweep(tmp_path_factory, dim="4,8,16")


@pytest.fixture(scope="module")
def diverging_sweep(tmp_path_factory):
    """An absolute step 0.5 with L = κ up to 100: gd and heavy-ball diverge at κ > 4, heavy-ball's κ ≈ 4.6 lanes
    are censored."""
    return _sweep(tmp_path_factory, dim="8", lr="0.5")


def _captured(monkeypatch):
    """The figures `otod.condition.figures` saves, kept open so a test can look at their axes."""
    import otod.condition.figures as cf

    kept = []

    def keep(fig, base, pdf=True, caption=None):
        fig.otod_caption = caption
        kept.append(fig)
        return [base]

    monkeypatch.setattr(cf, "save", keep)
    return kept


def _legend(ax):
    from tests.conftest import legend_entries

    return legend_entries(ax)


def test_a_static_axis_gets_one_panel_per_value(static_sweep, tmp_path, monkeypatch):
    from otod.condition.figures import condition_figure

    kept = _captured(monkeypatch)
    condition_figure(static_sweep, tmp_path / "static")
    (fig,) = kept
    assert [ax.get_title() for ax in fig.axes] == ["dim = 4", "dim = 8", "dim = 16"]
    for ax in fig.axes:  # each panel draws both methods' medians, with its own fitted exponents
        labels = list(_legend(ax))
        assert any(label.startswith("gd: b =") for label in labels)
        assert any(label.startswith("heavy-ball: b =") for label in labels)


def test_diverged_lanes_are_x_markers_and_lower_bounds_open_triangles_named_in_the_legend(diverging_sweep, tmp_path,
                                                                                          monkeypatch):
    from otod.condition.figures import condition_figure

    assert {r["status"] for r in diverging_sweep.records} >= {"diverged", "censored"}
    kept = _captured(monkeypatch)
    condition_figure(diverging_sweep, tmp_path / "div")
    (ax,) = kept[0].axes
    legend = _legend(ax)
    assert legend[plotting.DIVERGED_LABEL].get_marker() == "x"
    assert legend[plotting.LOWER_LABEL].get_marker() == "^"
    xs = [line for line in ax.get_lines() if line.get_marker() == "x" and len(line.get_xdata())]
    # gd diverges at every κ > 1 of the grid (3 of them), heavy-ball at the two largest
    assert sorted(len(line.get_xdata()) for line in xs) == [2, 3]


def test_every_band_is_named_in_the_legend(static_sweep, tmp_path, monkeypatch):
    from otod.condition.figures import condition_figure

    kept = _captured(monkeypatch)
    condition_figure(static_sweep, tmp_path / "static")
    for ax in kept[0].axes:
        bands = [c for c in ax.collections if isinstance(c, PolyCollection) and len(c.get_paths())]
        assert bands, "the seed spread is drawn"
        artists = dict(zip(*reversed(ax.get_legend_handles_labels())))
        assert isinstance(artists[plotting.BAND_LABEL], PolyCollection) and "IQR over seeds" in plotting.BAND_LABEL
        assert plotting.BAND_LABEL in _legend(ax)


def test_the_band_is_the_iqr_of_the_lanes_the_median_uses_censored_at_their_cap():
    """Three of eight lanes converge at 30, 100, 300 and five stall at 3000: the median is only a lower bound at
    3000, and the band must reach it (the old band, min to max of the converged lanes, stopped at 300)."""
    from otod.core.analysis import censored_medians

    y = np.array([[30, 100, 300, 3000, 3000, 3000, 3000, 3000.0]])
    lower = np.array([[0, 0, 0, 1, 1, 1, 1, 1]], bool)
    med, bound = censored_medians(y, lower)
    (q25, q75), flags = plotting.censored_quantiles(y, lower)
    assert bound[0] and med[0] == 3000
    assert q25[0] == pytest.approx(250.0) and q75[0] == 3000 and flags[1, 0]
    assert q25[0] <= med[0] <= q75[0]
    # without censoring it is NumPy's IQR; diverged lanes (NaN) are left out, as the median leaves them out
    y = np.array([[1, 2, 3, 4, 5, 6, 7, 8, np.nan]])
    (q25, q75), _ = plotting.censored_quantiles(y, np.zeros(y.shape, bool))
    assert (q25[0], q75[0]) == tuple(np.percentile(y[0, :8], [25, 75]))


def test_no_two_series_share_colour_and_line_style():
    series = ["gd·xavier", "heavy-ball·xavier", "adam·xavier", "kfac·xavier", "gd·small", "adam·small"]
    styles = plotting.series_styles(series)
    assert len({(s["color"], str(s["ls"])) for s in styles.values()}) == len(series)
    assert styles["heavy-ball·xavier"]["color"] != styles["adam·xavier"]["color"]
    one_method = plotting.series_styles(["gd·identity", "gd·orthogonal", "gd·xavier", "gd·small"])
    assert len({s["color"] for s in one_method.values()}) == 4
    many = plotting.series_styles([f"m{i}·i{j}" for i in range(12) for j in range(2)])
    assert len({(s["color"], str(s["ls"])) for s in many.values()}) == 24


@pytest.mark.slow  # 5.4 s; otod figures draws the bill
def test_the_bill_names_each_set_up_cost(tmp_path_factory, tmp_path, monkeypatch):
    from otod.condition.figures import condition_figure

    results = _sweep(tmp_path_factory, problem="kronecker", shape="2x2", perturbation=0.1, k="1..10:2:log",
                     method="gd,adam", seeds=1)
    kept = _captured(monkeypatch)
    condition_figure(results, tmp_path / "bill", flops={"gd": 10.0, "adam": 20.0},
                     setup={"gd": 1.33e6, "adam": 0.0})
    caption = kept[0].otod_caption  # the caption names it: the legend stays short
    assert "Set-up: gd: eigvalsh of the dense H to find μ and L, 1.3e+06 FLOPs." in caption
    assert "adam:" not in caption.partition("Set-up:")[2]
    assert not any("set-up" in label for label in _legend(kept[0].axes[0]))


def test_the_bound_is_labelled_a_bound_of_exact_arithmetic():
    from otod.condition.figures import bound_label, bound_note

    assert "exact arithmetic" in bound_label({"precision": "float64"})
    assert bound_note({"precision": "float64"}) == ""
    assert "rounding can add iterations" in bound_note({"precision": "float32"})  # said in the caption


def test_saved_pdfs_embed_no_type3_fonts(tmp_path):
    files = zigzag_figure(tmp_path / "z")
    pdf = next(f for f in files if f.suffix == ".pdf").read_bytes()
    assert b"/Type3" not in pdf
    assert b"/TrueType" in pdf or b"/CIDFontType2" in pdf  # Type 42: TrueType, whole or as a CID font


def _kappa_analysis(spread: float):
    """κ = 1 … 1000 (10 values) of gd, 8 seeds at 3·κ^0.5 times 1 + spread·(seed offset in [−1, 1]), the offsets a
    different permutation at each κ, one rate: its power law fitted over κ ≥ 10 (`otod.condition.records`)."""
    import pandas as pd

    from otod.condition.records import analysis_of

    rng = np.random.default_rng(0)
    kappas = np.geomspace(1, 1000, 10)
    rows = [{"method": "gd", "kappa": k, "seed": s, "status": "converged", "lr_multiplier": 1.0,
             "iterations": 3 * k ** 0.5 * (1 + spread * o)}
            for k in kappas for s, o in enumerate(rng.permutation(np.linspace(-1, 1, 8)))]
    return analysis_of(pd.DataFrame(rows), n_boot=200)


def test_each_fit_is_drawn_over_its_range_with_its_band_hatched_and_none_where_it_is_deterministic():
    """The quoted fit b (3·κ^0.5 at the median seed) drawn dash-dot over the κ ≥ 10 it was fitted to, as the fit's
    a·κ^b; around it its pointwise 95% band hatched, whose edges are `law_band` of the series' bootstrap (the
    same replicates as the CI in the legend) and bracket the line, and one key each for line and band. With
    every seed alike (deterministic), the line alone: no band, no band key."""
    from types import SimpleNamespace

    from otod.condition.figures import FIT_LABEL, draw_condition
    from otod.core.batch_figure import HATCHED_FIT_BAND_LABEL
    from otod.core.law_figure import law_band

    group = _kappa_analysis(0.05).groups[0]
    (series,) = group.series
    assert series.fit.exponent == pytest.approx(0.5, abs=0.02) and series.fit.ci_low < series.fit.ci_high
    fig, ax = plt.subplots()
    draw_condition(ax, SimpleNamespace(meta={}), group)
    (line,) = [ln for ln in ax.get_lines() if ln.get_linestyle() == "-." and len(ln.get_xdata())]
    grid = np.asarray(line.get_xdata())
    assert grid.min() == pytest.approx(10.0) and grid.max() == pytest.approx(1000.0)
    np.testing.assert_allclose(line.get_ydata(), series.fit.prefactor * grid ** series.fit.exponent, rtol=1e-12)
    (band,) = [c for c in ax.collections if c.get_hatch() and len(c.get_paths())]
    lo, hi = law_band(series.boot, "power", grid)
    ys = band.get_paths()[0].vertices[:, 1]
    assert ys.min() == pytest.approx(lo.min()) and ys.max() == pytest.approx(hi.max())
    assert np.all(lo <= line.get_ydata()) and np.all(hi >= line.get_ydata()) and np.all(hi > lo)
    labels = ax.get_legend_handles_labels()[1]
    assert labels.count(FIT_LABEL) == 1 and labels.count(HATCHED_FIT_BAND_LABEL) == 1
    plt.close(fig)
    group = _kappa_analysis(0.0).groups[0]
    assert group.series[0].fit.deterministic
    fig, ax = plt.subplots()
    draw_condition(ax, SimpleNamespace(meta={}), group)
    assert [ln for ln in ax.get_lines() if ln.get_linestyle() == "-." and len(ln.get_xdata())]
    assert not [c for c in ax.collections if c.get_hatch() and len(c.get_paths())]
    assert HATCHED_FIT_BAND_LABEL not in ax.get_legend_handles_labels()[1]
    plt.close(fig)
