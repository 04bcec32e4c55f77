"""The problems of the gradient-noise obstacle, as families of pure functions (`otod.core.family`).

Each is stochastic: ``gradient(problem, params, step)`` samples a minibatch gradient, where ``step`` is a
`Step` (the lane's per-step key and the iteration t, which `otod.noise.dynamics` supplies: sampling without
replacement needs to know where in its epoch a step falls). The batch size B is a traced axis the family puts
into its problem in ``make``, so one compiled program serves every B; ``batch_ratio`` (B = ratio·d, at least 1)
does the same for the batch-vs-parameters rule. ``beta`` (momentum β or EMA decay γ) is a traced axis too: the
family passes it to the methods through ``info``. Stopping reads the exact loss (never a noisy estimate).

* `NQMSpec`: the noisy quadratic model of Zhang et al. 2019: hᵢ = 1/i, per-example noise covariance C = H (or
  I, or H²), minibatch noise C/B, θ₀ ~ N(0, I);
* `IsotropicSpec`: ½‖x − x*‖² in d dimensions with ‖x₀ − x*‖ fixed and per-example noise σ² per coordinate;
* `RegressionSpec`: least squares on n synthetic examples, minibatches drawn without replacement per epoch;
* `RosenbrockSpec`: (a − x)² + b(y − x²)² with optional additive gradient noise σ/√B per coordinate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from otod.core.api import Family, OtodError, cond_any, lazy
from otod.noise import theory
from otod.core.api import Order, Step  # noqa: F401  (Step re-exported: the families' gradient argument)

jax = lazy("jax")
jnp = lazy("jax.numpy")

PROVIDES_QUADRATIC = frozenset({"curvature", "lipschitz", "beta"})


def _batch(point, dim: int):
    """The lane's batch size: the ``batch`` axis, or ``batch_ratio``·d rounded, at least 1."""
    if "batch" in point:
        return point["batch"]
    return jnp.maximum(1.0, jnp.round(point["batch_ratio"] * dim))


def _check_nonnegative(value: float, option: str, example: str) -> None:
    if not (value >= 0.0 and np.isfinite(value)):
        raise OtodError(f"{option} {value:g}: a noise scale must be ≥ 0, e.g. {option} {example}")


@dataclass(frozen=True)
class NQMSpec:
    """The noisy quadratic model in its eigenbasis: d directions, noise spectrum ``noise`` (hessian: C = H)."""

    dim: int = 10_000
    noise: str = "hessian"

    def __post_init__(self):
        if self.noise not in theory.NOISE_SPECTRA:
            raise OtodError(f"--noise-spectrum {self.noise}: choose from {', '.join(theory.NOISE_SPECTRA)}, "
                            "e.g. --noise-spectrum hessian")
        if int(self.dim) < 1:
            raise OtodError(f"--dim {self.dim}: need an integer ≥ 1, e.g. --dim 1000")

    @property
    def kind(self) -> str:
        return "nqm"

    def quadratic(self) -> theory.Quadratic:
        return theory.nqm(self.dim, self.noise)

    def family(self) -> Family:
        q = self.quadratic()
        h, c, d = q.h, q.c, self.dim

        def make(point, drawn):
            dtype = drawn["theta0"].dtype
            return {"h": jnp.asarray(h, dtype), "c": jnp.asarray(c, dtype), "batch": _batch(point, d),
                    "beta": point.get("beta", jnp.zeros((), dtype)), "theta0": drawn["theta0"]}

        return _quadratic_family(make, lambda rng: {"theta0": rng.standard_normal(d)}, d)


@dataclass(frozen=True)
class IsotropicSpec:
    """½‖x‖² in d dimensions from x₀ = r·u (u uniform on the sphere), per-example noise σ² per coordinate."""

    dim: int = 100
    sigma: float = 1.0
    distance: float = 1.0

    def __post_init__(self):
        _check_nonnegative(self.sigma, "--noise", "1")
        if not self.distance > 0:
            raise OtodError(f"--distance {self.distance:g}: must be positive, e.g. --distance 1")

    @property
    def kind(self) -> str:
        return "isotropic"

    def quadratic(self) -> theory.Quadratic:
        return theory.isotropic(self.dim, self.sigma, self.distance)

    def family(self) -> Family:
        d, sigma, r = self.dim, self.sigma, self.distance

        def draws(rng):
            u = rng.standard_normal(d)
            return {"theta0": r * u / np.linalg.norm(u)}

        def make(point, drawn):
            dtype = drawn["theta0"].dtype
            return {"h": jnp.ones(d, dtype), "c": jnp.full(d, sigma * sigma, dtype), "batch": _batch(point, d),
                    "beta": point.get("beta", jnp.zeros((), dtype)), "theta0": drawn["theta0"]}

        return _quadratic_family(make, draws, d)


def _quadratic_family(make, draws, d: int) -> Family:
    """A diagonal quadratic ½ Σ hᵢθᵢ² with gradient noise of variance cᵢ/B per direction."""

    def metric(p, theta):
        return 0.5 * jnp.sum(p["h"] * theta * theta)

    def gradient(p, theta, step):
        xi = jax.random.normal(step.key, theta.shape, theta.dtype)
        return p["h"] * theta + jnp.sqrt(p["c"] / p["batch"]) * xi

    def info(p, theta):
        return {"curvature": p["h"], "lipschitz": jnp.max(p["h"]), "beta": p["beta"]}

    return Family(draws=draws, make=make, init=lambda p: p["theta0"], metric=metric, gradient=gradient, info=info,
                  provides=PROVIDES_QUADRATIC, dynamics=_dynamics(), floats_per_seed=d, floats_per_lane=8 * d)


def _dynamics(order: Order | None = None):
    """`otod.noise.dynamics.noise_dynamics` with the family's `Order` (None: none), imported when the engine calls
    it (not when a config is checked)."""

    def build(*args):
        from otod.noise.dynamics import noise_dynamics

        return noise_dynamics(*args, order=order)

    return build


def epoch_position(t, batch, n: int):
    """(e, p): step t's epoch e = ⌊t/s⌋ of s = max(1, ⌊n/B⌋) steps and its position p = t − e·s in it, in t's
    (float) dtype."""
    per_epoch = jnp.maximum(1.0, jnp.floor(n / batch))
    epoch = jnp.floor(t / per_epoch)
    return epoch, t - epoch * per_epoch


def epoch_rank(key, epoch, n: int, dtype):
    """The rank epoch e gives each of n examples: a permutation of 0..n−1 drawn from fold_in(key, e), as dtype."""
    return jax.random.permutation(jax.random.fold_in(key, epoch.astype(jnp.int32)), n).astype(dtype)


def ranked_batch(rank, position, batch):
    """The mask of the examples whose rank lies in [pB, (p + 1)B): the minibatch at position p of the epoch."""
    return (rank >= position * batch) & (rank < (position + 1) * batch)


def epoch_batch(key, t, batch, n: int, dtype):
    """Which of n examples step t uses, sampling without replacement within each epoch of ⌊n/B⌋ steps: epoch
    e = ⌊t/steps⌋ ranks the examples by a permutation drawn from fold_in(key, e), and step t takes the ranks
    [pB, (p+1)B) of its position p in the epoch (the last n mod B examples sit the epoch out). A mask, not an index
    list, so B can be a traced value. Draws the permutation at every call; the sweep's dynamics hold it per epoch
    instead (`epoch_order`), with the same masks."""
    epoch, position = epoch_position(t, batch, n)
    return ranked_batch(epoch_rank(key, epoch, n, dtype), position, batch)


class HeldRank(NamedTuple):
    """The epoch whose ranks a lane holds (−1 before the first step) and those ranks (`epoch_rank`)."""

    epoch: object
    rank: object


def epoch_order(n: int) -> Order:
    """The regression family's `Order`: each lane holds (e, ranks of epoch e) and redraws them only when step t's
    epoch ⌊t/⌊n/B⌋⌋ differs from the held e, so step t reads `epoch_rank` of its own epoch, as `epoch_batch`
    would draw it. B is a traced per-lane value, so lanes of a block start their epochs at different steps; the
    redraw is a `otod.core.branch.cond_any`: the sort runs at the steps where some lane of the block starts an
    epoch (every ⌊n/B⌋ steps for its largest B, and at the other lanes' starts), for all lanes, not at every step
    as a select would run it."""

    def start(problem):
        dtype = problem["X"].dtype
        return HeldRank(jnp.full((), -1.0, dtype), jnp.zeros(n, dtype))

    def draw(key, epoch, held):
        return HeldRank(epoch, epoch_rank(key, epoch, n, held.rank.dtype))

    def refresh(problem, held, t):
        epoch, _ = epoch_position(t, problem["batch"], n)
        return cond_any(epoch != held.epoch, draw, lambda key, epoch, held: held, problem["key"], epoch, held)

    return Order(start, refresh)


@dataclass(frozen=True)
class RegressionSpec:
    """Least squares ½/n ‖Xw − y‖² on n examples with d features x ~ N(0, diag(λ)) (λ log-spaced from 1 down to
    1/``kappa``), w* ~ N(0, I/d), y = Xw* + ``label_noise``·ε. The metric is the excess loss
    ½/n ‖X(w − ŵ)‖² over the least-squares fit ŵ (exact: f − f*), from w₀ = 0."""

    examples: int = 1024
    dim: int = 16
    kappa: float = 10.0
    label_noise: float = 0.5

    def __post_init__(self):
        _check_nonnegative(self.label_noise, "--label-noise", "0.5")
        if int(self.examples) < 1 or int(self.dim) < 1 or not self.kappa >= 1:
            raise OtodError("--examples, --dim must be ≥ 1 and --kappa ≥ 1, e.g. --examples 1024 --dim 16")

    @property
    def kind(self) -> str:
        return "regression"

    def draw(self, rng: np.random.Generator) -> dict:
        n, d = self.examples, self.dim
        lam = np.geomspace(1.0, 1.0 / self.kappa, d)
        X = rng.standard_normal((n, d)) * np.sqrt(lam)
        w_star = rng.standard_normal(d) / np.sqrt(d)
        y = X @ w_star + self.label_noise * rng.standard_normal(n)
        w_hat = np.linalg.lstsq(X, y, rcond=None)[0]
        lipschitz = np.linalg.eigvalsh(X.T @ X / n)[-1]
        return {"X": X, "y": y, "w_hat": w_hat, "lipschitz": np.array(lipschitz),
                "shuffle": np.array(float(rng.integers(0, 2 ** 24)))}

    def initial_loss(self, rng: np.random.Generator) -> float:
        draw = self.draw(rng)
        r = draw["X"] @ draw["w_hat"]
        return float(0.5 * np.mean(r * r))

    def family(self) -> Family:
        n, d = self.examples, self.dim

        def make(point, drawn):
            dtype = drawn["X"].dtype
            return {**drawn, "batch": _batch(point, d), "beta": point.get("beta", jnp.zeros((), dtype)),
                    "key": jax.random.PRNGKey(drawn["shuffle"].astype(jnp.int32))}

        def metric(p, w):
            r = p["X"] @ (w - p["w_hat"])
            return 0.5 * jnp.mean(r * r)

        def gradient(p, w, step):
            if step.order is None:
                chosen = epoch_batch(p["key"], step.t, p["batch"], n, w.dtype)
            else:
                chosen = ranked_batch(step.order.rank, epoch_position(step.t, p["batch"], n)[1], p["batch"])
            residual = p["X"] @ w - p["y"]
            return p["X"].T @ jnp.where(chosen, residual, 0.0) / p["batch"]

        def info(p, w):
            return {"lipschitz": p["lipschitz"], "beta": p["beta"]}

        return Family(draws=self.draw, make=make, init=lambda p: jnp.zeros(d, p["X"].dtype), metric=metric,
                      gradient=gradient, info=info, provides=frozenset({"lipschitz", "beta"}),
                      dynamics=_dynamics(epoch_order(n)), floats_per_seed=n * d + 2 * n + 2 * d,
                      floats_per_lane=8 * d + 4 * n)


@dataclass(frozen=True)
class RosenbrockSpec:
    """(a − x)² + b(y − x²)² from (−1.2, 1), with additive gradient noise of scale σ/√B per coordinate."""

    noise: float = 0.0
    a: float = 1.0
    b: float = 100.0

    def __post_init__(self):
        _check_nonnegative(self.noise, "--noise", "0.1")

    @property
    def kind(self) -> str:
        return "rosenbrock"

    @property
    def dim(self) -> int:
        return 2

    def initial_loss(self) -> float:
        return float((self.a + 1.2) ** 2 + self.b * (1.0 - 1.44) ** 2)

    def family(self) -> Family:
        a, b, sigma = self.a, self.b, self.noise
        #: The largest Hessian eigenvalue at the minimum (a, a²): the reference step is its inverse.
        lipschitz = float(np.linalg.eigvalsh(np.array([[2 + 8 * b * a * a, -4 * b * a], [-4 * b * a, 2 * b]]))[-1])

        def make(point, drawn):
            dtype = drawn["unused"].dtype
            return {"batch": _batch(point, 2), "beta": point.get("beta", jnp.zeros((), dtype)),
                    "x0": jnp.asarray([-1.2, 1.0], dtype)}

        def metric(p, z):
            return (a - z[0]) ** 2 + b * (z[1] - z[0] ** 2) ** 2

        def gradient(p, z, step):
            g = jax.grad(metric, argnums=1)(p, z)
            return g + sigma / jnp.sqrt(p["batch"]) * jax.random.normal(step.key, z.shape, z.dtype)

        def info(p, z):
            return {"lipschitz": jnp.asarray(lipschitz, z.dtype), "beta": p["beta"]}

        return Family(draws=lambda rng: {"unused": np.zeros(1)}, make=make, init=lambda p: p["x0"], metric=metric,
                      gradient=gradient, info=info, provides=frozenset({"lipschitz", "beta"}),
                      dynamics=_dynamics(), floats_per_seed=1, floats_per_lane=16)


PROBLEMS = {"nqm": NQMSpec, "isotropic": IsotropicSpec, "regression": RegressionSpec, "rosenbrock": RosenbrockSpec}
