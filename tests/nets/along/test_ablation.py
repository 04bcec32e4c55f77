"""The NQM at a checkpoint and its ablation (`otod.nets.along.ablation`), on measurements whose NQMs are known to
coincide: where the measured noise is exactly C ∝ H the projected NQM is the scaled one, where the point is the
initialization the init-spectrum variant is the predictor, where the milestone is r × the seed's own gap the
fractional target is the absolute one; and the ablation's table and verdict on given numbers."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from otod.nets.along import ablation

#: A spectrum of three distinct eigenvalues (64 directions) and noise exactly C = κH, κ = 0.3.
H = np.array([0.1] * 40 + [1.0] * 20 + [5.0] * 4)
KAPPA = 0.3


def fake_measurement(monkeypatch, loss: float = 1.0):
    """Stand the Hessian's eigendecomposition and the gradient moments in with the spectrum `H` and noise
    cᵢ = κhᵢ on its eigenvectors (the NQM's own assumption, exactly)."""
    import otod.nets.measure.bridge as bridge
    import otod.nets.measure.noise_scale as noise_scale

    monkeypatch.setattr(bridge, "hessian_eigh", lambda problem: (H.copy(), np.eye(len(H))))
    c = KAPPA * H
    moments = {"loss": loss, "trace_h_sigma": float(np.sum(H * c)), "projected_sigma": c,
               "projected_gradient": np.ones_like(H), "b_simple": 1.0, "b_noise": 1.0}
    monkeypatch.setattr(noise_scale, "gradient_moments", lambda problem, **kw: moments)
    return SimpleNamespace(size=len(H), n=1000)


def test_each_nqm_gets_the_measured_noise_start_and_its_target(monkeypatch):
    """With the prediction replaced by a record of what it is given: every NQM's start loss is the seed's gap
    L − L_ref = 1.2 − 0.2 and its noise cost Σ hᵢcᵢ the measured tr(HΣ); the predictor and variants (a), (b) run to
    the net's milestone, 0.6 − 0.2 = 0.4 above L_ref, variant (c) to r·gap = 0.5; variant (a) uses the spectrum
    given (×2 here: the same noise cost and start loss, twice the curvature)."""
    from otod.noise.theory import initial_loss

    problem = fake_measurement(monkeypatch, loss=1.2)
    seen = []
    monkeypatch.setattr(ablation, "predicted_b_crit", lambda q, target, batches: seen.append(
        (initial_loss(q), float(np.sum(q.h * q.c)), float(np.max(q.h)), target)) or float(len(seen)))
    _, out, _ = ablation.nqm_at(problem, ablation.Setting(0.6, 0.5, 0.2, (1.0, 2.0)), init_eigenvalues=2 * H)
    trace = float(np.sum(H * KAPPA * H))
    assert out == {"nqm_scaled": 1.0, "nqm_projected": 2.0, "ablation_init_spectrum": 3.0, "ablation_fractional": 4.0}
    for start, cost, _, _ in seen:
        assert start == pytest.approx(1.0, rel=1e-12) and cost == pytest.approx(trace, rel=1e-12)
    assert [t for *_, t in seen] == pytest.approx([0.4, 0.4, 0.4, 0.5], rel=1e-12)
    assert [m for _, _, m, _ in seen] == pytest.approx([5.0, 5.0, 10.0, 5.0], rel=1e-12)


@pytest.mark.slow
def test_with_noise_exactly_proportional_to_h_the_projected_nqm_is_the_scaled_one(monkeypatch):
    """cᵢ = κhᵢ, three distinct eigenvalues (each its own bin): the binned C ∝ H NQM and the per-direction
    projected one are the same quadratic (a bin of m equal directions is one direction with (h, m·c, m·s₀)), so
    they predict the same B_crit (to rounding); at init (no init spectrum given) variant (a) is the predictor,
    and with milestone = r × the seed's loss (L_ref 0) variant (c) is too. The prediction is a finite batch.
    Slow: the exact search compiles its recursions on first use (about 5 s)."""
    problem = fake_measurement(monkeypatch)
    setting = ablation.Setting(milestone=0.5, fraction=0.5, reference_loss=0.0,
                               batches=tuple(float(2 ** k) for k in range(7)))
    _, out, eigenvalues = ablation.nqm_at(problem, setting)
    np.testing.assert_array_equal(eigenvalues, H)
    assert 0 < out["nqm_scaled"] < math.inf
    assert out["nqm_projected"] == pytest.approx(out["nqm_scaled"], rel=1e-6)
    assert out["ablation_init_spectrum"] == out["nqm_scaled"]
    assert out["ablation_fractional"] == pytest.approx(out["nqm_scaled"], rel=1e-12)


def test_a_target_above_the_start_gives_no_prediction(monkeypatch):
    """A milestone at or above the seed's loss, or a loss below the floor, predicts nothing (NaN), not an error."""
    problem = fake_measurement(monkeypatch, loss=0.4)
    setting = ablation.Setting(0.5, 0.5, 0.0, (1.0, 2.0, 4.0))
    _, out, _ = ablation.nqm_at(problem, setting)
    assert math.isnan(out["nqm_scaled"]) and math.isnan(out["nqm_projected"])
    _, below, _ = ablation.nqm_at(problem, ablation.Setting(0.1, 0.5, 0.5, (1.0, 2.0, 4.0)))
    assert all(math.isnan(v) for v in below.values())


def test_the_ablation_table_and_verdict_on_given_numbers():
    """B_crit 10 and 20; the predictor 100 and 400 (×10, ×20: typical ×√200, the median of two |log|s being their
    mean), the init-spectrum variant 20 and 40 (×2, ×2), the projected 10 and 20 (×1), the fractional as the
    predictor: verdict ratios 2/√200, 1/√200, 1."""
    from otod.nets.along.branching import Checkpoint
    from tests.nets.along.test_branching import point

    cps = [Checkpoint(step, 1.0, (1.0,), 0.5, (point(b, (0.5 * b, 2 * b)),), None, (), (),
                      {"nqm_scaled": (s,), "ablation_init_spectrum": (a,), "nqm_projected": (b,),
                       "ablation_fractional": (s,)})
           for step, b, s, a in ((0, 10.0, 100.0, 20.0), (100, 20.0, 400.0, 40.0))]
    rows = ablation.ablation_rows(cps)
    assert [r["nqm_scaled_ratio"] for r in rows] == [10.0, 20.0]
    verdict = {v["letter"]: v for v in ablation.verdict(rows)}
    typical = math.sqrt(200.0)
    assert verdict["a"]["factor"] == pytest.approx(2.0) and verdict["a"]["base_factor"] == pytest.approx(typical)
    assert verdict["a"]["shift"] == pytest.approx(2 / typical) and verdict["b"]["shift"] == pytest.approx(1 / typical)
    assert verdict["c"]["shift"] == pytest.approx(1.0)
    text = ablation.ablation_text(cps)
    assert "(a) spectrum from init" in text and "20 (×2)" in text and "100 (×10)" in text
