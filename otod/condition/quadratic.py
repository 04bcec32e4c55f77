"""Strongly convex quadratics f(x) = ½ (x − x*)ᵀ H (x − x*), the conditioning obstacle in its purest form.

H has eigenvalues in [μ, L] = [1, κ] (so the condition number is exactly κ) drawn from a named spectrum, in the
eigenbasis (diagonal H: the fast path) or a Haar-random rotation (dense H = QΛQᵀ: the same iterates up to
rounding for rotation-equivariant methods). Gradient descent contracts eigendirection i by |1 − ηλ_i| per step
(Nesterov, *Lectures on Convex Optimization*, 2018, §2.1), which is why the spectrum and the start decide how
quickly the measured iteration counts approach the worst-case rates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from otod.core.api import Family, OtodError, lazy

jax = lazy("jax")
jnp = lazy("jax.numpy")
linalg = lazy("otod.core.linalg")


class Curvature(NamedTuple):
    """What a quadratic tells the methods about its Hessian H (all exact: these are test problems), offered to them
    as ``info["curvature"]``. Pure data (a pytree of arrays), computed once per lane before the iterations start.

    mu, lipschitz: the extreme eigenvalues μ and L of H (κ = L/μ).
    hessian_eigenvalues, hessian_eigenvectors: H = V diag(λ) Vᵀ over the flattened parameters; V is None where H
    is diagonal in the parameters' own coordinates (then λ has the parameters' shape).
    hessian_diagonal: diag(H), for the Jacobi preconditioner.
    jacobi_lipschitz: λ_max(D^{-1/2} H D^{-1/2}) with D = diag(H): the L of the Jacobi-preconditioned problem.
    """

    mu: jax.Array
    lipschitz: jax.Array
    hessian_eigenvalues: jax.Array
    hessian_eigenvectors: jax.Array | None
    hessian_diagonal: jax.Array
    jacobi_lipschitz: jax.Array

    def inverse_hessian_apply(self, g: jax.Array) -> jax.Array:
        """H⁻¹g = V diag(1/λ) Vᵀ g: the exact Newton direction."""
        if self.hessian_eigenvectors is None:
            return g / self.hessian_eigenvalues.reshape(g.shape)
        v = self.hessian_eigenvectors
        return (v @ ((v.T @ g.reshape(-1)) / self.hessian_eigenvalues)).reshape(g.shape)

SPECTRA = ("two-point", "uniform", "log-uniform", "power")
BASES = ("eigen", "rotated")
STARTS = ("random", "equal-mass", "equal-loss")


def eigenvalues(spectrum: str, dim: int, kappa) -> jax.Array:
    """Eigenvalues λ_1..λ_d with min 1 and max κ.

    two-point: half at μ = 1, half at L = κ (the worst case for first-order methods); uniform: linearly spaced;
    log-uniform: geometrically spaced, λ_i = κ^{i/(d−1)}; power: λ_i = κ·i^{−p}, p = ln κ / ln d, the 1/i-like
    spectrum of the noisy quadratic model (Zhang et al. 2019) rescaled to [1, κ].
    """
    kappa = jnp.asarray(kappa)
    i = jnp.arange(dim, dtype=kappa.dtype)
    if spectrum == "two-point":
        return jnp.where(i % 2 == 0, jnp.ones_like(i), kappa)
    if spectrum == "uniform":
        return 1.0 + (kappa - 1.0) * i / (dim - 1)
    if spectrum == "log-uniform":
        return kappa ** (i / (dim - 1))
    if spectrum == "power":
        return kappa * (i + 1.0) ** (-jnp.log(kappa) / jnp.log(float(dim)))
    raise OtodError(f"unknown spectrum {spectrum!r}; choose one of {', '.join(SPECTRA)}")


def haar_orthogonal(rng: np.random.Generator, dim: int) -> np.ndarray:
    """A Haar-distributed random orthogonal matrix: QR of a Gaussian matrix with R's diagonal signs folded into Q
    (Mezzadri 2007, *How to generate random matrices from the classical compact groups*)."""
    q, r = np.linalg.qr(rng.standard_normal((dim, dim)))
    return q * np.sign(np.diagonal(r))[None, :]


def start_draws(rng: np.random.Generator, shape) -> dict[str, np.ndarray]:
    """The random numbers every start needs: a Gaussian vector and a vector of random signs."""
    return {"normal": rng.standard_normal(shape), "signs": rng.choice([-1.0, 1.0], size=shape)}


def start_coordinates(start: str, draws: dict, lam: jax.Array) -> jax.Array:
    """x₀ − x* in the eigenbasis, scaled to squared norm d.

    random: standard Gaussian; equal-mass: random signs (every eigendirection the same distance);
    equal-loss: ±1/√λ_i, so each eigendirection holds the same share ½λ_i z_i² of f(x₀) − f*, which makes the
    slowest direction as important as any other and the measured exponents approach theory fastest.
    """
    if start == "random":
        z = draws["normal"].astype(lam.dtype)
    else:
        signs = draws["signs"].astype(lam.dtype)
        z = signs if start == "equal-mass" else signs / jnp.sqrt(lam)
    return z * jnp.sqrt(lam.shape[0] / jnp.sum(z * z))


def check_choices(**options: tuple[str, tuple[str, ...]]) -> None:
    """Raise `OtodError` for the first option whose value is not among its choices: ``name=(value, choices)``."""
    for name, (value, choices) in options.items():
        if value not in choices:
            raise OtodError(f"--{name} {value}: unknown; choose one of {', '.join(choices)}")


@dataclass(frozen=True)
class QuadraticSpec:
    """Static options of the quadratic family: dimension d, spectrum, basis and start (see module docstring)."""

    dim: int = 100
    spectrum: str = "log-uniform"
    basis: str = "eigen"
    start: str = "random"

    def __post_init__(self):
        if not isinstance(self.dim, int) or self.dim < 2:
            raise OtodError(f"--dim {self.dim}: the dimension must be an integer ≥ 2 (μ and L need two "
                            "eigenvalues), e.g. --dim 100")
        check_choices(spectrum=(self.spectrum, SPECTRA), basis=(self.basis, BASES), start=(self.start, STARTS))

    @property
    def kind(self) -> str:
        return "quadratic"

    @property
    def num_params(self) -> int:
        return self.dim

    def family(self) -> Family:
        rotated = self.basis == "rotated"

        def draws(rng: np.random.Generator) -> dict:
            out = {"x_star": rng.standard_normal(self.dim), "start": start_draws(rng, (self.dim,))}
            if rotated:
                out["rotation"] = haar_orthogonal(rng, self.dim)
            return out

        def make(point, drawn):
            kappa = point["kappa"]
            dtype = jnp.result_type(kappa, float)
            lam = eigenvalues(self.spectrum, self.dim, jnp.asarray(kappa, dtype))
            x_star = drawn["x_star"].astype(dtype)
            z0 = start_coordinates(self.start, drawn["start"], lam)
            rotation = drawn["rotation"].astype(dtype) if rotated else None
            x0 = x_star + (rotation @ z0 if rotated else z0)
            return {"eigenvalues": lam, "rotation": rotation, "x_star": x_star, "x0": x0}

        def to_eigen(p, v):
            return p["rotation"].T @ v if rotated else v

        def loss(p, x):
            z = to_eigen(p, x - p["x_star"])
            return 0.5 * jnp.sum(p["eigenvalues"] * z * z)

        def info(p, x):
            del x
            lam = p["eigenvalues"]
            if rotated:
                diag = jnp.einsum("ij,j,ij->i", p["rotation"], lam, p["rotation"])
                scaled = (p["rotation"] * lam) @ p["rotation"].T / jnp.sqrt(jnp.outer(diag, diag))
                jacobi_l = linalg.eigvalsh(scaled)[-1]
            else:
                diag, jacobi_l = lam, jnp.ones((), lam.dtype)
            return {"curvature": Curvature(
                mu=jnp.min(lam), lipschitz=jnp.max(lam), hessian_eigenvalues=lam,
                hessian_eigenvectors=p["rotation"] if rotated else None, hessian_diagonal=diag,
                jacobi_lipschitz=jacobi_l)}

        d = self.dim
        return Family(draws=draws, make=make, init=lambda p: p["x0"], metric=loss, info=info,
                      provides=frozenset({"curvature"}),
                      floats_per_seed=3 * d + (d * d if rotated else 0),
                      floats_per_lane=8 * d + (2 * d * d if rotated else 0))
