"""The NQM's exact theory (otod/noise/theory.py) against independent computations: step-by-step recursions,
brute-force first crossings, and the batch-size laws the seed papers state."""

from __future__ import annotations

import numpy as np
import pytest

from otod.core import critical_batch
from otod.noise import theory

Q = theory.nqm(50)


def test_sgd_closed_form_equals_the_moment_recursions_step_by_step():
    """s_t = a^t s₀ + q(1 − a^t)/(1 − a) equals both 1- and 3-component recursions stepped t times (rel 1e-12)."""
    lrs = np.array([0.01, 0.3, 1.2])
    noise = theory.noise_variance(Q, lrs, np.full(3, 4.0))
    for t in (0, 1, 17, 60):
        closed = theory.sgd_loss(Q, t, lrs, 4.0)
        three = theory.moments_after(theory.recursion("sgd", Q, lrs), t, noise)
        one = theory.moments_after(theory.sgd_recursion(Q, lrs), t, noise)
        np.testing.assert_allclose(closed, 0.5 * np.sum(Q.h * three[..., 0], -1), rtol=1e-12)
        np.testing.assert_allclose(closed, 0.5 * np.sum(Q.h * one[..., 0], -1), rtol=1e-12)


@pytest.mark.parametrize("method,power,beta", [("heavy-ball", 0.0, 0.9), ("ema", 0.0, 0.9), ("sgd", 0.5, 0.0),
                                               ("heavy-ball", 1.0, 0.5)])
def test_binary_jumps_equal_stepping(method, power, beta):
    """loss_at(t) by products of T^{2^k} equals t plain steps of the recursion (rel 1e-9)."""
    lrs = np.array([0.05, 0.4])
    rec = theory.recursion(method, Q, lrs, power, beta)
    noise = theory.noise_variance(Q, lrs, np.full(2, 8.0), power)
    for t in (1, 7, 64, 101):
        stepped = theory.moments_after(rec, t, noise)
        np.testing.assert_allclose(theory.loss_at(rec, Q, noise, t),
                                   0.5 * np.sum(Q.h * stepped[..., rec.read], -1), rtol=1e-9)


def test_heavy_ball_at_critical_damping_is_exact_where_an_eigendecomposition_would_not_be():
    """One direction with h = 1, η = (1 − √β)²: T has a repeated eigenvalue; the jumps still match stepping."""
    q = theory.Quadratic(np.ones(1), np.ones(1), np.ones(1))
    beta = 0.81
    lr = np.array([(1 - np.sqrt(beta)) ** 2])
    rec = theory.recursion("heavy-ball", q, lr, 0.0, beta)
    noise = theory.noise_variance(q, lr, np.ones(1))
    np.testing.assert_allclose(theory.loss_at(rec, q, noise, 300),
                               0.5 * theory.moments_after(rec, 300, noise)[..., 0, 0], rtol=1e-9)


@pytest.mark.parametrize("method,beta", [("sgd", 0.0), ("heavy-ball", 0.5), ("ema", 0.9)])
def test_hitting_steps_are_the_brute_force_first_crossing(method, beta):
    """Binary lifting gives the first t with E loss_t ≤ target found by scanning every t (exactly)."""
    lrs = np.array([0.02, 0.1, 0.5])
    batches = np.array([1.0, 16.0])
    target = 0.1
    got = theory.method_hitting_steps(method, Q, lrs, batches, target, 5000, beta=beta)
    rec = theory.recursion(method, Q, lrs, 0.0, beta)
    for i, b in enumerate(batches):
        noise = theory.noise_variance(Q, lrs, np.full(3, b))
        M = np.array(rec.M0)
        first = np.full(3, -1)
        for t in range(1, 5000):
            M = np.einsum("...ij,...j->...i", rec.T, M) + noise[..., None] * rec.f
            loss = 0.5 * np.sum(Q.h * M[..., rec.read], -1)
            first = np.where((first < 0) & (loss <= target), t, first)
        assert got[i].tolist() == first.tolist()


def test_sgd_hitting_steps_find_a_dip_that_rises_above_the_target_again():
    """With noise C = I (``--noise-spectrum identity``) the slow directions start below their noise floor
    η/(B h (2 − ηh)) and rise while the fast ones fall, so the loss (3.14 at the start) can dip below a target and
    rise above it again: at B = 16 and lr 0.48 it first reaches 2.0 at step 5 (1.931) and is 2.27 at step 2000.
    The counts are the first crossings of a scan of every t by the closed form (`sgd_loss`), in every lane; a
    lifting that read only its jumps' ends reported that lane and B = 64 at lr 1.9 (step 3) as never arriving."""
    q = theory.nqm(300, "identity")
    lrs = np.geomspace(1e-3, 1.9, 12)
    batches = np.array([1.0, 4.0, 16.0, 64.0])
    got = theory.method_hitting_steps("sgd", q, lrs, batches, 2.0, 2000)
    t = np.arange(0, 2001)
    dips = 0
    for i, b in enumerate(batches):
        loss = theory.sgd_loss(q, t[:, None], lrs[None, :], b)
        below = loss <= 2.0
        first = np.where(below.any(0), np.argmax(below, 0), -1)
        assert got[i].tolist() == first.tolist()
        dips += int(np.sum((first > 0) & ~below[-1]))
    assert got[2, 9] == 5 and got[3, 11] == 3 and dips >= 2


# -- the batch-size laws on the exact NQM (d = 1000, target 0.01) -------------------------------------------------

FINE = 2.0 ** (np.arange(-56, 3) / 4)  # lr grid, 2^(1/4) apart
BATCHES = 2.0 ** np.arange(0, 15)
NQM = theory.nqm(1000)


def best(method, lrs=FINE, power=0.0, betas=(0.0,)):
    """(steps, lr) at each batch: the minimum over the lr (and β) grid."""
    tables = []
    for beta in betas:
        s = theory.method_hitting_steps(method, NQM, lrs, BATCHES, 0.01, 10 ** 8, power, beta).astype(float)
        tables.append(np.where(s < 0, np.inf, s))
    s = np.min(tables, axis=0)
    return s.min(1), lrs[s.argmin(1)]


@pytest.fixture(scope="module")
def sgd():
    return best("sgd")


def test_small_batch_regime_halves_steps_per_doubling_and_the_best_lr_grows_linearly(sgd):
    """B = 1..16: S(2B)/S(B) = 0.5 ± 0.02, and the best lr's log-log slope in B is 1 ± 0.05."""
    steps, lrs = sgd
    ratios = steps[1:5] / steps[:4]
    assert np.all(np.abs(ratios - 0.5) <= 0.02), ratios
    slope = np.polyfit(np.log(BATCHES[:5]), np.log(lrs[:5]), 1)[0]
    assert abs(slope - 1.0) <= 0.05, slope


def test_beyond_the_critical_batch_more_batch_buys_little(sgd):
    """At B ≥ 8·B_crit doubling B saves less than 5% of the steps; the ideal estimator's d/(2·target·B) bounds
    every count."""
    steps, _ = sgd
    s_min, b_crit = critical_batch.mccandlish_fit(BATCHES, steps)
    far = BATCHES >= 8 * b_crit
    assert far.sum() >= 2 and np.all(steps[1:][far[:-1]] / steps[:-1][far[:-1]] >= 0.95)
    assert np.all(steps >= theory.ideal_steps(1000, 0.01, BATCHES))


def test_preconditioning_extends_perfect_scaling(sgd):
    """B_crit and the perfect-scaling limit grow with p: p = 0 < 0.5 < 1."""
    coarse = FINE[::2]
    fits, limits = [], []
    for p, steps in ((0.0, sgd[0]), (0.5, best("precond", coarse, 0.5)[0]), (1.0, best("precond", coarse, 1.0)[0])):
        fits.append(critical_batch.mccandlish_fit(BATCHES, steps)[1])
        limits.append(critical_batch.perfect_scaling_limit(BATCHES, steps))
    assert fits[0] < fits[1] < fits[2], fits
    assert limits[0] < limits[1] < limits[2], limits


def test_momentum_helps_only_at_large_batch(sgd):
    """Heavy-ball with β tuned over {0, 0.5, 0.9, 0.99}: within 5% of SGD's steps at B ≤ 16, at least 4× fewer at
    B ≥ 4096 (Zhang et al. 2019, fig. 3)."""
    hb = best("heavy-ball", FINE[::2], betas=(0.0, 0.5, 0.9, 0.99))[0]
    gain = sgd[0] / hb
    assert np.all(gain[BATCHES <= 16] <= 1.05), gain
    assert np.all(gain[BATCHES >= 4096] >= 4.0), gain


def test_the_ema_of_iterates_helps_only_at_small_batch(sgd):
    """EMA with γ tuned over {0.5, 0.9, 0.99}: at least 15% fewer steps than SGD for 2 ≤ B ≤ 512, within 1% at
    B ≥ 8192."""
    ema = best("ema", FINE[::2], betas=(0.5, 0.9, 0.99))[0]
    gain = sgd[0] / ema
    assert np.all(gain[(BATCHES >= 2) & (BATCHES <= 512)] >= 1.15), gain
    assert np.all(gain[BATCHES >= 8192] <= 1.01), gain


def test_isotropic_steps_grow_like_d_at_fixed_batch_and_stay_flat_with_batch_proportional_to_d():
    """Noise-dominated (dσ²/B ≫ target): exponent of steps vs d is 1 ± 0.1 at B = 4 and 0 ± 0.1 at B = d/10."""
    dims = np.array([100, 300, 1000, 3000, 10000])
    lrs = 2.0 ** (np.arange(-40, 2) / 2)
    fixed, proportional = [], []
    for d in dims:
        q = theory.isotropic(int(d))
        for out, b in ((fixed, 4.0), (proportional, d / 10)):
            s = theory.method_hitting_steps("sgd", q, lrs, np.array([b]), 0.05, 10 ** 8)[0].astype(float)
            out.append(np.where(s < 0, np.inf, s).min())
    assert abs(np.polyfit(np.log(dims), np.log(fixed), 1)[0] - 1.0) <= 0.1
    assert abs(np.polyfit(np.log(dims), np.log(proportional), 1)[0]) <= 0.1


def test_noise_scales_at_the_start_of_the_nqm():
    """At θ₀ ~ N(0, I) with C = H: B_simple = Σ1/i ÷ Σ1/i² and B_noise = Σ1/i² ÷ Σ1/i³ (d = 50)."""
    i = np.arange(1, 51)
    simple, noise = theory.noise_scales(Q, Q.s0)
    assert simple == pytest.approx(np.sum(1 / i) / np.sum(1 / i ** 2), rel=1e-12)
    assert noise == pytest.approx(np.sum(1 / i ** 2) / np.sum(1 / i ** 3), rel=1e-12)
    # whitened by H^{-1}: Σ_w = I·(c/h) = I, G_w = H^{1/2}θ: B_simple = d / Σ h
    assert theory.noise_scales(Q, Q.s0, power=1.0)[0] == pytest.approx(50 / np.sum(1 / i), rel=1e-12)
