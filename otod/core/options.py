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
    return value


def positive_int(value, option: str, example: str, minimum: int = 1) -> int:
    """A whole number ≥ ``minimum`` (``1e4`` is accepted: it is whole)."""
    try:
        as_float = float(value)
        number = int(as_float)
    except (TypeError, ValueError, OverflowError):
        raise OtodError(f"{option} {value}: need an integer ≥ {minimum}, e.g. {option} {example}") from None
    if number != as_float or number < minimum:
        raise OtodError(f"{option} {value}: need an integer ≥ {minimum}, e.g. {option} {example}")
    return number


def finite_float(value, option: str, example: str) -> float:
    """A finite real number."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise OtodError(f"{option} {value}: not a number, e.g. {option} {example}") from None
    if not math.isfinite(number):
        raise OtodError(f"{option} {value}: not a finite number, e.g. {option} {example}")
    return number
