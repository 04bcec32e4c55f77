"""Matrix-shaped quadratics with Kronecker structure: the case KFAC-style preconditioning approximates.

    f(W) = ½ ‖A^{1/2} (W − W*) B^{1/2}‖²_F + (ε/2) · rᵀ P r,   r = vec(A^{1/2} (W − W*) B^{1/2})

For ε = 0 the Hessian is exactly H = A⊗B (row-major vec), so (A⊗B)⁻¹ = A⁻¹⊗B⁻¹ and the KFAC-preconditioned
gradient A⁻¹ ∇W B⁻¹ is the Newton step (Martens & Grosse 2015, *Optimizing neural networks with
Kronecker-factored approximate curvature*). P is a random positive semi-definite matrix with ‖P‖₂ = 1, so
H = (A⊗B)^{1/2} (I + εP) (A⊗B)^{1/2}: ε is the relative size of the non-Kronecker part, and KFAC's
preconditioned Hessian has eigenvalues in [1, 1 + ε]. A and B have eigenvalues in [1, √κ] from the named spectrum
and random eigenvectors, so κ(A⊗B) = κ.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from otod.core.api import Family, OtodError, lazy
from otod.condition.quadratic import (SPECTRA, Curvature, STARTS, check_choices, eigenvalues, haar_orthogonal, start_coordinates,
                                    start_draws)


jnp = lazy("jax.numpy")
linalg = lazy("otod.core.linalg")

@dataclass(frozen=True)
class KroneckerSpec:
    """Static options: W is rows × cols; spectrum of each factor; start; perturbation ε ≥ 0 (relative size)."""

    rows: int = 10
    cols: int = 10
    spectrum: str = "log-uniform"
    start: str = "random"
    perturbation: float = 0.0

    def __post_init__(self):
        for name, n in (("rows", self.rows), ("cols", self.cols)):
            if not isinstance(n, int) or n < 2:
                raise OtodError(f"--shape: {name} must be an integer ≥ 2, e.g. --shape 10x10")
        check_choices(spectrum=(self.spectrum, SPECTRA), start=(self.start, STARTS))
        if not (self.perturbation >= 0.0) or self.perturbation != self.perturbation:
            raise OtodError(f"--perturbation {self.perturbation}: must be ≥ 0, e.g. --perturbation 0.1")

    @property
    def kind(self) -> str:
        return "kronecker"

    @property
    def num_params(self) -> int:
        return self.rows * self.cols

    def family(self) -> Family:
        m, n, eps = self.rows, self.cols, self.perturbation

        def draws(rng: np.random.Generator) -> dict:
            g = rng.standard_normal((m * n, m * n))  # drawn at ε = 0 too, so every ε sees the same A, B and start
            if eps:
                p_raw = g @ g.T
                perturbation = p_raw / np.linalg.eigvalsh(p_raw)[-1]
            else:
                perturbation = np.zeros((1, 1))  # unused: the loss and H have no perturbation term at ε = 0
            return {"ua": haar_orthogonal(rng, m), "ub": haar_orthogonal(rng, n), "perturbation": perturbation,
                    "w_star": rng.standard_normal((m, n)), "start": start_draws(rng, (m * n,))}

        def make(point, drawn):
            kappa = point["kappa"]
            dtype = jnp.result_type(kappa, float)
            root = jnp.sqrt(jnp.asarray(kappa, dtype))
            a, b = eigenvalues(self.spectrum, m, root), eigenvalues(self.spectrum, n, root)
            ua, ub = drawn["ua"].astype(dtype), drawn["ub"].astype(dtype)
            sym = lambda u, d: (u * d) @ u.T  # noqa: E731
            a_half, b_half = sym(ua, jnp.sqrt(a)), sym(ub, jnp.sqrt(b))
            perturb = drawn["perturbation"].astype(dtype)
            full_a, full_b = sym(ua, a), sym(ub, b)
            if eps:
                root_kron = jnp.kron(a_half, b_half)
                hessian = root_kron @ (jnp.eye(m * n, dtype=dtype) + eps * perturb) @ root_kron
            else:
                hessian = jnp.kron(full_a, full_b)
            z0 = start_coordinates(self.start, drawn["start"], jnp.outer(a, b).reshape(-1)).reshape(m, n)
            w_star = drawn["w_star"].astype(dtype)
            return {"a": full_a, "b": full_b, "a_half": a_half, "b_half": b_half, "a_eig": a, "b_eig": b,
                    "ua": ua, "ub": ub, "perturbation": perturb, "hessian": hessian, "w_star": w_star,
                    "w0": w_star + ua @ z0 @ ub.T}

        def loss(p, w):
            r = p["a_half"] @ (w - p["w_star"]) @ p["b_half"]
            value = 0.5 * jnp.sum(r * r)
            if eps:
                v = r.reshape(-1)
                value = value + 0.5 * eps * v @ (p["perturbation"] @ v)
            return value

        def jacobi_top(x):
            """λ_max(D^{-1/2} X D^{-1/2}) with D = diag(X)."""
            diag = jnp.diagonal(x)
            return linalg.eigvalsh(x / jnp.sqrt(jnp.outer(diag, diag)))[-1]

        def info(p, w):
            """The Hessian's spectrum. At ε = 0, H = A ⊗ B in closed form (Van Loan 2000, *The ubiquitous
            Kronecker product*): eigenvalues a_i·b_j, eigenvectors U_A ⊗ U_B, diagonal diag(A) ⊗ diag(B), and the
            Jacobi-scaled matrix is the Kronecker product of the scaled factors, whose top eigenvalue is the
            product of theirs; no (mn)×(mn) eigendecomposition. Otherwise `eigh` of H."""
            del w
            if eps:
                spectrum, vectors = linalg.eigh(p["hessian"])
                diag = jnp.diagonal(p["hessian"])
                mu, lipschitz, jacobi = spectrum[0], spectrum[-1], jacobi_top(p["hessian"])
            else:
                spectrum = jnp.outer(p["a_eig"], p["b_eig"]).reshape(-1)
                vectors = jnp.kron(p["ua"], p["ub"])
                diag = jnp.outer(jnp.diagonal(p["a"]), jnp.diagonal(p["b"])).reshape(-1)
                mu, lipschitz = jnp.min(spectrum), jnp.max(spectrum)
                jacobi = jacobi_top(p["a"]) * jacobi_top(p["b"])
            curvature = Curvature(
                mu=mu, lipschitz=lipschitz, hessian_eigenvalues=spectrum, hessian_eigenvectors=vectors,
                hessian_diagonal=diag.reshape(m, n), jacobi_lipschitz=jacobi)
            return {"curvature": curvature, "kronecker": (p["a"], p["b"])}

        d = m * n
        return Family(draws=draws, make=make, init=lambda p: p["w0"], metric=loss, info=info,
                      provides=frozenset({"curvature", "kronecker"}),
                      floats_per_seed=2 * d * d + m * m + n * n + 3 * d, floats_per_lane=6 * d * d + 8 * d)
