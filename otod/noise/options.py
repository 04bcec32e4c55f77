"""From user-facing option values (strings as typed, or TOML values) to a noise or params `SweepConfig`, shared
by the CLI and the experiment specs."""

from __future__ import annotations

import math

from otod.core.api import (OtodError, SweepConfig, Target, finite_float, parse_methods, parse_range, positive_int,
                           refuse_memory, refuse_time, representable_lr, seed_value, whole_values)
from otod.noise.kind import BATCH, BATCH_RATIO, BETA, DIM, PARAMS_DIM
from otod.noise import search
from otod.core.api import METHODS, NoiseOptions
from otod.noise.problems import IsotropicSpec, NQMSpec, RegressionSpec, RosenbrockSpec

#: The default lr grid: 57 fractions of each method's stability limit (2 × the reference step for sgd, precond:p
#: and ema, 2(1 + β) × it for heavy-ball), log-spaced below half the limit down to 4·10⁻⁷ of it and in the
#: distance to the limit above, up to 1.1·10⁻³ below it (`otod.noise.search`).
DEFAULT_LR_GRID = search.DEFAULT_LR_GRID
#: The default β list (heavy-ball's momentum, ema's decay): 0 and 1 − β = 10^(−j/2), j = 1…6, up to 0.999; the
#: exact path refines it and searches on towards 1 (`otod.noise.search.bracket`), the simulator tries it as given.
DEFAULT_BETAS = search.DEFAULT_BETAS
MODES = ("exact", "simulate")
EXACT_PROBLEMS = ("nqm", "isotropic")
#: The exact path's cap: its binary jumps cost log₂(cap), so it can afford the 6·10⁶ steps SGD needs at B = 1.
EXACT_MAX_ITERS = 100_000_000
#: The simulator's defaults where --seeds / --seed are not given (the exact path has neither).
DEFAULT_SEEDS, DEFAULT_SEED = 8, 0
#: Seconds per operation of the exact recursions as `exact_cost` counts them (NumPy, float64): the default exact
#: sweep (3.9·10¹⁰ operations before β was bracketed) took 18.2 s of CPU on the 2-core development machine shared
#: with other jobs, 4.2–8.6·10⁻¹⁰ s per operation by method; this allows for a busier machine. With β bracketed
#: (5.7·10¹⁰ operations) it took 100.6 s of CPU on the same machine under a heavier load (1.8·10⁻⁹ s per
#: operation; the earlier search's heavy-ball and ema took 66.5 s there against 95.3 s).
EXACT_SECONDS_PER_FLOAT = 1e-9
#: Operations per direction and level of the exact recursions (`otod.noise.theory`): squaring the powers and
#: updating their forcing sums (1 component: 3; 3 components, by the 2×2 mean map: 46), and one jump of a batch's
#: state with its loss and selection (1 component: 6; 3: 26).
POWER_OPS = {1: 3, 3: 46}
JUMP_OPS = {1: 6, 3: 26}
#: Lanes the exact search's refinement tries per batch, measured on the default sweep (d = 10⁴, B = 1…1024):
#: 55.5 (heavy-ball) and 68.6 (ema) with lr and β refined and β bracketed towards 1 (`search.bracket`; 28.7 and
#: 35.1 when β stopped at 0.999), 7.0 (sgd) and 7.7 (precond:0.5) with the lr alone; counted with room.
REFINE_LANES = {2: 80, 1: 8, 0: 0}
#: The simulator's lanes per block (`otod.core.engine.BLOCK_LANES`; not imported: it imports JAX).
BLOCK_LANES = 128


def parse_batches(text) -> tuple[float, ...]:
    return BATCH.check(whole_values(text, "--batch", "batch sizes B"))


def parse_dims(text, axis=DIM) -> tuple[float, ...]:
    return axis.check(whole_values(text, "--dim", "dimensions d"))


def problem_floats(problem: str, dim: float, examples: float = 1024) -> tuple[float, float, float]:
    """(host floats of the set-up, floats per seed, floats per lane) of a problem at dimension d, from the
    families' declared sizes (`otod.noise.problems`), without building anything: the set-up is the NQM's or the
    isotropic quadratic's h, c, s₀ (3d), or a regression's draw and least-squares fit (about 3·n·d)."""
    n = float(examples)
    if problem in ("nqm", "isotropic"):
        return 3 * dim, dim, 8 * dim
    if problem == "regression":
        return 3 * n * dim, n * dim + 2 * n + 2 * dim, 8 * dim + 4 * n
    return 0.0, 1.0, 16.0


def exact_cost(dim: float, batches: int, rates: int, cap: int, components: int, betas: int = 1,
               refined: int = 0) -> tuple[float, float]:
    """(bytes, float operations) of one method's exact search (`otod.noise.search.exact_search`): the grid of
    ``rates`` × ``betas`` settings at every batch (each setting's powers once, its jumps once per batch), then the
    refinement's lanes, `REFINE_LANES`[``refined`` axes] per batch, each with its own powers and jumps. The bytes
    are one block's (`otod.noise.theory`: at most `theory.POWER_FLOATS` of stored powers, or one lane's, and its
    states, candidates and temporaries, about 3k + 6 arrays of [block, batches, d]) and the quadratic's h, c, s₀."""
    from otod.noise import theory

    levels, k = max(1, int(cap).bit_length()), components
    lane_powers = dim * levels * (k * k + k)
    memory = 0.0
    for state in (batches * dim, dim):
        block = max(1, min(theory.BLOCK_FLOATS // max(1.0, state), theory.POWER_FLOATS // max(1.0, lane_powers)))
        memory = max(memory, block * (lane_powers + state * (3 * k + 6)))
    operations = dim * levels * (rates * betas * (POWER_OPS[k] + batches * JUMP_OPS[k])
                                 + REFINE_LANES[refined] * batches * (POWER_OPS[k] + JUMP_OPS[k]))
    return 8.0 * (memory + 3 * dim), float(operations)


def exact_plan(method: str, rates: int, beta_count: int, lr_lattice: bool, beta_lattice: bool) -> dict:
    """The keywords of `exact_cost` for one method: the grid the exact search starts from (every
    `search.EXACT_STRIDE`-th point of a default grid, all of a given one) and how many axes it refines."""
    uses_beta = method in USES_BETA
    stride = search.EXACT_STRIDE
    return {"rates": -(-rates // stride) if lr_lattice else rates,
            "betas": (-(-beta_count // stride) if beta_lattice else beta_count) if uses_beta else 1,
            "refined": int(lr_lattice) + int(uses_beta and beta_lattice), "components": components(method)}


def check_problem_options(problem: str, *, noise_spectrum=None, noise=None, examples=None) -> None:
    """Refuse an option the chosen problem would ignore: --noise-spectrum belongs to nqm, --noise to isotropic and
    rosenbrock (nqm's noise is its spectrum), --examples to regression."""
    if noise_spectrum is not None and problem != "nqm":
        raise OtodError(f"--noise-spectrum {noise_spectrum}: only the nqm problem has a noise spectrum (the "
                        f"{problem} problem ignores it); drop it or use --problem nqm")
    if noise is not None and problem not in ("isotropic", "rosenbrock"):
        raise OtodError(f"--noise {noise}: the {problem} problem ignores it (only isotropic and rosenbrock take a "
                        "noise scale; nqm's noise is --noise-spectrum); drop it or use --problem isotropic")
    if examples is not None and problem != "regression":
        raise OtodError(f"--examples {examples}: only the regression problem has a data set (the {problem} problem "
                        "ignores it); drop it or use --problem regression")


def problem_spec(problem: str, dim: int, *, noise_spectrum=None, noise=None, examples=None, kappa=10.0,
                 label_noise=0.5):
    if problem == "nqm":
        return NQMSpec(dim=dim, noise="hessian" if noise_spectrum is None else noise_spectrum)
    if problem == "isotropic":
        return IsotropicSpec(dim=dim, sigma=finite_float(1.0 if noise is None else noise, "--noise", "1"))
    if problem == "regression":
        return RegressionSpec(examples=positive_int(1024 if examples is None else examples, "--examples", "1024"),
                              dim=dim,
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
    return representable_lr(value, lr)


def parse_lr_grid(lr, lr_grid) -> tuple[float, ...]:
    """The multipliers --lr tuned tries; a --lr-grid beside any other --lr would be ignored, so it is refused."""
    if lr_grid is None:
        return DEFAULT_LR_GRID
    if lr != "tuned":
        raise OtodError(f"--lr-grid {lr_grid}: only --lr tuned tries a grid (--lr {lr} ignores it); drop --lr-grid "
                        "or use --lr tuned")
    return tuple(parse_range(lr_grid, "--lr-grid", what="lr multipliers"))


def refuse_on_exact(mode: str, *, seeds=None, seed=None, x64=None, chunk_seconds=None) -> None:
    """The exact path computes the expectation in float64 NumPy in one go: no sampling (so no --seeds or
    --seed), no precision choice (--x64/--x32) and no chunks (--chunk-seconds). Given there, each would be
    silently ignored, so it is refused, naming --mode exact as the reason."""
    given = [(name, value) for name, value in (("--seeds", seeds), ("--seed", seed), ("--chunk-seconds",
                                                                                      chunk_seconds))
             if value is not None]
    if x64 is not None:
        given.append(("--x64" if x64 else "--x32", ""))
    if mode == "exact" and given:
        name, value = given[0]
        raise OtodError(f"{name} {value}".rstrip() + ": the exact path (--mode exact) computes the expected loss "
                        "in float64 without sampling or chunks, so it ignores this option; drop it or use --mode "
                        "simulate")


USES_BETA = ("heavy-ball", "ema")


def parse_betas(beta, methods) -> tuple[float, ...]:
    """The β axis (heavy-ball's momentum, ema's decay): `DEFAULT_BETAS` (tuned; refined on the exact path) where
    no listed method uses β only β = 0, else --beta as given. A --beta given where no listed method uses β would
    only repeat every lane, so it is refused."""
    if not any(m in USES_BETA for m in methods):
        if beta is not None:
            raise OtodError(f"--beta {beta}: only heavy-ball and ema use β, and --method {','.join(methods)} has "
                            "neither; drop --beta or add one, e.g. --method sgd,heavy-ball")
        return (0.0,)
    return DEFAULT_BETAS if beta is None else BETA.parse(beta)


def components(method: str) -> int:
    """Size of a method's second-moment recursion: 1 for (preconditioned) SGD, 3 for heavy-ball and ema."""
    return 1 if method == "sgd" or method.startswith("precond") else 3


def check_resources(*, mode: str, problem: str, dims, batch_count: int, methods, beta_count: int, rates: int,
                    cap: int, seeds: int, x64, examples=None, sweeps: int = 1, yes: bool = False,
                    sweep: str = "noise", available: int | None = None, lr_lattice: bool = False,
                    beta_lattice: bool = False) -> None:
    """Estimate from the options alone, before any array exists, the memory of the largest step and (exact path)
    the time of the whole run; refuse with one line what will not fit in the free host memory, or would take
    over an hour without --yes. The simulator's time (and its device memory) is estimated again by the core's
    `check_estimate` once the config is built, with the same --yes."""
    d = max(float(v) for v in dims)
    what = f"--dim {d:g}: the {'exact' if mode == 'exact' else 'simulated'} {sweep} sweep"
    if mode == "exact":
        hint = "use a smaller --dim, fewer --batch or --beta values or a shorter --lr-grid"
        plans = {m: exact_plan(m, rates, beta_count, lr_lattice, beta_lattice) for m in methods}
        need = max(exact_cost(d, batch_count, cap=cap, **plans[m])[0] for m in methods)
        refuse_memory(need, what, hint, available)
        operations = sweeps * sum(exact_cost(float(v), batch_count, cap=cap, **plans[m])[1]
                                  for v in dims for m in methods)
        refuse_time(operations * EXACT_SECONDS_PER_FLOAT, yes, f"{what}, about {operations:.3g} operations,", hint)
        return
    n = 1024 if examples is None else examples
    setup, per_seed, per_lane = problem_floats(problem, d, n)
    itemsize = 8 if x64 else 4
    need = 8.0 * (setup + seeds * per_seed) + itemsize * 2 * max(BLOCK_LANES, seeds * rates) * per_lane
    sizes = f"--dim {d:g} --seeds {seeds}" + (f" --examples {n:g}" if problem == "regression" else "")
    hint = "use a smaller --dim, fewer --seeds" + (", a shorter --lr-grid or fewer --examples"
                                                   if problem == "regression" else " or a shorter --lr-grid")
    refuse_memory(need, f"{sizes}: the simulated {sweep} sweep", hint, available)


def _common(methods, target, max_iters, seeds, seed, lr, grid, schedule, x64, chunk_seconds, mode, axes,
            sweep, spec) -> SweepConfig:
    lr_unit = "limit" if tuple(grid) == DEFAULT_LR_GRID else "reference"
    tol = finite_float(target, "--target", "0.01")
    if not (tol > 0 and math.isfinite(tol)):
        raise OtodError(f"--target {target}: a target loss must be a positive number, e.g. --target 0.01")
    NoiseOptions(schedule=schedule)  # an unknown schedule is refused before anything else is built
    provisional = SweepConfig(sweep=sweep, axes=tuple(axes), problem=spec, methods=methods,
                              target=Target(tol, kind="absolute"),
                              max_iters=(EXACT_MAX_ITERS if mode == "exact" else None) if max_iters is None
                              else positive_int(max_iters, "--max-iters", "100000"),
                              seeds=1 if mode == "exact" else positive_int(seeds, "--seeds", "8"),
                              seed=seed_value(seed), lr=_lr(lr), lr_grid=tuple(grid),
                              x64=x64, options=NoiseOptions(schedule=schedule, lr_unit=lr_unit),
                              chunk_seconds=finite_float(chunk_seconds, "--chunk-seconds", "5"))
    import dataclasses

    # the schedule's horizon is the run's cap: a cosine reaches 0 where the run would be censored
    return dataclasses.replace(provisional, options=NoiseOptions(schedule, provisional.resolved_max_iters, lr_unit))


def parse_common(method, mode, schedule, lr, lr_grid, max_iters, seeds, seed, x64, chunk_seconds):
    """The options both noise sweeps share, checked in the order a user reads them, before any problem is built:
    (methods, lr, grid, cap or None, seeds, seed, chunk seconds) with the simulator's defaults applied."""
    refuse_on_exact(mode, seeds=seeds, seed=seed, x64=x64, chunk_seconds=chunk_seconds)
    methods = parse_methods(method)
    for name in methods:
        METHODS[name] if name.startswith("precond") else None  # checks p ∈ [0, 1]
    if mode == "exact":
        if schedule != "constant":
            raise OtodError(f"--schedule {schedule}: the exact path has constant steps only; use --mode simulate "
                            "for schedules")
        if "adam" in methods:
            raise OtodError("--method adam: no exact recursion for adam; use --mode simulate")
    lr_value = _lr(lr)
    grid = parse_lr_grid(lr_value, lr_grid)
    cap = None if max_iters is None else positive_int(max_iters, "--max-iters", "100000")
    return (methods, lr_value, grid, cap, DEFAULT_SEEDS if seeds is None else positive_int(seeds, "--seeds", "8"),
            DEFAULT_SEED if seed is None else seed_value(seed), 5.0 if chunk_seconds is None else chunk_seconds)


def default_methods(problem: str) -> str:
    """The default comparison: preconditioning only where the problem offers its curvature (the quadratics)."""
    return "sgd,heavy-ball,precond:0.5,ema" if problem in ("nqm", "isotropic") else "sgd,heavy-ball,ema"


def _rates(lr, grid) -> int:
    return len(grid) if lr == "tuned" else 1


def _lattices(lr, grid, betas) -> dict:
    """Which axes the exact search refines: the default lr grid under --lr tuned, the default β list."""
    return {"lr_lattice": lr == "tuned" and tuple(grid) == DEFAULT_LR_GRID, "beta_lattice": betas == DEFAULT_BETAS}


def noise_config(*, batch="1..1024:11:log", method=None, mode=None, problem="nqm",
                 dim=None, target="0.01", beta=None, schedule="constant", noise_spectrum=None, noise=None,
                 examples=None, kappa=10.0, label_noise=0.5, max_iters=None, seeds=None, seed=None, lr="tuned",
                 lr_grid=None, x64=None, chunk_seconds=None, yes=False) -> tuple[SweepConfig, str]:
    """(config, mode) of ``otod sweep noise``: steps to target vs batch size. Options the chosen problem or path
    would ignore are refused (`check_problem_options`, `refuse_on_exact`), and the plan's memory (and the exact
    path's time) is estimated before anything is built (`check_resources`)."""
    mode = parse_mode(mode, problem)
    check_problem_options(problem, noise_spectrum=noise_spectrum, noise=noise, examples=examples)
    examples = None if examples is None else positive_int(examples, "--examples", "1024")
    if problem == "rosenbrock" and dim is not None:
        raise OtodError(f"--dim {dim}: the Rosenbrock function is 2-dimensional; drop --dim")
    methods, lr_value, grid, cap, seeds, seed, chunk_seconds = parse_common(
        method or default_methods(problem), mode, schedule, lr, lr_grid, max_iters, seeds, seed, x64, chunk_seconds)
    default_dim = {"nqm": 10_000 if mode == "exact" else 100, "isotropic": 100, "regression": 16,
                   "rosenbrock": 2}[problem]
    dims = parse_dims(default_dim if dim is None else dim)
    batches, betas = parse_batches(batch), parse_betas(beta, methods)
    check_resources(mode=mode, problem=problem, dims=dims, batch_count=len(batches), methods=methods,
                    beta_count=len(betas), rates=_rates(lr_value, grid), cap=cap or EXACT_MAX_ITERS, seeds=seeds,
                    x64=x64, examples=examples, yes=yes, **_lattices(lr_value, grid, betas))
    spec = problem_spec(problem, int(dims[0]), noise_spectrum=noise_spectrum, noise=noise, examples=examples,
                        kappa=kappa, label_noise=label_noise)
    axes = [("batch", batches), ("beta", betas)]
    if problem != "rosenbrock":
        axes.append(("dim", dims))
    return _common(methods, target, cap, seeds, seed, lr_value, grid, schedule, x64, chunk_seconds, mode, axes,
                   "noise", spec), mode


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
                   problem="isotropic", target="0.05", beta=None, noise=None, noise_spectrum=None,
                   max_iters=None, seeds=None, seed=None, lr="tuned", lr_grid=None, x64=None,
                   chunk_seconds=None, yes=False) -> tuple[list[tuple[str, SweepConfig]], str]:
    """([(rule label, config)], mode) of ``otod sweep params``: one sweep per batch rule, d static. The same
    refusals and estimates as `noise_config`."""
    mode = parse_mode(mode or ("exact" if problem in ("nqm",) else "simulate"), problem)
    if problem in ("rosenbrock",):
        raise OtodError("--problem rosenbrock: a params sweep needs a problem with a dimension")
    check_problem_options(problem, noise_spectrum=noise_spectrum, noise=noise)
    methods, lr_value, grid, cap, seeds, seed, chunk_seconds = parse_common(
        method, mode, "constant", lr, lr_grid, max_iters, seeds, seed, x64, chunk_seconds)
    dims = parse_dims(dim, PARAMS_DIM)
    rules, betas = parse_rules(batch_rule), parse_betas(beta, methods)
    check_resources(mode=mode, problem=problem, dims=dims, batch_count=1, methods=methods, beta_count=len(betas),
                    rates=_rates(lr_value, grid), cap=cap or EXACT_MAX_ITERS, seeds=seeds, x64=x64,
                    sweeps=len(rules), yes=yes, sweep="params", **_lattices(lr_value, grid, betas))
    spec = problem_spec(problem, int(dims[0]), noise_spectrum=noise_spectrum, noise=noise)
    out = []
    for name, value in rules:
        rule_axis = ("batch", (float(value),)) if name == "fixed" else ("batch_ratio", BATCH_RATIO.check([value]))
        axes = [("dim", dims), rule_axis, ("beta", betas)]
        out.append((f"{name}:{value:g}", _common(methods, target, cap, seeds, seed, lr_value, grid, "constant",
                                                 x64, chunk_seconds, mode, axes, "params", spec)))
    return out, mode
