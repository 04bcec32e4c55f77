"""The stochastic methods every minibatch sweep shares (the gradient-noise obstacle's quadratics and the nets),
as optax transformations, the learning-rate schedules, and the β axis they tune.

SGD, heavy-ball, preconditioned SGD (update scaled by H^{−p}, p ∈ [0, 1]; p = 1 is KFAC-exact on the diagonal
NQM) and the EMA of SGD's iterates are one transformation shape: −η·h^{−p}⊙m with m = g + β·m (the core's
`momentum` with per-lane β), so they share one compiled program and differ only in the arrays (β, p, γ). β and the
EMA decay γ come from the sweep's traced ``beta`` axis (through the family's ``info``), so a sweep tunes them
inside one program. Adam is optax's own.

The EMA is applied by `otod.noise.dynamics` to the iterates (θ̃ ← γθ̃ + (1 − γ)θ, the loss read on θ̃), so its
transformation is plain SGD; `ema_decay` tells the dynamics each lane's γ (0: no averaging).
"""

from __future__ import annotations

import functools

from collections.abc import Mapping
from dataclasses import dataclass

from otod.core.axes import Axis
from otod.core.errors import OtodError
from otod.core.lazy import lazy
from otod.core.methods import Method, momentum

jax = lazy("jax")
jnp = lazy("jax.numpy")
optax = lazy("optax")

SCHEDULES = ("constant", "step", "cosine", "one-cycle")


LR_UNITS = ("reference", "limit")


@dataclass(frozen=True)
class NoiseOptions:
    """Static method options: the learning-rate schedule and its horizon (steps; tied to the run's cap), and what
    the lr grid's values are: multipliers of each method's reference step (``reference``: a --lr-grid) or
    fractions of its stability limit (``limit``: the default grid, `otod.noise.search`), so that each method,
    and heavy-ball at each β (limit 2(1 + β)), is tried up to its own limit."""

    schedule: str = "constant"
    horizon: int = 10_000
    lr_unit: str = "reference"

    def __post_init__(self):
        if self.schedule not in SCHEDULES:
            raise OtodError(f"--schedule {self.schedule}: unknown schedule; choose from {', '.join(SCHEDULES)}, "
                            "e.g. --schedule cosine")
        if self.lr_unit not in LR_UNITS:
            raise OtodError(f"lr unit {self.lr_unit}: choose from {', '.join(LR_UNITS)}")


def schedule_factor(name: str, horizon: int):
    """The multiplier of the step at iteration t, from optax's schedules with peak 1: constant; step (×0.1 at
    half and again at three quarters of the horizon); cosine (decay to 0 at the horizon); one-cycle (linear
    warm-up over the first 10%, then cosine to 0: optax's warmup_cosine_decay_schedule)."""
    if name == "constant":
        return optax.constant_schedule(1.0)
    if name == "step":
        return optax.piecewise_constant_schedule(1.0, {horizon // 2: 0.1, (3 * horizon) // 4: 0.1})
    if name == "cosine":
        return optax.cosine_decay_schedule(1.0, horizon)
    return optax.warmup_cosine_decay_schedule(0.0, 1.0, max(1, horizon // 10), horizon)


def _linear(lr, info, options, hyper):
    """−η·h^{−p}⊙m, m = g + β m: hyper = (β, p, γ); h^{−p} only where the family offers a curvature."""
    beta, power, _ = hyper

    def scale(g):
        return g * info["curvature"] ** (-power) if "curvature" in info else g

    return optax.chain(momentum(beta, 0.0), optax.stateless(lambda u, params: jax.tree.map(scale, u)),
                       optax.scale(-lr))


def ema_decay(hyper) -> object:
    """γ of a lane (0 for methods that do not average)."""
    return hyper[2] if len(hyper) == 3 else 0.0


def _zero(info):
    return jnp.zeros((), jnp.result_type(info["lipschitz"], float))


def _sgd_like(kind: str, power: float = 0.0) -> Method:
    def hyperparameters(info):
        zero = _zero(info)
        beta = info["beta"] * jnp.ones_like(zero)
        return ((beta if kind == "heavy-ball" else zero), zero + power, (beta if kind == "ema" else zero))

    def reference(info):
        if power:
            return 1.0 / jnp.max(info["curvature"] ** (1.0 - power))
        return 1.0 / info["lipschitz"]

    needs = frozenset({"lipschitz", "beta"} | ({"curvature"} if power else set()))
    what = {"sgd": "1/L", "heavy-ball": "1/L, β from --beta", "ema": "1/L, EMA decay γ from --beta",
            "precond": f"1/max h^{1 - power:g}"}[kind]
    return Method(reference_lr=reference, build=_linear, reference=what, needs=needs, program="linear",
                  hyperparameters=hyperparameters)


ADAM = Method(reference_lr=lambda info: 1e-2, build=lambda lr, info, options, hyper=None: optax.adam(lr),
              reference="1e-2 (tuned)", needs=frozenset({"lipschitz"}), tuned_by_default=True)


def parse_power(name: str) -> float:
    """p of ``precond:p``; outside [0, 1] (or not a number) raises `OtodError`."""
    text = name.split(":", 1)[1] if ":" in name else "1"
    try:
        p = float(text)
    except ValueError:
        raise OtodError(f"--method {name}: write precond:P with a number P in [0, 1], e.g. precond:0.5") from None
    if not 0.0 <= p <= 1.0:
        raise OtodError(f"--method {name}: the preconditioner power p must lie in [0, 1] (got {p:g}), "
                        "e.g. precond:0.5")
    return p


@functools.lru_cache(maxsize=None)
def _precond(power: float) -> Method:
    """precond:p's `Method`, one object per p. The engine's compiled programs are keyed by their methods (static
    arguments, compared by their closures), so a Method built anew per lookup traced and compiled the program anew
    for every chunk: 46 compiles of 3.6 s where 2 do, on the noise figure's four-method sweep."""
    return _sgd_like("precond", power)


class MethodTable(Mapping):
    """sgd, heavy-ball, ema, adam, and precond:p for any p ∈ [0, 1] (``precond`` alone is p = 1)."""

    _fixed = {"sgd": _sgd_like("sgd"), "heavy-ball": _sgd_like("heavy-ball"), "ema": _sgd_like("ema"),
              "adam": ADAM}

    def __getitem__(self, name: str) -> Method:
        if name in self._fixed:
            return self._fixed[name]
        if name == "precond" or name.startswith("precond:"):
            return _precond(parse_power(name))
        raise KeyError(name)

    def __iter__(self):
        return iter(("sgd", "heavy-ball", "precond:0.5", "ema", "adam"))

    def __len__(self) -> int:
        return 5


METHODS = MethodTable()


def power_of(name: str) -> float:
    return parse_power(name) if name.startswith("precond") else 0.0


def theory_name(name: str) -> str:
    """The name `otod.noise.theory` uses for a method (precond:p → precond)."""
    return "precond" if name.startswith("precond") else name


#: β ∈ [0, 1), the stable range of heavy-ball's momentum and of an EMA's decay: at β = 1 the momentum or average
#: never forgets its start. A traced axis, tuned with the lr.
BETA = Axis("beta", "β", "momentum β (heavy-ball) or EMA decay γ (ema)", "--beta", traced=True, minimum=0.0,
            maximum=1.0, open_maximum=True, what="β values", example="0,0.5,0.9",
            why_maximum=": at β = 1 the momentum or average never forgets its start")


def ignores(method: str) -> tuple[str, ...]:
    """SGD, precond:p and adam do not read β: they run at the β axis's first value only."""
    return () if method in ("heavy-ball", "ema") else ("beta",)
