"""Depth figures say what they show (issue 17): one panel per swept width, the band is the IQR of the lanes the
median uses (censored at their cap), lower bounds and diverged lanes are marked and named, no two series alike."""

import numpy as np
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.colors import to_hex

from otod.core import plotting
from otod.core.plotting import plt
from tests.conftest import legend_entries, legend_texts


def _sweep(tmp_path_factory, **options):
    from otod.core.sweep import run_sweep
    from otod.depth.options import depth_config_from_options

    base = dict(depth="1..3", init="identity,xavier", seeds=2, lr="theory", tol=1e-3, max_iters=300)
    return run_sweep(depth_config_from_options(**{**base, **options}), out_dir=tmp_path_factory.mktemp("res"))


@pytest.fixture(scope="module")
def widths(tmp_path_factory):
    return _sweep(tmp_path_factory, width="4,8")


def _kept(monkeypatch):
    import otod.depth.figures as df

    kept = []
    monkeypatch.setattr(df, "save", lambda fig, base, pdf=True, caption=None: kept.append(fig) or [base])
    return kept


@pytest.mark.slow
def test_a_swept_width_gets_one_panel_per_width(widths, tmp_path, monkeypatch):
    from otod.depth.figures import sweep_figure

    kept = _kept(monkeypatch)
    sweep_figure(widths, tmp_path / "w")
    (fig,) = kept
    assert len(fig.axes) == 2
    assert [ax.get_title().split(":")[0] for ax in fig.axes] == ["width n = 4", "width n = 8"]


@pytest.mark.slow
def test_marks_are_named_and_series_differ_in_colour_or_line_style(tmp_path_factory, tmp_path, monkeypatch):
    """A cap of 3 iterations censors most lanes: their medians are open triangles, named."""
    from otod.depth.figures import draw_series, _finish
    from otod.depth.records import depth_analysis

    results = _sweep(tmp_path_factory, depth="1..2", method="gd,heavy-ball,adam", init="xavier,small",
                     lr="tuned", lr_grid="0.5,64", max_iters=3)
    analysis = depth_analysis(results)
    fig, ax = plt.subplots()
    marks: set = set()
    draw_series(ax, analysis.series, "depth", marks=marks)
    _finish(ax, "depth L", "t", marks)
    labels = legend_texts(ax)
    assert plotting.BAND_LABEL in labels
    assert "censored" in set(analysis.chosen["status"])
    assert "lower" in marks and plotting.LOWER_LABEL in labels
    assert any(line.get_marker() == "^" and line.get_markerfacecolor() == "none" for line in ax.get_lines())
    medians = [line for line in ax.get_lines() if len(line.get_xdata()) and line.get_marker() in ("None", "", None)]
    styles = {(to_hex(line.get_color()), str(line.get_linestyle())) for line in medians}
    assert len(medians) == 6 and len(styles) == 6
    plt.close(fig)


def test_the_band_reaches_a_lower_bound_median():
    """The depth_iterations bug: a band over converged lanes only (30 to 300) under a median that is a lower bound
    at the cap (3000). The IQR over the same lanes, censored at their cap, reaches it."""
    from otod.core.analysis import frame_of
    from otod.depth.figures import draw_series
    from otod.depth.records import analysis_of

    records = [{"method": "gd·orthogonal", "depth": 4.0, "seed": s, "status": st, "iterations": it}
               for s, (st, it) in enumerate([("converged", 30), ("converged", 100), ("converged", 300)]
                                            + [("stalled", 3000)] * 5)]
    records += [{**r, "depth": 5.0} for r in records]
    fig, ax = plt.subplots()
    draw_series(ax, analysis_of(frame_of(records), axis="depth").series, "depth")
    (band,) = [c for c in ax.collections if isinstance(c, PolyCollection)]
    ys = np.concatenate([p.vertices[:, 1] for p in band.get_paths()])
    assert ys.max() == 3000 and ys.min() == pytest.approx(250)
    plt.close(fig)


@pytest.mark.slow  # 4 s; otod figures draws the depth figures
def test_diverged_lanes_are_x_markers_named_in_the_legend(tmp_path_factory, tmp_path, monkeypatch):
    from otod.depth.figures import sweep_figure

    results = _sweep(tmp_path_factory, depth="1..2", init="xavier", lr="64")
    assert {r["status"] for r in results.records} == {"diverged"}
    kept = _kept(monkeypatch)
    sweep_figure(results, tmp_path / "d")
    (ax,) = kept[0].axes
    handles = legend_entries(ax)
    assert handles[plotting.DIVERGED_LABEL].get_marker() == "x"
    (xs,) = [line for line in ax.get_lines() if line.get_marker() == "x" and len(line.get_xdata())]
    assert list(xs.get_xdata()) == [1.0, 2.0]


def test_toy_lanes_in_another_local_minimum_are_marked_and_stalled_lanes_count_at_the_cap():
    """k = 6 with 8 seeds: 5 converged (30..300), 2 stalled at iteration 90 in a local minimum, 1 censored at the
    cap 10⁵ in one. The median (the 4th and 5th of 8, lanes not converged ranked above) is 250, the figure marks
    3/8 with a ◇ named in the legend, and the band's top is the cap 10⁵ (the stalled lanes count at the cap, not
    at their stop 90; the IQR's 75th percentile falls on them)."""
    import pandas as pd

    from otod.depth.figures import LOCAL_LABEL, STALLED_LABEL, _finish, draw_series
    from otod.depth.records import analysis_of, stalled_at_cap

    lanes = [("converged", 30, None)] * 2 + [("converged", 100, None), ("converged", 200, None),
                                             ("converged", 300, None)]
    lanes += [("stalled", 90, "local")] * 2 + [("censored", 100_000, "local")]
    frame = pd.DataFrame([{"method": "gd", "layers": 6.0, "seed": s, "lr_multiplier": 1.0, "status": st,
                           "iterations": it, "minimum": where} for s, (st, it, where) in enumerate(lanes)])
    frame = stalled_at_cap(frame, 100_000)
    assert frame.loc[frame["status"] == "stalled", "iterations"].tolist() == [100_000, 100_000]
    (group,) = analysis_of(frame, axis="layers", n_boot=10).groups
    fig, ax = plt.subplots()
    marks: set = set()
    draw_series(ax, group.series, "layers", marks=marks, chosen=group.chosen)
    _finish(ax, "k", "t", marks)
    labels = legend_texts(ax)
    assert LOCAL_LABEL in labels and STALLED_LABEL in labels
    (diamonds,) = [line for line in ax.get_lines() if line.get_marker() == "D" and len(line.get_xdata())]
    assert list(diamonds.get_xdata()) == [6.0]
    assert "3/8" in [t.get_text() for t in ax.texts]
    (band,) = [c for c in ax.collections if isinstance(c, PolyCollection) and c.get_paths()]
    assert np.concatenate([p.vertices[:, 1] for p in band.get_paths()]).max() == 100_000
    medians = [line for line in ax.get_lines() if line.get_marker() == "o" and len(line.get_xdata())]
    assert [list(line.get_ydata()) for line in medians] == [[250.0]]
    plt.close(fig)


@pytest.mark.slow  # 7.5 s at load 12: two small sweeps compiled
def test_the_width_figure_caption_names_what_it_draws_and_no_law(tmp_path, monkeypatch):
    """depth_width draws no fitted law (issue 50: its caption described a law with a 95% CI, a dotted line and a
    hatched band that were not there): the caption says so, and names the hollow ▽ bound only where one is drawn.
    Widths 4 and 8 at depth 2: the narrowest width, 4, suffices for a need of 1,000 iterations (▽ drawn, no △)."""
    import otod.depth.figures as df

    kept = {}

    def save(fig, base, pdf=True, caption=None):
        kept.update(fig=fig, caption=caption)
        return [base]

    monkeypatch.setattr(df, "save", save)
    spec = dict(name="w", depth="2", width="4,8", d_in=4, d_out=4, init="orthogonal", lr="theory", needed=1000,
                max_iters=1000, seeds=2, tol=1e-2, results_dir=str(tmp_path / "res"))
    df.MAKERS["depth-width"](spec, tmp_path)
    caption, fig = kept["caption"], kept["fig"]
    assert "No law is fitted or drawn" in caption
    assert "hatched" not in caption and "95% CI" not in caption
    assert "hollow ▽" in caption and "hollow △" not in caption
    (ax,) = fig.axes
    assert not ax.collections  # no band
    assert [line.get_marker() for line in ax.get_lines() if line.get_marker() in ("v", "^")] == ["v"]
    plt.close(fig)
