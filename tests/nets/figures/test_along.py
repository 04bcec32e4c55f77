"""The along-training figure (`otod.nets.figures.along`), drawn from a synthetic along-training result whose numbers
the test chooses: the series it draws, their values and error bars, the ratios and the line at 1, the labels."""

from __future__ import annotations

import math

import numpy as np

from otod.nets.along.branching import AlongTrainingResult, Branching, Checkpoint
from otod.nets.sweep.reading import CriticalBatchPoint


def _result() -> AlongTrainingResult:
    """Three checkpoints with B_crit 10, 20, 40 (CI ×0.8..×1.25) and seeds' B_simple / B_noise chosen."""
    import dataclasses

    fields = {f.name for f in dataclasses.fields(CriticalBatchPoint)}
    cps = []
    for step, b_crit, simple, noise in ((0, 10.0, (8, 12, 16), (5, 10, 20)), (100, 20.0, (50, 60, 90), (100, 140, 200)),
                                        (1000, 40.0, (300, 400, 500), (160, 200, 260))):
        values = dict(method="sgd", b_crit=b_crit, b_crit_ci=(0.8 * b_crit, 1.25 * b_crit), s_min=5.0 + step / 10,
                      s_min_ci=(4.0 + step / 10, 6.0 + step / 10), misfit=0.05, batches=(8.0, 1024.0))
        point = CriticalBatchPoint(**{k: values.get(k) for k in fields})
        cps.append(Checkpoint(step, 1.0 / (1 + step), (1.0,), 0.5 / (1 + step), (point,), None,
                              tuple(map(float, simple)), tuple(map(float, noise))))
    return AlongTrainingResult(tuple(cps), Branching((0, 100, 1000)), {"seeds": 3}, "")


def test_draws_b_crit_predictors_and_ratios(tmp_path, monkeypatch):
    import otod.nets.figures.along as af
    from otod.core.plotting import plt

    monkeypatch.setattr(af, "measured", lambda spec: _result())
    drawn = {}
    real_draw = af.draw
    monkeypatch.setattr(af, "draw", lambda rows, axes: (real_draw(rows, axes), drawn.update(axes=axes)))
    files = af.MAKERS["nets-along"]({"maker": "nets-along", "name": "along", "checkpoints": [0, 100, 1000]}, tmp_path)
    assert files and all(f.exists() for f in files)
    left, right = drawn["axes"]
    lines = {c.get_label(): c.lines[0] for c in left.containers}   # errorbar: (data line, caps, bars)
    assert set(lines) == {"B_crit measured (95% CI)", "B_simple = tr Σ / |G|²", "B_noise = tr(HΣ) / GᵀHG"}
    np.testing.assert_allclose(lines["B_crit measured (95% CI)"].get_xdata(), [0, 100, 1000])
    np.testing.assert_allclose(lines["B_crit measured (95% CI)"].get_ydata(), [10, 20, 40])
    np.testing.assert_allclose(lines["B_simple = tr Σ / |G|²"].get_ydata(), [12, 60, 400])   # seed medians
    np.testing.assert_allclose(lines["B_noise = tr(HΣ) / GᵀHG"].get_ydata(), [10, 140, 200])
    ratios = {c.get_label(): c.lines[0] for c in right.containers}
    np.testing.assert_allclose(ratios["B_simple / B_crit"].get_ydata(), [1.2, 3.0, 10.0])
    np.testing.assert_allclose(ratios["B_noise / B_crit"].get_ydata(), [1.0, 7.0, 5.0])
    assert any(np.allclose(ln.get_ydata(), 1.0) for ln in right.get_lines())   # the line at 1
    assert left.get_xscale() == right.get_xscale() == "symlog"
    assert "step" in left.get_xlabel() and r"B_{\mathrm{crit}}" in right.get_ylabel()
    plt.close("all")


def test_series_ends():
    """B_simple's bars are the seeds' least and largest; the ratio's ends are predictor / B_crit's CI ends."""
    from otod.nets.figures.along import series

    s = series(_result().rows())
    np.testing.assert_allclose(s["b_simple"]["lo"], [8, 50, 300])
    np.testing.assert_allclose(s["b_simple"]["hi"], [16, 90, 500])
    np.testing.assert_allclose(s["b_noise_ratio"]["lo"], [10 / 12.5, 140 / 25, 200 / 50])
    np.testing.assert_allclose(s["b_crit"]["hi"], [12.5, 25, 50])
    assert not any(math.isnan(v) for v in s["s_min"]["y"])
