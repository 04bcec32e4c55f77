"""Which law iterations follow along an axis (depth, for the deep linear nets and the real nets): a power law
T ≈ a·L^b or an exponential T ≈ a·e^{cL}, chosen by AIC. Statistics, so the core's: every obstacle that asks
which law a series follows reads it here.

Both are least-squares lines through log(median over seeds) (`otod.core.line_fit.fit_line`): log T on log L
(power) and log T on L (exponential), each with two parameters, so AIC = n·ln(RSS/n) + 2·2 (Akaike 1974; Burnham
& Anderson 2002, §2.2) and ΔAIC = n·ln(RSS_other/RSS_chosen) ≥ 0; ΔAIC < 2 means the data hardly prefer either.
Medians are `otod.core.analysis`'s: at each point's chosen (lr, β), censored and stalled lanes counted as at
least their count; a depth whose median is only such a lower bound is shown but left out of the fit, and a fit
with fewer than 3 depths left says so and chooses nothing, and so does a series whose medians rise and fall
beyond their CIs (`reversal`). Both slopes are one statistic (`Laws`) of `otod.core.analysis.bootstrap`: their
95% CIs resample the seeds (the problem instances, shared by every depth) with replacement, re-choose (lr, β) at
every depth on the resample, and refit (Efron & Tibshirani 1993, §6); where every seed gives the same counts
there is no sampling error and the CI is the estimate itself.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from otod.core.analysis import Bootstrap, fit_line


class LawFit(NamedTuple):
    """The two fits of one series along an axis. ``law`` is "power", "exponential" or None (fewer than 3 points,
    or a flat line where both fits are perfect); ``delta_aic`` is the other law's AIC minus the chosen one's."""

    label: str
    law: str | None
    power_b: float
    power_ci: tuple[float, float]
    power_a: float
    exp_c: float
    exp_ci: tuple[float, float]
    exp_a: float
    delta_aic: float
    points: int
    left_out: int
    deterministic: bool
    note: str = ""
    no_ci: str | None = None  # why the CIs are NaN: too few seeds (`otod.core.analysis.no_ci_reason`)


@dataclass(frozen=True)
class Laws:
    """The statistic of both laws over a series' medians: (b, a, RSS) of log T on log x (power), (c, a, RSS) of
    log T on x (exponential), and the number of points fitted."""

    def __call__(self, x: np.ndarray, medians: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            logy = np.log(medians)
            b, log_a, rss_p = fit_line(np.log(x), logy)
            c, log_e, rss_e = fit_line(x, logy)
            return np.stack([b, np.exp(log_a), rss_p, c, np.exp(log_e), rss_e, np.isfinite(logy).sum(-1)], -1)


LAWS = Laws()


def law_curves(law: str, rows, xs) -> np.ndarray:
    """The curves of ``law`` at ``xs`` from rows of the `Laws` statistic [row, 7] (the estimate, or the seed
    bootstrap's replicates): a·x^b (power) or a·e^{cx} (exponential), [row, x]; what a law's band is drawn from
    (`otod.core.analysis.Bootstrap.band`). Rows of `otod.core.analysis.PowerLaw` (b, a, RMS) read the same for a
    power law."""
    rows, xs = np.atleast_2d(np.asarray(rows, float)), np.asarray(xs, float)[None, :]
    with np.errstate(all="ignore"):
        if law == "power":
            return rows[:, 1:2] * xs ** rows[:, 0:1]
        return rows[:, 4:5] * np.exp(rows[:, 3:4] * xs)


def aic(rss: float, n: int, k: int = 2) -> float:
    """n·ln(RSS/n) + 2k for a least-squares fit with Gaussian errors (RSS floored at 10⁻¹²·n: a perfect fit)."""
    return n * math.log(max(rss, 1e-12 * n) / n) + 2 * k


def reversal(x: np.ndarray, medians: np.ndarray, boot: np.ndarray | None) -> str | None:
    """Where medians along x both rise and fall beyond their 95% CIs (percentiles of the seed bootstrap's
    replicate medians ``boot`` [replicate, point]; without sampling error, the medians themselves): a rise is a
    pair i < j whose CIs do not overlap with j above, a fall the same with j below. A power or exponential law is
    monotone, so it is not fitted to such a series (the toy's medians 1, 8.5, 31, 27, 122.5, 60.5, 114, 55.5 gave
    b = 2.11). Returns the two pairs in words, or None when the series is monotone within its CIs."""
    if boot is None:
        lo = hi = np.asarray(medians, float)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            lo, hi = np.nanpercentile(np.where(np.isfinite(boot), boot, np.nan), [2.5, 97.5], axis=0)
        lo, hi = np.where(np.isnan(lo), medians, lo), np.where(np.isnan(hi), medians, hi)
    rise = fall = None
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            if rise is None and lo[j] > hi[i]:
                rise = f"up from {x[i]:g} to {x[j]:g}"
            if fall is None and hi[j] < lo[i]:
                fall = f"down from {x[i]:g} to {x[j]:g}"
    return f"{rise}, {fall}" if rise and fall else None


def law_fit(name: str, boot: Bootstrap, axis: str) -> LawFit:
    """The `LawFit` of one series from its bootstrap of `Laws` (`otod.core.analysis.bootstrap`)."""
    choice = boot.choice
    x, med = choice.cube.x(axis), choice.median
    use = np.isfinite(med) & ~choice.bound & (med > 0)
    n, left_out = int(use.sum()), int((~use).sum())
    nan2 = (math.nan, math.nan)
    if n < 3:
        return LawFit(name, None, math.nan, nan2, math.nan, math.nan, nan2, math.nan, math.nan, n, left_out,
                      boot.deterministic, f"fewer than 3 {axis} values left after leaving out {left_out} whose median "
                      "is censored or missing: no law chosen")
    turn = reversal(x[use], med[use], None if boot.deterministic else boot.medians[:, use])
    if turn is not None:
        return LawFit(name, None, math.nan, nan2, math.nan, math.nan, nan2, math.nan, math.nan, n, left_out,
                      boot.deterministic, f"medians rise and fall in {axis} beyond their 95% CIs ({turn}): no power "
                      "or exponential law fitted")
    b, power_a, rss_p, c, exp_a, rss_e, _ = (float(v) for v in boot.estimate)
    aic_p, aic_e = aic(rss_p, n), aic(rss_e, n)
    flat = max(rss_p, rss_e) <= 1e-12 * n
    law = None if flat else ("power" if aic_p <= aic_e else "exponential")
    return LawFit(name, law, b, boot.ci(0), power_a, c, boot.ci(3), exp_a, abs(aic_p - aic_e), n, left_out,
                  boot.deterministic, "flat: both fits exact, no law preferred" if flat else "", boot.no_ci)


def law_table(fits: list[LawFit], symbol: str) -> str:
    """One line per series: the chosen law and its parameter with CI, the other law and ΔAIC, what was left out."""
    header = ["series", "law (by AIC)", f"power: T ≈ a·{symbol}^b", "b 95% CI", f"exponential: T ≈ a·e^(c·{symbol})",
              "c 95% CI", "ΔAIC", "points", "left out"]
    rows = []

    def fmt(v, digits=3):
        return "—" if v is None or not math.isfinite(v) else f"{v:.{digits}g}"

    for f in fits:
        ci = (lambda lo_hi: "deterministic" if f.deterministic else f.no_ci or f"[{fmt(lo_hi[0])}, {fmt(lo_hi[1])}]")
        rows.append([f.label, f.law or f"none ({f.note})" if f.note else (f.law or "none"),
                     f"b = {fmt(f.power_b)}, a = {fmt(f.power_a)}", ci(f.power_ci),
                     f"c = {fmt(f.exp_c)}, a = {fmt(f.exp_a)}", ci(f.exp_ci), fmt(f.delta_aic), str(f.points),
                     str(f.left_out)])
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)] if rows else [len(h) for h in
                                                                                                    header]
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths))]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(out)
