"""Option values every obstacle's commands and experiment specs parse the same way: method lists, learning rates,
whole and real numbers. Each bad value raises `OtodError` naming the option and an example, so a command ends in
one line and exit code 2."""

from __future__ import annotations

import math

from otod.core.errors import OtodError


def parse_methods(text: str | list[str]) -> tuple[str, ...]:
    """A comma list (or list) of method names, duplicates dropped, order kept."""
    names = text if isinstance(text, list) else [m.strip() for m in str(text).split(",")]
    if not names or any(not n for n in names):
        raise OtodError(f"--method {text}: give a comma list of methods, e.g. --method gd,heavy-ball")
    return tuple(dict.fromkeys(names))


def parse_lr(text: str | float) -> str | float:
    """``theory``, ``tuned`` or a positive finite step."""
    if isinstance(text, str) and text in ("theory", "tuned"):
        return text
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise OtodError(f"--lr {text}: use theory, tuned or a positive number, e.g. --lr 0.01") from None
    if not (value > 0 and math.isfinite(value)):
        raise OtodError(f"--lr {text}: a learning rate must be a positive number, e.g. --lr 0.01")
    return representable_lr(value, text)


#: The largest learning rate a sweep takes: float32's largest finite number. Above it the step is +∞ in float32
#: (``--lr 1e300`` ran with every lane diverged at iteration 1 and the record's learning rate null).
MAX_LR = 3.4028234663852886e38


def representable_lr(value: float, text=None, example: str = "0.01") -> float:
    """``value`` where it is at most `MAX_LR`, else `OtodError` naming ``--lr`` as typed (``text``)."""
    if value > MAX_LR:
        raise OtodError(f"--lr {value if text is None else text}: above float32's largest number {MAX_LR:.3g}, "
                        f"where every step is infinite; use a finite step, e.g. --lr {example}")
    return value


def positive_int(value, option: str, example: str, minimum: int = 1, maximum: int | None = None) -> int:
    """A whole number in [minimum, maximum] as typed (``1e4`` is accepted: it is whole); anything else is one
    line naming the option and an example."""
    try:
        as_float = float(value)
        number = int(as_float)
    except (TypeError, ValueError, OverflowError):
        number, as_float = minimum - 1, math.nan
    if number != as_float or number < minimum or (maximum is not None and number > maximum):
        bound = f"from {minimum} to {maximum}" if maximum is not None else f"≥ {minimum}"
        raise OtodError(f"{option} {value}: need an integer {bound}, e.g. {option} {example}")
    return number


def positive_float(value, option: str, example: str, what: str = "a positive number") -> float:
    """A positive, finite number."""
    number = finite_float(value, option, example)
    if number <= 0:
        raise OtodError(f"{option} {value}: need {what}, e.g. {option} {example}")
    return number


def positive_seconds(value, option: str, example: str) -> float:
    """A positive, finite number of seconds."""
    return positive_float(value, option, example, "a positive number of seconds")


def finite_float(value, option: str, example: str) -> float:
    """A finite real number."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise OtodError(f"{option} {value}: not a number, e.g. {option} {example}") from None
    if not math.isfinite(number):
        raise OtodError(f"{option} {value}: not a finite number, e.g. {option} {example}")
    return number


#: The largest base seed: numpy's ``default_rng`` takes any seed ≥ 0, but the engine passes it to
#: ``jax.random.PRNGKey`` as an int32 (``np.int32(seed)``), so seeds above 2³¹ − 1 would overflow there.
SEED_MAX = 2**31 - 1
#: The smallest normal float64 and float32: a tolerance below it is a subnormal number, which no relative loss of
#: that precision resolves (and 1/tol overflows in the theory's counts).
TINY = {True: 2.2250738585072014e-308, False: 1.1754943508222875e-38}
#: How far below --tol a ladder rung may go. Every lane runs until the lowest rung, so a rung sets the cost of the
#: whole sweep: measured on ``sweep condition --k 1..10:3 --seeds 2``, ``--ladder 1e-300`` ran 17,420
#: lane-iterations where the 244 needed for --tol 1e-6 sufficed (71×). Six decades below --tol covers the
#: documented use (``--ladder 1e-8,1e-10`` at the default 1e-6); deeper, lower --tol itself.
LADDER_DECADES = 6


def seed_value(value, option: str = "--seed", example: str = "1") -> int:
    """A base seed from 0 to `SEED_MAX`, the range both numpy's and JAX's generators accept."""
    try:
        as_float = float(value)
        number = int(as_float)
    except (TypeError, ValueError, OverflowError):
        number, as_float = -1, 0.5
    if number != as_float or not 0 <= number <= SEED_MAX:
        raise OtodError(f"{option} {value}: need an integer from 0 to {SEED_MAX} (2^31 − 1, what JAX's PRNGKey "
                        f"takes), e.g. {option} {example}")
    return number


def tolerance(value, option: str, example: str, x64: bool) -> float:
    """A tolerance 0 < tol < 1 no smaller than the smallest normal number of the precision (``x64``: float64,
    else float32); smaller ones are subnormal, where the relative loss has no precision left."""
    number = finite_float(value, option, example)
    if not 0.0 < number < 1.0:
        raise OtodError(f"{option} {value}: a tolerance must lie strictly between 0 and 1, e.g. {option} {example}")
    if number < TINY[x64]:
        name = "float64" if x64 else "float32"
        raise OtodError(f"{option} {value}: below {name}'s smallest normal number {TINY[x64]:.3g}, which no run can "
                        f"resolve; e.g. {option} {example}")
    return number


def ladder_rungs(rungs, tol: float, x64: bool, option: str = "--ladder") -> tuple[float, ...]:
    """Ladder rungs (parsed values), each a reachable tolerance (`tolerance`) at most `LADDER_DECADES` decades
    below ``tol``: the lanes run to the lowest rung, so a deeper one multiplies the sweep's cost."""
    text = ",".join(f"{r:g}" for r in rungs)
    for rung in rungs:
        tolerance(rung, option, "1e-8,1e-10", x64)
        if rung < tol * 10.0 ** -LADDER_DECADES:
            raise OtodError(f"{option} {text}: {rung:g} is more than 10^{LADDER_DECADES} below --tol {tol:g}, and "
                            "every lane would run until it; lower --tol instead, or keep rungs ≥ "
                            f"{tol * 10.0 ** -LADDER_DECADES:g}, e.g. {option} {tol / 100:g}")
    return tuple(rungs)


def nonnegative_float(value, option: str, example: str) -> float:
    """A finite real number ≥ 0."""
    number = finite_float(value, option, example)
    if number < 0:
        raise OtodError(f"{option} {value}: must be ≥ 0, e.g. {option} {example}")
    return number


def precision(x64: bool, x32: bool) -> bool | None:
    """``--x64`` → True, ``--x32`` → False, neither → None (the kind's rule); both is a contradiction."""
    if x64 and x32:
        raise OtodError("--x64 --x32: give one precision, not both, e.g. --x64")
    return True if x64 else False if x32 else None


def refuse_ignored(given, option: str, reason: str) -> None:
    """Refuse an option the user gave (``option`` in ``given``, its parameter name) that the rest of the command
    line makes meaningless; ``reason`` names the option that does and what to do."""
    if option in given:
        raise OtodError(f"--{option.replace('_', '-')}: {reason}")


def check_cap(config) -> None:
    """Refuse a check interval that reaches the iteration cap: no lane would be checked before the cap, so every
    lane would come back censored (or 'converged at the cap'). An interval of 1 is always accepted (``--max-iters
    1`` then checks the one iteration)."""
    cap, every = config.resolved_max_iters, config.target.check_every
    if every > 1 and every >= cap:
        raise OtodError(f"--check-every {every}: not below the iteration cap {cap} (--max-iters, or the automatic "
                        f"cap), so no lane is checked before it; e.g. --check-every {max(1, cap // 100)}")


def check_lr_grid(given, config) -> None:
    """Refuse --lr-grid where no method's rate is tuned (a number or theory for methods with a reference step)."""
    if "lr_grid" in given and not any(config.tuned(m) for m in config.methods):
        raise OtodError(f"--lr-grid: only --lr tuned tries multipliers, and --lr {config.lr} tunes none of "
                        f"{','.join(config.methods)}; drop --lr-grid or use --lr tuned, e.g. --lr tuned "
                        "--lr-grid 0.5..2:5:log")


def whole_values(text, option: str, what: str) -> tuple[float, ...]:
    """A range of whole quantities (B, d): log ranges (``1..1024:11:log``) are rounded, as documented; any other
    form must give whole numbers (``--batch 1.5`` is refused, not silently rounded to 2)."""
    from otod.core.ranges import parse_range

    values = parse_range(str(text), option, what=what)
    if not str(text).strip().endswith(":log"):
        odd = [v for v in values if math.isfinite(v) and v != round(v)]
        if odd:
            raise OtodError(f"{option} {text}: {what} are whole numbers ({odd[0]:g} is not); give integers or a log "
                            f"range (rounded), e.g. {option} 1,2,4 or {option} 1..1024:11:log")
    return round_integers(values)


def round_integers(values) -> tuple[float, ...]:
    """Log-spaced ranges of whole quantities (B, d) rounded to whole numbers, duplicates dropped."""
    return tuple(sorted({float(round(v)) if math.isfinite(v) else v for v in values}))
