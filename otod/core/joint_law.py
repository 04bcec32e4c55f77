"""The batch-size rule on a joint grid of data size D and parameter count P: which of the two the critical batch
grows with, and how sure the seeds let us be.

Each cell (D, P) of the grid is one S(B) batch sweep (steps to a target at each batch size, the learning rate and β
tried at each batch, several seeds). The whole grid is read as one `otod.core.analysis.Cube` whose points are
(D, P, B), so the core's one selection and one seed bootstrap serve it unchanged: each cell's point (D, P, B) gets
the (lr, β) whose median over the seeds is lowest (Shallue et al. 2019), and each bootstrap replicate draws the seed
columns with replacement once for the whole grid (every cell resampled with the same seeds: common random numbers)
and re-chooses the (lr, β) at every point of every cell before anything is fitted. Per cell and per replicate:

* McCandlish et al.'s critical batch B_crit = E_min/S_min of the hyperbola S(B) = S_min (1 + B_crit/B)
  (McCandlish et al. 2018, eq. 2.11), fitted by `otod.core.critical_batch.mccandlish_fit`, exactly as a single
  batch sweep's analysis fits it (`otod.core.critical_batch.analyse_batches`: the same estimates and replicates,
  bitwise, where the cells' seeds agree: tests/core/test_joint_law.py);
* Zhang et al.'s critical batch (`zhang_critical_batch`): the largest batch whose steps stay within 20% of linear
  scaling from the smallest batch, read off the medians without the hyperbola.

Then the joint law log B = c + a·log D + b·log P (`plane_law`), least squares over the cells, for each definition,
refitted on every replicate row: its 95% percentile intervals on a, b and a − b (Efron & Tibshirani 1993, §13).

A cell whose critical batch is only a bound is left out of the law, as `otod.core.critical_batch.scaling_rules`
leaves such a panel out of a one-axis rule: McCandlish's B_crit beyond the largest batch fitted (or S_min = 0: steps
∝ 1/B over the whole grid) is only "> B_max", below the smallest only "< B_min"
(`otod.core.critical_batch.describe_critical_batch`); Zhang's is only "> B_max" where the steps stay within 20% of
linear scaling up to the largest batch. The law is fitted on the cells whose estimate lies inside their batches
(`Cell.places`), and each replicate row refits those same cells; a row where any of them is not finite and positive
(S_min = 0 in that resample) is left out, and the rows kept are counted (`PlaneLaw.rows`).

Measured on synthetic grids (`benchmarks/bootstrap_coverage.py --joint`: 4 × 4 cells over two decades of D and P,
B_crit = 0.8·D^0.5, the nets' fixture's seed noise, 500 resamples; 200 grids per seed count, 2026-12-02): the 95%
intervals of McCandlish's a, b and a − b held the law's values in 98.0, 99.0, 98.5% of the grids at 5 seeds and
97.5, 98.5, 98.0% at 8 (Wilson intervals about ±2.5 points: conservative, as the per-cell B_crit interval is).
Zhang's exponent a is biased low read off noisy medians (median 0.196 at 5 seeds against 0.286 noise-free, 60
grids): the first crossing of a noisy R comes early, the more so the further along the grid it lies; its interval
for a held the noise-free value in only 68.0% [61.2, 74.1] (5 seeds) and 76.5% [70.2, 81.8] (8) of the grids, so
it is a second view beside B_crit's law, not a calibrated one.

The verdict (`verdict`) says what the intervals decide; where the a − b interval holds 0 it adds the smallest
|a − b| the grid could detect (`detectable_difference`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np

from otod.core import analysis as core
from otod.core.critical_batch import MIN_RULE_REPLICATES, N_BOOT, mccandlish_fits

#: Zhang et al.'s allowance over linear scaling: 20% more steps.
ZHANG_OVERHEAD = 1.2
#: Where a cell's critical batch lies against the batches it was read from: inside them (a measurement), beyond the
#: largest or below the smallest (only a bound), or none (too few points to read one).
INSIDE, ABOVE, BELOW, NONE = "inside", "above", "below", "none"
#: The answers a verdict gives (`verdict`).
ANSWERS = ("grows with D", "grows with P", "both", "neither", "cannot tell", "no CI")
#: The power and level of `detectable_difference`.
POWER, LEVEL = 0.8, 0.95


def zhang_critical_batch(batches, steps, overhead: float = ZHANG_OVERHEAD) -> float:
    """Zhang et al.'s critical batch (Zhang, Morwani, Vyas, Wu, Zou, Ghai, Foster & Kakade 2024, "How does
    critical batch size scale in pre-training?", arXiv:2410.21676, ICLR 2025): the batch at which the steps to the
    target exceed linear scaling from the smallest batch by 20%. Exactly: with B_0 the smallest batch that has
    steps, linear scaling is S_lin(B) = S(B_0)·B_0/B, and the overhead ratio R(B) = S(B)/S_lin(B) =
    S(B)·B/(S(B_0)·B_0) (R(B_0) = 1); the critical batch is the largest B such that R ≤ ``overhead`` at every batch
    from B_0 to B, with R taken linear in B between consecutive batches (the first crossing of 1.2, interpolated).

    On McCandlish's hyperbola S = S_min (1 + B_crit/B), R(B) = (B + B_crit)/(B_0 + B_crit) is linear in B, so the
    interpolation is exact and the critical batch is 1.2·B_0 + 0.2·B_crit: the same closed form the authors' own
    notebook solves after fitting S = a + b/B (plots/chinchilla.ipynb of github.com/hlzhang109/critical-batch-size:
    b − 5a·B + 6a·B_0 = 0, with B_0 = 256 there). Read here off the steps themselves, without the hyperbola, it is
    a second definition beside B_crit, not a function of it.

    +∞ where R stays within ``overhead`` up to the largest batch (only a bound: beyond the grid); NaN with fewer
    than two batches with steps (finite, positive)."""
    b, s = np.asarray(batches, float), np.asarray(steps, float)
    ok = np.isfinite(s) & (s > 0) & np.isfinite(b) & (b > 0)
    b, s = b[ok], s[ok]
    if len(b) < 2:
        return math.nan
    order = np.argsort(b, kind="stable")
    b, s = b[order], s[order]
    ratio = s * b / (s[0] * b[0])
    over = np.flatnonzero(ratio > overhead)
    if not over.size:
        return math.inf
    j = int(over[0])  # ≥ 1: R(B_0) = 1
    return float(b[j - 1] + (overhead - ratio[j - 1]) * (b[j] - b[j - 1]) / (ratio[j] - ratio[j - 1]))


@dataclass(frozen=True, eq=False)
class GridCriticalBatches:
    """The bootstrap statistic of a grid cube (`otod.core.analysis.bootstrap`): per row of medians [replicate,
    point], each cell's McCandlish B_crit (columns 0 … n − 1) then its Zhang critical batch (n … 2n − 1).
    ``cell``: each point's cell index (0 … n − 1)."""

    cell: np.ndarray
    n_cells: int

    def __call__(self, x: np.ndarray, medians: np.ndarray) -> np.ndarray:
        medians = np.asarray(medians, float)
        out = np.full((len(medians), 2 * self.n_cells), math.nan)
        for c in range(self.n_cells):
            at = self.cell == c
            batches = x[at]
            out[:, c] = mccandlish_fits(batches, medians[:, at])[:, 1]  # every replicate at once
            for r, steps in enumerate(medians[:, at]):
                out[r, self.n_cells + c] = zhang_critical_batch(batches, steps)
        return out


def place_of(value: float, batches) -> str:
    """Where a critical batch lies against the batches it was read from (`INSIDE`, `ABOVE`, `BELOW`, `NONE`)."""
    b = np.asarray(batches, float)
    if math.isnan(value) or not b.size:
        return NONE
    return ABOVE if value > b.max() else BELOW if value < b.min() else INSIDE


@dataclass(frozen=True)
class Cell:
    """One cell of the grid: its D and P, the batches whose medians enter its fits (``batches``: smallest,
    largest), and per definition ("mccandlish", "zhang") the estimate, its 95% seed-bootstrap interval and where
    it lies (`place_of`)."""

    data: float
    params: float
    batches: tuple[float, float]
    values: dict
    cis: dict
    places: dict


@dataclass(frozen=True)
class PlaneLaw:
    """log B = c + a·log D + b·log P over the ``cells`` whose critical batch (``definition``) lies inside their
    batches, with the 95% percentile intervals of a, b and a − b over the ``rows`` replicate rows refitted (NaN,
    with ``no_ci`` saying why, where the seeds or rows are too few); ``left_out``: the (D, P, place) of the cells
    whose value is only a bound or none; ``residual``: the RMS of log B about the plane; ``replicates``
    [row, (a, b, c)]."""

    definition: str
    a: float
    b: float
    c: float
    a_ci: tuple[float, float]
    b_ci: tuple[float, float]
    difference_ci: tuple[float, float]
    cells: int
    left_out: tuple
    residual: float
    rows: int
    no_ci: str | None = None
    replicates: np.ndarray = field(default_factory=lambda: np.empty((0, 3)), compare=False)

    @property
    def difference(self) -> float:
        return self.a - self.b

    def verdict(self, names: tuple[str, str] = ("D", "P")) -> "Verdict":
        return verdict((self.a, self.a_ci), (self.b, self.b_ci), (self.difference, self.difference_ci), names,
                       self.no_ci)

    def law(self, data, params) -> np.ndarray:
        return np.exp(self.c) * np.asarray(data, float) ** self.a * np.asarray(params, float) ** self.b


def percentile_interval(values: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """The ``level`` percentile interval of the finite ``values`` (NaN where none)."""
    values = values[np.isfinite(values)]
    if not values.size:
        return math.nan, math.nan
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def plane_law(data, params, estimate, replicates, places, definition: str, no_ci: str | None = None,
              deterministic: bool = False) -> PlaneLaw:
    """The `PlaneLaw` of one definition: ``estimate`` [cell] and ``replicates`` [row, cell] its critical batches,
    ``places`` [cell] where each estimate lies (`place_of`); only the `INSIDE` cells are fitted (module
    docstring). Least squares of log B on (1, log D, log P): the plane needs three cells off one line (two values
    of D and two of P at least), else every number is NaN. ``deterministic``: every seed alike, so each interval
    is the estimate itself (no sampling error to report)."""
    data, params = np.asarray(data, float), np.asarray(params, float)
    use = np.asarray(places) == INSIDE
    where = np.asarray(places)
    left_out = tuple((float(d), float(p), str(w)) for d, p, w in zip(data[~use], params[~use], where[~use]))
    nan2 = (math.nan, math.nan)
    design = np.stack([np.ones(use.sum()), np.log(data[use]), np.log(params[use])], -1)
    if use.sum() < 3 or np.linalg.matrix_rank(design) < 3:
        return PlaneLaw(definition, math.nan, math.nan, math.nan, nan2, nan2, nan2, int(use.sum()), left_out,
                        math.nan, 0, no_ci or "no plane: the cells inside their batches span one D or one P")
    solve = np.linalg.pinv(design)  # [3, cells]: (c, a, b) = solve @ log B
    y = np.log(np.asarray(estimate, float)[use])
    c, a, b = solve @ y
    residual = float(np.sqrt(np.mean((design @ np.array([c, a, b]) - y) ** 2)))
    with np.errstate(divide="ignore", invalid="ignore"):
        rows = np.log(np.asarray(replicates, float)[:, use]) if len(replicates) else np.empty((0, use.sum()))
    rows = rows[np.all(np.isfinite(rows), axis=1)]
    if deterministic:
        return PlaneLaw(definition, float(a), float(b), float(c), (float(a),) * 2, (float(b),) * 2,
                        (float(a - b),) * 2, int(use.sum()), left_out, residual, 0, None)
    coef = rows @ solve.T  # [row, (c, a, b)]
    reps = coef[:, [1, 2, 0]]
    if no_ci is None and len(reps) <= MIN_RULE_REPLICATES:
        no_ci = f"no CI: {len(reps)} replicate rows with every cell's value finite (a CI needs > {MIN_RULE_REPLICATES})"
    if no_ci is not None:
        return PlaneLaw(definition, float(a), float(b), float(c), nan2, nan2, nan2, int(use.sum()), left_out,
                        residual, len(reps), no_ci, reps)
    return PlaneLaw(definition, float(a), float(b), float(c), percentile_interval(reps[:, 0]),
                    percentile_interval(reps[:, 1]), percentile_interval(reps[:, 0] - reps[:, 1]), int(use.sum()),
                    left_out, residual, len(reps), None, reps)


@dataclass(frozen=True)
class Verdict:
    """What the intervals decide (``answer``, one of `ANSWERS`), the sentences that say it (``lines``), and where
    the a − b interval holds 0, the smallest |a − b| the grid could detect (``detectable``; None elsewhere)."""

    answer: str
    lines: tuple[str, ...]
    detectable: float | None = None

    def __str__(self) -> str:
        return f"{self.answer}: " + "; ".join(self.lines)


#: An interval end within this of 0 counts as 0 (a deterministic grid's exact 0 comes out as ±1e-16).
ZERO = 1e-12


def sign_of(ci: tuple[float, float]) -> str:
    """"+" where the interval lies above 0, "-" below, "0" where it holds 0 (an end within `ZERO` of it counts
    as 0), "?" where there is none (NaN)."""
    low, high = ci
    if not (np.isfinite(low) and np.isfinite(high)):
        return "?"
    return "+" if low > ZERO else "-" if high < -ZERO else "0"


def detectable_difference(ci: tuple[float, float], power: float = POWER, level: float = LEVEL) -> float:
    """The smallest |a − b| that a repeat of this grid would find (its ``level`` interval excluding 0) with
    probability ``power``: (z_{(1+level)/2} + z_power)·SE, the standard minimum detectable effect of a two-sided
    test (e.g. Cohen 1988, *Statistical power analysis*, ch. 1), with the SE read off the bootstrap interval itself,
    SE = half-width / z_{(1+level)/2}; so δ = half-width·(z_0.975 + z_0.8)/z_0.975 = 1.43 × half-width at the
    defaults. It assumes the estimate of a − b is about normal with a spread that does not change with the true
    difference (a least-squares slope in logs: the noise of each cell's log B does not depend on the exponents).
    Checked by simulation (`benchmarks/bootstrap_coverage.py --joint`, 4 × 4 grid over two decades each, 5 seeds):
    with a = b = 0.25 the median δ over 100 grids was 0.155; with a − b = 0.155 (a = 0.3275, b = 0.1725), 85%
    [76.7, 90.7] of 100 grids had an a − b interval excluding 0 (the intervals are a little conservative, so the
    power at δ is at least the 80% claimed)."""
    low, high = ci
    z = NormalDist().inv_cdf((1 + level) / 2)
    return float((high - low) / 2 * (z + NormalDist().inv_cdf(power)) / z)


def exponent_words(name: str, value: float, ci: tuple[float, float]) -> str:
    """One exponent in words: "grows with D as D^0.50 [0.44, 0.57]", "falls with …", or where its interval holds 0,
    its upper bound ("grows no faster than P^0.24"), rounded up; never "flat"."""
    low, high = ci
    sign = sign_of(ci)
    interval = f"[{low:.2f}, {high:.2f}]"
    if sign == "+":
        return f"grows with {name} as {name}^{value:.2f} {interval}"
    if sign == "-":
        return f"falls with {name} as {name}^{value:.2f} {interval}"
    if sign == "0":
        return f"grows no faster than {name}^{math.ceil(high * 100) / 100:.2f} (exponent {value:.2f} {interval})"
    return f"{name}^{value:.2f} (no CI)"


def verdict(a: tuple[float, tuple], b: tuple[float, tuple], difference: tuple[float, tuple],
            names: tuple[str, str] = ("D", "P"), no_ci: str | None = None) -> Verdict:
    """What the 95% intervals of a (the exponent of D), b (of P) and a − b decide, each (estimate, (low, high)).
    An exponent grows where its interval lies above 0; then:

    * "both": a's and b's intervals both lie above 0 (whatever a − b says; its sign is said);
    * "grows with D": a's lies above 0, b's does not, and a − b's lies above 0 (D's exponent is larger than any P's
      the data allow); "grows with P" the mirror image;
    * "cannot tell": one exponent's interval lies above 0, the other's does not, and a − b's holds 0: the grid shows
      growth with one but cannot tell whether the other drives B as strongly;
    * "neither": neither interval lies above 0: growth with neither was detected (each exponent's upper bound is
      given; that is not a finding of no growth);
    * "no CI": an interval is missing (too few seeds or rows; ``no_ci`` says which).

    Every exponent whose interval holds 0 is given with its upper bound ("grows no faster than P^0.24"), never as
    flat; where a − b's interval holds 0, the smallest |a − b| the grid could detect (`detectable_difference`)."""
    (a_value, a_ci), (b_value, b_ci), (d_value, d_ci) = a, b, difference
    d_name, p_name = names
    signs = sign_of(a_ci), sign_of(b_ci), sign_of(d_ci)
    if "?" in signs:
        return Verdict("no CI", (no_ci or "no CI",))
    lines = [exponent_words(d_name, a_value, a_ci), exponent_words(p_name, b_value, b_ci)]
    a_up, b_up, d_sign = signs[0] == "+", signs[1] == "+", signs[2]
    detectable = None
    d_text = f"a − b = {d_value:.2f} [{d_ci[0]:.2f}, {d_ci[1]:.2f}]"
    if d_sign == "0":
        detectable = detectable_difference(d_ci)
        lines.append(f"{d_text} holds 0: the grid cannot tell the exponents apart; the smallest |a − b| it could "
                     f"detect is {detectable:.2f} ({POWER:.0%} power at the {1 - LEVEL:.0%} level)")
    else:
        lines.append(f"{d_text}: faster with {d_name if d_sign == '+' else p_name}")
    if a_up and b_up:
        answer = "both"
    elif a_up or b_up:
        lead = 0 if a_up else 1
        decided = d_sign == ("+" if a_up else "-")
        answer = ANSWERS[lead] if decided else "cannot tell"
    else:
        answer = "neither"
    return Verdict(answer, tuple(lines), detectable)


@dataclass(frozen=True, eq=False)
class GridAnalysis:
    """A joint grid's reading: the ``cells`` (each with both critical batches), the joint law of each definition
    (``mccandlish``, ``zhang``), and the one seed bootstrap they rest on (``boot``: its statistic's columns are
    `GridCriticalBatches`')."""

    cells: tuple[Cell, ...]
    mccandlish: PlaneLaw
    zhang: PlaneLaw
    boot: core.Bootstrap

    @property
    def laws(self) -> dict[str, PlaneLaw]:
        return {"mccandlish": self.mccandlish, "zhang": self.zhang}


def cells_of(cube: core.Cube, data: str, params: str) -> np.ndarray:
    """Each point's cell index: the (D, P) pairs of the cube's points, numbered in sorted order."""
    return cube.points.groupby([data, params], sort=True).ngroup().to_numpy()


def analyse_grid(cube: core.Cube, *, data: str = "examples", params: str = "dim", axis: str = "batch",
                 n_boot: int = N_BOOT, seed: int = 0, choice: core.Choice | None = None) -> GridAnalysis:
    """The joint law of one series over a grid: ``cube`` holds every cell's records, its points (D, P, B) named
    by the fields ``data``, ``params`` and ``axis`` (e.g. `otod.core.analysis.cubes` (frame, point=("examples",
    "dim", "batch")) of one method). One bootstrap (`otod.core.analysis.bootstrap`, ``n_boot`` resamples of the seed
    columns drawn from ``seed``) re-chooses every point's (lr, β) in every resample and reads both critical batches
    of every cell (`GridCriticalBatches`); `plane_law` fits each definition's law and its intervals (module
    docstring). ``choice``: `otod.core.analysis.chosen` (cube), where the caller has it. The cells should share
    their seed labels, as a joint sweep runs them: the cube's seed columns are the union of every cell's, and a
    cell that lacks a seed has no lane there (its medians then rest on the seeds it has)."""
    missing = [f for f in (data, params, axis) if f not in cube.points]
    if missing:
        raise ValueError(f"the cube's points have no {', '.join(missing)} (its points: "
                         f"{', '.join(cube.points.columns)})")
    cell = cells_of(cube, data, params)
    n = int(cell.max()) + 1 if len(cell) else 0
    statistic = GridCriticalBatches(cell, n)
    boot = core.bootstrap(cube, axis, statistic, n_boot=n_boot, seed=seed, choice=choice)
    fitted = np.isfinite(core.fit_medians(boot.choice.median, boot.choice.bound))
    x = cube.x(axis)
    cells = []
    for c in range(n):
        at = cell == c
        first = np.flatnonzero(at)[0]
        batches = x[at & fitted]
        values = {"mccandlish": float(boot.estimate[c]), "zhang": float(boot.estimate[n + c])}
        cells.append(Cell(float(cube.points[data].iloc[first]), float(cube.points[params].iloc[first]),
                          (float(batches.min()), float(batches.max())) if batches.size else (math.nan, math.nan),
                          values, {"mccandlish": boot.ci(c), "zhang": boot.ci(n + c)},
                          {k: place_of(v, batches) for k, v in values.items()}))
    no_ci = None if boot.deterministic else boot.no_ci
    d = [cl.data for cl in cells]
    p = [cl.params for cl in cells]
    laws = [plane_law(d, p, boot.estimate[k * n:(k + 1) * n], boot.replicates[:, k * n:(k + 1) * n],
                      [cl.places[name] for cl in cells], name, no_ci, boot.deterministic)
            for k, name in enumerate(("mccandlish", "zhang"))]
    return GridAnalysis(tuple(cells), laws[0], laws[1], boot)
