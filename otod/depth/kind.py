"""The depth and toy sweeps as the core sees them: axes, problems, methods, cap, precision and theory.

``otod sweep depth``: depth L and width n are static axes (one compiled program per shape); the init (a coded
axis: the engine vmaps over its index in `otod.depth.linear.INITS`, records carry its name) and the momentum β are
traced axes, so seeds × learning rates × β × inits run in one
vmapped program per shape. ``otod sweep toy``: the number of matrices k is static, β traced.
"""

from __future__ import annotations

from otod.core.api import Axis, Bracketing, decades, OtodError, SweepKind, Target, Theory
from otod.depth.linear import INITS, DeepLinearSpec, init_code
from otod.depth.methods import METHODS, MethodOptions
from otod.depth.toy import ToySpec
from otod.depth.toy import annotate as annotate_toy

DEFAULT_METHODS = ("gd",)
#: β tuned by default (heavy-ball's momentum, adam's b₁): 0 and 1 − β = 10^(−j/2), j = 1…6, so [0, 0.999] spaced
#: evenly in log(1 − β), as the noise sweeps tune it.
DEFAULT_BETAS = (0.0,) + tuple(round(1.0 - 10.0 ** (-j / 2), 6) for j in range(1, 7))
#: Automatic caps: lanes reaching them are censored (shown, never dropped: at least the cap). A lane stops earlier
#: as stalled only at a fixed point of its float32 iteration (the families' ``stall="fixed-point"`` rule, in
#: `otod.core.engine`): stuck for any cap. The Gaussian chain's plateau near w_L⋯w_1 = 0 is long but escaped
#: (Shamir 2019): of the 117 lanes of `--depth 2..20 --seeds 64` that make no 0.1% progress in 10⁵ iterations,
#: 97 converge when run on (1.1·10⁵ to 9.8·10⁶ iterations), so its cap is 10⁶ and those past it are censored.
DEFAULT_CAP = {"deep-linear": 20_000, "residual": 20_000, "chain": 1_000_000, "toy": 100_000}

DEPTH = Axis("depth", "L", "depth L (number of layers)", "--depth", traced=False, minimum=1, maximum=1000,
             integer=True, what="depths", example="1..12")
INIT = Axis("init", "init", "initialization", "--init", traced=True, minimum=0, maximum=len(INITS) - 1,
            integer=True, what="inits", example="identity,xavier,small", labels=INITS)
BETA = Axis("beta", "β", "momentum β (heavy ball) / b₁ (adam)", "--beta", traced=True, minimum=0.0,
            maximum=0.9999, what="momentum values β", example="0,0.5,0.9,0.99")
WIDTH = Axis("width", "n", "width n", "--width", traced=False, minimum=1, maximum=4096, integer=True,
             what="widths", example="4..256:7:log")
LAYERS = Axis("layers", "k", "number of random 3×3 matrices k", "--layers", traced=False, minimum=1, maximum=64,
              integer=True, what="matrix counts k", example="1..8")


def depth_target(tol: float, ladder=(), check_every: int = 1) -> Target:
    """An absolute target on the relative loss (loss over the zero predictor's), with every decade from 0.1."""
    if not (0.0 < tol < 1.0):
        raise OtodError(f"--tol {tol:g}: the relative loss must lie strictly between 0 and 1, e.g. --tol 1e-6")
    return Target(tol=tol, kind="absolute", ladder=tuple(decades(0.1, tol)) + tuple(ladder),
                  check_every=check_every)


def toy_target(tol: float, ladder=(), check_every: int = 1) -> Target:
    """A relative loss-gap target (f − f*)/(f₀ − f*) with every decade from 0.1."""
    if not (0.0 < tol < 1.0):
        raise OtodError(f"--tol {tol:g}: the relative loss gap must lie strictly between 0 and 1, e.g. --tol 1e-6")
    return Target(tol=tol, kind="relative", ladder=tuple(decades(0.1, tol)) + tuple(ladder),
                  check_every=check_every)


def validate_depth(config) -> None:
    if not isinstance(config.problem, DeepLinearSpec):
        raise OtodError("depth sweeps take a deep-linear, chain or residual problem")
    if config.target.kind != "absolute":
        raise OtodError("depth sweeps stop at a relative loss (loss over the zero predictor's loss), an absolute "
                        "target on that ratio")
    codes = config.values("init")
    if config.problem.residual and init_code("identity") in codes:
        raise OtodError("--init identity: for --problem residual the init draws V in W = I + V; V = 0 (W = I) is "
                        "--init zero")
    if config.problem.problem == "chain" and "width" in dict(config.axes):
        raise OtodError("--width: the chain is scalar (width 1); use --problem deep-linear to sweep widths")


def validate_toy(config) -> None:
    if not isinstance(config.problem, ToySpec):
        raise OtodError("toy sweeps take the toy problem")
    if config.target.kind != "relative":
        raise OtodError("toy sweeps stop at a relative loss gap (--tol)")


def _identity_theory(config, point, method):
    """The per-mode count where it applies (identity init, gd, whitened inputs, symmetric target), else None."""
    from otod.depth import theory

    if not applies(config) or method != "gd" or int(point.get("init", -1)) != init_code("identity"):
        return None
    spec = config.spec_at({k: v for k, v in point.items() if k in ("depth", "width")})
    multiplier = 1.0 if config.lr == "theory" else None
    if multiplier is None:
        return None
    return theory.mode_iterations(spec.depth, spec.target_singular_values(), multiplier
                                  * theory.reference_step(spec.depth, float(spec.target_singular_values().max())),
                                  config.target.tol, max_iters=config.resolved_max_iters)


def applies(config) -> bool:
    """Whether the per-mode theory describes a depth sweep: whitened inputs, a symmetric target, the plain (or
    residual with V = 0) square net, float learning-rate multipliers of the reference step."""
    p = config.problem
    return (isinstance(p, DeepLinearSpec) and p.input_kappa == 1.0 and p.target == "symmetric"
            and not p.balanced and not p.rectangular and isinstance(config.lr, str))


DEPTH_THEORY = Theory(iterations=_identity_theory, exponent=lambda method: None,
                      exponent_on_grid=lambda config, method, xs: None, applies=applies)

def depth_betas(config) -> tuple[float, ...]:
    """The β a depth or toy sweep tries beyond its default list's 0.999 (`otod.core.bracket.default_beta_ladder`
    of `DEFAULT_BETAS`): 1 − β = 10^(−3.5), 10⁻⁴, … to the run's float limit; none for a --beta list the user
    gave."""
    from otod.core.api import default_beta_ladder

    return default_beta_ladder(config, DEFAULT_BETAS)


#: The bracket stage of depth and toy sweeps: the tuned rate beyond the grid, heavy-ball's and Adam's β beyond
#: 0.999 (`otod.core.pipeline.made`).
BRACKET = Bracketing(lr=True, betas=depth_betas)

DEPTH_KIND = SweepKind(
    name="depth", axes=(DEPTH, INIT, BETA, WIDTH), methods=METHODS,
    problems={"deep-linear": DeepLinearSpec, "chain": DeepLinearSpec, "residual": DeepLinearSpec},
    options=MethodOptions, max_iters=lambda config: DEFAULT_CAP[config.problem.problem],
    x64=lambda config: False, validate=validate_depth, theory=DEPTH_THEORY, bracket=BRACKET,
    smaller="fewer or smaller --depth and --width values, fewer --init or --seeds")

TOY_KIND = SweepKind(
    name="toy", axes=(LAYERS, BETA), methods={k: v for k, v in METHODS.items() if k != "kfac"},
    problems={"toy": ToySpec}, options=MethodOptions, max_iters=lambda config: DEFAULT_CAP["toy"],
    x64=lambda config: False, validate=validate_toy, annotate=annotate_toy, bracket=BRACKET,
    smaller="fewer or smaller --layers values, fewer --beta values or --seeds")
