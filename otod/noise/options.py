"""From user-facing option values (strings as typed, or TOML values) to a noise or params `SweepConfig`, shared
by the CLI and the experiment specs."""

from __future__ import annotations

import math

from otod.core.options import finite_float, parse_methods, positive_int
from otod.core.errors import OtodError
from otod.core.ranges import parse_range
from otod.core.stopping import Target
from otod.core.sweep import SweepConfig
from otod.noise.kind import BATCH, BATCH_RATIO, BETA, DIM, PARAMS_DIM, round_integers
from otod.noise.methods import METHODS, NoiseOptions
from otod.noise.problems import IsotropicSpec, NQMSpec, RegressionSpec, RosenbrockSpec

#: Multipliers of each method's reference step tried for every batch: 2^(k/2) from 2^−20 ≈ 1e−6 to √2.
DEFAULT_LR_GRID = tuple(2.0 ** (k / 2) for k in range(-40, 2))
MODES = ("exact", "simulate")
EXACT_PROBLEMS = ("nqm", "isotropic")
#: The exact path's cap: its binary jumps cost log₂(cap), so it can afford the 6·10⁶ steps SGD needs at B = 1.
EXACT_MAX_ITERS = 100_000_000


def parse_batches(text) -> tuple[float, ...]:
    values = round_integers(parse_range(str(text), "--batch", what="batch sizes B"))
    return BATCH.check(values)


def parse_dims(text, axis=DIM) -> tuple[float, ...]:
    return axis.check(round_integers(parse_range(str(text), "--dim", what="dimensions d")))


def problem_spec(problem: str, dim: int, *, noise_spectrum="hessian", noise=None, examples=1024, kappa=10.0,
                 label_noise=0.5):
    if problem == "nqm":
        return NQMSpec(dim=dim, noise=noise_spectrum)
    if problem == "isotropic":
        return IsotropicSpec(dim=dim, sigma=finite_float(1.0 if noise is None else noise, "--noise", "1"))
    if problem == "regression":
        return RegressionSpec(examples=positive_int(examples, "--examples", "1024"), dim=dim,
                              kappa=finite_float(kappa, "--kappa", "10"),
                              label_noise=finite_float(label_noise, "--label-noise", "0.5"))
    if problem == "rosenbrock":
        return RosenbrockSpec(noise=finite_float(0.0 if noise is None else noise, "--noise", "0.1"))
    raise OtodError(f"--problem {problem}: unknown; choose nqm, isotropic, regression or rosenbrock")


def parse_mode(mode: str | None, problem: str) -> str:
    """The path: exact (the NQM's recursions; default on nqm) or simulate (default elsewhere)."""
    mode = mode or ("exact" if problem == "nqm" else "simulate")
    if mode not in MODES:
        raise OtodError(f"--mode {mode}: choose exact or simulate, e.g. --mode simulate")
    if mode == "exact" and problem not in EXACT_PROBLEMS:
        raise OtodError(f"--mode exact: the {problem} problem has no exact recursion (only nqm and isotropic "
                        "do); use --mode simulate")
    return mode


def _lr(lr):
    if lr in ("tuned", "theory"):
        return lr
    value = finite_float(lr, "--lr", "0.01")
    if not value > 0:
        raise OtodError(f"--lr {lr}: a learning rate must be a positive number, e.g. --lr 0.01")
    return value


def _common(method, target, max_iters, seeds, seed, lr, lr_grid, schedule, x64, chunk_seconds, mode, axes,
            sweep, spec) -> SweepConfig:
    methods = parse_methods(method)
    for name in methods:
        METHODS[name] if name.startswith("precond") else None  # checks p ∈ [0, 1]
    if mode == "exact":
        if schedule != "constant":
            raise OtodError(f"--schedule {schedule}: the exact path has constant steps only; use --mode simulate "
                            "for schedules")
        if "adam" in methods:
            raise OtodError("--method adam: no exact recursion for adam; use --mode simulate")
    grid = DEFAULT_LR_GRID if lr_grid is None else parse_range(lr_grid, "--lr-grid", what="lr multipliers")
    tol = finite_float(target, "--target", "0.01")
    if not (tol > 0 and math.isfinite(tol)):
        raise OtodError(f"--target {target}: a target loss must be a positive number, e.g. --target 0.01")
    NoiseOptions(schedule=schedule)  # an unknown schedule is refused before anything else is built
    provisional = SweepConfig(sweep=sweep, axes=tuple(axes), problem=spec, methods=methods,
                              target=Target(tol, kind="absolute"),
                              max_iters=(EXACT_MAX_ITERS if mode == "exact" else None) if max_iters is None
                              else positive_int(max_iters, "--max-iters", "100000"),
                              seeds=1 if mode == "exact" else positive_int(seeds, "--seeds", "8"),
                              seed=positive_int(seed, "--seed", "0", minimum=0), lr=_lr(lr), lr_grid=tuple(grid),
                              x64=x64, options=NoiseOptions(schedule=schedule),
                              chunk_seconds=finite_float(chunk_seconds, "--chunk-seconds", "5"))
    import dataclasses

    # the schedule's horizon is the run's cap: a cosine reaches 0 where the run would be censored
    return dataclasses.replace(provisional, options=NoiseOptions(schedule, provisional.resolved_max_iters))


def default_methods(problem: str) -> str:
    """The default comparison: preconditioning only where the problem offers its curvature (the quadratics)."""
    return "sgd,heavy-ball,precond:0.5,ema" if problem in ("nqm", "isotropic") else "sgd,heavy-ball,ema"


def noise_config(*, batch="1..1024:11:log", method=None, mode=None, problem="nqm",
                 dim=None, target="0.01", beta="0.9", schedule="constant", noise_spectrum="hessian", noise=None,
                 examples=1024, kappa=10.0, label_noise=0.5, max_iters=None, seeds=8, seed=0, lr="tuned",
                 lr_grid=None, x64=None, chunk_seconds=5.0) -> tuple[SweepConfig, str]:
    """(config, mode) of ``otod sweep noise``: steps to target vs batch size."""
    mode = parse_mode(mode, problem)
    default_dim = {"nqm": 10_000 if mode == "exact" else 100, "isotropic": 100, "regression": 16,
                   "rosenbrock": 2}[problem]
    dims = parse_dims(default_dim if dim is None else dim)
    spec = problem_spec(problem, int(dims[0]), noise_spectrum=noise_spectrum, noise=noise, examples=examples,
                        kappa=kappa, label_noise=label_noise)
    axes = [("batch", parse_batches(batch)), ("beta", BETA.parse(beta))]
    if problem != "rosenbrock":
        axes.append(("dim", dims))
    return _common(method or default_methods(problem), target, max_iters, seeds, seed, lr, lr_grid, schedule, x64,
                   chunk_seconds, mode, axes, "noise", spec), mode


def parse_rules(text: str) -> list[tuple[str, float]]:
    """``fixed:32,proportional:0.1`` → [("fixed", 32), ("proportional", 0.1)]."""
    rules = []
    for item in str(text).split(","):
        name, _, value = item.strip().partition(":")
        if name not in ("fixed", "proportional") or not value:
            raise OtodError(f"--batch-rule {item}: write fixed:B or proportional:R, e.g. "
                            "--batch-rule fixed:32,proportional:0.1")
        number = finite_float(value, "--batch-rule", "fixed:32")
        if not number > 0 or (name == "fixed" and (number < 1 or number != int(number))):
            raise OtodError(f"--batch-rule {item}: a fixed batch is a whole number ≥ 1 and a ratio is positive, "
                            "e.g. --batch-rule fixed:32,proportional:0.1")
        rules.append((name, number))
    return rules


def params_configs(*, dim="10..10000:13:log", batch_rule="fixed:32,proportional:0.1", method="sgd", mode=None,
                   problem="isotropic", target="0.05", beta="0", noise=None, noise_spectrum="hessian",
                   max_iters=None, seeds=8, seed=0, lr="tuned", lr_grid=None, x64=None,
                   chunk_seconds=5.0) -> tuple[list[tuple[str, SweepConfig]], str]:
    """([(rule label, config)], mode) of ``otod sweep params``: one sweep per batch rule, d static."""
    mode = parse_mode(mode or ("exact" if problem in ("nqm",) else "simulate"), problem)
    if problem in ("rosenbrock",):
        raise OtodError("--problem rosenbrock: a params sweep needs a problem with a dimension")
    dims = parse_dims(dim, PARAMS_DIM)
    spec = problem_spec(problem, int(dims[0]), noise_spectrum=noise_spectrum, noise=noise)
    out = []
    for name, value in parse_rules(batch_rule):
        rule_axis = ("batch", (float(value),)) if name == "fixed" else ("batch_ratio", BATCH_RATIO.check([value]))
        axes = [("dim", dims), rule_axis, ("beta", BETA.parse(beta))]
        out.append((f"{name}:{value:g}", _common(method, target, max_iters, seeds, seed, lr, lr_grid, "constant",
                                                 x64, chunk_seconds, mode, axes, "params", spec)))
    return out, mode
