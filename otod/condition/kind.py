"""The condition sweep as the core sees it: its axes, problems, methods, precision rule, cap and theory.

``otod sweep condition`` varies the condition number κ (a traced axis: one program for every κ) and, where
several dimensions are given, the dimension d (a static axis: one program per d).
"""

from __future__ import annotations

import functools

import numpy as np

from otod.condition import theory
from otod.condition.kronecker import KroneckerSpec
from otod.condition.methods import METHODS, MethodOptions
from otod.condition.quadratic import QuadraticSpec
from otod.core.api import Axis, Bracketing, decades, OtodError, SweepKind, Target, Theory

DEFAULT_METHODS = ("gd", "heavy-ball", "nesterov", "newton")
FLOAT32_EPS = float(np.finfo(np.float32).eps)
#: Beyond this κ even float64 cannot resolve a useful gap: the reachable gap is about (κ·ε₆₄)².
MAX_KAPPA = 1e12
#: The automatic cap's upper limit.
AUTO_MAX_ITERS_LIMIT = 1_000_000

KAPPA = Axis("kappa", "κ", "condition number κ = L/μ", "--k", traced=True, minimum=1.0, maximum=MAX_KAPPA,
             what="condition numbers κ", example="1..100",
             why_maximum=": beyond it float64 rounding swamps any useful tolerance")
DIM = Axis("dim", "d", "dimension d", "--dim", traced=False, minimum=2, integer=True, what="dimensions d",
           example="100")


def condition_target(tol: float, ladder=(), check_every: int = 1) -> Target:
    """A relative target at ``tol`` whose ladder holds every decade from 0.1 down to it (free: they are hit on
    the way) and any further rungs asked for."""
    if not (0.0 < tol < 1.0):
        raise OtodError(f"--tol {tol:g}: the relative loss gap must lie strictly between 0 and 1, e.g. --tol 1e-6")
    return Target(tol=tol, kind="relative", ladder=tuple(decades(0.1, tol)) + tuple(ladder),
                  check_every=check_every)


def max_iters(config) -> int:
    """The automatic cap follows the slowest method: four times the largest worst-case bound (`theory.bound_iterations`
    at κ_max, and at (1+ε)κ_max on a perturbed Kronecker problem, whose true κ(H) can be that large) among the
    methods that have one; for methods without one (adam, jacobi) ten times gd's bound and at least 10⁴. Never
    below 1000 or above 10⁶. Lanes reaching it are censored, never lost; stuck lanes stop early as stalled."""
    eps = getattr(config.problem, "perturbation", 0.0)
    return _cap(tuple(config.methods), max(config.values("kappa")) * (1.0 + eps), config.target.lowest, eps)


@functools.lru_cache(maxsize=256)
def _cap(methods: tuple[str, ...], kmax: float, tol: float, eps: float) -> int:
    gd_bound = theory.bound_iterations("gd", kmax, tol, max_iters=10**9) or AUTO_MAX_ITERS_LIMIT
    caps = [1000]
    for m in methods:
        if m in ("heavy-ball", "nesterov") and kmax > 1e6:
            caps.append(4 * gd_bound)  # their exact bound is slow to certify this far out; gd's exceeds it
        elif m in theory.POLYNOMIAL_METHODS:
            caps.append(4 * (theory.bound_iterations(m, kmax, tol, max_iters=10**9, perturbation=eps)
                             or AUTO_MAX_ITERS_LIMIT))
        else:
            caps.append(max(10_000, 10 * gd_bound))
    return int(min(AUTO_MAX_ITERS_LIMIT, max(caps)))


def x64(config) -> bool:
    """float64 where float32 rounding would meet the tolerance, tol < 10·(κ_max·ε₃₂)²: an update of size η·μ·e is
    rounded away once e ≲ ε₃₂·|x|/(η·μ) ~ κ·ε₃₂ (η ~ 1/L), so float32's reachable gap bottoms out near (κ·ε₃₂)²."""
    return bool(config.target.lowest < 10.0 * (max(config.values("kappa")) * FLOAT32_EPS) ** 2)


def validate(config) -> None:
    if config.target.kind != "relative":
        raise OtodError("condition sweeps stop at a relative loss gap (--tol), not an absolute target")
    if "dim" in dict(config.axes) and not isinstance(config.problem, QuadraticSpec):
        raise OtodError("--dim: several dimensions need --problem quadratic (--shape sets a Kronecker problem)")


def _perturbation(config) -> float:
    return getattr(config.problem, "perturbation", 0.0)


def _applies(config) -> bool:
    return theory.applies_to(config)


THEORY = Theory(
    iterations=lambda config, point, method: (theory.iterations(method, point["kappa"], config.target.tol,
                                                                _perturbation(config))
                                              if _applies(config) else None),
    exponent=theory.exponent,
    exponent_on_grid=lambda config, method, xs: theory.exponent_on_grid(method, xs, config.target.tol),
    applies=_applies,
)


def migrate(payload: dict) -> dict:
    """A format-1 results file (otod 0.1) as format 2: ``sweep_value`` becomes ``kappa``, the config gets axes
    and a target, and each record the ladder of its one recorded tolerance."""
    meta = dict(payload["meta"])
    old = dict(meta["config"])
    tol = old.pop("tol")
    values = old.pop("values")
    old.pop("chunk_lanes", None)
    config = {**old, "axes": {"kappa": values},
              "target": {"tol": tol, "kind": "relative", "ladder": [tol], "check_every": 1},
              "chunk_seconds": 5.0}
    records = []
    for r in payload["records"]:
        r = dict(r)
        r["kappa"] = r.pop("sweep_value")
        r["hits"] = [r["iterations"] if r["status"] == "converged" else None]
        records.append(r)
    meta.update(config=config, migrated_from="otod-results/1",
                axes=[{"name": "kappa", "symbol": "κ", "label": KAPPA.label, "traced": True}])
    meta.pop("finished_chunks", None)
    return {"format": "otod-results/2", "meta": meta, "records": records}


CONDITION = SweepKind(
    name="condition", axes=(KAPPA, DIM), methods=METHODS,
    problems={"quadratic": QuadraticSpec, "kronecker": KroneckerSpec}, options=MethodOptions,
    max_iters=max_iters, x64=x64, validate=validate, theory=THEORY, migrate=migrate, bracket=Bracketing(),
    smaller="fewer --k values or --seeds, or a smaller problem (--dim, --shape, --basis eigen)")
