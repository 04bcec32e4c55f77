"""The critical batch in a report's words: the S(B) table (the median steps, the chosen lr and β per batch and
method, each marked by where it lies among the values tried) and one line per method with S_min, B_crit, their
CIs and the perfect-scaling region. The noise obstacle's and the nets' reports print these for their
`otod.core.critical_batch` analyses."""

from __future__ import annotations

import math
from typing import Collection

import numpy as np

from otod.core.analysis import GRID_END, INTERIOR, LIMIT, LIST_END
from otod.core.critical_batch import Series, describe_critical_batch


def steps_text(value: float, bound: bool) -> str:
    """A median count for a table: ≥N where it is only a lower bound, — where there is none."""
    if not math.isfinite(value):
        return "—"
    return f"≥{value:.0f}" if bound else f"{value:.6g}"


def beta_text(beta: float) -> str:
    """β for the table: 4 digits up to 0.999, beyond it 1 − (1 − β) with 2 (0.99995 is 1−5e-5, not a rounded 1)."""
    if 1.0 - beta >= 1e-3:
        return f"{beta:.4g}"
    mantissa, _, exponent = f"{1.0 - beta:.2g}".partition("e")
    return f"1−{mantissa}" + (f"e{int(exponent)}" if exponent else "")


#: The table's mark of a chosen value by where it lies (`otod.core.analysis.PLACES`): none inside the values tried,
#: | on a true limit, * on the end of a list or grid tried as given (a better value may lie beyond).
MARKS = {INTERIOR: " ", LIMIT: "|", LIST_END: "*", GRID_END: "*"}


def table(series: list[Series], symbol: str, beta_methods: Collection[str], places: dict | None = None) -> list[str]:
    """Steps (median over seeds), the chosen lr and β per axis value and method, each marked by where it lies
    (`MARKS`; ``places``: (d, method, x) → (lr place, β place); without them any edge is *); β only for the
    ``beta_methods``, the methods that read it."""
    xs = sorted({x for s in series for x in s.x})
    lines = [f"{symbol:>7} " + "".join(f"{s.method:>32}" for s in series),
             " " * 8 + "".join(f"{'steps':>12}{'lr':>10}{'β':>10}" for _ in series)]
    for x in xs:
        row = f"{x:>7g} "
        for s in series:
            at = np.flatnonzero(s.x == x)
            if not at.size:
                row += f"{'—':>12}{'—':>10}{'—':>10}"
                continue
            r = s.summary.iloc[at[0]]
            lr_at, beta_at = (places or {}).get((s.dim, s.method, float(x)), (
                LIST_END if r["lr_on_edge"] else INTERIOR,
                LIST_END if r["beta_on_edge"] else INTERIOR))
            beta = beta_text(r["beta"]) + MARKS[beta_at] if s.method in beta_methods else "— "
            row += f"{steps_text(r['median'], r['lower_bound']):>12}{r['learning_rate']:>9.3g}{MARKS[lr_at]}{beta:>10}"
        lines.append(row.rstrip())
    return lines


def critical_line(s: Series) -> str:
    """One method's critical batch with its CIs and misfit, and its perfect-scaling region with the lr slope."""
    fit = s.critical
    ci = "deterministic" if fit.deterministic else fit.no_ci or (f"S_min [{fit.s_min_ci[0]:.4g}, "
                                                                 f"{fit.s_min_ci[1]:.4g}], B_crit "
                                                                 f"[{fit.b_crit_ci[0]:.4g}, {fit.b_crit_ci[1]:.4g}]")
    misfit = "—" if not math.isfinite(fit.residual) else f"{fit.residual:.2g}"
    left = f"{fit.censored} censored" + (f", {fit.diverged} diverged" if fit.diverged else "")
    region = ("no perfect-scaling region" if s.perfect_scaling is None else
              f"perfect scaling up to B = {s.perfect_scaling:g}  lr slope {s.lr_slope:.3g} ({s.lr_points} points)")
    return (f"  {s.method:<14} S_min {fit.s_min:.4g}  B_crit {describe_critical_batch(fit.b_crit, s.x[s.fitted])} "
            f"({ci}; rms relative misfit {misfit}; {fit.points} points, {left} left out)  {region}")
