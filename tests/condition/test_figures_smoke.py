"""Smoke tests of the conditioning obstacle's figure makers (`otod.condition.figures.MAKERS`), each on a tiny
version of its ``experiments/condition.toml`` table, run as ``otod figures`` runs it (`tests.smoke.draw_tiny`): the
PNG and PDF at their printed width, the caption naming the run, and the drawn medians equal to the medians of the
records the sweep wrote, computed here from the results file."""

from __future__ import annotations

import re

import numpy as np

from tests.smoke import assert_printed_width, close_all, draw_tiny, has_line


def _medians(records, method: str):
    """(κ, median iterations over seeds) of ``method``: one lr per point here (the theory's step), so every lane
    is the chosen one, and every lane converged (asserted), so the median is the plain one."""
    rows = records[records["method"] == method]
    assert set(rows["status"]) == {"converged"}
    by_kappa = rows.groupby("kappa")["iterations"].median()
    return by_kappa.index.to_numpy(float), by_kappa.to_numpy(float)


def _solid_line(ax, x, y) -> bool:
    """Whether a solid line of ``ax`` draws exactly (x, y): the medians' line, not the theory's dotted exact count,
    which in float64 equals the measured medians (test_predictions)."""
    return any(np.array_equal(np.asarray(line.get_xdata(), float), x)
               and np.allclose(np.asarray(line.get_ydata(), float), y, rtol=1e-9, atol=0)
               for line in ax.get_lines() if line.get_linestyle() == "-" and len(line.get_xdata()) == len(x))


def test_condition_iterations_draws_the_records_medians_at_two_columns(tmp_path, monkeypatch):
    """κ = 1 … 1000 (7 log-spaced) on d = 24, uniform spectrum from a random start (the seeds differ), 4 seeds,
    float64, gd, gd-opt, heavy-ball and nesterov: the lanes of test_predictions' sweep of that pair
    (`spectrum_sweep`), so the suite compiles their program once for both. Each method's line is the median of
    its 4 lanes at each κ, drawn solid (the exact count, dotted, equals it in float64)."""
    methods = ("gd", "gd-opt", "heavy-ball", "nesterov")
    drawn = draw_tiny("condition", "condition_iterations", tmp_path, monkeypatch, k="1..1000:7:log", dim=24,
                      seeds=4, method=",".join(methods), spectrum="uniform", start="random", x64=True,
                      max_iters=None)
    assert [f.name for f in drawn.files] == ["condition_iterations.png", "condition_iterations.pdf"]
    assert_printed_width(drawn, columns=2)
    assert "Settings: d=24, uniform" in drawn.caption() and "4 seeds" in drawn.caption()
    records = drawn.records()
    assert len(records) == 7 * 4 * 4  # κ × methods × seeds
    (fig,) = drawn.figures
    ax = fig.axes[0]
    for method in methods:
        kappas, medians = _medians(records, method)
        np.testing.assert_allclose(kappas, np.geomspace(1, 1000, 7), rtol=1e-12)
        assert _solid_line(ax, kappas, medians), (method, medians)
    gd = _medians(records, "gd")[1]
    assert gd[-1] > 10 * gd[0]  # gd's count grows with κ: the lines are not copies of one another
    close_all(drawn)


def test_condition_bill_draws_iterations_left_and_set_up_plus_iterations_times_flops_right(tmp_path, monkeypatch):
    """A 2x2 Kronecker quadratic (H ≈ A⊗B, d = 4), κ = 1, 10, 2 seeds, gd and newton: left the median iterations;
    right set-up + iterations × FLOPs of one iteration, the FLOPs the caption prints (3 digits) and the set-up the
    caption names."""
    drawn = draw_tiny("condition", "condition_bill", tmp_path, monkeypatch, shape="2x2", k="1..10:2:log", seeds=2,
                      method="gd,newton", max_iters=2000)
    assert_printed_width(drawn, columns=2)
    caption = drawn.caption()
    (listed,) = re.findall(r"FLOPs per iteration: (.*?)\. Set-up FLOPs", caption)
    per_iteration = {m: float(f) for m, f in (item.split(" ") for item in listed.split(", "))}
    assert set(per_iteration) == {"gd", "newton"}
    records = drawn.records()
    (fig,) = drawn.figures
    left, right = fig.axes[:2]
    kappas, gd = _medians(records, "gd")
    assert has_line(left, kappas, gd)
    assert has_line(left, *_medians(records, "newton"))
    # right: gd's line is a·median + b with a its FLOPs per iteration (the caption's 3 digits)
    candidates = [(x, y) for line in right.get_lines() for x, y in [(np.asarray(line.get_xdata(), float),
                                                                    np.asarray(line.get_ydata(), float))]
                  if x.shape == kappas.shape and np.array_equal(x, kappas) and line.get_linestyle() == "-"]
    slopes = [(y[1] - y[0]) / (gd[1] - gd[0]) for _, y in candidates]
    assert any(abs(s / per_iteration["gd"] - 1) < 5e-3 for s in slopes), (slopes, per_iteration)
    assert "Set-up FLOPs" in caption and "newton:" in caption.split("Set-up FLOPs")[1]
    close_all(drawn)


def test_zigzag_draws_newton_in_one_step_to_the_minimum_at_one_column(tmp_path, monkeypatch):
    """κ = 4 (the table says 10): the caption says the κ drawn; newton's path is two points, the second the
    minimum 0; gd's path takes more steps than heavy-ball's, and its label counts the steps drawn."""
    drawn = draw_tiny("condition", "zigzag", tmp_path, monkeypatch, kappa=4.0)
    assert_printed_width(drawn, columns=1)
    assert "κ = 4," in drawn.caption()
    (fig,) = drawn.figures
    paths = {line.get_label().split(":")[0]: line for line in fig.axes[0].get_lines()
             if ":" in line.get_label()}
    assert set(paths) == {"gd, step 2/(L+μ)", "heavy-ball", "newton"}
    newton = np.column_stack([paths["newton"].get_xdata(), paths["newton"].get_ydata()])
    assert newton.shape == (2, 2) and np.allclose(newton[1], 0.0, atol=1e-6)
    for name, line in paths.items():
        steps = len(line.get_xdata()) - 1
        assert line.get_label().startswith(f"{name}: {steps} step"), line.get_label()
    assert len(paths["gd, step 2/(L+μ)"].get_xdata()) > len(paths["heavy-ball"].get_xdata())
    close_all(drawn)
