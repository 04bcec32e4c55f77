"""Which records a noise table, fit or figure reads: one (learning rate, β) per point, chosen by the median over
seeds (Shallue et al. 2019), and the fits of the batch-size laws."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from otod.core.fit import censored_medians, iteration_matrix
from otod.core.tuning import count_at
from otod.noise import theory

POINT_FIELDS = ("dim", "batch", "batch_ratio")


def tidy(results) -> list[dict]:
    """The records with every named field a reader expects: dim, batch (from batch_ratio·d where the rule is
    proportional), beta, schedule, mode and lr (the lane's step size)."""
    config = results.meta["config"]
    schedule = config.get("options", {}).get("schedule", "constant")
    mode = results.meta.get("mode", "simulate")
    dim = config["problem"].get("dim", 2)
    out = []
    for r in results.records:
        d = r.get("dim", dim)
        batch = r.get("batch", max(1.0, float(round(r.get("batch_ratio", 0.0) * d))))
        out.append({**r, "dim": float(d), "batch": float(batch), "beta": float(r.get("beta", 0.0)),
                    "schedule": schedule, "mode": mode, "lr": r["learning_rate"]})
    return out


def _rate(r: dict) -> float:
    return r["lr_multiplier"] if r.get("lr_multiplier") is not None else r["learning_rate"]


def mark_selected(records: list[dict]) -> list[dict]:
    """Mark, in place, each point's chosen (lr, β): ``selected`` on every record, true at the setting with the
    lowest median steps over seeds (lanes that did not converge count as +∞), ties to the smaller lr and then the
    smaller β (Shallue et al. 2019); on the chosen records ``lr_on_edge`` (the chosen lr is the smallest or the
    largest tried at that point and β) and ``beta_on_edge`` (the chosen β is the smallest or largest of several
    tried at that point), both only where the median is finite. A point is (dim, batch, batch_ratio, method).
    The whole selection rule is here, so that it can be swapped for a shared one."""
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault(tuple(r.get(f) for f in POINT_FIELDS) + (r["method"],), []).append(r)
    for group in groups.values():
        settings: dict[tuple, list[dict]] = {}
        for r in group:
            settings.setdefault((_rate(r), r.get("beta", 0.0)), []).append(r)
        scores = {k: float(np.median([count_at(r) for r in v])) for k, v in settings.items()}
        best = min(scores, key=lambda k: (scores[k], k[0], k[1]))
        finite = not math.isinf(scores[best])
        rates = sorted(k[0] for k in settings if k[1] == best[1])
        betas = sorted({k[1] for k in settings})
        for r in group:
            r["selected"] = False
            r.pop("lr_on_edge", None)
            r.pop("beta_on_edge", None)
        for r in settings[best]:
            r["selected"] = True
            r["lr_on_edge"] = finite and len(rates) > 1 and best[0] in (rates[0], rates[-1])
            r["beta_on_edge"] = finite and len(betas) > 1 and best[1] in (betas[0], betas[-1])
    return records


def choose_setting(records: list[dict]) -> list[dict]:
    """The records at each point's chosen (lr, β), one per seed per point and method: those marked ``selected``
    when the sweep marked them, else marked here (`mark_selected`, on copies)."""
    if records and all("selected" in r for r in records):
        return [r for r in records if r["selected"]]
    return [r for r in mark_selected([dict(r) for r in records]) if r["selected"]]


class CriticalBatch(NamedTuple):
    """S(B) = S_min (1 + B_crit/B) fitted to one method's medians, with a 95% seed-bootstrap CI."""

    method: str
    s_min: float
    b_crit: float
    s_min_ci: tuple[float, float]
    b_crit_ci: tuple[float, float]
    points: int
    excluded: int
    deterministic: bool


def medians(records: list[dict], method: str, axis: str = "batch"):
    """(x, median over seeds with censored lanes as ≥ cap, whether each median is only a lower bound)."""
    xs, y, status = iteration_matrix(records, method, axis)
    lower = np.isin(status, ("censored", "stalled"))
    med, bound = censored_medians(y, lower)
    return xs, med, bound, y, lower


def critical_batch(records: list[dict], method: str, n_boot: int = 500, seed: int = 0) -> CriticalBatch:
    """Fit the McCandlish curve to the chosen records of ``method`` (points whose median is only a lower bound,
    i.e. censored, are left out) and bootstrap the seeds for CIs."""
    xs, med, bound, y, lower = medians(records, method)
    use = np.isfinite(med) & ~bound
    s_min, b_crit = theory.mccandlish_fit(xs[use], med[use])
    deterministic = y.shape[1] < 2 or bool(np.all(np.where(np.isnan(y), -1, y) == np.where(np.isnan(y), -1, y)[:, :1]))
    if deterministic:
        ci = ((s_min, s_min), (b_crit, b_crit))
    else:
        rng = np.random.default_rng(seed)
        big = np.where(lower, np.inf, y)
        fits = []
        for _ in range(n_boot):
            cols = rng.integers(0, y.shape[1], y.shape[1])
            with np.errstate(all="ignore"):
                m = np.nanmedian(big[:, cols], axis=1)
            ok = use & np.isfinite(m)
            fits.append(theory.mccandlish_fit(xs[ok], m[ok]))
        fits = np.asarray(fits)
        ci = tuple(tuple(float(v) for v in np.nanpercentile(fits[:, i], [2.5, 97.5])) for i in range(2))
    return CriticalBatch(method, s_min, b_crit, ci[0], ci[1], int(use.sum()), int((~use).sum()), deterministic)


def best_lrs(records: list[dict], method: str) -> tuple[np.ndarray, np.ndarray]:
    """(B, the chosen step size at B) for one method."""
    by_batch: dict[float, list[float]] = {}
    for r in records:
        if r["method"] == method:
            by_batch.setdefault(r["batch"], []).append(r["learning_rate"])
    xs = np.asarray(sorted(by_batch))
    return xs, np.asarray([float(np.median(by_batch[b])) for b in xs])


def loglog_slope(x, y) -> float:
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(y) & (y > 0)
    if ok.sum() < 2:
        return math.nan
    return float(np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)[0])


def lr_slope(records: list[dict], method: str, up_to: float | None) -> tuple[float, int]:
    """The log-log slope of the best lr vs B over B ≤ ``up_to`` (the perfect-scaling region), and its points; no
    region (``up_to`` None): nan over 0 points, not a slope over every point."""
    xs, lrs = best_lrs(records, method)
    if up_to is None:
        return math.nan, 0
    keep = xs <= up_to
    return loglog_slope(xs[keep], lrs[keep]), int(keep.sum())
