"""Smoke tests of the nonlinearity obstacle's figure makers (`otod.depth.figures.MAKERS`), each on a tiny version
of its ``experiments/depth.toml`` table run as ``otod figures`` runs it (`tests.smoke.draw_tiny`): the PNG and PDF at
their printed width, the caption naming the run, and what is drawn equal to the records the sweeps wrote, read back
here from the results files (the medians over seeds; the width needed, the narrowest with median ≤ the need)."""

from __future__ import annotations

import numpy as np

from tests.smoke import assert_printed_width, close_all, draw_tiny, has_points, lane_medians

#: One tiny deep linear net for every figure: width 4, depths 1 and 2, the theory's step (one lr per point, so the
#: median is over every lane), a loose tolerance.
TINY = dict(depth="1..2", width="4", seeds=3, lr="theory", tol=1e-3, max_iters=400)
#: The figures whose point is the series they compare (plain against residual, one method against another), not
#: the x axis, at depth 2 alone: every series is still one sweep's medians, drawn at its depth, and each depth
#: is a program to compile (~1.3 CPU-s); drawing several depths in order is checked by the iterations figure.
ONE_DEPTH = {**TINY, "depth": "2"}


def test_depth_iterations_draws_each_inits_median_over_seeds(tmp_path, monkeypatch):
    drawn = draw_tiny("depth", "depth_iterations", tmp_path, monkeypatch, **TINY, init="identity,orthogonal")
    assert_printed_width(drawn, columns=2)
    assert "3 seeds" in drawn.caption()
    records = drawn.records()
    assert len(records) == 2 * 2 * 3  # depths × inits × seeds
    (fig,) = drawn.figures
    for init in ("identity", "orthogonal"):
        assert has_points(fig.axes[0], *lane_medians(records, "depth", init=init)), init
    close_all(drawn)


def test_depth_residual_draws_plain_and_residual_sweeps(tmp_path, monkeypatch):
    drawn = draw_tiny("depth", "depth_residual", tmp_path, monkeypatch, **ONE_DEPTH, init="orthogonal",
                      residual_init="zero")
    assert_printed_width(drawn, columns=2)
    assert "residual (I+V_L)⋯(I+V_1)" in drawn.caption()
    records = drawn.records()
    assert records["file"].nunique() == 2  # the plain sweep and the residual one
    (fig,) = drawn.figures
    ax = fig.axes[0]
    for file in sorted(records["file"].unique()):
        assert has_points(ax, *lane_medians(records, "depth", file=file)), file
    assert {"plain", "residual"} <= {label.split(" ")[0] for label in ax.get_legend_handles_labels()[1]} | {
        t.get_text().split(" ")[0] for legend in fig.legends for t in legend.get_texts()}
    close_all(drawn)


def test_depth_methods_draws_one_series_per_method_of_each_sweep(tmp_path, monkeypatch):
    """Two sweeps (``method_groups``), gd and heavy ball at β = 0.5, one series each."""
    drawn = draw_tiny("depth", "depth_methods", tmp_path, monkeypatch, **ONE_DEPTH, init="orthogonal",
                      method_groups=["gd", "heavy-ball"], beta="0.5")
    assert_printed_width(drawn, columns=2)
    assert "Each method's (lr, β) tuned at each depth" in drawn.caption()
    records = drawn.records()
    assert sorted(records["method"].unique()) == ["gd", "heavy-ball"] and records["file"].nunique() == 2
    (fig,) = drawn.figures
    for method in ("gd", "heavy-ball"):
        assert has_points(fig.axes[0], *lane_medians(records, "depth", method=method)), method
    close_all(drawn)


def test_toy_draws_the_landscape_its_gd_path_and_both_readings_medians(tmp_path, monkeypatch):
    """k = 1, 2 matrices: one contour panel (k = 1) with gd's path from its start, and iterations against k for the
    per-layer and the shared reading (one sweep each), each the median of its sweep's records."""
    drawn = draw_tiny("depth", "toy_iterations", tmp_path, monkeypatch, layers="1..2", contour_layers=[1], seeds=3,
                      lr="theory", tol=1e-3, max_iters=400)
    assert_printed_width(drawn, columns=2)
    assert "per-layer reading circles and solid, shared reading squares and dashed" in drawn.caption()
    records = drawn.records()
    (fig,) = drawn.figures
    landscape, counts = fig.axes[:2]
    assert landscape.collections and "gd path" in landscape.get_legend_handles_labels()[1]
    assert records["file"].nunique() == 2  # one sweep per reading
    for file in sorted(records["file"].unique()):
        assert has_points(counts, *lane_medians(records, "layers", file=file)), file
    close_all(drawn)


def test_depth_width_draws_the_narrowest_width_whose_median_meets_the_need(tmp_path, monkeypatch):
    """Widths 4, 8 at depths 2, 4 (d_in = d_out = 4), orthogonal init: for each depth the figure draws the
    narrowest width whose median over seeds is ≤ the need, found here from the records."""
    drawn = draw_tiny("depth", "depth_width", tmp_path, monkeypatch, depth="2,4", width="4,8", d_in=4, d_out=4,
                      init="orthogonal", needed=30, max_iters=400, seeds=3, tol=1e-2)
    assert_printed_width(drawn, columns=2)
    caption = drawn.caption()
    assert "No law is fitted or drawn" in caption and "median count over seeds is ≤ 30 iterations" in caption
    records = drawn.records()
    assert records["lr_multiplier"].nunique() == 1
    # censored lanes count at their cap (≥ it), diverged ones never arrive: neither can make a median fast
    counts = records["iterations"].where(records["status"] != "diverged", np.inf)
    medians = counts.groupby([records["depth"], records["width"]]).median()
    needed = {d: min((w for (dd, w), m in medians.items() if dd == d and m <= 30), default=None) for d in (2.0, 4.0)}
    (fig,) = drawn.figures
    ax = fig.axes[0]
    drawn_needs = [ly for lx, ly in [(np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float))
                                     for line in ax.get_lines()] if list(lx) == [2.0, 4.0]]
    want = [np.nan if needed[d] is None else needed[d] for d in (2.0, 4.0)]
    assert want == [4.0, 8.0]  # this tiny net: depth 2 is fast at the narrowest width, depth 4 needs the wider
    assert any(np.array_equal(y, want, equal_nan=True) for y in drawn_needs), (needed, drawn_needs)
    close_all(drawn)
