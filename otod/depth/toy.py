"""The toy of the serial-complexity essay: multiply k random 3×3 matrices and minimise the norm of the product by
tweaking two entries a, b. "Even for this purely linear neural network, the optimization problem becomes
nonlinear with more layers." The essay's formula is lost, so both readings are offered:

* ``per-layer``: a is entry (0, 0) of the first matrix M_1, b is entry (2, 2) of the last, M_k. At k = 1 both sit
  in one matrix and f(a, b) = ½‖M‖²_F = ½(a² + b²) + const is a quadratic with Hessian I (condition number 1);
  for k ≥ 2 the product is bilinear in (a, b) and f is a quartic.
* ``shared``: the same two entries, (0, 0) and (2, 2), of every matrix are a and b, so the product is a
  polynomial of degree k in each and f one of degree 2k.

Entries are N(0, 1/3) (each matrix preserves the norm of a vector in expectation); the start is the drawn
entries (per-layer: M_1[0, 0] and M_k[2, 2]; shared: M_1's). The loss is f = ½‖M_k⋯M_1‖²_F, the metric its gap
f − f* to the global minimum, which `global_minimum` finds in NumPy for every seed (a multi-start local search;
gradient methods may end in another local minimum, and are then recorded as stalled: stuck, not slow).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from otod.core.errors import OtodError
from otod.core.family import Family
from otod.core.lazy import lazy

jax = lazy("jax")
jnp = lazy("jax.numpy")
linalg = lazy("otod.core.linalg")

READINGS = ("per-layer", "shared")


def with_entries(matrices, a, b, reading: str):
    """The k matrices [k, 3, 3] with a and b written into them by the reading (NumPy or JAX arrays alike)."""
    k = matrices.shape[0]
    ea = np.zeros((k, 3, 3))
    eb = np.zeros((k, 3, 3))
    if reading == "per-layer":
        ea[0, 0, 0] = 1.0
        eb[k - 1, 2, 2] = 1.0
    else:
        ea[:, 0, 0] = 1.0
        eb[:, 2, 2] = 1.0
    return matrices * (1 - ea - eb) + a * ea + b * eb


def toy_loss(matrices, a, b, reading: str, xp=np):
    """f(a, b) = ½‖M_k⋯M_1‖²_F with the entries set by the reading (NumPy or jax.numpy via ``xp``)."""
    m = with_entries(matrices, a, b, reading)
    p = m[0]
    for i in range(1, m.shape[0]):
        p = m[i] @ p
    return 0.5 * xp.sum(p * p)


def start_entries(matrices, reading: str) -> tuple[float, float]:
    k = matrices.shape[0]
    return float(matrices[0, 0, 0]), float(matrices[k - 1 if reading == "per-layer" else 0, 2, 2])


def losses_on_grid(matrices, a, b, reading: str) -> np.ndarray:
    """f at every (a[i], b[i]) at once (NumPy, vectorised over the points)."""
    a, b = np.asarray(a, np.float64).reshape(-1), np.asarray(b, np.float64).reshape(-1)
    m = np.broadcast_to(np.asarray(matrices, np.float64), (a.size,) + np.shape(matrices)).copy()
    k = m.shape[1]
    if reading == "per-layer":
        m[:, 0, 0, 0], m[:, k - 1, 2, 2] = a, b
    else:
        m[:, :, 0, 0], m[:, :, 2, 2] = a[:, None], b[:, None]
    p = m[:, 0]
    for i in range(1, k):
        p = m[:, i] @ p
    return 0.5 * np.sum(p * p, axis=(1, 2))


def global_minimum(matrices, reading: str, grid: int = 161, radius: float = 4.0, refine: int = 6) -> float:
    """min f over (a, b), in float64: f on a grid×grid lattice of [−radius, radius]², then L-BFGS-B from the
    ``refine`` best lattice points and from the start; the best value found. (f ≥ 0 grows in every direction for
    generic matrices, so the minimum is attained; the lattice finds its basin unless that is narrower than the
    lattice's spacing, 0.05.)"""
    from scipy.optimize import minimize

    matrices = np.asarray(matrices, np.float64)
    axis = np.linspace(-radius, radius, grid)
    aa, bb = np.meshgrid(axis, axis, indexing="ij")
    values = losses_on_grid(matrices, aa, bb, reading)
    order = np.argsort(values)[:refine]
    starts = [np.array(start_entries(matrices, reading))] + [np.array([aa.flat[i], bb.flat[i]]) for i in order]
    fun = lambda x: float(losses_on_grid(matrices, x[0], x[1], reading)[0])  # noqa: E731
    best = float(values.min())
    for x in starts:
        res = minimize(fun, x, method="L-BFGS-B", options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 1000})
        best = min(best, float(res.fun))
    return best


@dataclass(frozen=True)
class ToySpec:
    """k = ``layers`` random 3×3 matrices and the reading of which entries a and b are (module docstring)."""

    layers: int = 4
    reading: str = "per-layer"

    def __post_init__(self):
        if not (isinstance(self.layers, int) and self.layers >= 1):
            raise OtodError(f"--layers {self.layers}: the toy needs at least 1 matrix, e.g. --layers 1..8")
        if self.reading not in READINGS:
            raise OtodError(f"--reading {self.reading}: choose from {', '.join(READINGS)}")

    @property
    def kind(self) -> str:
        return "toy"

    def draws(self, rng: np.random.Generator) -> dict:
        m = rng.standard_normal((self.layers, 3, 3)) / np.sqrt(3.0)
        return {"m": m, "f_star": np.float64(global_minimum(m, self.reading))}

    def family(self) -> Family:
        reading = self.reading

        def make(point, drawn):
            m = drawn["m"]
            a0, b0 = m[0, 0, 0], m[m.shape[0] - 1 if reading == "per-layer" else 0, 2, 2]
            dtype = m.dtype
            return {"m": m, "f_star": drawn["f_star"], "start": jnp.stack([a0, b0]),
                    "beta": jnp.asarray(point.get("beta", 0.0), dtype)}

        def metric(p, x):
            return toy_loss(p["m"], x[0], x[1], reading, jnp) - p["f_star"]

        def info(p, x):
            h = jax.hessian(lambda y: toy_loss(p["m"], y[0], y[1], reading, jnp))(x)
            top = jnp.max(jnp.abs(linalg.eigvalsh(h)))
            one = jnp.ones((), x.dtype)
            return {"loss_scale": one, "gd_step": 1.0 / top, "beta": p["beta"]}

        return Family(draws=self.draws, make=make, init=lambda p: p["start"], metric=metric, info=info,
                      provides=frozenset({"steps"}), floats_per_seed=9 * self.layers + 1,
                      floats_per_lane=8 * 9 * self.layers)
