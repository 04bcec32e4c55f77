"""From user-facing option values (strings as typed, or TOML values) to a condition `SweepConfig`.

Shared by the CLI and the experiment specs, so ``otod sweep condition --k 1..100 --start equal-loss`` and an
``experiments/*.toml`` table with ``k = "1..100"`` and ``start = "equal-loss"`` mean the same sweep.
"""

from __future__ import annotations


from otod.condition.kind import DEFAULT_METHODS, DIM, KAPPA, condition_target
from otod.condition.kronecker import KroneckerSpec
from otod.condition.methods import MethodOptions
from otod.condition.quadratic import QuadraticSpec
from otod.core.errors import OtodError
from otod.core.options import finite_float, parse_lr, parse_methods, positive_int
from otod.core.ranges import parse_range
from otod.core.sweep import DEFAULT_LR_GRID, SweepConfig






def parse_shape(text: str) -> tuple[int, int]:
    try:
        rows, cols = (int(p) for p in str(text).lower().split("x"))
    except ValueError:
        raise OtodError(f"--shape {text}: write ROWSxCOLS, e.g. --shape 10x10") from None
    return rows, cols






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
                             perturbation=finite_float(perturbation, "--perturbation", "0.1"))
    else:
        raise OtodError(f"--problem {problem}: unknown; choose quadratic or kronecker")
    grid = DEFAULT_LR_GRID if lr_grid is None else parse_range(lr_grid, "--lr-grid", what="lr multipliers")
    rungs = () if ladder is None else parse_range(ladder, "--ladder", what="tolerances")
    return SweepConfig(
        sweep="condition", axes=tuple(axes), methods=parse_methods(method), problem=spec,
        target=condition_target(finite_float(tol, "--tol", "1e-6"), rungs,
                                positive_int(check_every, "--check-every", "1")),
        max_iters=None if max_iters is None else positive_int(max_iters, "--max-iters", "10000"),
        seeds=positive_int(seeds, "--seeds", "8"), seed=positive_int(seed, "--seed", "0", minimum=0),
        lr=parse_lr(lr), lr_grid=tuple(grid), x64=x64,
        options=MethodOptions(damping=finite_float(damping, "--damping", "1e-4")),
        chunk_seconds=finite_float(chunk_seconds, "--chunk-seconds", "5"))


def condition_sweep(values, *, methods=DEFAULT_METHODS, problem=None, tol: float = 1e-6, ladder=(),
                    check_every: int = 1, dims=None, **kwargs) -> SweepConfig:
    """A condition `SweepConfig` from Python values (for notebooks and tests): κ values, methods, a problem spec
    (default `QuadraticSpec()`), tol and its ladder; ``dims`` sweeps the dimension as a static axis; other
    keywords (seeds, lr, lr_grid, max_iters, x64, options, chunk_seconds) pass through."""
    axes = [("kappa", tuple(values))] + ([("dim", tuple(dims))] if dims else [])
    return SweepConfig(sweep="condition", axes=tuple(axes), problem=problem or QuadraticSpec(),
                       methods=tuple(methods), target=condition_target(tol, tuple(ladder), check_every), **kwargs)
