"""What theory predicts for the condition sweep (μ = 1, L = κ): asymptotic rates, worst-case bounds and exact counts.

Every method measured on the quadratics f(x) = ½ (x − x*)ᵀH(x − x*) except adam is *linear*: in H's eigenbasis,
with error e = x − x* and gradient g = λe per eigenvalue λ, the error after k iterations is e_k = p_k(λ)·e_0 for a
*residual polynomial* p_k of degree k with p_k(0) = 1 (Fischer, *Polynomial Based Iteration Methods for
Symmetric Linear Systems*, 1996; Nemirovski, *Information-based complexity of convex programming*, lecture notes).
The relative loss gap the engine stops on is then a convex combination

    (f(x_k) − f*) / (f(x_0) − f*) = Σ_i w_i p_k(λ_i)²,   w_i = λ_i z_i² / Σ_j λ_j z_j²,   z = x_0 − x* (eigenbasis).

Three numbers follow, from the least to the most specific:

1. The asymptotic *rate* (`rate_iterations`, alias `iterations`, the old ``·th`` column): the loss contracts by
   ρ² per iteration, k = ⌈ln(1/ε) / (2 ln(1/ρ))⌉, with

   - gd, step 1/L:                 ρ = 1 − 1/κ                (Nesterov, *Lectures on Convex Optimization*, 2018, §2.1)
   - gd-opt, step 2/(L+μ):         ρ = (κ−1)/(κ+1)            (ibid., Thm 2.1.15; exact on a two-point spectrum)
   - heavy-ball, Polyak's α, β:    ρ = (√κ−1)/(√κ+1)          (Polyak 1964; Lessard, Recht & Packard 2016 §3.2)
   - nesterov, step 1/L:           ρ = 1 − 1/√κ               (Nesterov 2018, §2.2)
   - first-order lower bound:      ρ ≥ (√κ−1)/(√κ+1)          (Nesterov 2018, Thm 2.1.13)
   - newton, and kfac on an exact Kronecker H: one iteration.
   - kfac, step 1, on H = (A⊗B)^{1/2}(I + εP)(A⊗B)^{1/2} with P ⪰ 0, ‖P‖ = 1: the preconditioned Hessian has
     eigenvalues in [1, 1+ε], so ρ = ε whatever κ (Martens & Grosse 2015 for the preconditioner).

   This is a rate, not a bound: ρ is the spectral radius of the iteration, and ‖T^k‖ ≤ ρ^k only when T is
   normal. It is exact for gd and gd-opt, and undercounts the momentum methods (below).

2. The worst-case *bound* (`bound_iterations`): the first k with max_{λ∈[μ,L]} p_k(λ)² ≤ ε. Since the gap is a
   convex combination of the p_k(λ_i)², no spectrum inside [1, κ] and no start can need more iterations in exact
   arithmetic. It bounds exact arithmetic only: a float32 lane can need a few more where the worst case is
   attained (gd-opt, two-point spectrum, equal-loss start, κ = 1000, tol 1e-6: median 3462.5 against 3454).

3. The *exact* count (`exact_iterations`, `quadratic_lane_iterations`): the first k with Σ w_i p_k(λ_i)² ≤ ε for
   the lane's own spectrum and start; what a float64 engine measures, up to rounding.

Recurrences (`residual_polynomials`). The engine's momentum methods are optax's ``trace``: m_t = g_t + β m_{t−1}
(m_{−1} = 0), update u_t = m_t (heavy ball, ν = 0) or u_t = g_t + β m_t (Nesterov, ν = 1), e_{t+1} = e_t − α u_t.
Per eigenvalue, the state (p_t, m_{t−1}) advances by

    m_t = λ p_t + β m_{t−1},   p_{t+1} = p_t − α (ν (λ p_t + β m_t) + (1 − ν) m_t),   (p_0, m_{−1}) = (1, 0),

equivalently the three-term recurrences (a = αλ)

    gd, gd-opt (β = 0):   p_{k+1} = (1 − a) p_k                                         p_k = (1 − a)^k
    heavy ball:           p_{k+1} = (1 + β − a) p_k − β p_{k−1},                         p_1 = 1 − a
    nesterov:             p_{k+1} = (1 + β)(1 − a) p_k − β (1 − a) p_{k−1},              p_1 = 1 − (1 + β) a

with gd α = 1/L, gd-opt α = 2/(L+μ), heavy ball α = 4/(√L+√μ)², β = ((√κ−1)/(√κ+1))², nesterov α = 1/L,
β = (√κ−1)/(√κ+1); newton p_k = 0 for k ≥ 1; kfac is gd with α = 1 on the preconditioned spectrum ⊂ [1, 1+ε].

Why the rate undercounts momentum: the tuned parameters put a *double root* of the characteristic polynomial
(z² − (1 + β − a) z + β for heavy ball) at the ends of the spectrum, where the 2×2 iteration matrix is a Jordan
block and the error is (A + Bk) ρ^k, not ρ^k: ρ is a spectral radius, and ‖T^k‖ ≤ C ρ^k needs C growing with k
(elementary linear algebra; Lessard, Recht & Packard 2016 state heavy ball's and Nesterov's rates up to such
constants; Polyak 1964 for heavy ball's tuning).

- heavy ball: z = ±ρ at λ = μ and λ = L, ρ = √β = (√κ−1)/(√κ+1); p_k(μ) = (1 + (1 − ρ)k) ρ^k,
  p_k(L) = (1 + (1 + ρ)k) (−ρ)^k. Inside (μ, L) the roots are ρe^{±iθ} (2ρ cos θ = 1 + β − αλ) and
  p_k/ρ^k = cos kθ + (cos θ − ρ) sin kθ / sin θ, whose modulus is at most 1 + (1 + ρ)k, attained at θ = π:
  the worst case is exactly max_λ p_k² = (1 + (1 + ρ)k)² ρ^{2k}, at λ = L.
- nesterov: z = ρ = 1 − 1/√κ (double) at λ = μ, p_k(μ) = (1 + k/(√κ + 1)) ρ^k; inside, |z| = √(β(1 − λ/L)) < ρ.
  The certified maximum (below) is at λ = μ at every κ checked (4 to 10⁵), though no proof is claimed.

The extra factor costs about ln(1 + ck)/ln(1/ρ) iterations. At tol 1e-6 the bound is 1.66× the rate count for
heavy ball at κ = 100 and 2.05× at κ = 10⁴ (the ratio grows like ln k), nesterov 1.32× and 1.33×; both still grow
like √κ up to that logarithm (log-log slope over κ ∈ [10³, 10⁵]: heavy ball 0.54, nesterov 0.50).
For gd and gd-opt |1 − αλ| is largest at an endpoint, and the bound equals the rate count.

How the bound is evaluated for momentum: λ = (L+μ)/2 − (L−μ)/2 cos φ turns p_k into a cosine polynomial of
degree k in φ, so Bernstein's inequality |dP/dφ| ≤ k·max|P| bounds how far it can rise between sample points.
No k before the endpoints' own p_k² ≤ tol can qualify, so the scan starts there; from then on a grid of ~4πk
points in φ (endpoints included) proposes the candidate k, and each candidate is *certified* on all of [0, π] by
interval refinement with that Lipschitz bound (rigorous up to float64 rounding). A candidate that cannot be
decided within the refinement budget is skipped, which can only make the bound larger (still a bound). Heavy ball
at κ = 10⁵ takes about 0.1 s.
"""

from __future__ import annotations

import functools
import math

import numpy as np

#: Methods whose error is a residual polynomial of H (with their own step sizes from μ and L).
POLYNOMIAL_METHODS = ("gd", "gd-opt", "heavy-ball", "nesterov", "newton", "kfac")


def applies_to(config) -> bool:
    """Whether the closed forms describe a sweep (``config``: its `otod.core.config.SweepConfig`): they assume
    each method's own step (``--lr theory``); a tuned step is at least as good where the grid holds that step, so
    the bound still holds; an absolute ``--lr VALUE`` is a different method, about which they say nothing."""
    return config.lr in ("theory", "tuned")


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


def rate_iterations(method: str, kappa: float, tol: float, perturbation: float = 0.0) -> float | None:
    """Iterations to a relative loss gap ``tol`` at the asymptotic *rate* ρ of ``method`` (see module docstring):
    ⌈ln(1/tol) / (2 ln(1/ρ))⌉, or None without a closed form.

    Not a bound: it is exact for gd and gd-opt but undercounts heavy-ball (up to ~2×) and nesterov (~1.3×),
    whose error carries an extra factor (1 + ck) from a double root; `bound_iterations` is the worst case."""
    rho = contraction_factor(method, kappa, perturbation)
    return None if rho is None else iterations_from_rate(rho, tol)


#: The historical name of `rate_iterations` (the ``·th`` column): the asymptotic rate, not a bound.
iterations = rate_iterations


#: Asymptotic exponent b of iterations ≈ a·κ^b.
EXPONENTS = {"gd": 1.0, "gd-opt": 1.0, "heavy-ball": 0.5, "nesterov": 0.5, "lower-bound": 0.5, "newton": 0.0,
             "kfac": 0.0}


def exponent(method: str) -> float | None:
    """The asymptotic exponent b (κ → ∞) of iterations ≈ a·κ^b, or None without a closed form."""
    return EXPONENTS.get(method)


def exponent_on_grid(method: str, kappas, tol: float) -> float | None:
    """The least-squares slope of log k(κ) against log κ for the rate count k over the given κ values: what a
    measurement following the asymptotic rate on this grid would fit (the exponent is approached only as κ grows)."""
    if method not in EXPONENTS:
        return None
    from otod.core.api import fit_line

    k = np.asarray([iterations(method, x, tol) for x in kappas], float)
    slope = float(fit_line(np.log(np.asarray(kappas, float)), np.log(k))[0])
    return slope if np.isfinite(slope) else None


# --------------------------------------------------------------------------------------------------------------
# Residual polynomials


def method_parameters(method: str, *, mu: float, lipschitz: float) -> tuple[float, float, float]:
    """(α, β, ν) of ``method`` from μ and L, computed as the engine does (`otod.condition.methods`): step α,
    momentum β, Nesterov switch ν. kfac: α = 1 (it acts on the preconditioned spectrum). Raises ValueError for a
    method without a residual polynomial (adam, jacobi) and for newton (whose step is H⁻¹, not a scalar)."""
    mu, lipschitz = float(mu), float(lipschitz)
    if method == "gd":
        return 1.0 / lipschitz, 0.0, 0.0
    if method == "gd-opt":
        return 2.0 / (lipschitz + mu), 0.0, 0.0
    if method == "heavy-ball":
        r = math.sqrt(lipschitz / mu)
        return 4.0 / (math.sqrt(lipschitz) + math.sqrt(mu)) ** 2, ((r - 1) / (r + 1)) ** 2, 0.0
    if method == "nesterov":
        r = math.sqrt(lipschitz / mu)
        return 1.0 / lipschitz, (r - 1) / (r + 1), 1.0
    if method == "kfac":
        return 1.0, 0.0, 0.0
    raise ValueError(f"{method!r}: no scalar-step residual polynomial; known: {', '.join(POLYNOMIAL_METHODS)}")


def _check_method(method: str) -> None:
    if method not in POLYNOMIAL_METHODS:
        raise ValueError(f"{method!r}: no residual polynomial (not a linear method); "
                         f"known: {', '.join(POLYNOMIAL_METHODS)}")


def _step(p, m, lam, alpha, beta, nu):
    """One iteration of the method's own recurrence on the state (p_t, m_{t−1}), elementwise (engine's order)."""
    g = lam * p
    m = g + beta * m
    u = (g + beta * m) if nu else m
    return p - alpha * u, m


def residual_polynomials(method: str, eigenvalues, steps: int, *, mu: float, lipschitz: float,
                         perturbation: float = 0.0) -> np.ndarray:
    """p_k(λ) for k = 0..steps at each of ``eigenvalues``: an array [steps + 1, n] (float64), by the method's own
    recurrence with its own α, β from μ and L (module docstring).

    kfac: ``eigenvalues`` are those of the preconditioned Hessian K⁻¹H (inside [1, 1+ε]) and the step is 1;
    ``perturbation`` is accepted for a uniform signature and not needed. newton: p_k = 0 for k ≥ 1."""
    del perturbation
    _check_method(method)
    lam = np.asarray(eigenvalues, np.float64).reshape(-1)
    out = np.empty((int(steps) + 1, lam.size))
    out[0] = 1.0
    if method == "newton":
        out[1:] = 0.0
        return out
    alpha, beta, nu = method_parameters(method, mu=mu, lipschitz=lipschitz)
    p, m = np.ones_like(lam), np.zeros_like(lam)
    for k in range(1, int(steps) + 1):
        p, m = _step(p, m, lam, alpha, beta, nu)
        out[k] = p
    return out


def _block_responses(lam, alpha, beta, nu, block):
    """Responses of the state after j = 1..block steps to the state (p_s, m_{s−1}) = (1, 0) and (0, 1), by the
    method's own recurrence: p_{s+j} for every j, an array [block, n, 2], and (p, m) after the block, [n, 2] each."""
    p = np.stack([np.ones_like(lam), np.zeros_like(lam)], axis=-1)
    m = np.stack([np.zeros_like(lam), np.ones_like(lam)], axis=-1)
    lam2 = lam[:, None]
    out = np.empty((block, lam.size, 2))
    for j in range(block):
        p, m = _step(p, m, lam2, alpha, beta, nu)
        out[j] = p
    return out, p, m


def _block_size(n: int, max_iters: int) -> int:
    """Steps per block: at most 512, and about 2²¹ numbers per block's responses."""
    return int(max(1, min(max_iters, 512, (1 << 21) // max(n, 1))))


def _first_hit(lam, alpha, beta, nu, max_iters, reduce, accept, block=None, skip: int = 0):
    """The first k in 1..max_iters with ``accept(k)`` among those where ``reduce(p_k) ≤ 0`` holds, or None.

    The state (p_k, m_{k−1}) at every λ advances a block at a time through the block's linear responses (a few
    NumPy operations per block instead of per step); ``reduce`` maps p values [b, n] to b numbers; nothing is kept
    beyond one block. With ``skip`` the scan starts after iteration ``skip`` (its state by `_power`)."""
    max_iters = int(max_iters)
    block = block or _block_size(lam.size, max_iters)
    resp, p_end, m_end = _block_responses(lam, alpha, beta, nu, block)
    k = int(min(skip, max_iters))
    if k:
        t = _power(lam, alpha, beta, nu, k)
        p, m = t[..., 0, 0], t[..., 1, 0]
    else:
        p, m = np.ones_like(lam), np.zeros_like(lam)
    while k < max_iters:
        b = min(block, max_iters - k)
        values = resp[:b, :, 0] * p + resp[:b, :, 1] * m
        score = reduce(values)
        if not np.all(np.isfinite(score)):
            bad = int(np.argmax(~np.isfinite(score)))
            hits = np.flatnonzero(score[:bad] <= 0)
        else:
            bad, hits = None, np.flatnonzero(score <= 0)
        for j in hits:
            if accept(k + int(j) + 1):
                return k + int(j) + 1
        if bad is not None:
            return None
        p, m = p_end[:, 0] * p + p_end[:, 1] * m, m_end[:, 0] * p + m_end[:, 1] * m
        k += b
    return None


def _check_tol(tol: float) -> None:
    if not 0.0 < tol < 1.0:
        raise ValueError(f"tol {tol}: a relative loss gap strictly between 0 and 1")


def exact_iterations(method: str, eigenvalues, start, tol: float, *, mu: float, lipschitz: float,
                     max_iters: int = 1_000_000) -> int | None:
    """The first k ≥ 1 with Σ λ p_k(λ)² z² / Σ λ z² ≤ tol: the iterations a lane with these Hessian
    ``eigenvalues`` and start ``z = x₀ − x*`` (in the eigenbasis) needs in exact arithmetic, with the method's step
    from ``mu`` and ``lipschitz``; None if not reached within ``max_iters`` (or the gap overflows).

    kfac: ``eigenvalues`` and ``start`` are those of the symmetrically preconditioned Hessian K^{-1/2}HK^{-1/2} and
    of K^{1/2}z, for which the loss has the same form. Vectorised: 100 eigenvalues × 10⁵ iterations take ~0.1 s."""
    _check_method(method)
    _check_tol(tol)
    lam = np.asarray(eigenvalues, np.float64).reshape(-1)
    z = np.asarray(start, np.float64).reshape(-1)
    weight = lam * z * z
    total = weight.sum()
    if not total > 0:
        raise ValueError("the start has no loss to reduce: Σ λ z² = 0")
    if method == "newton":
        return 1 if max_iters >= 1 else None
    alpha, beta, nu = method_parameters(method, mu=mu, lipschitz=lipschitz)
    return _first_hit(lam, alpha, beta, nu, max_iters,
                      lambda p: (p * p) @ weight / total - tol, accept=lambda k: True)


def _chebyshev_points(mu: float, lipschitz: float, phi):
    """λ(φ) = (L+μ)/2 − (L−μ)/2·cos φ, with the endpoints exact."""
    lam = 0.5 * (lipschitz + mu) - 0.5 * (lipschitz - mu) * np.cos(phi)
    lam = np.where(phi <= 0.0, mu, np.where(phi >= math.pi, lipschitz, lam))
    return lam


def _power(lam, alpha, beta, nu, k: int):
    """T^k at every λ, by squaring, for the one-step matrix T on the state (p_t, m_{t−1}); from (1, 0) the state
    after k steps is (p_k, m_{k−1}) = the first column of T^k."""
    c = (1.0 - nu) + nu * beta
    a = alpha * lam
    # (p, m) -> (p', m'): m' = λ p + β m;  p' = p − α(ν(λp + βm') + (1−ν) m') = (1 − a(ν + c)) p − α c β m
    t = np.empty(lam.shape + (2, 2))
    t[..., 0, 0] = 1.0 - a * (nu + c)
    t[..., 0, 1] = -alpha * c * beta
    t[..., 1, 0] = lam
    t[..., 1, 1] = beta
    result = None
    while k:
        if k & 1:
            result = t.copy() if result is None else result @ t
        k >>= 1
        if k:
            t = t @ t
    return result


def _power_first_entry(lam, alpha, beta, nu, k: int):
    """p_k(λ) at every λ for one k ≥ 1."""
    return _power(lam, alpha, beta, nu, k)[..., 0, 0]


def _certify(k: int, alpha, beta, nu, mu, lipschitz, tol, *, rounds: int = 60, budget: int = 4_000_000) -> bool:
    """Whether max_{λ∈[μ,L]} p_k(λ)² ≤ tol, proved by interval refinement in φ (λ = λ(φ), see
    `_chebyshev_points`): P(φ) = p_k(λ(φ)) is a cosine polynomial of degree k, so by Bernstein's inequality its
    Lipschitz constant is at most k·M, M = max|P|. On an interval [a, b] of width w this gives
    |P| ≤ (|P(a)| + |P(b)|)/2 + w·k·M/2; intervals whose bound exceeds √tol are halved until every bound is below
    (True), a sample exceeds √tol (False), or the budget runs out (False: undecided, treated as not reached)."""
    root = math.sqrt(tol)
    def evaluate(phi):
        return np.abs(_power_first_entry(_chebyshev_points(mu, lipschitz, phi), alpha, beta, nu, k))

    n0 = int(math.ceil(math.pi * k)) + 1  # spacing h ≤ 1/k, so M ≤ max/(1 − kh/2) ≤ 2·max
    phi = np.linspace(0.0, math.pi, n0 + 1)
    values = evaluate(phi)
    top = float(values.max())
    if not top <= root:
        return False
    h = math.pi / n0
    upper = top / (1.0 - 0.5 * k * h)
    a, b, va, vb = phi[:-1], phi[1:], values[:-1], values[1:]
    used = phi.size
    for _ in range(rounds):
        bound = 0.5 * (va + vb) + 0.5 * (b - a) * k * upper
        upper = min(upper, float(bound.max()))  # M ≤ max over intervals of their bounds: a valid, tighter M
        bound = 0.5 * (va + vb) + 0.5 * (b - a) * k * upper
        open_ = bound > root
        if not open_.any():
            return True
        a, b, va, vb = a[open_], b[open_], va[open_], vb[open_]
        mid = 0.5 * (a + b)
        used += mid.size
        if used > budget:
            return False
        vm = evaluate(mid)
        if not vm.max() <= root:
            return False
        a, b = np.concatenate([a, mid]), np.concatenate([mid, b])
        va, vb = np.concatenate([va, vm]), np.concatenate([vm, vb])
    return False


def _first_power_below(rho: float, tol: float, max_iters: int) -> int | None:
    """The first k ≥ 1 with ρ^{2k} ≤ tol (ρ ≥ 0), or None beyond ``max_iters``."""
    if rho <= 0.0:
        k = 1
    elif rho >= 1.0:
        return None
    else:
        k = max(1, math.ceil(math.log(tol) / (2.0 * math.log(rho))))
        while k > 1 and rho ** (2 * (k - 1)) <= tol:
            k -= 1
        while rho ** (2 * k) > tol:
            k += 1
    return k if k <= max_iters else None


def worst_case_gap(method: str, kappa: float, k: int, *, perturbation: float = 0.0, points: int = 200_001,
                   interval: tuple[float, float] | None = None) -> float:
    """max over λ ∈ [1, κ] (or ``interval``) of p_k(λ)², sampled at ``points`` Chebyshev-spaced λ (endpoints
    included): a (very close) lower estimate of the worst-case relative gap after k iterations, for checks and
    plots; α and β as in `bound_iterations`."""
    _check_method(method)
    if method == "newton":
        return 1.0 if k == 0 else 0.0
    own = (1.0, 1.0 + float(perturbation)) if method == "kfac" else (1.0, float(kappa))
    alpha, beta, nu = method_parameters(method, mu=own[0], lipschitz=own[1])
    mu, lipschitz = own if interval is None else (float(interval[0]), float(interval[1]))
    lam = _chebyshev_points(mu, lipschitz, np.linspace(0.0, math.pi, points))
    if k == 0:
        return 1.0
    return float(np.max(_power_first_entry(lam, alpha, beta, nu, int(k)) ** 2))


@functools.lru_cache(maxsize=4096)
def bound_iterations(method: str, kappa: float, tol: float, *, max_iters: int = 1_000_000,
                     perturbation: float = 0.0, interval: tuple[float, float] | None = None) -> int | None:
    """The worst case over every spectrum inside [1, κ] and every start: the first k with
    max_{λ∈[1,κ]} p_k(λ)² ≤ tol, so no lane of any spectrum and start in [1, κ] needs more in exact arithmetic
    (module docstring). A bound on exact arithmetic only: float32 rounding can add iterations past it where the
    worst case is attained (gd-opt, two-point spectrum, κ = 1000, tol 1e-6: median 3462.5 against 3454).
    None beyond ``max_iters``, or for a method without a residual polynomial (adam, jacobi).

    gd, gd-opt: |1 − αλ| is largest at an endpoint, so k is the first with ρ^{2k} ≤ tol (the rate count).
    heavy-ball, nesterov: the maximum over a Chebyshev-spaced grid proposes k, and each candidate is certified on
    the whole interval (`_certify`). kfac: the interval [1, 1+ε] with step 1, ρ = ε, whatever κ; newton: 1.

    ``interval`` = (lo, hi) ⊂ (0, ∞) bounds over λ ∈ [lo, hi] instead, the method's α and β still those of μ = 1,
    L = κ (kfac: of [1, 1+ε]): e.g. a family of lanes known to have a narrower spectrum."""
    if method not in POLYNOMIAL_METHODS:
        return None
    _check_tol(tol)
    if method == "newton":
        return 1 if max_iters >= 1 else None
    own = (1.0, 1.0 + float(perturbation)) if method == "kfac" else (1.0, float(kappa))
    alpha, beta, nu = method_parameters(method, mu=own[0], lipschitz=own[1])
    mu, lipschitz = own if interval is None else (float(interval[0]), float(interval[1]))
    if not 0.0 < mu <= lipschitz:
        raise ValueError(f"interval {interval}: need 0 < lo ≤ hi")
    if beta == 0.0:
        return _first_power_below(max(abs(1.0 - alpha * mu), abs(1.0 - alpha * lipschitz)), tol, max_iters)
    # Before the endpoints reach tol no k can: start the grid scan there (a rigorous skip).
    ends = np.array([mu, lipschitz])
    skip = _first_hit(ends, alpha, beta, nu, max_iters, lambda p: np.max(p * p, axis=1) - tol, lambda k: True)
    if skip is None:
        return None
    n = int(min(1 << 16, max(2048, 4 * math.pi * skip)))
    lam = _chebyshev_points(mu, lipschitz, np.linspace(0.0, math.pi, n))
    return _first_hit(lam, alpha, beta, nu, max_iters, lambda p: np.max(p * p, axis=1) - tol,
                      accept=lambda k: _certify(k, alpha, beta, nu, mu, lipschitz, tol),
                      block=int(max(1, min(max_iters, 64, (1 << 21) // n))), skip=skip - 1)


# --------------------------------------------------------------------------------------------------------------
# The quadratic problems' own spectra and starts


def quadratic_problem(spec, kappa: float, seed_index: int, *, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(λ, z): the Hessian eigenvalues and the start x₀ − x* in the eigenbasis of lane (κ, seed ``seed_index``) of
    a `otod.condition.quadratic.QuadraticSpec`, as the engine builds them: λ from `quadratic.eigenvalues`, and the
    per-seed draws of ``numpy.random.default_rng([seed, seed_index])`` (x*, then the start's normal and signs, then
    a rotation) through `quadratic.start_coordinates`. The rotated basis has the same z in the eigenbasis.

    Computed at JAX's default float precision, like the engine: enable float64 (``jax.enable_x64``) to get the
    float64 problem."""
    from otod.condition import quadratic

    lam_j = quadratic.eigenvalues(spec.spectrum, spec.dim, kappa)
    drawn = spec.family().draws(np.random.default_rng([seed, seed_index]))
    start = {name: np.asarray(v).astype(np.dtype(lam_j.dtype)) for name, v in drawn["start"].items()}
    z = quadratic.start_coordinates(spec.start, start, lam_j)
    return np.asarray(lam_j, np.float64), np.asarray(z, np.float64)


def quadratic_lane_iterations(spec, method: str, kappa: float, seed_index: int, tol: float, *, seed: int = 0,
                              max_iters: int = 1_000_000) -> int | None:
    """The exact iterations (``·exact``) of one lane of the quadratic family: `exact_iterations` on the lane's own
    spectrum and start (`quadratic_problem`), with μ and L its extreme eigenvalues as the engine reads them.
    A float64 engine run at ``--lr theory`` and check-every 1 measures this count (up to rounding near a tie)."""
    if method == "kfac":
        raise ValueError("kfac needs a Kronecker problem, not a quadratic one")
    lam, z = quadratic_problem(spec, kappa, seed_index, seed=seed)
    return exact_iterations(method, lam, z, tol, mu=float(lam.min()), lipschitz=float(lam.max()),
                            max_iters=max_iters)


#: Lanes per batch of `exact_hits_many`: its arrays are [batch, d] float64, so memory stays ~batch·d·80 bytes
#: whatever the sweep's size (a 51 200-lane sweep at d = 100 held ~400 MB at once).
EXACT_BATCH = 2048


def exact_hits_many(method: str, eigenvalues, starts, ladder, *, mu, lipschitz, max_iters: int) -> np.ndarray:
    """`exact_iterations` for many lanes at once and every tolerance of a ladder: ``eigenvalues`` and ``starts``
    are [lanes, d], ``mu`` and ``lipschitz`` per lane; returns the first-hit iterations [lanes, rungs] (−1: not
    within ``max_iters``), in float64, ``EXACT_BATCH`` lanes at a time.

    Without momentum (gd, gd-opt) the gap Σ λ (1 − αλ)^{2k} z² / Σ λ z² is a closed form in k and, as
    |1 − αλ| ≤ 1 at these steps, never increases: each rung's first hit is found by bisection on k, O(log k)
    evaluations instead of k steps. With momentum the gap is not monotone, so all lanes advance together by the
    method's own step until every lane has met the lowest rung."""
    _check_method(method)
    lam = np.asarray(eigenvalues, np.float64)
    z = np.asarray(starts, np.float64)
    ladder = np.asarray(ladder, np.float64)
    n = lam.shape[0]
    hits = np.full((n, ladder.size), -1, np.int64)
    if method == "newton":
        hits[:] = 1 if max_iters >= 1 else -1
        return hits
    params = np.array([method_parameters(method, mu=a, lipschitz=b) for a, b in zip(np.broadcast_to(mu, n),
                                                                                   np.broadcast_to(lipschitz, n))])
    for start in range(0, n, EXACT_BATCH):
        part = slice(start, min(n, start + EXACT_BATCH))
        alpha, beta, nu = (params[part, i:i + 1] for i in range(3))
        first = _bisect_hits if not beta.any() else _stepped_hits
        hits[part] = first(lam[part], z[part], alpha, beta, nu, ladder, int(max_iters))
    return hits


def _bisect_hits(lam, z, alpha, beta, nu, ladder, max_iters: int) -> np.ndarray:
    """First hits without momentum: bisection on the monotone closed-form gap (see `exact_hits_many`)."""
    del beta, nu
    weight = lam * z * z
    total = weight.sum(axis=1)
    with np.errstate(divide="ignore"):
        log_r2 = 2.0 * np.log(np.abs(1.0 - alpha * lam))  # −inf where αλ = 1: that direction is solved at k = 1

    def gap(k):  # k: [lanes] ≥ 1
        with np.errstate(invalid="ignore"):
            return (weight * np.exp(k[:, None] * log_r2)).sum(axis=1) / total

    hits = np.full((lam.shape[0], ladder.size), -1, np.int64)
    for j, tol in enumerate(ladder):
        lo = np.zeros(lam.shape[0], np.int64)  # gap(0) = 1 > tol
        hi = np.full(lam.shape[0], max_iters, np.int64)
        reached = gap(hi.astype(np.float64)) <= tol
        while True:
            open_ = reached & (hi - lo > 1)
            if not open_.any():
                break
            mid = (lo + hi) // 2
            below = gap(mid.astype(np.float64)) <= tol
            hi = np.where(open_ & below, mid, hi)
            lo = np.where(open_ & ~below, mid, lo)
        hits[:, j] = np.where(reached, hi, -1)
    return hits


def _stepped_hits(lam, z, alpha, beta, nu, ladder, max_iters: int) -> np.ndarray:
    """First hits with momentum: every lane steps by `_step`'s recurrence until it meets the lowest rung; finished
    lanes leave the arrays (so the work follows the lanes still running)."""
    weight = lam * z * z
    total = weight.sum(axis=1)
    hits = np.full((lam.shape[0], ladder.size), -1, np.int64)
    live = np.arange(lam.shape[0])
    cur = {"lam": lam, "weight": weight, "total": total, "alpha": alpha, "beta": beta, "nu": nu > 0}
    p, m = np.ones_like(lam), np.zeros_like(lam)
    mine = hits.copy()
    for k in range(1, max_iters + 1):
        g = cur["lam"] * p
        m = g + cur["beta"] * m
        u = np.where(cur["nu"], g + cur["beta"] * m, m)
        p = p - cur["alpha"] * u
        gap = (cur["weight"] * p * p).sum(axis=1) / cur["total"]
        mine = np.where((gap[:, None] <= ladder[None, :]) & (mine < 0), k, mine)
        keep = (mine[:, -1] < 0) & np.isfinite(gap)
        if not keep.all():
            hits[live] = mine
            live, p, m, mine = live[keep], p[keep], m[keep], mine[keep]
            cur = {name: a[keep] for name, a in cur.items()}
            if live.size == 0:
                break
    hits[live] = mine
    return hits


@functools.lru_cache(maxsize=8)
def quadratic_lanes(spec, kappas: tuple, seeds: int, seed: int = 0, x64: bool = True):
    """(λ [κ, d], z [seed, κ, d]): every lane's spectrum and start as `quadratic_problem` builds them, all at once
    (one vmapped call per quantity), in float64 or, with ``x64`` False, rounded to float32. Cached: the methods of
    one sweep share them. λ is kept once per κ, not copied for every seed."""
    import jax
    import jax.numpy as jnp

    from otod.condition import quadratic

    family = spec.family()
    with jax.enable_x64(True):
        lam = jax.vmap(lambda k: quadratic.eigenvalues(spec.spectrum, spec.dim, k))(jnp.asarray(kappas, jnp.float64))
        starts = [family.draws(np.random.default_rng([seed, s]))["start"] for s in range(seeds)]
        stacked = {name: jnp.asarray(np.stack([st[name] for st in starts]), jnp.float64) for name in starts[0]}
        per_kappa = jax.vmap(lambda st, l: quadratic.start_coordinates(spec.start, st, l), in_axes=(None, 0))
        z = np.asarray(jax.vmap(per_kappa, in_axes=(0, None))(stacked, lam), np.float64)  # [seed, κ, d]
        lam = np.asarray(lam, np.float64)
    if not x64:
        lam, z = lam.astype(np.float32).astype(np.float64), z.astype(np.float32).astype(np.float64)
    return lam, z


def quadratic_exact_hits(spec, method: str, kappas, seeds: int, ladder, *, seed: int = 0, max_iters: int,
                         x64: bool = True) -> np.ndarray:
    """The ``·exact`` first hits [κ, seed, rung] of a quadratic sweep: every lane's own spectrum and start
    (`quadratic_lanes`, built in float64 or, with ``x64`` False, rounded to float32 as a float32 engine run
    builds it), by `exact_hits_many`, ``EXACT_BATCH`` lanes at a time."""
    lam, z = quadratic_lanes(spec, tuple(float(k) for k in kappas), int(seeds), int(seed), bool(x64))
    n_k = lam.shape[0]
    hits = np.empty((seeds * n_k, len(ladder)), np.int64)
    for start in range(0, seeds * n_k, EXACT_BATCH):
        lanes = np.arange(start, min(seeds * n_k, start + EXACT_BATCH))
        s_idx, k_idx = np.divmod(lanes, n_k)
        lam_b = lam[k_idx]
        hits[lanes] = exact_hits_many(method, lam_b, z[s_idx, k_idx], ladder, mu=lam_b.min(axis=1),
                                      lipschitz=lam_b.max(axis=1), max_iters=max_iters)
    return hits.reshape(seeds, n_k, -1).transpose(1, 0, 2)
