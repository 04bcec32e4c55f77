"""The noise sweeps as the core sees them: ``noise`` (steps to target vs batch size B) and ``params`` (steps vs
dimension d under a batch rule), their axes, problems, methods, cap, precision and checks.

B and β are traced axes (one compiled program for all of them); d is static (one program per d). ``params``
puts d first, so fits and figures use it as x; its batch rule is either a fixed ``batch`` or ``batch_ratio``
(B = ratio·d, at least 1).
"""

from __future__ import annotations


import numpy as np

from otod.core.api import Axis, Bracketing, OtodError, SweepKind
from otod.noise import theory
from otod.core.api import BETA, METHODS, NoiseOptions, ignores
from otod.noise.problems import PROBLEMS, IsotropicSpec, NQMSpec, RegressionSpec, RosenbrockSpec

BATCH = Axis("batch", "B", "batch size B", "--batch", traced=True, minimum=1, integer=True, what="batch sizes B",
             example="1..1024:11:log")
BATCH_RATIO = Axis("batch_ratio", "B/d", "batch size per dimension B/d", "--batch-rule", traced=True, minimum=0,
                   what="batch ratios", example="proportional:0.1")
DIM = Axis("dim", "d", "dimension d", "--dim", traced=False, minimum=1, integer=True, what="dimensions d",
           example="1000")
PARAMS_DIM = Axis("dim", "d", "dimension d (parameters)", "--dim", traced=False, minimum=1, integer=True,
                  what="dimensions d", example="10..10000:13:log")

#: Simulated lanes stop here at the latest (censored).
AUTO_MAX_ITERS_LIMIT = 1_000_000


def initial_loss(spec) -> float:
    """The expected starting loss (the exact quadratics' E L₀; seed 0's for regression; Rosenbrock's f(x₀))."""
    if isinstance(spec, (NQMSpec, IsotropicSpec)):
        return theory.initial_loss(spec.quadratic())
    if isinstance(spec, RegressionSpec):
        return spec.initial_loss(np.random.default_rng([0, 0]))
    return spec.initial_loss()


def ratio_batch(ratio: float, dim: float) -> float:
    """The batch of a proportional rule: B = ratio·d rounded (half to even, as the simulator's ``jnp.round``), at
    least 1."""
    return max(1.0, float(round(ratio * dim)))


def batches(config) -> list[float]:
    """Every batch size the sweep runs at."""
    axes = dict(config.axes)
    if "batch" in axes:
        return list(axes["batch"])
    dims = axes.get("dim", (config.problem.dim,))
    return [ratio_batch(r, d) for r in axes["batch_ratio"] for d in dims]


def max_iters(config) -> int:
    """The automatic cap: 20× the ideal estimator's steps d/(2·target·B) at the smallest batch (the noise-
    dominated end), and never below 2000 or above 10⁶."""
    dims = dict(config.axes).get("dim", (getattr(config.problem, "dim", 2),))
    ideal = float(theory.ideal_steps(max(dims), config.target.tol, min(batches(config))))
    return int(min(AUTO_MAX_ITERS_LIMIT, max(2000, 20 * ideal)))


def validate(config) -> None:
    if config.target.kind != "absolute":
        raise OtodError("noise sweeps stop at an absolute loss (--target), not a relative gap")
    for spec in config.specs():
        start = initial_loss(spec)
        if config.target.tol >= start:
            raise OtodError(f"--target {config.target.tol:g}: must lie below the initial loss {start:.4g} of the "
                            f"{spec.kind} problem, e.g. --target {start / 100:.2g}")
        if isinstance(spec, RegressionSpec) and max(batches(config)) > spec.examples:
            raise OtodError(f"--batch {max(batches(config)):g}: larger than the data set ({spec.examples} examples); "
                            f"use --batch ≤ {spec.examples} or more --examples")
    if isinstance(config.problem, RosenbrockSpec) and "dim" in dict(config.axes):
        raise OtodError("--dim: the Rosenbrock function is 2-dimensional")


def _x64(config) -> bool:
    return False


def record_fields(config, mode: str = "simulate", point: dict | None = None) -> dict:
    """What every record of a noise or params sweep carries by name besides its axes, so that a reader of the bare
    file (and the analysis, `otod.noise.records.frame`) needs no config to know a lane: the schedule and the path
    (exact or simulate), and at the lane's ``point`` (its axis values) its dimension d (the problem's where d is no
    axis: Rosenbrock's 2), batch B (`ratio_batch` under a proportional rule) and β (0 where β is no axis). The
    exact path writes d, B and β itself and passes no point."""
    fields = {"schedule": config.options.schedule, "mode": mode}
    if point is None:
        return fields
    dim = float(point["dim"]) if "dim" in point else float(getattr(config.problem, "dim", 2))
    batch = float(point["batch"]) if "batch" in point else ratio_batch(float(point["batch_ratio"]), dim)
    return {"dim": dim, "batch": batch, "beta": float(point.get("beta", 0.0)), **fields}


def lr_scale(config, method: str, point: dict) -> float:
    """What a grid value is multiplied by at a traced point: the method's stability limit (2, or 2(1 + β) for
    heavy-ball; `otod.noise.search.stability_limit`) where the grid holds fractions of it (the default grid), so
    each β gets its own range; 1 where it holds multipliers of the reference step (a --lr-grid) or the method is
    not tuned (--lr theory's single step)."""
    from otod.noise.search import stability_limit

    if config.options.lr_unit != "limit" or not config.tuned(method):
        return 1.0
    return stability_limit("precond" if method.startswith("precond") else method, float(point.get("beta", 0.0)))


def simulated_betas(config) -> tuple[float, ...]:
    """The β the simulator tries beyond the default list's 0.999, where a choice sits on it (`otod.core.bracket`):
    half a decade of 1 − β a step, as the list, down to the run's float precision (`otod.core.bracket.beta_floor`:
    1 − β = 10⁻⁵ in float32, 10⁻¹⁴ in float64, the exact path's floor); none for a --beta list (tried as given)."""
    from otod.core.api import default_beta_ladder
    from otod.noise.search import DEFAULT_BETAS

    return default_beta_ladder(config, DEFAULT_BETAS)


#: The simulated noise and params sweeps' bracket stage: β beyond the default list (their lr grid already spans
#: the stability range, so no rate is bracketed); the exact path replaces the run and is not bracketed
#: (`otod.core.pipeline.made`).
BRACKET = Bracketing(lr=False, betas=simulated_betas)

NOISE = SweepKind(name="noise", axes=(BATCH, BETA, DIM), methods=METHODS, problems=PROBLEMS, options=NoiseOptions,
                  max_iters=max_iters, x64=_x64, validate=validate, record_fields=record_fields, lr_scale=lr_scale,
                  ignores=ignores, smaller="fewer --batch, --beta or --dim values, a smaller --dim, or fewer --seeds",
                  bracket=BRACKET)
PARAMS = SweepKind(name="params", axes=(PARAMS_DIM, BATCH, BATCH_RATIO, BETA), methods=METHODS, problems=PROBLEMS,
                   options=NoiseOptions, max_iters=max_iters, x64=_x64, validate=validate,
                   record_fields=record_fields, lr_scale=lr_scale, ignores=ignores,
                   smaller="fewer or smaller --dim values, fewer --beta values, or fewer --seeds", bracket=BRACKET)
