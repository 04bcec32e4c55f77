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
f − f* to the global minimum, which `local_minima` finds in NumPy for every seed (a lattice and a local search
from every basin it resolves). Gradient methods may end in another local minimum: such a lane never reaches the
target. It stops as stalled where gd's float32 iteration reaches a fixed point there, or runs to the cap and is
censored where it keeps moving by rounding; either way `annotate` records where it sits (``minimum``: "local",
with that minimum's f), and the report and figure count it as not converged.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from otod.core.api import Family, OtodError, lazy

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
    matrices = np.asarray(matrices, np.float64)
    k = matrices.shape[0]

    def factor(i):  # matrix i at every point, with its entries set (one [N, 3, 3] array at a time)
        m = np.broadcast_to(matrices[i], (a.size, 3, 3)).copy()
        if reading != "per-layer" or i == 0:
            m[:, 0, 0] = a
        if reading != "per-layer" or i == k - 1:
            m[:, 2, 2] = b
        return m

    p = factor(0)
    for i in range(1, k):
        p = factor(i) @ p
    return 0.5 * np.sum(p * p, axis=(1, 2))


#: Lattice points per side of the search box, and the box's starting half-width: spacing 8/320 = 0.025.
SEARCH_GRID = 321
SEARCH_RADIUS = 4.0
#: Two minimizers closer than this (in (a, b)) are one minimum.
SAME_POINT = 1e-4


class Minima(NamedTuple):
    """The local minima of f a search found, lowest first: their values and points (a, b)."""

    values: np.ndarray
    points: np.ndarray

    @property
    def f_star(self) -> float:
        return float(self.values[0])


#: The compass search's eight directions: the axes and the diagonals (a positive spanning set of the plane).
_DIRECTIONS = np.array([[1, 0], [-1, 0], [0, 1], [0, -1], [1, 1], [1, -1], [-1, 1], [-1, -1]], float)


def descend(matrices, reading: str, starts, step: float, smallest: float = 1e-10, max_rounds: int = 20_000):
    """A compass search from every start at once (NumPy, float64): each point moves to the lowest of its eight
    neighbours at distance ``step`` (axes and diagonals) while one is lower, else halves its step, until every
    step is below ``smallest``. Every move lowers f, and with eight directions one is within 22.5° of −∇f, so a
    point stops only where the gradient is below about the curvature times ``smallest``: at a local minimum (or,
    from a non-generic start, a saddle). Returns (values, points)."""
    x = np.array(starts, float).reshape(-1, 2)
    f = losses_on_grid(matrices, x[:, 0], x[:, 1], reading)
    h = np.full(len(x), float(step))
    for _ in range(max_rounds):
        active = np.flatnonzero(h >= smallest)
        if not active.size:
            break
        cand = x[active, None, :] + h[active, None, None] * _DIRECTIONS
        fc = losses_on_grid(matrices, cand[..., 0], cand[..., 1], reading).reshape(len(active), 8)
        best = np.argmin(fc, axis=1)
        lower = fc[np.arange(len(active)), best] < f[active]
        moved = active[lower]
        x[moved] = cand[lower, best[lower]]
        f[moved] = fc[lower, best[lower]]
        h[active[~lower]] *= 0.5
    return f, x


def _search(matrices, reading: str, grid: int, radius: float, refine: int) -> Minima:
    axis = np.linspace(-radius, radius, grid)
    aa, bb = np.meshgrid(axis, axis, indexing="ij")
    values = losses_on_grid(matrices, aa, bb, reading).reshape(grid, grid)
    padded = np.pad(values, 1, constant_values=np.inf)
    neighbours = np.min([padded[1 + i:grid + 1 + i, 1 + j:grid + 1 + j]
                         for i in (-1, 0, 1) for j in (-1, 0, 1) if (i, j) != (0, 0)], axis=0)
    basins = np.flatnonzero(values <= neighbours)  # every lattice point no higher than its 8 neighbours
    lowest = np.argsort(values, axis=None)[:refine]
    starts = [np.array(start_entries(matrices, reading))] + [
        np.array([aa.flat[i], bb.flat[i]]) for i in dict.fromkeys(np.concatenate([basins, lowest]).tolist())]
    values, points = descend(matrices, reading, starts, axis[1] - axis[0])
    found: list[tuple[float, np.ndarray]] = []
    for f, x in zip(values, points):
        same = [i for i, (_, y) in enumerate(found) if np.max(np.abs(y - x)) < SAME_POINT]
        if not same:
            found.append((f, x))
        elif f < found[same[0]][0]:
            found[same[0]] = (f, x)
    found.sort(key=lambda item: item[0])
    return Minima(np.array([f for f, _ in found]), np.array([x for _, x in found]))


@functools.lru_cache(maxsize=4096)
def _cached_minima(data: bytes, shape: tuple, reading: str) -> Minima:
    matrices = np.frombuffer(data, np.float64).reshape(shape)
    radius = SEARCH_RADIUS
    while True:
        found = _search(matrices, reading, SEARCH_GRID, radius, refine=8)
        if np.max(np.abs(found.points[0])) < 0.9 * radius or radius >= 64.0:
            return found
        radius *= 2.0  # the lowest minimum sits near the box's edge: search a box twice as wide


def local_minima(matrices, reading: str) -> Minima:
    """The local minima of f over (a, b), in float64, lowest first: f on a 321×321 lattice of [−4, 4]² (spacing
    0.025), then a compass search (`descend`) from every lattice point no higher than its 8 neighbours (one per
    basin the lattice resolves), from the 8 lowest lattice points and from the start; minimizers within 10⁻⁴ of
    each other are one minimum. Where the lowest lies within 10% of the box's edge the box doubles (up to
    [−64, 64]²). A basin narrower than the spacing can still be missed: tests/depth/test_toy.py checks the lowest
    value against an independent search (scipy BFGS from 100 random starts in [−6, 6]²) on 4 (reading, k, seed);
    on all 256 of the figure's sweeps the two agree to 10⁻¹⁵. Cached per matrices and reading."""
    matrices = np.ascontiguousarray(matrices, np.float64)
    return _cached_minima(matrices.tobytes(), matrices.shape, reading)


def global_minimum(matrices, reading: str) -> float:
    """min f over (a, b): the lowest of `local_minima`."""
    return local_minima(matrices, reading).f_star


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
                      floats_per_lane=8 * 9 * self.layers, stall="fixed-point")


#: A stopped lane sits in a minimum when its final loss is within this fraction of the minimum's value (float32
#: rounds f to about 6·10⁻⁸ of it) plus this fraction of f₀ − f* (the recorded gap is relative, in float32).
AT_MINIMUM_REL = 1e-5


def minimum_of(matrices, reading: str, final_gap: float) -> tuple[str | None, float | None]:
    """Which minimum a lane that stopped with relative gap ``final_gap`` = (f − f*)/(f₀ − f*) sits in: ("global",
    f*) or ("local", its value) where the final loss f matches a minimum of `local_minima` to within
    `AT_MINIMUM_REL` of that value and of f₀ − f*, else (None, None): still moving, or nowhere the search found."""
    minima = local_minima(matrices, reading)
    f0 = float(losses_on_grid(matrices, *start_entries(matrices, reading), reading)[0])
    scale = f0 - minima.f_star
    if not np.isfinite(final_gap) or scale <= 0:
        return None, None
    final = minima.f_star + final_gap * scale
    j = int(np.argmin(np.abs(minima.values - final)))
    if abs(final - minima.values[j]) > AT_MINIMUM_REL * (abs(minima.values[j]) + scale):
        return None, None
    return ("global" if j == 0 else "local"), float(minima.values[j])


def annotate(config, static_point: dict, rows: list[dict]) -> None:
    """Each toy record gets ``f_star`` (its seed's global minimum), ``minimum``: for a lane that stalled or was
    censored, "global" (at f*'s point: above tol only by float32 rounding) or "local" (in another local minimum,
    above f* for good) where its final loss is a minimum's value, else None (still moving; converged and diverged
    lanes: None); and ``minimum_loss``, that minimum's f."""
    spec = config.spec_at(static_point)
    for r in rows:
        m = spec.draws(np.random.default_rng([config.seed, r["seed"]]))["m"]
        where, value = None, None
        if r["status"] in ("stalled", "censored"):
            where, value = minimum_of(m, spec.reading, r["final_gap"])
        r["f_star"], r["minimum"], r["minimum_loss"] = global_minimum(m, spec.reading), where, value


#: The toy report's note over its lanes that did not converge (`otod.depth.report`).
STOPPED_NOTE = ("lanes that did not converge, with their median final gap (f − f*)/(f₀ − f*) (f* the seed's "
                "global minimum): stalled = gd's float32 iteration reached a fixed point (stuck for any cap), "
                "censored = still moving at the cap (a lower bound); split by where they stopped: in another local "
                "minimum of f (above f* for good: never converges), at f*'s point above tol only by float32 "
                "rounding, or neither (bouncing about a minimum the chosen step overshoots, or on its way):")


def stopped_breakdown(rows: list[dict]) -> str:
    """Where the toy lanes among ``rows`` that stalled or were censored stopped (the ``minimum`` field of
    `annotate`): '; 2 in another local minimum (f − f* 4.02e-04, 0.00052), 1 still moving'. Empty for records
    without the field (results files written before it)."""
    stopped = [r for r in rows if r["status"] in ("stalled", "censored")]
    if not stopped or any("f_star" not in r for r in stopped):
        return ""
    stopped = [{**r, "minimum": r["minimum"] if isinstance(r["minimum"], str) else None} for r in stopped]
    local = [r for r in stopped if r["minimum"] == "local"]
    parts = []
    if local:
        gaps = ", ".join(f"{r['minimum_loss'] - r['f_star']:.3g}" for r in local[:4])
        gaps += ", …" if len(local) > 4 else ""
        parts.append(f"{len(local)} in another local minimum (f − f* {gaps})")
    floor = sum(r["minimum"] == "global" for r in stopped)
    if floor:
        parts.append(f"{floor} at f*'s point (float32 rounding)")
    moving = sum(r["minimum"] is None for r in stopped)
    if moving:
        parts.append(f"{moving} neither (moving)")
    return "; " + ", ".join(parts)
