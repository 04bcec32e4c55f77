"""Coverage of otod's nominal 95% seed-bootstrap intervals of B_crit and S_min on synthetic S(B) with a known law.

Where `benchmarks/coverage.py` cuts one simulated NQM sweep into groups of seeds, this draws records from a law
whose B_crit is known exactly and passes each draw through otod's own analysis of a net's batch sweep
(`otod.core.critical_batch.analyse_batches`, called as `otod.nets.sweep.report.batch_analysis` calls it: each batch's
learning rate chosen by the median over seeds, S(B) = S_min (1 + B_crit/B) fitted to the medians there, and the
seed bootstrap, 500 resamples from seed 0, re-choosing the learning rate in every resample). The fraction of
independent draws whose interval holds the truth is the interval's coverage, given with its binomial 95%
interval (Wilson score).

The law (McCandlish et al. 2018, "An empirical model of large-batch training", §2 and eq. 2.11): one SGD step at
rate ε improves the loss by ΔL(ε) = ε|G|² − ε²/2 (GᵀHG + tr(HΣ)/B), a parabola in ε whose top is at
ε_opt(B) = ε_max/(1 + B_noise/B) with ΔL_opt(B) = ΔL_max/(1 + B_noise/B). At ε = r·ε_opt the gain is
ΔL_opt·r(2 − r), so the steps to a target are

    S(B, ε) = S_min (1 + B_crit/B) / (r (2 − r)),   r = ε/ε_opt(B),   ε_opt(B) = ε_max/(1 + B_crit/B),

and r ≥ 2 makes no progress (recorded as diverged). Its minimum over ε is the hyperbola S_min (1 + B_crit/B),
taking B_crit = B_noise as the paper's simple model does. Each batch tries the rates of the nets' grid (10⁻³ to 10,
four per decade) with r between 1/5 and 4 (a bracket: the best rate inside, a diverged one above it). The grid
does not hold ε_opt itself, so even without noise the best rate on the grid is slow by a factor 1/(r(2 − r)) of up
to a few percent, varying with B: the noise-free records' fit (printed, and tested in
tests/core/test_bootstrap_coverage.py) is the analysis's own population value, a little off the law's.

Seed noise is multiplicative and log-normal with median 1 (so the median over seeds is the law): a lane's steps are
S(B, ε)·exp(σ (√ρ z_seed + √(1 − ρ) z_lane)), z standard normal, z_seed shared by every lane of one seed (its init
and data order, shared by every batch and rate, as otod's common random numbers are), z_lane its own. The defaults
are read off the committed net fixture (tests/fixtures/net-batch-5seeds.parquet: an MLP on the digits, 5 seeds,
B = 16, 32, 64 at one rate): the log-steps' SD over seeds is 0.80, 0.56, 0.35 (pooled 0.60), and the seeds' own
effect holds about 3/4 of that variance (log-steps correlate 0.83–0.93 across the three batches).

With ``--joint``, each draw is a whole data × parameters grid (`grid_records`: B_crit = scale·D^a·P^b per cell,
every cell drawn as above with its own seed noise) read by `otod.core.joint_law.analyse_grid`, and the coverage is
that of the 95% intervals of the joint law's a, b and a − b (McCandlish's B_crit: against the law's exponents and
against the population values, the noise-free grid through the same analysis; Zhang et al.'s critical batch, which
is not a power law in D when B_crit is not ≫ the smallest batch: against its population values only), with how
often each verdict came out.

Usage::

    python3 benchmarks/bootstrap_coverage.py [--draws 400] [--seeds 3,5,8,16] [--sigma 0.6] [--share 0.75]
    python3 benchmarks/bootstrap_coverage.py --joint [--draws 200] [--seeds 5,8] [--exponents 0.5,0]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one core: other work shares the machine
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's otod, whatever is installed
from otod.core import analysis as core  # noqa: E402
from otod.core.critical_batch import N_BOOT, analyse_batches  # noqa: E402
from otod.core.joint_law import analyse_grid  # noqa: E402
from otod.core.results import cpu_model  # noqa: E402

#: The batch grid of the task: 4..256:7:log.
BATCHES = 4.0 * 2.0 ** np.arange(7)
def lr_grid(per_decade: int = 4) -> np.ndarray:
    """Rates from 10⁻³ to 10, ``per_decade`` per decade: the nets' grid at 4 (the ``lr_grid`` of
    tests/fixtures/net-batch-5seeds.parquet)."""
    return 10.0 ** (np.arange(-3 * per_decade, per_decade + 1) / per_decade)


#: The nets' learning-rate grid.
LR_GRID = lr_grid(4)
#: The rates each batch tries: those with r = ε/ε_opt(B) in this range (the optimum inside, a diverged rate above).
BRACKET = (0.2, 4.0)


@dataclass(frozen=True)
class Law:
    """S(B, ε) = S_min (1 + B_crit/B) / (r (2 − r)), r = ε/ε_opt(B), ε_opt(B) = ε_max/(1 + B_crit/B) (module
    docstring; McCandlish et al. 2018, eq. 2.11 at the optimal rate); +∞ (no progress) where r ≥ 2."""

    s_min: float = 50.0
    b_crit: float = 32.0
    lr_max: float = 1.0

    def best_rate(self, batch):
        return self.lr_max / (1.0 + self.b_crit / np.asarray(batch, float))

    def steps(self, batch, lr):
        """The noise-free steps to target at batch ``batch`` and rate ``lr`` (broadcast)."""
        batch, lr = np.broadcast_arrays(np.asarray(batch, float), np.asarray(lr, float))
        r = lr / self.best_rate(batch)
        with np.errstate(divide="ignore"):
            gain = np.where(r < 2.0, r * (2.0 - r), 0.0)
            return np.where(gain > 0, self.s_min * (1.0 + self.b_crit / batch) / gain, np.inf)


@dataclass(frozen=True)
class Noise:
    """Log-normal seed noise of median 1: log-SD ``sigma`` per lane, of whose variance the fraction ``share`` is
    the seed's own (shared by all its lanes)."""

    sigma: float = 0.6
    share: float = 0.75


def lanes(law: Law, batches=BATCHES, rates=LR_GRID) -> tuple[np.ndarray, np.ndarray]:
    """(batch, rate) of every setting tried: at each batch the ``rates`` with r in `BRACKET`."""
    pairs = [(b, lr) for b in batches for lr in rates
             if BRACKET[0] <= lr / law.best_rate(b) <= BRACKET[1]]
    return np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])


def synthetic_records(law: Law, noise: Noise, seeds: int, rng: np.random.Generator,
                      batches=BATCHES, rates=LR_GRID) -> pd.DataFrame:
    """One synthetic batch sweep: a record per (batch, rate, seed) as a net sweep writes it (``batch``,
    ``learning_rate``, ``seed``, ``iterations``, ``status``, and the net's ``dim``), the steps drawn from ``law``
    with ``noise`` (module docstring) and rounded to whole steps; a lane at r ≥ 2 is ``diverged`` (its
    ``iterations`` then the step it stopped at, 1: the analysis reads no count from a diverged lane)."""
    batch, lr = lanes(law, batches, rates)
    exact = law.steps(batch, lr)
    z_seed = rng.standard_normal(seeds)
    z_lane = rng.standard_normal((len(batch), seeds))
    factor = np.exp(noise.sigma * (math.sqrt(noise.share) * z_seed[None, :]
                                   + math.sqrt(1.0 - noise.share) * z_lane))
    with np.errstate(invalid="ignore"):
        steps = np.where(np.isfinite(exact)[:, None], np.maximum(np.rint(exact[:, None] * factor), 1.0), 1.0)
    n = len(batch) * seeds
    return pd.DataFrame({
        "sweep": "net", "method": "sgd", "batch": np.repeat(batch, seeds), "beta": 0.0,
        "seed": np.tile(np.arange(seeds), len(batch)), "learning_rate": np.repeat(lr, seeds),
        "iterations": steps.ravel().astype(np.int64),
        "status": np.where(np.repeat(np.isfinite(exact), seeds), "converged", "diverged"),
        "dim": np.full(n, 2410.0)})


@dataclass(frozen=True)
class GridLaw:
    """A joint grid's law: at cell (D, P) the steps follow `Law` with B_crit = scale·D^a·P^b and the same S_min
    everywhere (the known exponents a joint fit should recover)."""

    scale: float = 1.0
    a: float = 0.5
    b: float = 0.0
    s_min: float = 50.0

    def at(self, data: float, params: float) -> Law:
        return Law(self.s_min, self.scale * data ** self.a * params ** self.b)


def grid_records(grid: GridLaw, data, params, noise: Noise, seeds: int, rng: np.random.Generator,
                 batches=BATCHES, rates=LR_GRID) -> pd.DataFrame:
    """One synthetic joint sweep: `synthetic_records` of every cell (D in ``data`` × P in ``params``), each with its
    own draws of the seed noise (a cell's seed s is another run than the next cell's seed s), with ``examples`` = D
    and ``dim`` = P on its records."""
    frames = [synthetic_records(grid.at(d, p), noise, seeds, rng, batches, rates).assign(examples=float(d),
                                                                                         dim=float(p))
              for d in data for p in params]
    return pd.concat(frames, ignore_index=True)


def analyse(frame: pd.DataFrame, n_boot: int = N_BOOT):
    """otod's critical batch of one synthetic sweep, as the nets read theirs (`otod.nets.sweep.report.batch_analysis`):
    the one series' `otod.core.critical_batch.CriticalBatch`."""
    found = analyse_batches(frame, {}, axis="batch", point=("dim", "examples", "batch"), by=("dim", "examples"),
                            n_boot=n_boot)
    (series,) = found.series
    return series.critical


@contextlib.contextmanager
def ci_below_min_seeds():
    """otod prints no CI under `otod.core.analysis.MIN_BOOTSTRAP_SEEDS` seeds (5); inside this block
    `Bootstrap.ci` gives its percentile interval at any seed count, to measure what that rule withholds."""
    kept = core.MIN_BOOTSTRAP_SEEDS
    core.MIN_BOOTSTRAP_SEEDS = 2
    try:
        yield
    finally:
        core.MIN_BOOTSTRAP_SEEDS = kept


def wilson(hits: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score 95% interval of a binomial proportion hits/n (Wilson 1927)."""
    if n == 0:
        return math.nan, math.nan
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


@dataclass(frozen=True)
class Row:
    """One seed count's coverage over ``draws`` draws: intervals holding the law's B_crit and S_min (``b_law``,
    ``s_law``) and the population values, the noise-free records' fit on the same rate grid (``b_pop``,
    ``s_pop``); intervals given (finite); the median estimates of B_crit and S_min; the median width log(high/low)
    of the B_crit interval; and whether the intervals are otod's (``rule_lifted`` False) or taken below its
    minimum seed count."""

    seeds: int
    draws: int
    b_law: int
    s_law: int
    b_pop: int
    s_pop: int
    given: int
    b_median: float
    s_median: float
    width: float
    rule_lifted: bool


def covers(interval: tuple[float, float], truth: float) -> bool:
    low, high = interval
    return bool(np.isfinite(low) and low <= truth <= high)


@dataclass(frozen=True)
class Setup:
    """What every draw shares: the law, the noise, the rates tried, the population values (`noise_free`) and the
    bootstrap's resamples."""

    law: Law
    noise: Noise
    rates: np.ndarray
    population: tuple[float, float]
    n_boot: int = N_BOOT


def measure(setup: Setup, seeds: int, draws: int, seed: int) -> Row:
    """The coverage at ``seeds`` seeds over ``draws`` independent synthetic sweeps (draw i from the generator
    seeded by (seed, seeds, i): every seed count and draw has its own stream, the same on every run)."""
    law, (s_pop, b_pop) = setup.law, setup.population
    lifted = seeds < core.MIN_BOOTSTRAP_SEEDS
    hits = np.zeros(4, int)
    given = 0
    estimates, s_estimates, widths = [], [], []
    with ci_below_min_seeds() if lifted else contextlib.nullcontext():
        for i in range(draws):
            rng = np.random.default_rng([seed, seeds, i])
            fit = analyse(synthetic_records(law, setup.noise, seeds, rng, rates=setup.rates), setup.n_boot)
            low, high = fit.b_crit_ci
            given += bool(np.isfinite(low) and np.isfinite(high))
            hits += [covers(fit.b_crit_ci, law.b_crit), covers(fit.s_min_ci, law.s_min),
                     covers(fit.b_crit_ci, b_pop), covers(fit.s_min_ci, s_pop)]
            estimates.append(fit.b_crit)
            s_estimates.append(fit.s_min)
            widths.append(math.log(high / low) if low > 0 and np.isfinite(high) else math.inf)
    return Row(seeds, draws, *(int(h) for h in hits), given, float(np.median(estimates)),
               float(np.median(s_estimates)), float(np.median(widths)), lifted)


def percent(hits: int, n: int) -> str:
    low, high = wilson(hits, n)
    return f"{100 * hits / n:.1f}% [{100 * low:.1f}, {100 * high:.1f}]"


def table(rows: list[Row], law: Law) -> list[str]:
    """The Markdown table of the rows (coverage with its Wilson 95% interval, in percent)."""
    lines = ["| seeds | draws | B_crit: law | S_min: law | B_crit: population | S_min: population | CIs given | "
             "median B_crit estimate (vs law) | median S_min estimate (vs law) | "
             "median log(high/low) of the B_crit CI |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        seeds = f"{r.seeds} (below otod's {core.MIN_BOOTSTRAP_SEEDS}: otod prints no CI)" if r.rule_lifted \
            else str(r.seeds)
        cells = " | ".join(percent(h, r.draws) for h in (r.b_law, r.s_law, r.b_pop, r.s_pop))
        lines.append(f"| {seeds} | {r.draws} | {cells} | {r.given}/{r.draws} | "
                     f"{r.b_median:.3g} ({r.b_median / law.b_crit - 1:+.0%}) | "
                     f"{r.s_median:.3g} ({r.s_median / law.s_min - 1:+.0%}) | {r.width:.3f} |")
    return lines


def noise_free(law: Law, rates=LR_GRID) -> tuple[float, float]:
    """(S_min, B_crit) that otod's analysis reads off the law's own records without noise (one seed, no CI): the
    population value on this rate grid (with median-1 noise, the median over infinitely many seeds is the law)."""
    records = synthetic_records(law, Noise(0.0, 0.0), 1, np.random.default_rng(0), rates=rates)
    fit = analyse(records, n_boot=0)
    return fit.s_min, fit.b_crit



#: The joint grid's default axes: two decades of D and of P, four values each (B_crit 8 to 80 at scale 0.8, a = 0.5).
GRID_DATA = (100.0, 464.0, 2154.0, 10000.0)
GRID_PARAMS = (1e3, 4.64e3, 2.15e4, 1e5)
#: The joint law's quantities whose intervals are checked: (law or population value, interval) per name.
JOINT = ("a", "b", "a − b")


@dataclass(frozen=True)
class JointSetup:
    """What every joint draw shares: the grid's law and axes, the noise, the rates, the bootstrap's resamples, and
    the population values (a, b) of each definition (`joint_population`)."""

    grid: GridLaw
    data: tuple
    params: tuple
    noise: Noise
    rates: np.ndarray
    population: dict
    n_boot: int = N_BOOT


def joint_values(law) -> tuple[tuple[float, tuple], ...]:
    """(estimate, interval) of a, b and a − b of a `otod.core.joint_law.PlaneLaw`."""
    return (law.a, law.a_ci), (law.b, law.b_ci), (law.difference, law.difference_ci)


def joint_population(grid: GridLaw, data, params, rates) -> dict:
    """Each definition's (a, b, a − b) read off the noise-free grid (one seed) by the same analysis."""
    frame = grid_records(grid, data, params, Noise(0.0, 0.0), 1, np.random.default_rng(0), rates=rates)
    (cube,) = core.cubes(frame, ("examples", "dim", "batch"))
    return {name: tuple(v for v, _ in joint_values(law)) for name, law in analyse_grid(cube, n_boot=0).laws.items()}


@dataclass(frozen=True)
class JointRow:
    """One seed count's joint coverage over ``draws`` grids: per (definition, truth) the intervals of a, b, a − b
    holding it (``hits``), the CIs given, the verdicts' counts, the median estimates, the median detectable
    |a − b| where one was given, and ``separated``: the draws whose a − b interval excludes 0 (the power of the
    grid at the law's a − b)."""

    seeds: int
    draws: int
    hits: dict
    given: int
    answers: dict
    medians: dict
    detectable: float
    separated: int = 0


def measure_joint(setup: JointSetup, seeds: int, draws: int, seed: int) -> JointRow:
    """The joint law's coverage at ``seeds`` seeds over ``draws`` grids (draw i from the generator seeded by
    (seed, seeds, i, 1): its own stream, the same on every run)."""
    truth = {("mccandlish", "law"): (setup.grid.a, setup.grid.b, setup.grid.a - setup.grid.b),
             ("mccandlish", "population"): setup.population["mccandlish"],
             ("zhang", "population"): setup.population["zhang"]}
    hits = {key: np.zeros(3, int) for key in truth}
    answers: dict = {}
    estimates, detectable, given, separated = [], [], 0, 0
    for i in range(draws):
        rng = np.random.default_rng([seed, seeds, i, 1])
        frame = grid_records(setup.grid, setup.data, setup.params, setup.noise, seeds, rng, rates=setup.rates)
        (cube,) = core.cubes(frame, ("examples", "dim", "batch"))
        laws = analyse_grid(cube, n_boot=setup.n_boot).laws
        for (name, kind), values in truth.items():
            hits[(name, kind)] += [covers(ci, v) for (_, ci), v in zip(joint_values(laws[name]), values)]
        said = laws["mccandlish"].verdict()
        answers[said.answer] = answers.get(said.answer, 0) + 1
        given += bool(np.isfinite(laws["mccandlish"].a_ci[0]))
        estimates.append([v for law in laws.values() for v, _ in joint_values(law)])
        if said.detectable is not None:
            detectable.append(said.detectable)
        low, high = laws["mccandlish"].difference_ci
        separated += bool(low > 0 or high < 0)
    medians = dict(zip([f"{n} {q}" for n in ("mccandlish", "zhang") for q in JOINT], np.median(estimates, axis=0)))
    return JointRow(seeds, draws, {k: tuple(int(h) for h in v) for k, v in hits.items()}, given, answers, medians,
                    float(np.median(detectable)) if detectable else math.nan, separated)


def joint_table(rows: list[JointRow]) -> list[str]:
    """The Markdown table of the joint rows (coverage with its Wilson 95% interval, in percent)."""
    keys = list(rows[0].hits) if rows else []
    head = " | ".join(f"{q}: {name}, {kind}" for name, kind in keys for q in JOINT)
    lines = [f"| seeds | draws | {head} | CIs given | verdicts (McCandlish) | median a, b (McCandlish) | "
             "median a, b (Zhang) | median detectable |a − b| where given | a − b interval excludes 0 |",
             "|" + "---|" * (8 + 3 * len(keys))]
    for r in rows:
        cells = " | ".join(percent(h, r.draws) for key in keys for h in r.hits[key])
        said = ", ".join(f"{k} {v}" for k, v in sorted(r.answers.items(), key=lambda kv: -kv[1]))
        lines.append(f"| {r.seeds} | {r.draws} | {cells} | {r.given}/{r.draws} | {said} | "
                     f"{r.medians['mccandlish a']:.3f}, {r.medians['mccandlish b']:.3f} | "
                     f"{r.medians['zhang a']:.3f}, {r.medians['zhang b']:.3f} | {r.detectable:.3g} | "
                     f"{percent(r.separated, r.draws)} |")
    return lines


def main_joint(args: argparse.Namespace) -> None:
    a, b = args.exponents
    grid = GridLaw(args.scale, a, b, args.s_min)
    rates, noise = lr_grid(args.per_decade), Noise(args.sigma, args.share)
    setup = JointSetup(grid, GRID_DATA, GRID_PARAMS, noise, rates,
                       joint_population(grid, GRID_DATA, GRID_PARAMS, rates), args.n_boot)
    print(f"joint law: B_crit = {grid.scale:g}·D^{a:g}·P^{b:g}, S_min {grid.s_min:g}; D {GRID_DATA}, "
          f"P {GRID_PARAMS}; batches {', '.join(f'{x:g}' for x in BATCHES)}; rates 10^-3..10, {args.per_decade} per decade; seed "
          f"noise: log-SD {noise.sigma:g}, seed share {noise.share:g}, independent per cell; {args.n_boot} "
          f"bootstrap resamples; draws seeded from {args.seed}")
    for name, values in setup.population.items():
        print(f"population ({name}, the noise-free grid through the same analysis): a {values[0]:.4f}, "
              f"b {values[1]:.4f}, a − b {values[2]:.4f}")
    print(f"{cpu_model()}, {os.cpu_count()} cores, numpy {np.__version__}, pandas {pd.__version__}")
    rows = []
    for seeds in args.seeds:
        start = time.perf_counter()
        rows.append(measure_joint(setup, seeds, args.draws, args.seed))
        print(f"  {seeds} seeds: {args.draws} grids in {time.perf_counter() - start:.1f} s", flush=True)
    print("\n".join(joint_table(rows)))


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1000, help="independent synthetic sweeps per seed count")
    parser.add_argument("--seeds", default="3,5,8,16", help="seed counts, comma-separated")
    parser.add_argument("--sigma", type=float, default=Noise.sigma, help="log-SD of a lane's steps over seeds")
    parser.add_argument("--share", type=float, default=Noise.share,
                        help="fraction of that variance shared by all lanes of one seed")
    parser.add_argument("--b-crit", type=float, default=Law.b_crit)
    parser.add_argument("--s-min", type=float, default=Law.s_min)
    parser.add_argument("--per-decade", type=int, default=4, help="learning rates per decade (the nets': 4)")
    parser.add_argument("--n-boot", type=int, default=N_BOOT, help="bootstrap resamples (otod's nets use 500)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic draws")
    parser.add_argument("--joint", action="store_true", help="the joint law's a, b, a − b over a D × P grid")
    parser.add_argument("--exponents", default="0.5,0", help="--joint: a,b of B_crit = scale·D^a·P^b")
    parser.add_argument("--scale", type=float, default=0.8, help="--joint: the law's scale")
    args = parser.parse_args(argv)
    args.seeds = [int(s) for s in args.seeds.split(",")]
    try:
        args.exponents = tuple(float(v) for v in args.exponents.split(","))
    except ValueError:
        parser.error("--exponents takes two numbers, a,b")
    if len(args.exponents) != 2 or args.scale <= 0:
        parser.error("--exponents takes two numbers, a,b, and --scale a positive one")
    if args.draws < 1 or min(args.seeds) < 2 or args.sigma < 0 or not 0 <= args.share <= 1 or args.b_crit <= 0 \
            or args.s_min <= 0 or args.n_boot < 1 or args.per_decade < 1:
        parser.error("need --draws ≥ 1, seeds ≥ 2, --sigma ≥ 0, 0 ≤ --share ≤ 1, and positive --b-crit, --s-min, "
                     "--per-decade, --n-boot")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.joint:
        return main_joint(args)
    law, noise, rates = Law(args.s_min, args.b_crit), Noise(args.sigma, args.share), lr_grid(args.per_decade)
    setup = Setup(law, noise, rates, noise_free(law, rates), args.n_boot)
    s0, b0 = setup.population
    print(f"law: S_min {law.s_min:g}, B_crit {law.b_crit:g}, ε_max {law.lr_max:g}; batches "
          f"{', '.join(f'{b:g}' for b in BATCHES)}; rates 10^-3..10, {args.per_decade} per decade, "
          f"{len(lanes(law, BATCHES, rates)[0])} (batch, rate) settings; seed noise: log-SD {noise.sigma:g}, "
          f"seed share {noise.share:g}; {args.n_boot} bootstrap resamples; draws seeded from {args.seed}")
    print(f"population (the noise-free records through the same analysis): S_min {s0:.4g} "
          f"({s0 / law.s_min - 1:+.2%} from the law), B_crit {b0:.4g} ({b0 / law.b_crit - 1:+.2%})")
    print(f"{cpu_model()}, {os.cpu_count()} cores, numpy {np.__version__}, pandas {pd.__version__}")
    rows = []
    for seeds in args.seeds:
        start = time.perf_counter()
        rows.append(measure(setup, seeds, args.draws, args.seed))
        print(f"  {seeds} seeds: {args.draws} draws in {time.perf_counter() - start:.1f} s", flush=True)
    print("\n".join(table(rows, law)))


if __name__ == "__main__":
    main()
