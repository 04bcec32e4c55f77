"""What theory predicts for a condition sweep's own lanes, beside what was measured:

* ``exact``: the lane's own count in exact arithmetic, from its residual polynomial on its own spectrum and start
  (`otod.condition.theory.quadratic_exact_hits`), the median over seeds. Only at ``--lr theory`` (the methods'
  own steps) on quadratics: a float64 engine run measures exactly this. It costs a polynomial run per lane, so a
  sweep stores the medians of every rung in its file (`exact_medians`, ``meta["exact_medians"]``) and a later
  report reads them;
* ``bound``: the worst case over every spectrum in [μ, L] and every start (`theory.bound_iterations`): no lane
  of the method at its own step can need more, and a tuned step only does better at the median;
* ``rate``: the asymptotic rate's count ⌈ln(1/ε)/(2 ln(1/ρ))⌉, which undercounts methods with a double root
  (heavy ball, Nesterov) and bounds nothing.

On Kronecker problems with ε > 0 the methods step with the true μ and L of H, whose condition number exceeds the
nominal κ: ``bound`` and ``rate`` use the largest true κ(H) over the seeds.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from otod.condition import theory
from otod.core.api import SweepConfig, fit_line, read_config


class Predictions(NamedTuple):
    """The theory columns as functions of (method, κ), and ``slope(method, κs)``: the slope of the exact counts
    where this sweep has them (``slope_of`` = "exact"), else of the bound ("bound")."""

    exact: object
    bound: object
    rate: object
    slope: object
    slope_of: str


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """A digest of the code the theory columns come from (this module and `otod.condition.theory`), with the JAX
    and NumPy versions the exact counts run on: part of every key under which they are remembered across
    processes (`otod.core.compilation_cache.remembered`), so changed code never reads an old number."""
    import hashlib
    from pathlib import Path

    import jax

    digest = hashlib.sha256()
    for module in (theory.__file__, __file__):
        digest.update(Path(module).read_bytes())
    return f"{digest.hexdigest()[:16]} jax {jax.__version__} numpy {np.__version__}"


def bound_iterations(method: str, kappa: float, tol: float, max_iters: int, perturbation: float) -> int | None:
    """`theory.bound_iterations`, remembered across processes (`remembered`): each bound costs a scan of the
    residual polynomial over a fine grid and its certification, about 10 ms to 0.1 s, and a sweep's table and
    figure ask for dozens."""
    from otod.core.api import remembered

    args = (method, float(kappa), float(tol), int(max_iters), float(perturbation))
    return remembered("bounds", repr(args + (code_version(),)),
                      lambda: theory.bound_iterations(args[0], args[1], args[2], max_iters=args[3],
                                                      perturbation=args[4]))


def _median(values) -> float | None:
    v = np.asarray(values, float)
    if v.size == 0 or np.any(v < 0):
        return None
    return float(np.median(v))


def true_condition_numbers(problem, kappas, seeds: int, seed: int) -> dict[float, float]:
    """The largest κ(H) over the seeds at each nominal κ, for Kronecker problems (``problem``: the sweep's spec;
    exact for quadratics)."""
    if problem.kind != "kronecker":
        return {float(k): float(k) for k in kappas}
    import jax

    family = problem.family()
    out = {}
    with jax.enable_x64(True):
        draws = [family.draws(np.random.default_rng([seed, s])) for s in range(seeds)]
        for k in kappas:
            worst = 1.0
            for drawn in draws:
                h = np.asarray(family.make({"kappa": np.float64(k)}, drawn)["hessian"])
                lam = np.linalg.eigvalsh(h)
                worst = max(worst, float(lam[-1] / lam[0]))
            out[float(k)] = worst
    return out


def exact_applies(config: SweepConfig, static: list[str]) -> bool:
    """Whether a sweep has ``exact`` counts: the methods' own steps (``--lr theory``) on quadratics, no static axis."""
    return theory.applies_to(config) and config.lr == "theory" and config.problem.kind == "quadratic" and not static


def exact_rungs(config: SweepConfig, precision: str | None, method: str, ladder) -> dict[float, list[float | None]]:
    """κ → the median over seeds of the lanes' exact first hits at each tolerance of ``ladder`` (None where a
    seed misses it within the cap): every lane's residual polynomial on its own spectrum and start, the costly
    part of the ``exact`` column (κ × seeds lanes)."""
    kappas = config.values("kappa")
    hits = theory.quadratic_exact_hits(config.problem, method, kappas, config.seeds, list(ladder), seed=config.seed,
                                       max_iters=config.resolved.max_iters, x64=precision == "float64")
    return {float(k): [_median(hits[i, :, j]) for j in range(hits.shape[2])] for i, k in enumerate(kappas)}


def exact_medians(config: SweepConfig, precision: str | None, static: list[str]) -> dict | None:
    """What a sweep stores as ``exact_medians`` (method → [κ][rung] medians, every rung of the ladder), so that
    `predictions` and ``otod fit`` read them instead of recomputing κ × seeds lanes; None where no exact counts
    apply."""
    if not exact_applies(config, static):
        return None
    import json

    from otod.core.api import remembered

    key = json.dumps([config.to_dict(), precision, list(static), code_version()], sort_keys=True)
    return remembered("exact-medians", key, lambda: _exact_medians(config, precision))


def _exact_medians(config: SweepConfig, precision: str | None) -> dict:
    polynomial = sorted(set(theory.POLYNOMIAL_METHODS) - {"kfac"})
    ladder = config.target.ladder
    return {m: [table[float(k)] for k in config.values("kappa")]
            for m in config.methods if m in polynomial
            for table in [exact_rungs(config, precision, m, ladder)]}


def predictions(meta: dict, tol: float) -> Predictions | None:
    """The sweep's theory columns at ``tol`` (None where the closed forms say nothing: an absolute ``--lr``)."""
    config = read_config(meta)
    if not theory.applies_to(config):
        return None
    kappas = config.values("kappa")
    eps = getattr(config.problem, "perturbation", 0.0)
    cap = config.resolved.max_iters
    true_kappa = true_condition_numbers(config.problem, kappas, config.seeds, config.seed)
    ladder = config.target.ladder
    rung = min(range(len(ladder)), key=lambda i: abs(math.log(ladder[i] / tol)))
    static = [a["name"] for a in meta.get("axes", []) if not a.get("traced", True)]
    polynomial = set(theory.POLYNOMIAL_METHODS) - {"kfac"}
    with_exact = exact_applies(config, static)

    stored = meta.get("exact_medians") or {}

    @functools.lru_cache(maxsize=None)
    def exact_table(method: str) -> dict[float, float | None]:
        if method in stored:  # computed once when the sweep was written
            return {float(k): stored[method][i][rung] for i, k in enumerate(kappas)}
        return {float(k): m[0] for k, m in exact_rungs(config, meta.get("precision"), method, [ladder[rung]]).items()}

    def exact(method: str, kappa: float):
        if not with_exact or method not in polynomial:
            return None
        return exact_table(method)[float(kappa)]

    @functools.lru_cache(maxsize=None)
    def bound(method: str, kappa: float):
        if method not in theory.POLYNOMIAL_METHODS:
            return None
        return bound_iterations(method, true_kappa[float(kappa)], tol, max(cap, 10**6), eps)

    def rate(method: str, kappa: float):
        return theory.rate_iterations(method, true_kappa[float(kappa)], tol, eps)

    def slope(method: str, xs) -> float | None:
        """The slope of log(exact median) — or of log(bound) — on log κ over these κ: what a perfect
        measurement would fit on this grid."""
        use = exact if exact(method, float(xs[0])) is not None else bound
        k = np.asarray([use(method, float(x)) or np.nan for x in xs], float)
        with np.errstate(divide="ignore", invalid="ignore"):
            slope = float(fit_line(np.log(np.asarray(xs, float)), np.where(k > 0, np.log(k), np.nan))[0])
        return slope if np.isfinite(slope) else None

    return Predictions(exact, bound, rate, slope, "exact" if with_exact else "bound")
