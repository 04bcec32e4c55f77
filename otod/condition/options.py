"""From user-facing option values (strings as typed, or TOML values) to a condition `SweepConfig`.

Shared by the CLI and the experiment specs, so ``otod sweep condition --k 1..100 --start equal-loss`` and an
``experiments/*.toml`` table with ``k = "1..100"`` and ``start = "equal-loss"`` mean the same sweep.
"""

from __future__ import annotations


from otod.condition.kind import DEFAULT_METHODS, DIM, KAPPA, condition_target
from otod.condition.kronecker import KroneckerSpec
from otod.condition.methods import MethodOptions
from otod.condition.quadratic import QuadraticSpec
from otod.core.api import (DEFAULT_LR_GRID, OtodError, SweepConfig, check_cap, check_lr_grid, finite_float,
                           ladder_rungs, nonnegative_float, parse_lr, parse_methods, parse_range, positive_int,
                           refuse_ignored, seed_value, tolerance)


def parse_shape(text: str) -> tuple[int, int]:
    try:
        rows, cols = (int(p) for p in str(text).lower().split("x"))
    except ValueError:
        raise OtodError(f"--shape {text}: write ROWSxCOLS, e.g. --shape 10x10") from None
    return rows, cols


def check_ignored(given, methods, problem: str) -> None:
    """Refuse the options the user gave (``given``: parameter names) that this problem or method list ignores:
    KFAC's damping without kfac, the Kronecker problem's shape and perturbation on the quadratic, the quadratic's
    dimension and basis on the Kronecker problem."""
    if "kfac" not in methods:
        refuse_ignored(given, "damping", f"only kfac reads the damping and --method {','.join(methods)} has no kfac; "
                                         "drop --damping or add kfac, e.g. --method gd,kfac --problem kronecker")
    for name in ("shape", "perturbation"):
        if problem != "kronecker":
            refuse_ignored(given, name, f"applies to --problem kronecker only, not --problem {problem}; drop it or "
                                        "add --problem kronecker, e.g. --problem kronecker --shape 8x12")
    for name in ("dim", "basis"):
        if problem == "kronecker":
            refuse_ignored(given, name, "applies to --problem quadratic only; --problem kronecker's size is --shape, "
                                        "e.g. --problem kronecker --shape 8x12")


def sweep_config_from_options(*, k="1..100", method=",".join(DEFAULT_METHODS), problem="quadratic", dim=100,
                              spectrum="log-uniform", basis="eigen", start="random", shape="10x10",
                              perturbation=0.0, damping=1e-4, tol=1e-6, ladder=None, check_every=1, max_iters=None,
                              seeds=8, seed=0, lr="theory", lr_grid=None, x64=None, chunk_seconds=5.0,
                              given=frozenset()) -> SweepConfig:
    """The `SweepConfig` of a condition sweep from option values as a user writes them. Several ``dim`` values
    make the dimension a static axis (one compiled program per dimension). ``given`` (the parameter names the
    user typed, from the CLI) refuses options the rest of the line ignores (`check_ignored`)."""
    methods = parse_methods(method)
    check_ignored(given, methods, problem)
    seed = seed_value(seed)  # before anything is written: an out-of-range seed once left an orphan journal
    axes = [("kappa", KAPPA.parse(k))]
    if problem == "quadratic":
        dims = DIM.parse(dim)
        if len(dims) > 1:
            axes.append(("dim", dims))
        spec = QuadraticSpec(dim=int(dims[0]), spectrum=spectrum, basis=basis, start=start)
    elif problem == "kronecker":
        rows, cols = parse_shape(shape)
        spec = KroneckerSpec(rows=rows, cols=cols, spectrum=spectrum, start=start,
                             perturbation=finite_float(perturbation, "--perturbation", "0.1"))
    else:
        raise OtodError(f"--problem {problem}: unknown; choose quadratic or kronecker")
    grid = DEFAULT_LR_GRID if lr_grid is None else parse_range(lr_grid, "--lr-grid", what="lr multipliers")
    wide = x64 is not False  # the automatic precision is float64 where float32 cannot reach the tolerance
    tol = tolerance(tol, "--tol", "1e-6", wide)
    rungs = () if ladder is None else ladder_rungs(parse_range(ladder, "--ladder", what="tolerances"), tol, wide)
    config = SweepConfig(
        sweep="condition", axes=tuple(axes), methods=methods, problem=spec,
        target=condition_target(tol, rungs, positive_int(check_every, "--check-every", "1")),
        max_iters=None if max_iters is None else positive_int(max_iters, "--max-iters", "10000"),
        seeds=positive_int(seeds, "--seeds", "8"), seed=seed,
        lr=parse_lr(lr), lr_grid=tuple(grid), x64=x64,
        options=MethodOptions(damping=nonnegative_float(damping, "--damping", "1e-4")),
        chunk_seconds=finite_float(chunk_seconds, "--chunk-seconds", "5"))
    check_cap(config)
    check_lr_grid(given, config)
    return config


def condition_sweep(values, *, methods=DEFAULT_METHODS, problem=None, tol: float = 1e-6, ladder=(),
                    check_every: int = 1, dims=None, **kwargs) -> SweepConfig:
    """A condition `SweepConfig` from Python values (for notebooks and tests): κ values, methods, a problem spec
    (default `QuadraticSpec()`), tol and its ladder; ``dims`` sweeps the dimension as a static axis; other
    keywords (seeds, lr, lr_grid, max_iters, x64, options, chunk_seconds) pass through."""
    axes = [("kappa", tuple(values))] + ([("dim", tuple(dims))] if dims else [])
    return SweepConfig(sweep="condition", axes=tuple(axes), problem=problem or QuadraticSpec(),
                       methods=tuple(methods), target=condition_target(tol, tuple(ladder), check_every), **kwargs)
