"""From user-facing option values (strings as typed, or TOML values) to a condition `SweepConfig`.

Shared by the CLI and the experiment specs, so ``otod sweep condition --k 1..100 --start equal-loss`` and an
``experiments/*.toml`` table with ``k = "1..100"`` and ``start = "equal-loss"`` mean the same sweep.
"""

from __future__ import annotations

import math

from otod.condition.kind import DEFAULT_METHODS, DIM, KAPPA, condition_target
from otod.condition.kronecker import KroneckerSpec
from otod.condition.methods import MethodOptions
from otod.condition.quadratic import QuadraticSpec
from otod.core.errors import OtodError
from otod.core.ranges import parse_range
from otod.core.sweep import DEFAULT_LR_GRID, SweepConfig


def parse_methods(text: str | list[str]) -> tuple[str, ...]:
    names = text if isinstance(text, list) else [m.strip() for m in str(text).split(",")]
    if not names or any(not n for n in names):
        raise OtodError(f"--method {text}: give a comma list of methods, e.g. --method gd,heavy-ball")
    return tuple(dict.fromkeys(names))


def parse_lr(text: str | float) -> str | float:
    if isinstance(text, (int, float)):
        value = float(text)
    elif text in ("theory", "tuned"):
        return text
    else:
        try:
            value = float(text)
        except ValueError:
            raise OtodError(f"--lr {text}: use theory, tuned or a positive number, e.g. --lr 0.01") from None
    if not (value > 0 and math.isfinite(value)):
        raise OtodError(f"--lr {text}: a learning rate must be a positive number, e.g. --lr 0.01")
    return value


def parse_shape(text: str) -> tuple[int, int]:
    try:
        rows, cols = (int(p) for p in str(text).lower().split("x"))
    except ValueError:
        raise OtodError(f"--shape {text}: write ROWSxCOLS, e.g. --shape 10x10") from None
    return rows, cols


def _positive_int(value, option: str, example: str, minimum: int = 1) -> int:
    try:
        as_float = float(value)
        number = int(as_float)
    except (TypeError, ValueError, OverflowError):
        raise OtodError(f"{option} {value}: need an integer ≥ {minimum}, e.g. {option} {example}") from None
    if number != as_float or number < minimum:
        raise OtodError(f"{option} {value}: need an integer ≥ {minimum}, e.g. {option} {example}")
    return number


def _float(value, option: str, example: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise OtodError(f"{option} {value}: not a number, e.g. {option} {example}") from None
    if not math.isfinite(number):
        raise OtodError(f"{option} {value}: not a finite number, e.g. {option} {example}")
    return number


def sweep_config_from_options(*, k="1..100", method=",".join(DEFAULT_METHODS), problem="quadratic", dim=100,
                              spectrum="log-uniform", basis="eigen", start="random", shape="10x10",
                              perturbation=0.0, damping=1e-4, tol=1e-6, ladder=None, check_every=1, max_iters=None,
                              seeds=8, seed=0, lr="theory", lr_grid=None, x64=None, chunk_seconds=5.0
                              ) -> SweepConfig:
    """The `SweepConfig` of a condition sweep from option values as a user writes them. Several ``dim`` values
    make the dimension a static axis (one compiled program per dimension)."""
    axes = [("kappa", KAPPA.parse(k))]
    if problem == "quadratic":
        dims = DIM.parse(dim)
        if len(dims) > 1:
            axes.append(("dim", dims))
        spec = QuadraticSpec(dim=int(dims[0]), spectrum=spectrum, basis=basis, start=start)
    elif problem == "kronecker":
        rows, cols = parse_shape(shape)
        spec = KroneckerSpec(rows=rows, cols=cols, spectrum=spectrum, start=start,
                             perturbation=_float(perturbation, "--perturbation", "0.1"))
    else:
        raise OtodError(f"--problem {problem}: unknown; choose quadratic or kronecker")
    grid = DEFAULT_LR_GRID if lr_grid is None else parse_range(lr_grid, "--lr-grid", what="lr multipliers")
    rungs = () if ladder is None else parse_range(ladder, "--ladder", what="tolerances")
    return SweepConfig(
        sweep="condition", axes=tuple(axes), methods=parse_methods(method), problem=spec,
        target=condition_target(_float(tol, "--tol", "1e-6"), rungs,
                                _positive_int(check_every, "--check-every", "1")),
        max_iters=None if max_iters is None else _positive_int(max_iters, "--max-iters", "10000"),
        seeds=_positive_int(seeds, "--seeds", "8"), seed=_positive_int(seed, "--seed", "0", minimum=0),
        lr=parse_lr(lr), lr_grid=tuple(grid), x64=x64,
        options=MethodOptions(damping=_float(damping, "--damping", "1e-4")),
        chunk_seconds=_float(chunk_seconds, "--chunk-seconds", "5"))


def condition_sweep(values, *, methods=DEFAULT_METHODS, problem=None, tol: float = 1e-6, ladder=(),
                    check_every: int = 1, dims=None, **kwargs) -> SweepConfig:
    """A condition `SweepConfig` from Python values (for notebooks and tests): κ values, methods, a problem spec
    (default `QuadraticSpec()`), tol and its ladder; ``dims`` sweeps the dimension as a static axis; other
    keywords (seeds, lr, lr_grid, max_iters, x64, options, chunk_seconds) pass through."""
    axes = [("kappa", tuple(values))] + ([("dim", tuple(dims))] if dims else [])
    return SweepConfig(sweep="condition", axes=tuple(axes), problem=problem or QuadraticSpec(),
                       methods=tuple(methods), target=condition_target(tol, tuple(ladder), check_every), **kwargs)
