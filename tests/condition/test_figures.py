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
