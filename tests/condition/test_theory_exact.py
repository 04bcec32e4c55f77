"""Residual polynomials, worst-case bounds and exact counts (`otod.condition.theory`) against closed forms, against
each other, and against the engine's float64 measurements."""

import math

import jax
import numpy as np
import pytest

from otod.condition import theory
from otod.condition.quadratic import QuadraticSpec
from otod.core.sweep import run_sweep

from tests.conftest import SPECTRA, spectrum_sweep

TOL = 1e-6
FIRST_ORDER = ("gd", "gd-opt", "heavy-ball", "nesterov")


def _first(predicate, start=1):
    k = start
    while not predicate(k):
        k += 1
    return k


def test_rate_is_the_old_iterations():
    """`iterations` stays the asymptotic-rate count (gd-opt at κ = 100: 346)."""
    assert theory.iterations is theory.rate_iterations
    assert theory.rate_iterations("gd-opt", 100, TOL) == 346


def test_recurrences_match_the_three_term_forms_and_the_double_roots():
    """The engine-order recurrence equals the textbook three-term recurrences (to 1e-12), and at the double roots
    (κ = 100, ρ_hb = 9/11, ρ_nes = 0.9): p_k(L) = (1 + (1+ρ)k)(−ρ)^k for heavy ball, p_k(μ) = (1 + k/11)·0.9^k
    for nesterov, to 1e-12."""
    kappa, steps = 100.0, 80
    lam = np.concatenate([[1.0, kappa], np.geomspace(1.0, kappa, 9)[1:-1]])
    k = np.arange(steps + 1)
    for method in ("heavy-ball", "nesterov"):
        alpha, beta, _ = theory.method_parameters(method, mu=1.0, lipschitz=kappa)
        p = theory.residual_polynomials(method, lam, steps, mu=1.0, lipschitz=kappa)
        a = alpha * lam
        q = np.empty_like(p)
        q[0] = 1.0
        if method == "heavy-ball":
            q[1] = 1 - a
            for j in range(1, steps):
                q[j + 1] = (1 + beta - a) * q[j] - beta * q[j - 1]
        else:
            q[1] = 1 - (1 + beta) * a
            for j in range(1, steps):
                q[j + 1] = (1 + beta) * (1 - a) * q[j] - beta * (1 - a) * q[j - 1]
        np.testing.assert_allclose(p, q, rtol=0, atol=1e-12)
    rho = 9 / 11
    p = theory.residual_polynomials("heavy-ball", [kappa], steps, mu=1.0, lipschitz=kappa)[:, 0]
    np.testing.assert_allclose(p, (1 + (1 + rho) * k) * (-rho) ** k, rtol=1e-12, atol=1e-15)
    p = theory.residual_polynomials("nesterov", [1.0], steps, mu=1.0, lipschitz=kappa)[:, 0]
    np.testing.assert_allclose(p, (1 + k / 11) * 0.9 ** k, rtol=1e-12, atol=1e-15)
    assert np.all(theory.residual_polynomials("newton", lam, 3, mu=1.0, lipschitz=kappa)[1:] == 0)


@pytest.mark.parametrize("kappa", [10.0, 100.0, 1000.0])
def test_gd_exact_on_two_point_equal_loss(kappa):
    """Two-point spectrum, equal-loss start (w = ½ at μ and at L): gd (α = 1/L) leaves ½(1 − 1/κ)^{2k}, so
    k = ⌈ln(1/(2·tol)) / (2 ln(κ/(κ−1)))⌉ (653 at κ = 100); gd-opt leaves ρ^{2k}, ρ = (κ−1)/(κ+1), so
    k = ⌈ln(1/tol) / (2 ln(1/ρ))⌉ (346 at κ = 100). Both exactly, through the quadratic family's own lane too."""
    gd = math.ceil(math.log(1 / (2 * TOL)) / (2 * math.log(kappa / (kappa - 1))))
    opt = math.ceil(math.log(1 / TOL) / (2 * math.log((kappa + 1) / (kappa - 1))))
    if kappa == 100.0:
        assert (gd, opt) == (653, 346)
    lam = np.array([1.0, kappa] * 4)
    z = np.array([1, -1, -1, 1, 1, 1, -1, -1]) / np.sqrt(lam)
    assert theory.exact_iterations("gd", lam, z, TOL, mu=1.0, lipschitz=kappa) == gd
    assert theory.exact_iterations("gd-opt", lam, z, TOL, mu=1.0, lipschitz=kappa) == opt
    spec = QuadraticSpec(dim=8, spectrum="two-point", start="equal-loss")
    with jax.enable_x64(True):
        assert theory.quadratic_lane_iterations(spec, "gd", kappa, 1, TOL) == gd
        assert theory.quadratic_lane_iterations(spec, "gd-opt", kappa, 2, TOL) == opt


@pytest.mark.parametrize("method", ["gd", "gd-opt"])
def test_gd_bound_is_the_rate(method):
    """For gd and gd-opt |1 − αλ| peaks at an endpoint at ρ = 1 − 1/κ resp. (κ−1)/(κ+1), so the bound is exactly
    ⌈ln(1/tol) / (2 ln(1/ρ))⌉ (gd at κ = 100, tol 1e-6: 688), at every κ and tol tried."""
    assert theory.bound_iterations("gd", 100.0, TOL) == 688
    for kappa in (2.0, 10.0, 100.0, 1e3, 1e4, 1e5):
        rho = 1 - 1 / kappa if method == "gd" else (kappa - 1) / (kappa + 1)
        for tol in (1e-3, 1e-6, 1e-10):
            expected = math.ceil(math.log(1 / tol) / (2 * math.log(1 / rho)))
            assert theory.bound_iterations(method, kappa, tol, max_iters=10**7) == expected
            assert theory.rate_iterations(method, kappa, tol) == expected


def test_heavy_ball_bound_is_its_closed_form():
    """Heavy ball's worst case is at λ = L: max_λ p_k² = (1 + (1+ρ)k)² ρ^{2k}, ρ = (√κ−1)/(√κ+1), so the bound is
    the first k with that ≤ tol: 58 at κ = 100 (rate 35), 708 at κ = 10⁴ (rate 346); exactly, at every κ tried."""
    assert theory.bound_iterations("heavy-ball", 100.0, TOL) == 58
    assert theory.bound_iterations("heavy-ball", 1e4, TOL) == 708
    for kappa in (4.0, 30.0, 1e3, 3e4):
        rho = (math.sqrt(kappa) - 1) / (math.sqrt(kappa) + 1)
        expected = _first(lambda k: (1 + (1 + rho) * k) ** 2 * rho ** (2 * k) <= TOL)
        assert theory.bound_iterations("heavy-ball", kappa, TOL) == expected


@pytest.mark.parametrize("method,expected", [("heavy-ball", 58), ("nesterov", 87)])
def test_bound_is_the_maximum_on_a_dense_grid(method, expected):
    """κ = 100: on 20,001 λ (uniform and Chebyshev-spaced in [1, 100], by the plain recurrence, independent of the
    bound's own grid and certification) max p_k² ≤ tol first at k = 58 (heavy ball), 87 (nesterov)."""
    kappa = 100.0
    lam = np.concatenate([np.linspace(1.0, kappa, 10_001),
                          50.5 - 49.5 * np.cos(np.linspace(0.0, math.pi, 10_000))])
    worst = np.max(theory.residual_polynomials(method, lam, expected + 5, mu=1.0, lipschitz=kappa) ** 2, axis=1)
    assert int(np.flatnonzero(worst <= TOL)[0]) == expected
    assert theory.bound_iterations(method, kappa, TOL) == expected


@pytest.mark.parametrize("method,interval,expected,endpoints_only",
                         [("heavy-ball", (3.0, 97.0), 42, 35), ("nesterov", (2.0, 50.0), 65, 52)])
def test_bound_catches_interior_maxima(method, interval, expected, endpoints_only):
    """With κ = 100's parameters on a spectrum interval strictly inside [1, 100] the maximum of p_k² is interior:
    checking the endpoints alone would stop at k = 35 (heavy ball on [3, 97]) or 52 (nesterov on [2, 50]), but
    the dense-grid maximum (40,002 λ, plain recurrence) first falls below tol at 42 resp. 65, and so must the
    certified bound."""
    lo, hi = interval
    lam = np.concatenate([np.linspace(lo, hi, 20_001),
                          (hi + lo) / 2 - (hi - lo) / 2 * np.cos(np.linspace(0.0, math.pi, 20_001))])
    p2 = theory.residual_polynomials(method, lam, expected + 5, mu=1.0, lipschitz=100.0) ** 2
    assert int(np.flatnonzero(p2.max(axis=1) <= TOL)[0]) == expected
    assert int(np.flatnonzero(np.maximum(p2[:, 0], p2[:, 20_000]) <= TOL)[0]) == endpoints_only
    assert theory.bound_iterations(method, 100.0, TOL, interval=interval) == expected
    k = expected - 1
    assert theory.worst_case_gap(method, 100.0, k, interval=interval) == pytest.approx(p2[k].max(), rel=1e-3)


def test_certification_sees_between_grid_points():
    """Heavy ball with κ = 100's α, β on [2, 50], k = 41: on the certifier's first uniform grid (⌈41π⌉ + 1
    intervals in φ) max p² = 1.1287e-7, but between its points it reaches 1.1321e-7 (2,000,001 points). With tol
    between the two the certification must refuse; with tol 0.05 % above the true maximum it must prove it."""
    alpha, beta, nu = theory.method_parameters("heavy-ball", mu=1.0, lipschitz=100.0)
    k, lo, hi = 41, 2.0, 50.0
    n0 = math.ceil(math.pi * k) + 1
    lam0 = (hi + lo) / 2 - (hi - lo) / 2 * np.cos(np.linspace(0.0, math.pi, n0 + 1))
    grid = np.max(theory.residual_polynomials("heavy-ball", lam0, k, mu=1.0, lipschitz=100.0)[k] ** 2)
    true = theory.worst_case_gap("heavy-ball", 100.0, k, interval=(lo, hi), points=2_000_001)
    assert grid == pytest.approx(1.1287e-7, rel=1e-4) and true == pytest.approx(1.1321e-7, rel=1e-4)
    assert not theory._certify(k, alpha, beta, nu, lo, hi, math.sqrt(grid * true))
    assert theory._certify(k, alpha, beta, nu, lo, hi, 1.0005 * true)


@pytest.mark.parametrize("method", ["heavy-ball", "nesterov"])
def test_momentum_bounds_exceed_the_rate_and_grow_like_root_kappa(method):
    """The double root costs a factor (1 + ck): the bound exceeds the rate count at every κ (heavy ball ≈ 1.9–2.2×,
    nesterov ≈ 1.33× over κ ∈ [10³, 10⁵]), and its log-log slope over that range is 0.5 ± 0.05 (heavy ball
    0.54: the log factor; nesterov 0.50)."""
    kappas = np.geomspace(1e3, 1e5, 5)
    bounds = np.array([theory.bound_iterations(method, k, TOL) for k in kappas], float)
    rates = np.array([theory.rate_iterations(method, k, TOL) for k in kappas], float)
    assert np.all(bounds > 1.25 * rates)
    slope = np.polyfit(np.log(kappas), np.log(bounds), 1)[0]
    assert abs(slope - 0.5) <= 0.05


@pytest.mark.parametrize("method", ["gd", "gd-opt", "heavy-ball", "nesterov", "newton", "kfac"])
def test_exact_never_exceeds_the_bound_and_the_bound_is_attained(method):
    """On 40 random spectra inside [1, κ] (κ = 10 and 1000; log-uniform, some with the endpoints) with random,
    equal-mass and one-eigenvalue starts, exact ≤ bound; and a start on the worst eigenvalue (λ = L for heavy
    ball, μ for gd and nesterov, 1+ε for kfac with ε = 0.3) needs exactly the bound."""
    rng = np.random.default_rng(7)
    worst_at = {"gd": "mu", "gd-opt": "mu", "nesterov": "mu", "heavy-ball": "L", "newton": "mu", "kfac": "L"}
    for kappa in (10.0, 1000.0):
        mu, lipschitz = (1.0, 1.3) if method == "kfac" else (1.0, kappa)
        bound = theory.bound_iterations(method, kappa, TOL, perturbation=0.3)
        for trial in range(20):
            n = int(rng.integers(2, 30))
            lam = np.exp(rng.uniform(math.log(mu), math.log(lipschitz), n))
            if trial % 2:
                lam[:2] = mu, lipschitz
            z = rng.standard_normal(n) if trial % 3 else rng.choice([-1.0, 1.0], n)
            exact = theory.exact_iterations(method, lam, z, TOL, mu=1.0, lipschitz=kappa)
            assert exact <= bound
        single = np.array([mu if worst_at[method] == "mu" else lipschitz])
        assert theory.exact_iterations(method, single, [1.0], TOL, mu=1.0, lipschitz=kappa) == bound


def test_exact_is_vectorised_and_says_when_not_reached(monkeypatch):
    """100 eigenvalues × 10⁵ iterations (gd at κ = 10⁶ needs ~7·10⁶): None, every iteration checked, in
    ⌈10⁵/512⌉ = 196 NumPy passes of at most 512 iterations each over all 100 eigenvalues at once, not one per
    iteration: what makes it fast (about 0.1 s), counted instead of timed."""
    passes = []
    first_hit = theory._first_hit

    def counted(lam, alpha, beta, nu, max_iters, reduce, accept, **kwargs):
        def counting(values):
            passes.append(values.shape)
            return reduce(values)

        return first_hit(lam, alpha, beta, nu, max_iters, counting, accept, **kwargs)

    monkeypatch.setattr(theory, "_first_hit", counted)
    lam = np.geomspace(1.0, 1e6, 100)
    assert theory.exact_iterations("gd", lam, np.ones(100), TOL, mu=1.0, lipschitz=1e6, max_iters=100_000) is None
    assert len(passes) == math.ceil(100_000 / 512) == 196
    assert all(shape[1:] == (100,) and 1 <= shape[0] <= 512 for shape in passes)
    assert sum(shape[0] for shape in passes) == 100_000


@pytest.mark.parametrize("spectrum,start", SPECTRA)
def test_lane_counts_equal_the_engine(tmp_path, spectrum, start):
    """``quadratic_lane_iterations`` = the float64 engine's count exactly, for gd, gd-opt, heavy-ball and nesterov,
    κ ∈ {10, 100, 1000}, seeds 0–2, d = 24 (36 lanes per spectrum, 108 in all), read from the records of
    test_predictions' sweep of the pair (`spectrum_sweep`: the same program, compiled once for both). A wider
    check (tol 1e-6 and 1e-10, d up to 100, κ up to 10⁴, five spectrum × start pairs, eigen and rotated bases:
    3,380 lanes) found no lane differing, so no ±1 rounding allowance is made."""
    config = spectrum_sweep(spectrum, start)
    assert config.methods == FIRST_ORDER and config.target.tol == TOL
    records = run_sweep(config, out_dir=tmp_path).records
    lanes = [r for r in records if r["kappa"] in (10.0, 100.0, 1000.0) and r["seed"] < 3]
    assert len(lanes) == 36 and {r["status"] for r in lanes} == {"converged"}
    with jax.enable_x64(True):  # the sweep's precision: its spectra and starts drawn in float64
        ours = [theory.quadratic_lane_iterations(config.problem, r["method"], r["kappa"], r["seed"], TOL,
                                                 max_iters=50_000) for r in lanes]
    assert [r["iterations"] for r in lanes] == ours
