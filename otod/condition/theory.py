"""Closed-form rates on strongly convex quadratics (μ = 1, L = κ), the numbers measurements are checked against.

Contraction factors ρ of the error per iteration:

- gd, step 1/L:                 ρ = 1 − 1/κ                (Nesterov, *Lectures on Convex Optimization*, 2018, §2.1)
- gd-opt, step 2/(L+μ):         ρ = (κ−1)/(κ+1)            (ibid., Thm 2.1.15; exact on a two-point spectrum)
- heavy-ball, Polyak's α, β:    ρ = (√κ−1)/(√κ+1)          (Polyak 1964; a double root: an extra factor k,
                                                              Lessard, Recht & Packard 2016)
- nesterov, step 1/L:           ρ = 1 − 1/√κ               (Nesterov 2018, §2.2)
- first-order lower bound:      ρ ≥ (√κ−1)/(√κ+1)          (Nesterov 2018, Thm 2.1.13)
- newton, and kfac on an exact Kronecker H: one iteration.
- kfac, step 1, on H = (A⊗B)^{1/2}(I + εP)(A⊗B)^{1/2} with ‖P‖ = 1: the preconditioned Hessian has eigenvalues
  in [1, 1+ε], so ρ = ε, whatever κ (Martens & Grosse 2015 for the preconditioner; the bound is elementary).

Iterations to a relative loss gap ε: the loss contracts by ρ² per iteration, so k = ⌈ln(1/ε) / (2 ln(1/ρ))⌉,
and GD needs ~ (κ/2) ln(1/ε) iterations, the accelerated methods ~ (√κ/2) ln(1/ε).
"""

from __future__ import annotations

import math

import numpy as np


def applies_to(config: dict) -> bool:
    """Whether the closed forms describe a sweep: they assume each method's own step (``--lr theory``); a tuned
    step is at least as good where the grid holds that step, so they remain the bound; an absolute ``--lr VALUE``
    is a different method, about which they say nothing."""
    return config.get("lr") in ("theory", "tuned")


def contraction_factor(method: str, kappa: float, perturbation: float = 0.0) -> float | None:
    """ρ for ``method`` at condition number κ, or None where no closed form applies (adam, jacobi).

    ``perturbation`` is the relative size ε of a Hessian's non-Kronecker part (kfac's ρ = ε)."""
    r = math.sqrt(kappa)
    table = {
        "gd": 1.0 - 1.0 / kappa,
        "gd-opt": (kappa - 1.0) / (kappa + 1.0),
        "heavy-ball": (r - 1.0) / (r + 1.0),
        "nesterov": 1.0 - 1.0 / r,
        "lower-bound": (r - 1.0) / (r + 1.0),
        "newton": 0.0,
        "kfac": min(perturbation, 1.0),
    }
    return table.get(method)


def iterations_from_rate(rho: float, tol: float) -> int:
    """k = ⌈ln(1/ε) / (2 ln(1/ρ))⌉, at least 1 (the start itself is not below tolerance); ρ = 0 gives 1."""
    if rho <= 0.0:
        return 1
    if rho >= 1.0:
        return math.inf
    return max(1, math.ceil(math.log(1.0 / tol) / (2.0 * math.log(1.0 / rho)) - 1e-9))


def iterations(method: str, kappa: float, tol: float, perturbation: float = 0.0) -> float | None:
    """Predicted iterations to a relative loss gap ``tol`` for ``method`` at κ, or None without a closed form."""
    rho = contraction_factor(method, kappa, perturbation)
    return None if rho is None else iterations_from_rate(rho, tol)


#: Asymptotic exponent b of iterations ≈ a·κ^b.
EXPONENTS = {"gd": 1.0, "gd-opt": 1.0, "heavy-ball": 0.5, "nesterov": 0.5, "lower-bound": 0.5, "newton": 0.0,
             "kfac": 0.0}


def exponent(method: str) -> float | None:
    """The asymptotic exponent b (κ → ∞) of iterations ≈ a·κ^b, or None without a closed form."""
    return EXPONENTS.get(method)


def exponent_on_grid(method: str, kappas, tol: float) -> float | None:
    """The least-squares slope of log k(κ) against log κ for the closed-form k over the given κ values: what a
    perfect measurement on this grid would fit (the asymptotic exponent is approached only as κ grows)."""
    if method not in EXPONENTS:
        return None
    k = np.asarray([iterations(method, x, tol) for x in kappas], float)
    x = np.log(np.asarray(kappas, float))
    if len(x) < 2 or np.ptp(x) == 0:
        return None
    return float(np.polyfit(x, np.log(k), 1)[0])
