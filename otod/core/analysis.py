"""One analysis pipeline after the engine, for every obstacle: records as one pandas DataFrame → one setting
(learning rate, β) per point → medians over seeds → fits whose confidence intervals resample the seeds and redo
the selection inside every resample.

The selection rule (Shallue et al. 2019, "Measuring the effects of data parallelism on neural network
training"): a point (every axis value but β, and the series: the method, or method·init) gets the setting whose
median count over seeds is lowest, lanes that did not converge counted as worst (+∞); ties go to the smaller rate
and then the smaller β. Where no setting converges on more than half the seeds, the reference step (rate
multiplier 1, the smallest β) is kept. Every seed's count at the chosen setting is reported: keeping each seed's
own best would pick lucky runs and bias the counts low. A choice on the smallest or largest rate tried (at its
β), or on the smallest or largest β tried, is flagged ``lr_on_edge`` / ``beta_on_edge``: the optimum may lie
beyond the grid (or the edge is the method's stability limit: the obstacle says which).

The selection is part of the estimator: a fit's bootstrap (Efron & Tibshirani 1993, §6) resamples the seed
columns (the problem instances, shared by every point: common random numbers), re-chooses every point's setting
on the resampled seeds, and refits. Keeping the setting chosen from all seeds leaves the choice's own sampling
error out of the interval (tests/core/test_analysis.py: a steady and a spread rate of about the same median, where
the fixed-choice interval is several times narrower; where several rates share one distribution the re-chosen
interval is not wider, the luckiest of k medians varying less than one). The points a fit reads are those whose
median over every seed is finite and not only a lower bound (and within the statistic's ``points(x)``, e.g. a fit
range); only they are resampled, each point's choice depending on its own lanes alone. A replicate leaves out a
point whose resampled median becomes a lower bound, but never takes in one the estimate holds as a bound: where
about half of a point's seeds are censored, a resample that happens to draw more converged seeds would fit the
median of the easy instances as the point's, biased low. Measured on the README's first depth example, where
every point's choice was redone but the points were not restricted: 90% of the replicates of gd·orthogonal
fitted depths at which 4 of 8 seeds converge, and the 95% interval of its exponent, [1.03, 2.92], excluded the
estimate 2.94 (restricted: [2.23, 3.86]). A series with one setting per point has nothing to re-choose.

One `Analysis` per command (`analyse`): per group of static points, per series, the `Bootstrap` (with the
`Choice` and `Cube` it rests on), the `summary` rows a table prints, the obstacle's reading of the fit, and the
chosen records; the table, the figure and ``otod fit`` all read it. Its first step, the choices alone on the point
estimates (`placements`), is what the bracket reads between its rounds (`otod.core.bracket`).

Counts, as every table and fit reads them: a converged lane holds its count; a censored or stalled lane is only
a lower bound (+∞ in a median: leaving it out would bias the median low); a diverged lane is +∞ for the
selection and left out of the medians at the chosen setting (counted). A median resting on lower bounds is
itself only a lower bound, shown as "≥ the smallest censored count" and left out of fits.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np
import pandas as pd

from otod.core.line_fit import fit_line
from otod.core.resample import resampled_medians, seed_draws, sorted_rows

#: Statuses whose count is only a lower bound on the iterations to target.
LOWER = ("censored", "stalled")
#: Where a chosen setting lies among the values tried: inside them (tried on both sides, neither better); at a true
#: limit (no larger step is stable, β = 0, 1 − β at float precision: the obstacle says which); at the end of a
#: list the user gave; at the end of a default grid tried as given. A report marks the last three.
INTERIOR, LIMIT, LIST_END, GRID_END = "interior", "limit", "list end", "grid end"
PLACES = (INTERIOR, LIMIT, LIST_END, GRID_END)


def frame_of(source, fields: Sequence[str] | None = None) -> pd.DataFrame:
    """The records as a DataFrame: from a `otod.core.results.Results` (its ``to_pandas``: NumPy columns, no dict
    per record), a list of record dicts (through the same columns, `otod.core.columns.table_of`, so both give
    the same frame: a list such as ``hits`` as columns ``hits[0]`` …), or a DataFrame (returned as is). With
    ``fields``, a list of dicts gives only those columns (None where a record lacks one): what marking a
    million fresh records needs, without building every column."""
    if isinstance(source, pd.DataFrame):
        return source
    to_pandas = getattr(source, "to_pandas", None)
    if to_pandas is not None:
        return to_pandas()
    records = list(source)
    if fields is not None:
        return pd.DataFrame({f: [r.get(f) for r in records] for f in fields}, index=range(len(records)))
    from otod.core.columns import table_of

    return pd.DataFrame(table_of(records).arrays(), index=range(len(records)))


def at_rung(frame: pd.DataFrame, rung: int) -> pd.DataFrame:
    """The records as if the target were ladder rung ``rung``: iterations and status of its first hit (a lane
    that converged at the sweep's tol but not at this rung is censored there). The hits are the columns
    ``hits[k]`` (`frame_of`), or one ``hits`` column of lists."""
    column = f"hits[{rung}]"
    if column in frame:
        hit = pd.to_numeric(frame[column], errors="coerce").to_numpy(float, na_value=np.nan)
    else:
        hit = frame["hits"].map(lambda h: h[rung] if h is not None and len(h) > rung and h[rung] is not None
                                else np.nan).to_numpy(float, na_value=np.nan)
    reached = ~np.isnan(hit) & (hit >= 0)
    status = frame["status"].to_numpy(object)
    status = np.where(reached, "converged", np.where(status == "converged", "censored", status))
    iterations = np.where(reached, hit, frame["iterations"].to_numpy(float, na_value=np.nan))
    return frame.assign(iterations=iterations, status=status)


def rates_of(frame: pd.DataFrame) -> np.ndarray:
    """Each record's learning-rate setting: its multiplier of the reference step where it has one, else its
    absolute learning rate."""
    multiplier = (frame["lr_multiplier"].to_numpy(float, na_value=np.nan) if "lr_multiplier" in frame
                  else np.full(len(frame), np.nan))
    absolute = (frame["learning_rate"].to_numpy(float, na_value=np.nan) if "learning_rate" in frame
                else np.full(len(frame), np.nan))
    return np.where(np.isnan(multiplier), absolute, multiplier)


def betas_of(frame: pd.DataFrame) -> np.ndarray:
    return frame["beta"].to_numpy(float, na_value=0.0) if "beta" in frame else np.zeros(len(frame))


@dataclass(frozen=True)
class Cube:
    """One series' records as arrays [point, setting, seed].

    ``points``: one row per point (the point fields' values); ``rates``/``betas``: each setting, sorted by rate
    then β (so the first of equal scores is the tie-break's choice); ``count``: iterations (converged, or a lower
    bound where censored or stalled), NaN where the lane diverged, was pruned or was not run; ``status``: each lane's ("" where
    not run); ``tried``: [point, setting] has records;
    ``row``: each lane's row in the frame (−1: none)."""

    series: str
    points: pd.DataFrame
    rates: np.ndarray
    betas: np.ndarray
    seeds: np.ndarray
    count: np.ndarray
    status: np.ndarray
    row: np.ndarray

    @property
    def lower(self) -> np.ndarray:
        return np.isin(self.status, LOWER)

    @property
    def diverged(self) -> np.ndarray:
        return self.status == "diverged"

    @property
    def tried(self) -> np.ndarray:
        return (self.row >= 0).any(-1)

    def selection_counts(self) -> np.ndarray:
        """Counts for choosing a setting: +∞ where the lane did not converge (censored, stalled, diverged, or
        pruned: stopped once it could no longer beat the best), NaN where it was not run."""
        return np.where(self.row < 0, np.nan, np.where(self.status == "converged", self.count, np.inf))

    def median_counts(self) -> np.ndarray:
        """Counts for the medians at the chosen setting: +∞ for a lower bound, NaN where diverged or not run."""
        return np.where(self.lower, np.inf, self.count)

    def x(self, axis: str) -> np.ndarray:
        return self.points[axis].to_numpy(float)


def cubes(frame: pd.DataFrame, point: Sequence[str], series: str = "method") -> list[Cube]:
    """One `Cube` per value of ``series`` (in order of first appearance), points sorted by the ``point`` fields."""
    point = [p for p in point if p in frame and p != "beta"]
    rate, beta = rates_of(frame), betas_of(frame)
    status = frame["status"].to_numpy(object)
    iterations = frame["iterations"].to_numpy(float, na_value=np.nan)
    seed_codes, seeds = pd.factorize(frame["seed"], sort=True) if "seed" in frame else (
        np.zeros(len(frame), np.int64), np.array([0]))
    out = []
    for name, rows in frame.groupby(series, sort=False).indices.items():
        keys = frame.iloc[rows][point] if point else pd.DataFrame(index=range(len(rows)))
        if point:
            point_codes = keys.groupby(point, sort=True, dropna=False).ngroup().to_numpy()
            points = keys.drop_duplicates().sort_values(point).reset_index(drop=True)
        else:
            point_codes, points = np.zeros(len(rows), np.int64), pd.DataFrame(index=[0])
        settings = pd.DataFrame({"rate": rate[rows], "beta": beta[rows]})
        setting_codes = settings.groupby(["rate", "beta"], sort=True, dropna=False).ngroup().to_numpy()
        unique = settings.drop_duplicates().sort_values(["rate", "beta"])
        shape = (len(points), len(unique), len(seeds))
        row = np.full(shape, -1, np.int64)
        row[point_codes, setting_codes, seed_codes[rows]] = rows
        lane = np.where(row >= 0, row, 0)
        ran = row >= 0
        lane_status = np.where(ran, status[lane], "")
        counted = (lane_status == "converged") | np.isin(lane_status, LOWER)
        count = np.where(counted, iterations[lane], np.nan)
        out.append(Cube(str(name), points, unique["rate"].to_numpy(float), unique["beta"].to_numpy(float),
                        np.asarray(seeds), count, lane_status, row))
    return out


def nan_median(a: np.ndarray) -> np.ndarray:
    """Median along the last axis ignoring NaN (+∞ counts as a value; NaN where a row has no value), as
    ``np.nanmedian`` but by one sort: the bootstrap takes ~10⁵ such medians."""
    s = np.sort(a, axis=-1)
    n = (~np.isnan(a)).sum(-1)
    lo = np.take_along_axis(s, np.maximum((n - 1) // 2, 0)[..., None], -1)[..., 0]
    hi = np.take_along_axis(s, np.maximum(n // 2, 0)[..., None], -1)[..., 0]
    with np.errstate(invalid="ignore"):
        return np.where(n > 0, 0.5 * (lo + hi), np.nan)


def choose(scores: np.ndarray, tried: np.ndarray, rates: np.ndarray) -> np.ndarray:
    """The chosen setting's index per point from median scores [..., point, setting] (``tried`` [point, setting]:
    the setting has records there; ``rates``: each setting's rate): the lowest, the first of equals (the smaller
    rate, then β: settings are sorted so); the reference setting (rate 1, smallest β, where tried) when every
    score is +∞."""
    s = np.where(tried & ~np.isnan(scores), scores, np.inf)
    best = np.argmin(s, axis=-1)
    stuck = np.isinf(np.min(s, axis=-1))
    if stuck.any():
        fallback = np.argmax(tried, axis=-1)
        reference = np.flatnonzero(rates == 1.0)
        if reference.size:
            at_reference = tried[:, reference]
            fallback = np.where(at_reference.any(-1), reference[np.argmax(at_reference, axis=-1)], fallback)
        best = np.where(stuck, np.broadcast_to(fallback, best.shape), best)
    return best


def edges(cube: Cube, chosen: np.ndarray, finite: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lr_on_edge, beta_on_edge) per point: the chosen rate is the smallest or largest tried at its β and
    point, or the chosen β the smallest or largest tried at that point, with a finite median (more than one
    value tried)."""
    tried = cube.tried
    rate, beta = cube.rates[chosen], cube.betas[chosen]
    same_beta = tried & (cube.betas[None, :] == beta[:, None])
    rates_at = np.where(same_beta, cube.rates[None, :], np.nan)
    betas_at = np.where(tried, cube.betas[None, :], np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lr_edge = (same_beta.sum(-1) > 1) & ((rate == np.nanmin(rates_at, -1)) | (rate == np.nanmax(rates_at, -1)))
        low, high = np.nanmin(betas_at, -1), np.nanmax(betas_at, -1)
    beta_edge = (low < high) & ((beta == low) | (beta == high))
    return lr_edge & finite, beta_edge & finite


def lr_places(choice: "Choice", given: bool = False) -> np.ndarray:
    """Where each point's chosen rate lies among the rates tried at its β (`PLACES`): on an edge (``lr_on_edge``),
    the end of the user's list (``given``: `LIST_END`) or of a grid tried as given, or where its extension
    stopped (`GRID_END`); inside, at a true limit (`LIMIT`) where the next larger rate tried diverged on more
    than half its seeds (no larger step is stable: `otod.core.bracket`), else `INTERIOR`."""
    cube = choice.cube
    rate, beta = cube.rates[choice.index], cube.betas[choice.index]
    above = cube.tried & (cube.betas[None, :] == beta[:, None]) & (cube.rates[None, :] > rate[:, None])
    nearest = np.argmin(np.where(above, cube.rates[None, :], np.inf), axis=-1)
    status = np.take_along_axis(cube.status, nearest[:, None, None], 1)[:, 0]
    ran = (status != "").sum(-1)
    diverged = above.any(-1) & (2 * (status == "diverged").sum(-1) > ran)
    return np.where(choice.lr_on_edge, LIST_END if given else GRID_END, np.where(diverged, LIMIT, INTERIOR))


def beta_places(choice: "Choice", given: bool = False) -> np.ndarray:
    """Where each point's chosen β lies among the β tried (`PLACES`): β = 0 on the lower edge is its true limit
    (`LIMIT`); the upper edge is the end of the user's list (``given``: `LIST_END`) or of a default list tried as
    given (`GRID_END`); else `INTERIOR`."""
    beta = choice.cube.betas[choice.index]
    return np.where(choice.beta_on_edge, np.where(beta == 0.0, LIMIT, LIST_END if given else GRID_END), INTERIOR)


def censored_medians(y: np.ndarray, lower: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Medians over the last axis with lanes in ``lower`` counted as +∞ (at least their value), NaN ignored;
    returns (median, whether it is only a lower bound). A lower-bound median is reported as the smallest
    censored value among those it rests on."""
    med = nan_median(np.where(lower, np.inf, y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        floor = np.nanmin(np.where(lower, y, np.nan), axis=-1) if lower.any() else np.full(med.shape, np.nan)
    bound = np.isinf(med)
    return np.where(bound, floor, med), bound


class Choice(NamedTuple):
    """A series' chosen setting per point (from every seed) and the medians there."""

    cube: Cube
    index: np.ndarray
    median: np.ndarray
    bound: np.ndarray
    lr_on_edge: np.ndarray
    beta_on_edge: np.ndarray

    def at_choice(self, values: np.ndarray) -> np.ndarray:
        """``values`` [point, setting, seed] at each point's chosen setting: [point, seed]."""
        return np.take_along_axis(values, self.index[:, None, None], 1)[:, 0]

    def lanes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(counts, lower, status) [point, seed] at the chosen settings: what a figure's band and × marks draw."""
        return self.at_choice(self.cube.count), self.at_choice(self.cube.lower), self.at_choice(self.cube.status)


def chosen(cube: Cube) -> Choice:
    """Each point's setting chosen on every seed, with the censored medians there and the edge flags."""
    index = choose(nan_median(cube.selection_counts()), cube.tried, cube.rates)
    pick = lambda a: np.take_along_axis(a, index[:, None, None], 1)[:, 0]  # noqa: E731
    median, bound = censored_medians(pick(cube.count), pick(cube.lower))
    finite = np.isfinite(median) & ~bound
    lr_edge, beta_edge = edges(cube, index, finite)
    return Choice(cube, index, median, bound, lr_edge, beta_edge)


def chosen_rows(frame: pd.DataFrame, choices: Sequence[Choice], given: Sequence[str] = ()) -> pd.DataFrame:
    """The records at the chosen settings of ``choices`` (one per seed and point, in frame order), with
    ``lr_on_edge`` and ``beta_on_edge`` set on them, and where the choice lies (``lr_place``, ``beta_place``:
    `lr_places`, `beta_places`; ``given``: the settings, "lr" or "beta", whose values the user listed)."""
    n = len(frame)
    keep, lr_flag, beta_flag = np.zeros(n, bool), np.zeros(n, bool), np.zeros(n, bool)
    lr_at, beta_at = np.full(n, INTERIOR, object), np.full(n, INTERIOR, object)
    for choice in choices:
        rows = choice.at_choice(choice.cube.row)
        ran = rows >= 0
        take = rows[ran]
        keep[take] = True
        for out, values in ((lr_flag, choice.lr_on_edge), (beta_flag, choice.beta_on_edge),
                            (lr_at, lr_places(choice, "lr" in given)), (beta_at, beta_places(choice, "beta" in given))):
            out[take] = np.broadcast_to(values[:, None], rows.shape)[ran]
    return frame.assign(lr_on_edge=lr_flag, beta_on_edge=beta_flag, lr_place=lr_at, beta_place=beta_at)[keep]


def select(frame: pd.DataFrame, point: Sequence[str], series: str = "method") -> pd.DataFrame:
    """The records at each point's chosen setting (one per seed, in frame order), with ``lr_on_edge`` and
    ``beta_on_edge`` set on them. Records of a single setting per point pass through (flags False)."""
    if len(frame) == 0:
        return frame.assign(lr_on_edge=pd.Series(dtype=bool), beta_on_edge=pd.Series(dtype=bool))
    return chosen_rows(frame, [chosen(cube) for cube in cubes(frame, point, series)])


def mark_selection(frame: pd.DataFrame, point: Sequence[str], series: str = "method") -> pd.DataFrame:
    """The frame with ``selected`` (the record is at its point's chosen setting), ``lr_on_edge`` and
    ``beta_on_edge`` on every record (False off the chosen setting): what a sweep writes into its records."""
    picked = select(frame, point, series)
    out = frame.assign(selected=False, lr_on_edge=False, beta_on_edge=False)
    out.loc[picked.index, ["selected", "lr_on_edge", "beta_on_edge"]] = np.column_stack(
        [np.ones(len(picked), bool), picked["lr_on_edge"].to_numpy(bool), picked["beta_on_edge"].to_numpy(bool)])
    return out.astype({"selected": bool, "lr_on_edge": bool, "beta_on_edge": bool})


# -- fits and their bootstrap -------------------------------------------------------------------------------------


def deterministic(cube: Cube, points: np.ndarray | None = None) -> bool:
    """Whether every seed gave the same outcome (status and count) at every point (of ``points``, a mask) and
    setting: then there is no sampling error, and an interval would only restate the estimate. Every setting
    counts, not only the chosen one: seeds that differ elsewhere could change the choice."""
    status, count = (cube.status, cube.count) if points is None else (cube.status[points], cube.count[points])
    same_status = np.all(status == status[..., :1])
    count = np.where(np.isnan(count), -1.0, count)
    return count.shape[-1] < 2 or bool(same_status and np.all(count == count[..., :1]))


#: A seed bootstrap over fewer seeds than this gives no CI (`no_ci_reason`).
MIN_BOOTSTRAP_SEEDS = 5


def no_ci_reason(seeds: int) -> str | None:
    """Why a bootstrap over ``seeds`` seeds gives no CI, in words for a report; None from `MIN_BOOTSTRAP_SEEDS` on.
    n seeds have only C(2n − 1, n) distinct resamples: 3 at n = 2, 10 at 3, 35 at 4 (126 at 5), so the 2.5 and 97.5
    percentiles are picked from a handful of values, and the percentile interval's 95% holds only as n grows
    (Efron & Tibshirani 1993, §13). Every CI a report prints comes through `Bootstrap.ci`, which applies this
    rule; the reports print this reason in its place."""
    if seeds >= MIN_BOOTSTRAP_SEEDS:
        return None
    distinct = math.comb(2 * seeds - 1, seeds) if seeds > 0 else 0
    return (f"no CI: {seeds} seed{'s' * (seeds != 1)} give{'s' * (seeds == 1)} {distinct} distinct bootstrap "
            f"resample{'s' * (distinct != 1)}; a CI needs ≥ {MIN_BOOTSTRAP_SEEDS} seeds")


#: A statistic of one series: (x [point], medians [replicate, point] with lower bounds and non-finite medians as
#: NaN) → values [replicate, k]. One may have ``points(x)``: the mask of the points it reads (the bootstrap then
#: resamples only those; every other point's selection is independent of them).
Statistic = Callable[[np.ndarray, np.ndarray], np.ndarray]


#: Finite replicate curves a drawn band needs (fewer: none): with so few, the 2.5 and 97.5 percentiles are the
#: extreme curves themselves.
MIN_BAND_REPLICATES = 20


def pointwise_band(curves, level: float = 0.95) -> tuple[np.ndarray, np.ndarray] | None:
    """The pointwise ``level`` band of a fitted curve from its bootstrap: at each x, the (1 − level)/2 and
    (1 + level)/2 percentiles over the replicate curves ``curves`` [replicate, x] (each the fit redone on one
    resample of the seeds, the selection with it), over the replicates finite at every x; None with fewer than
    `MIN_BAND_REPLICATES` of them. The percentile interval of the curve's value at each x (Efron & Tibshirani
    1993, §13), the same replicates as the fit's parameter CIs; pointwise, not a simultaneous band."""
    curves = np.asarray(curves, float)
    if curves.ndim != 2:
        return None
    curves = curves[np.all(np.isfinite(curves), axis=1)]
    if len(curves) < MIN_BAND_REPLICATES:
        return None
    tail = 100 * (1 - level) / 2
    return np.percentile(curves, tail, axis=0), np.percentile(curves, 100 - tail, axis=0)


class Bootstrap(NamedTuple):
    """A statistic of one series with its seed bootstrap. ``estimate`` [k] from every seed; ``replicates``
    [replicate, k] and ``medians`` [replicate, point] (NaN: a lower bound, none, or a point the statistic does
    not read) from resamples of the seeds, each with its own selection; empty where ``deterministic``. ``draws``
    [replicate, seed]: the seed columns each replicate drew (`seed_draws`; None without replicates), so a statistic
    of the same seeds beside the cube (a predictor's per-seed values) is resampled with the very same draws."""

    choice: Choice
    estimate: np.ndarray
    replicates: np.ndarray
    medians: np.ndarray
    deterministic: bool
    draws: np.ndarray | None = None

    @property
    def no_ci(self) -> str | None:
        """`no_ci_reason` for this bootstrap's seeds (None where it gives a CI, or is deterministic)."""
        return None if self.deterministic or self.choice is None else no_ci_reason(self.choice.cube.count.shape[-1])

    def band(self, curve: Callable[[np.ndarray], np.ndarray], level: float = 0.95
             ) -> tuple[np.ndarray, np.ndarray] | None:
        """The `pointwise_band` of ``curve(replicates)`` (the statistic's replicate rows [replicate, k] → their
        curves [replicate, x]), or None where there is no CI: deterministic, too few seeds (`no_ci`), no
        replicates."""
        if self.deterministic or self.no_ci is not None or not len(self.replicates):
            return None
        with np.errstate(all="ignore"):
            return pointwise_band(curve(np.asarray(self.replicates, float)), level)

    def ci(self, i: int = 0, level: float = 0.95) -> tuple[float, float]:
        """The percentile interval of statistic ``i`` (the estimate itself where deterministic, NaN where the
        estimate is not finite, or where the seeds are too few for one: `no_ci`)."""
        if self.deterministic or not np.isfinite(self.estimate[i]):
            return float(self.estimate[i]), float(self.estimate[i])
        if self.no_ci is not None:
            return math.nan, math.nan
        values = self.replicates[:, i]
        values = values[~np.isnan(values)]
        if values.size == 0:
            return math.nan, math.nan
        tail = 100 * (1 - level) / 2
        with np.errstate(invalid="ignore"):
            low, high = np.percentile(values, [tail, 100 - tail])
        # interpolating towards an infinite replicate (a critical batch beyond every grid) gives inf − inf = NaN:
        # the percentile lies at that infinity
        low, high = (np.percentile(values, q, method="higher") if np.isnan(v) else v
                     for v, q in ((low, tail), (high, 100 - tail)))
        return float(low), float(high)


def fit_medians(median: np.ndarray, bound: np.ndarray) -> np.ndarray:
    """The medians a fit uses: finite, positive and not only a lower bound; NaN elsewhere."""
    return np.where(np.isfinite(median) & ~bound & (median > 0), median, np.nan)


def points_of(statistic: Statistic, x: np.ndarray) -> np.ndarray:
    """The mask of the points ``statistic`` reads (its ``points(x)``, else every point)."""
    points = getattr(statistic, "points", None)
    return np.ones(x.shape, bool) if points is None else np.asarray(points(x), bool)


def bootstrap(cube: Cube, axis: str, statistic: Statistic, *, n_boot: int = 1000, seed: int = 0,
              batch: int = 100, choice: Choice | None = None) -> Bootstrap:
    """``statistic`` of the series' medians along ``axis`` at each point's chosen setting, and its bootstrap: each
    replicate draws the seed columns with replacement (every point at once), re-chooses every point's setting on
    those seeds by the same rule, and recomputes the statistic on the medians there. Only the points the
    estimate fits are resampled: those the statistic reads (`points_of`) whose median over every seed is finite
    and not a lower bound (module docstring); a series of one setting per point skips the re-choosing (it has
    nothing to choose). ``batch`` replicates at a time (memory O(batch × points × settings)); ``choice`` is
    `chosen` (cube), where the caller has it."""
    choice = chosen(cube) if choice is None else choice
    x = cube.x(axis)
    fitted = fit_medians(choice.median, choice.bound)
    use = points_of(statistic, x) & np.isfinite(fitted)  # a bound stays out of every replicate (module docstring)
    estimate = np.asarray(statistic(x, np.where(use, fitted, np.nan)[None, :]), float)[0]
    if not use.any():  # nothing to fit: no interval either
        return Bootstrap(choice, estimate, np.empty((0, len(estimate))), np.empty((0, len(x))), False)
    if deterministic(cube, use):
        return Bootstrap(choice, estimate, np.empty((0, len(estimate))), np.empty((0, len(x))), True)
    n_points, n_seeds = cube.count.shape[0], cube.count.shape[-1]
    at_choice = rechosen(cube, use)
    if n_boot <= 0:  # the choice and medians alone (a curve to draw): no interval
        return Bootstrap(choice, estimate, np.empty((0, len(estimate))), np.empty((0, len(x))), False)
    replicates, medians, draws = [], [], seed_draws(n_seeds, n_boot, seed, batch)
    for cols in draws:
        med = at_choice(cols)
        at = np.full((len(cols), n_points), np.nan)
        at[:, use] = np.where(np.isinf(med) | ~(med > 0), np.nan, med)
        medians.append(at)
        replicates.append(np.asarray(statistic(x, at), float))
    return Bootstrap(choice, estimate, np.concatenate(replicates), np.concatenate(medians), False,
                     np.concatenate(draws))


def rechosen(cube: Cube, use: np.ndarray | None = None) -> Callable[[np.ndarray], np.ndarray]:
    """The resample of the bootstrap (module docstring) as a function of the drawn seed columns: ``cols``
    [replicate, seed] → [replicate, point of ``use``] (every point where None) the median over the drawn seeds at
    the setting chosen on them by the one rule (`choose` on the drawn seeds' median selection counts), +∞ where
    only a lower bound, NaN where none. The sorted rows are computed once for every call; a series of one
    setting per point has nothing to re-choose."""
    use = np.ones(cube.count.shape[0], bool) if use is None else use
    n_settings, n_seeds = cube.count.shape[1:]
    m = int(use.sum())
    tried, rates = cube.tried[use], cube.rates
    score_rows = sorted_rows(cube.selection_counts()[use].reshape(-1, n_seeds)) if n_settings > 1 else None
    median_rows = sorted_rows(cube.median_counts()[use].reshape(-1, n_seeds))

    def at_choice(cols: np.ndarray) -> np.ndarray:
        resampled = resampled_medians(median_rows, cols).reshape(len(cols), m, n_settings)
        if score_rows is None:
            return resampled[..., 0]
        scores = resampled_medians(score_rows, cols).reshape(resampled.shape)
        return np.take_along_axis(resampled, choose(scores, tried, rates)[..., None], -1)[..., 0]

    return at_choice


@dataclass(frozen=True)
class PowerLaw:
    """The statistic (exponent b, prefactor a, RMS residual of log) of median ≈ a·x^b over the points with
    x ≥ ``min_x`` (every point where None)."""

    min_x: float | None = None

    def points(self, x: np.ndarray) -> np.ndarray:
        return np.ones(np.shape(x), bool) if self.min_x is None else np.asarray(x) >= self.min_x

    def __call__(self, x: np.ndarray, medians: np.ndarray) -> np.ndarray:
        logy = np.where(self.points(x), np.log(medians), np.nan)
        slope, intercept, rss = fit_line(np.log(x), logy)
        n = np.isfinite(logy).sum(-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.stack([slope, np.exp(intercept), np.sqrt(rss / n)], -1)


def power_law(min_x: float | None = None) -> PowerLaw:
    """The power-law statistic over the points with x ≥ ``min_x`` (`PowerLaw`)."""
    return PowerLaw(min_x)


def chosen_learning_rates(frame: pd.DataFrame, choice: Choice) -> np.ndarray:
    """The chosen absolute step per point: the median over seeds of the lanes' ``learning_rate`` at the chosen
    setting (``frame``: the records the choice's cube indexes). Equal across seeds where the reference step is
    fixed; a regression's or a net's reference step may be each seed's own."""
    lr = frame["learning_rate"].to_numpy(float, na_value=np.nan)
    row = choice.at_choice(choice.cube.row)
    return nan_median(np.where(row >= 0, lr[np.maximum(row, 0)], np.nan))


def summary(choice: Choice, axis: str, given: Sequence[str] = ()) -> pd.DataFrame:
    """Per point of one series: the median over seeds at the chosen setting (``lower_bound`` where it is only
    that), quartiles of the converged counts, counts by status, the chosen rate and β, the edge flags, and where
    the choice lies (``lr_place``, ``beta_place``: `lr_places`, `beta_places`; ``given``: the settings, "lr" or
    "beta", whose values the user listed)."""
    cube = choice.cube
    count, _, status = choice.lanes()
    converged = status == "converged"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        q25, q75 = np.nanpercentile(np.where(converged, count, np.nan), [25, 75], axis=1)
    return pd.DataFrame({
        "method": cube.series, "value": cube.x(axis), "median": choice.median, "lower_bound": choice.bound,
        "q25": q25, "q75": q75, "converged": converged.sum(1), "censored": (status == "censored").sum(1),
        "stalled": (status == "stalled").sum(1), "diverged": (status == "diverged").sum(1),
        "rate": cube.rates[choice.index], "beta": cube.betas[choice.index], "lr_on_edge": choice.lr_on_edge,
        "beta_on_edge": choice.beta_on_edge, "lr_place": lr_places(choice, "lr" in given),
        "beta_place": beta_places(choice, "beta" in given)})


# -- one sweep's analysis, computed once per command ----------------------------------------------------------


@dataclass(frozen=True, eq=False)
class SeriesAnalysis:
    """One series of one group: its bootstrapped statistic (with the choice and cube it rests on), its
    per-point summary, and ``fit``: what the obstacle reads off the bootstrap (a `otod.core.fit.PowerLawFit`,
    a depth law)."""

    name: str
    boot: Bootstrap
    summary: pd.DataFrame
    fit: Any = None

    @property
    def choice(self) -> Choice:
        return self.boot.choice

    @property
    def cube(self) -> Cube:
        return self.boot.choice.cube


@dataclass(frozen=True, eq=False)
class Group:
    """The series of one static point (``key``: the values of the grouping fields, ``heading`` naming them; ''
    where the sweep has one group), the statistic fitted to them, the records at the chosen settings, and
    ``rows``: all the group's records (each cube's ``row`` indexes them), whose fields name a point in full."""

    heading: str
    key: tuple
    statistic: Statistic
    series: tuple[SeriesAnalysis, ...]
    chosen: pd.DataFrame
    rows: pd.DataFrame | None = None

    @property
    def summary(self) -> pd.DataFrame:
        return pd.concat([s.summary for s in self.series], ignore_index=True) if self.series else pd.DataFrame()

    @property
    def fits(self) -> list:
        return [s.fit for s in self.series]


@dataclass(frozen=True, eq=False)
class Analysis:
    """A sweep's analysis at one tolerance: what its table, figure and ``otod fit`` all read, computed once per
    command. ``theory``: what the obstacle compares it with (e.g. condition's predictions), or None; ``config``:
    the sweep's config as read back once (`otod.core.config.SweepConfig.from_dict`), or None."""

    axis: str
    tol: float | None
    groups: tuple[Group, ...]
    theory: Any = None
    config: Any = None

    @property
    def chosen(self) -> pd.DataFrame:
        return pd.concat([g.chosen for g in self.groups]) if self.groups else pd.DataFrame()

    @property
    def series(self) -> list[SeriesAnalysis]:
        return [s for g in self.groups for s in g.series]


def heading_of(fields: Sequence[str], key: tuple) -> str:
    return ", ".join(f"{n} = {v:g}" for n, v in zip(fields, key))


@dataclass(frozen=True, eq=False)
class Placed:
    """One group's choices on the point estimates (`placements`): ``key`` the values of its grouping fields,
    ``rows`` its records (each cube's ``row`` indexes them, and their fields name a point in full), ``choices``
    one `Choice` per series (the cube inside it)."""

    key: tuple
    rows: pd.DataFrame
    choices: tuple[Choice, ...]


def placements(frame: pd.DataFrame, *, point: Sequence[str], by: Sequence[str] = (),
               series: str = "method") -> tuple[Placed, ...]:
    """Each point's chosen setting, and where it lies, on the point estimates alone: one group per value of the
    ``by`` fields (sorted), in each one `Cube` per ``series`` over the ``point`` fields and its `chosen` (the one
    rule, on every seed), with no bootstrap, summary or fit. It is the first step of `analyse`, which adds those
    to these very choices; on its own it is what the bracket's rounds read (`otod.core.bracket`: which choices
    sit on an edge of the rates or β tried), so a sweep whose bracket adds rounds makes its full analysis once,
    after the last round, instead of once per round (issue 51: one selection, one bootstrap)."""
    by = [f for f in by if f in frame]
    if by and len(frame):
        parts = [(tuple(k if isinstance(k, tuple) else (k,)), rows) for k, rows in frame.groupby(by, sort=True)]
    else:
        parts = [((), frame)]
    return tuple(Placed(key, rows, tuple(chosen(cube) for cube in (cubes(rows, point, series) if len(rows) else [])))
                 for key, rows in parts)


def analyse(frame: pd.DataFrame, *, point: Sequence[str], axis: str,
            statistic: Callable[[np.ndarray], Statistic] = lambda x: PowerLaw(),
            fit: Callable[[str, Bootstrap, Statistic, pd.DataFrame], Any] | None = None, by: Sequence[str] = (),
            series: str = "method", heading: Callable[[Sequence[str], tuple], str] = heading_of,
            tol: float | None = None, theory: Any = None, config: Any = None, n_boot: int = 1000,
            seed: int = 0, given: Sequence[str] = ()) -> Analysis:
    """The analysis of records (one frame, at one rung: `at_rung`): the `placements` (one group per value of the
    ``by`` fields, sorted; in each one `Cube` per series over the ``point`` fields and its chosen settings), then
    per series its summary along ``axis`` and the bootstrap of ``statistic(x)`` (x: the group's sorted axis
    values; the statistic may depend on them, e.g. a fit range), read by ``fit(name, bootstrap, statistic,
    summary)`` (the series' summary rows, with ``learning_rate``, the chosen absolute step, where the records
    carry one). ``n_boot`` 0: the choice and medians alone, no interval. ``given``: the settings ("lr", "beta")
    whose values the user listed, so a choice on their end is at a list's end (`lr_places`, `beta_places`). Every
    record passes through one selection here (`cubes`, `chosen`): a command makes one `Analysis`, so it selects
    once."""
    by = [f for f in by if f in frame]
    groups = []
    for placed in placements(frame, point=point, by=by, series=series):
        rows = placed.rows
        stat = statistic(np.unique(rows[axis].to_numpy(float))) if len(rows) else statistic(np.array([]))
        found = []
        for choice in placed.choices:
            cube = choice.cube
            boot = bootstrap(cube, axis, stat, n_boot=n_boot, seed=seed, choice=choice)
            rows_summary = summary(boot.choice, axis, given)
            if "learning_rate" in rows:
                rows_summary = rows_summary.assign(learning_rate=chosen_learning_rates(rows, boot.choice))
            found.append(SeriesAnalysis(cube.series, boot, rows_summary,
                                        fit(cube.series, boot, stat, rows_summary) if fit else None))
        picked = chosen_rows(rows, [s.choice for s in found], given) if found else rows.iloc[:0]
        groups.append(Group(heading(by, placed.key) if by else "", placed.key, stat, tuple(found), picked, rows))
    return Analysis(axis, tol, tuple(groups), theory, config)
