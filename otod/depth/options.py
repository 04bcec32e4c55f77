"""From user-facing option values (strings as typed, or TOML values) to depth and toy `SweepConfig`s, shared by
the CLI and ``experiments/depth.toml``."""

from __future__ import annotations

from otod.core.api import (DEFAULT_LR_GRID, OtodError, SweepConfig, check_cap, check_lr_grid, finite_float,
                           ladder_rungs, nonnegative_float, parse_lr, parse_methods, parse_range, positive_int,
                           refuse_ignored, seed_value, tolerance)
from otod.depth.kind import BETA, DEFAULT_BETAS, DEPTH, INIT, LAYERS, WIDTH, depth_target, toy_target
from otod.depth.linear import DeepLinearSpec, init_code
from otod.depth.methods import USES_BETA, MethodOptions
from otod.depth.toy import ToySpec


#: The largest --target-kappa, --input-kappa and --target-value: the loss scales with their square, which must stay
#: well inside float32 (3.4e38), and the reference step raises them to powers up to 2 (--target-kappa 1e300 ended in
#: an OverflowError traceback, 1e38 in a ZeroDivisionError). 10¹² is the bound of condition's --k too.
SCALE_MAX = 1e12


def bounded(value, option: str, example: str, low: float, inclusive: bool) -> float:
    """A finite number above ``low`` (or equal to it, where ``inclusive``) and at most `SCALE_MAX`."""
    number = finite_float(value, option, example)
    if not (number >= low if inclusive else number > low) or number > SCALE_MAX:
        relation = "≥" if inclusive else ">"
        raise OtodError(f"{option} {value}: need a number {relation} {low:g} and ≤ {SCALE_MAX:g} (its square scales "
                        f"the float32 loss), e.g. {option} {example}")
    return number


def parse_inits(text) -> tuple[float, ...]:
    """Init names (a comma list or a TOML list) as the codes the engine vmaps over."""
    return INIT.parse(text)


def _betas(beta, methods) -> tuple[float, ...]:
    if beta is None:
        return DEFAULT_BETAS if any(m in USES_BETA for m in methods) else (0.0,)
    return BETA.parse(beta)


def check_ignored_beta(given, methods) -> None:
    """Refuse ``--beta`` given where no method has a momentum (only heavy-ball and adam read it)."""
    if not any(m in USES_BETA for m in methods):
        refuse_ignored(given, "beta", f"only {' and '.join(USES_BETA)} read β and --method {','.join(methods)} has "
                                      "neither; drop --beta or add one, e.g. --method gd,heavy-ball --beta 0,0.9")


def check_ignored_depth(given, methods, problem: str, inits: str) -> None:
    """Refuse the depth options the user gave that this problem, init list or method list ignores: KFAC's damping
    without kfac, --init-scale without the small init, the chain's --target-value on a matrix problem, and the
    matrix target's --target-kappa, --target and --input-kappa on the scalar chain."""
    check_ignored_beta(given, methods)
    if "kfac" not in methods:
        refuse_ignored(given, "damping", f"only kfac reads the damping and --method {','.join(methods)} has no kfac; "
                                         "drop --damping or add kfac, e.g. --method gd,kfac")
    if init_code("small") not in parse_inits(inits):
        refuse_ignored(given, "init_scale", f"scales --init small only, and --init {inits} has no small; drop it or "
                                            "add small, e.g. --init identity,small --init-scale 0.01")
    if problem != "chain":
        refuse_ignored(given, "target_value", f"is the scalar chain's target, not --problem {problem}'s; drop it or "
                                              "use --problem chain, e.g. --problem chain --target-value 1")
    else:
        for name in ("target_kappa", "target", "input_kappa"):
            refuse_ignored(given, name, "shapes a matrix target, and the chain (--problem chain) is scalar; drop it "
                                        "or use --problem deep-linear, e.g. --problem deep-linear --target-kappa 10")


def _common(tol, ladder, check_every, max_iters, seeds, seed, lr, lr_grid, x64, chunk_seconds, target):
    seed = seed_value(seed)  # before anything is written: an out-of-range seed once left an orphan journal
    grid = DEFAULT_LR_GRID if lr_grid is None else parse_range(lr_grid, "--lr-grid", what="lr multipliers")
    wide = x64 is True  # float32 unless --x64
    tol = tolerance(tol, "--tol", "1e-6", wide)
    rungs = () if ladder is None else ladder_rungs(parse_range(ladder, "--ladder", what="tolerances"), tol, wide)
    return dict(target=target(tol, rungs, positive_int(check_every, "--check-every", "1")),
                max_iters=None if max_iters is None else positive_int(max_iters, "--max-iters", "20000"),
                seeds=positive_int(seeds, "--seeds", "8"), seed=seed,
                lr=parse_lr(lr), lr_grid=tuple(grid), x64=x64,
                chunk_seconds=finite_float(chunk_seconds, "--chunk-seconds", "5"))


def _checked(config: SweepConfig, given) -> SweepConfig:
    """The checks that need the whole config: the check interval against the cap, --lr-grid where tuned."""
    check_cap(config)
    check_lr_grid(given, config)
    return config


def depth_config_from_options(*, depth="1..12", init="identity,xavier,small", problem="deep-linear", width="8",
                              method="gd", beta=None, init_scale=0.1, target_kappa=2.0, target_value=2.0,
                              input_kappa=1.0, target="symmetric", balanced=False, d_in=None, d_out=None,
                              damping=1e-3, tol=1e-6,
                              ladder=None, check_every=1, max_iters=None, seeds=8, seed=0, lr="tuned", lr_grid=None,
                              x64=None, chunk_seconds=5.0, given=frozenset()) -> SweepConfig:
    """The `SweepConfig` of a depth sweep from option values as a user writes them. Depth is always an axis (the
    x of fits and figures); several widths make width one too. ``d_in``/``d_out`` (None: the width) make the net
    rectangular (`otod.depth.linear`). ``given`` (the parameter names the user typed, from the CLI) refuses
    options the rest of the line ignores (`check_ignored_depth`)."""
    methods = parse_methods(method)
    check_ignored_depth(given, methods, problem, init)
    depths = DEPTH.parse(depth)
    widths = (1.0,) if problem == "chain" and str(width) == "8" else WIDTH.parse(width)
    axes = [("depth", depths), ("init", parse_inits(init)), ("beta", _betas(beta, methods))]
    if len(widths) > 1:
        axes.append(("width", widths))
    spec = DeepLinearSpec(problem=problem, depth=int(depths[0]), width=int(widths[0]),
                          init_scale=finite_float(init_scale, "--init-scale", "0.1"),
                          target_kappa=bounded(target_kappa, "--target-kappa", "10", 1.0, True),
                          target_value=bounded(target_value, "--target-value", "2", 0.0, False),
                          input_kappa=bounded(input_kappa, "--input-kappa", "10", 1.0, True), target=target,
                          balanced=bool(balanced),
                          d_in=None if d_in is None else positive_int(d_in, "--d-in", "8", minimum=1),
                          d_out=None if d_out is None else positive_int(d_out, "--d-out", "8", minimum=1))
    return _checked(SweepConfig(sweep="depth", axes=tuple(axes), methods=methods, problem=spec,
                                options=MethodOptions(damping=nonnegative_float(damping, "--damping", "1e-3")),
                                **_common(tol, ladder, check_every, max_iters, seeds, seed, lr, lr_grid, x64,
                                          chunk_seconds, depth_target)), given)


def toy_config_from_options(*, layers="1..8", reading="per-layer", method="gd", beta=None, tol=1e-6, ladder=None,
                            check_every=1, max_iters=None, seeds=8, seed=0, lr="tuned", lr_grid=None, x64=None,
                            chunk_seconds=5.0, given=frozenset()) -> SweepConfig:
    """The `SweepConfig` of a toy sweep: the number of matrices k is a static axis, β a traced one. ``given`` (the
    parameter names the user typed) refuses --beta where no method reads it."""
    methods = parse_methods(method)
    check_ignored_beta(given, methods)
    ks = LAYERS.parse(layers)
    spec = ToySpec(layers=int(ks[0]), reading=reading)
    return _checked(SweepConfig(sweep="toy", axes=(("layers", ks), ("beta", _betas(beta, methods))),
                                methods=methods, problem=spec,
                                **_common(tol, ladder, check_every, max_iters, seeds, seed, lr, lr_grid, x64,
                                          chunk_seconds, toy_target)), given)
