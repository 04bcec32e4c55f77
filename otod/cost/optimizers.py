"""The optimizers whose one-iteration cost otod measures, in one table: the optax factory, the Epoch analysis's
update FLOPs per parameter (appendix B: SGD w += a·dw is 2; SGD with momentum m = μm + g, w −= lr·m is 4;
Adam ~3+4+3+3+5 = 18), and the per-parameter state arrays the optimizer keeps (for memory estimates)."""

from __future__ import annotations

from typing import Callable, NamedTuple

import optax

from otod.core.api import OtodError


class Optimizer(NamedTuple):
    make: Callable[[float], optax.GradientTransformation]
    update_flops_per_param: float
    state_slots: int


OPTIMIZERS: dict[str, Optimizer] = {
    "sgd": Optimizer(lambda lr: optax.sgd(lr), 2.0, 0),
    "momentum": Optimizer(lambda lr: optax.sgd(lr, momentum=0.9), 4.0, 1),
    "adam": Optimizer(lambda lr: optax.adam(lr), 18.0, 2),
}


def optimizer(name: str) -> Optimizer:
    """The table entry of an optimizer by name (case-insensitive); an unknown one raises `OtodError`."""
    key = str(name).strip().lower()
    if key not in OPTIMIZERS:
        raise OtodError(f"--optimizer {name}: unknown optimizer; known: {', '.join(OPTIMIZERS)}, "
                        "e.g. --optimizer sgd")
    return OPTIMIZERS[key]


def make_optimizer(name: str, learning_rate: float = 1e-2) -> optax.GradientTransformation:
    """optax optimizer by name: ``sgd`` (w −= lr·g), ``momentum`` (SGD, momentum 0.9), ``adam``."""
    return optimizer(name).make(learning_rate)
