"""`otod.nets.measure.noise_scale` against a direct Python loop over examples (no vmap, H by ``jax.hessian``), in float64,
and B_simple of the Gaussian-linear model against its closed form."""

from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from otod.nets.measure import noise_scale as ns
from otod.nets.model.family import seed_starts, start_of
from otod.nets.model.problem import NetSpec
from otod.noise.theory import two_batch_estimates

#: Float64 sums of a few hundred terms in a different order: 1e-10 relative leaves 10⁵ ulps of room, and a 1/n vs
#: 1/(n − 1) slip (1/12 relative here) or a missing centring fails it by orders of magnitude.
RTOL = 1e-10
TINY = [NetSpec(model="mlp", width=4, depth=2, activation="tanh", data="teacher", examples=12, inputs=3,
                outputs=2, loss="squared", batch=4),
        NetSpec(model="mlp", width=3, depth=2, activation="relu", data="digits", examples=10,
                loss="cross-entropy", batch=4)]


def start(spec, s=0):
    return start_of(spec, seed_starts(spec, np.random.default_rng([0, s])))


def direct(spec, params):
    """Per-example gradients one at a time, their mean and covariance (1/n), and H by jax.hessian: NumPy."""
    from jax.flatten_util import ravel_pytree

    with jax.enable_x64(True):
        params = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), params)
        flat, unflatten = ravel_pytree(params)
        x, y = (jnp.asarray(a) for a in spec.training_arrays(np.float64))
        one = jax.jit(jax.grad(lambda v, xi, yi: spec.example_loss(unflatten(v), xi, yi)))  # one example a call
        grads = np.stack([np.asarray(one(flat, x[i], y[i])) for i in range(x.shape[0])])
        H = np.asarray(jax.jit(jax.hessian(lambda v: spec.mean_loss(unflatten(v), x, y)))(flat))
    G = grads.mean(0)
    D = grads - G
    return grads, G, D.T @ D / len(grads), 0.5 * (H + H.T)


@pytest.mark.parametrize("spec", [TINY[0], pytest.param(TINY[1], marks=pytest.mark.slow)],  # digits: 6.5 s
                         ids=["teacher-tanh", "digits-relu"])
def test_exact_moments_equal_a_loop_over_examples(spec):
    params = start(spec)
    grads, G, sigma, H = direct(spec, params)
    basis = np.linalg.qr(np.random.default_rng(3).standard_normal((len(G), len(G))))[0]
    with jax.enable_x64(True):
        problem = ns.Problem(spec, params)
        out = ns.gradient_moments(problem, basis=basis)
        rows = np.array([[0, 3, 5, 7], [9, 1, 2, 4]])
        small, big = ns.batch_norms(problem, rows, 2)
    assert out["parameters"] == spec.parameter_count == len(G)
    np.testing.assert_allclose(out["gradient"], G, rtol=RTOL, atol=1e-14)
    assert out["g2"] == pytest.approx(G @ G, rel=RTOL)
    assert out["trace_sigma"] == pytest.approx(np.trace(sigma), rel=RTOL)
    assert out["gHg"] == pytest.approx(G @ H @ G, rel=RTOL)
    assert out["trace_h_sigma"] == pytest.approx(np.trace(H @ sigma), rel=RTOL)
    assert out["trace_h_sigma_se"] == 0.0
    assert out["b_simple"] == pytest.approx(np.trace(sigma) / (G @ G), rel=RTOL)
    assert out["b_noise"] == pytest.approx(np.trace(H @ sigma) / (G @ H @ G), rel=RTOL)
    np.testing.assert_allclose(out["projected_sigma"], np.diag(basis.T @ sigma @ basis), rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(out["projected_gradient"], basis.T @ G, rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(small, [np.sum(grads[r[:2]].mean(0) ** 2) for r in rows], rtol=RTOL)
    np.testing.assert_allclose(big, [np.sum(grads[r].mean(0) ** 2) for r in rows], rtol=RTOL)


def test_chunked_passes_equal_one_pass(monkeypatch):
    """Chunks of 1 gradient and 1 HVP (the bounded-memory path) give the one-chunk numbers; so do the two-batch
    norms, then summed row by row over chunks of one example (a row no longer fits a chunk)."""
    spec = TINY[0]
    params = start(spec)
    rows = np.array([[0, 3, 5, 7], [9, 1, 2, 4], [11, 10, 8, 6]])
    with jax.enable_x64(True):
        whole_problem = ns.Problem(spec, params)
        whole, whole_norms = ns.gradient_moments(whole_problem), ns.batch_norms(whole_problem, rows, 2)
        monkeypatch.setattr(ns, "CHUNK_FLOATS", 1)
        problem = ns.Problem(spec, params)
        assert problem.gradient_chunk() == problem.hvp_chunk() == 1
        pieces, piece_norms = ns.gradient_moments(problem), ns.batch_norms(problem, rows, 2)
    for key in ("g2", "gHg", "trace_sigma", "trace_h_sigma"):
        assert pieces[key] == pytest.approx(whole[key], rel=RTOL)
    for a, b in zip(piece_norms, whole_norms):
        assert a.shape == (3,)
        np.testing.assert_allclose(a, b, rtol=RTOL)


@pytest.mark.slow  # 6.5 s
def test_subsampled_trace_is_unbiased_within_its_standard_error():
    spec = TINY[1]
    params = start(spec)
    with jax.enable_x64(True):
        problem = ns.Problem(spec, params)
        exact = ns.gradient_moments(problem)["trace_h_sigma"]
        draws = [ns.gradient_moments(problem, trace_examples=5, seed=s) for s in range(20)]
    values = np.array([d["trace_h_sigma"] for d in draws])
    se = np.array([d["trace_h_sigma_se"] for d in draws])
    assert np.all(se > 0) and all(d["trace_examples"] == 5 for d in draws)
    # the mean of 20 unbiased draws lies within 4 of its standard errors (≈ rms se/√20) of the exact value
    assert abs(values.mean() - exact) < 4 * np.sqrt(np.mean(se ** 2) / 20)


def test_effective_batch_makes_two_batch_estimates_exact_in_expectation():
    """Over every nested draw without replacement (all subsets, enumerated), the two-batch estimates fed the
    effective batches B(n − 1)/(n − B) average to |G|² and tr Σ (1/n) exactly."""
    rng = np.random.default_rng(0)
    n, bs, bb = 7, 2, 4
    g = rng.standard_normal((n, 3)) + 0.3
    G = g.mean(0)
    trace = np.sum((g - G) ** 2) / n
    subsets = list(itertools.combinations(range(n), bb))
    # the small batch is a uniform bs-subset of the big one: average over them
    small = np.array([np.mean([np.sum(g[list(p)].mean(0) ** 2) for p in itertools.combinations(c, bs)])
                      for c in subsets])
    big = np.array([np.sum(g[list(c)].mean(0) ** 2) for c in subsets])
    g2, tr = two_batch_estimates(small, big, float(ns.effective_batch(bs, n)), float(ns.effective_batch(bb, n)))
    assert np.mean(g2) == pytest.approx(G @ G, rel=1e-12)
    assert np.mean(tr) == pytest.approx(trace, rel=1e-12)
    assert math.isinf(float(ns.effective_batch(n, n)))


def test_two_batch_estimates_agree_with_the_exact_values_within_their_spread():
    spec = TINY[0]
    params = start(spec)
    with jax.enable_x64(True):
        problem = ns.Problem(spec, params)
        exact = ns.gradient_moments(problem)
        est = ns.two_batch(problem, 2, 6, draws=400, seed=1)
    assert abs(est["g2_estimate"] - exact["g2"]) < 4 * est["g2_estimate_se"]
    assert abs(est["trace_sigma_estimate"] - exact["trace_sigma"]) < 4 * est["trace_sigma_estimate_se"]
    assert est["b_simple_estimate_lo"] < est["b_simple_estimate"] < est["b_simple_estimate_hi"]
    with pytest.raises(ValueError):
        ns.two_batch(problem, 6, 6)


def test_a_two_batch_ratio_that_is_no_batch_size_is_printed_undefined_with_its_reason():
    """tr Σ̂ ∝ |G_small|² − |G_big|² and |Ĝ|² ∝ B_big|G_big|² − B_small|G_small|²: where either mean is ≤ 0 their
    ratio is a negative "batch", so the table says undefined and why, and a resolved pair prints its number."""
    assert ns.two_batch_note(2.0, 1.0, 0.5, 3.0, 8, 64) is None
    noise = ns.two_batch_note(1.0, 1.2, 0.5, -0.4, 8, 64)
    assert noise.startswith("undefined: mean |G_small|² 1 is not above mean |G_big|² 1.2 at 8:64")
    assert "tr Σ estimate is -0.4 ≤ 0" in noise
    assert "|G|² estimate is -0.5 ≤ 0" in ns.two_batch_note(2.0, 1.0, -0.5, 3.0, 8, 64)
    exact = {"step": 0, "loss": 1.0, "g2": 1.0, "trace_sigma": 2.0, "gHg": 1.0, "trace_h_sigma": 2.0,
             "trace_h_sigma_se": 0.0, "b_simple": 2.0, "b_noise": 2.0, "draws": 8}
    pair = {"g2_estimate": -0.5, "g2_estimate_se": 0.1, "trace_sigma_estimate": 3.0, "trace_sigma_estimate_se": 1.0,
            "b_simple_estimate": -6.0, "b_simple_estimate_lo": -9.0, "b_simple_estimate_hi": 4.0}
    records = [{**exact, **pair, "b_small": 8, "b_big": 64, "b_simple_estimate_note": "undefined: why"},
               {**exact, **pair, "b_small": 32, "b_big": 256, "b_simple_estimate": 6.0, "b_simple_estimate_note": None}]
    text = ns.net_report(None, records, 0.1, 0, "a model", 32)
    assert "-6" not in text and "undefined (below)" in text and "8:64  B_simple est undefined: why" in text
    assert "6 [-9, 4]" in text


def test_measure_along_records_checkpoints_and_pairs():
    spec = TINY[0]
    records = ns.measure_along(spec, [0, 5], lr=0.05, pairs=((2, 6), (4, 100)), draws=8)
    assert [(r["step"], r["b_small"]) for r in records] == [(0, 2), (5, 2)]  # 4:100 exceeds n = 12: left out
    assert records[1]["loss"] < records[0]["loss"]
    assert all(r["b_simple"] > 0 and r["b_noise"] > 0 and r["lr"] == 0.05 for r in records)


@pytest.mark.slow  # 11 s; least squares' noise scales against their closed forms stay fast (tests/nets/model/test_contract.py)
def test_b_simple_of_the_gaussian_linear_model_matches_its_closed_form():
    """y = xᵀw* + σε, x ~ N(0, I_d), the model xᵀw + b from b = 0, squared loss: with δ = w − w*, G = (δ, 0) and,
    by Gaussian fourth moments (E|x|²(xᵀδ)² = (d + 2)|δ|²), tr Σ = (d + 2)|δ|² + (d + 1)σ², so
    B_simple = d + 2 + (d + 1)σ²/|δ|² (population values; B_noise is the same, H = I). Measured on n = 65536
    examples, tr Σ carries the sampling error of a mean of the n per-example |gᵢ|²: allowed 4 of its standard
    errors (std of |gᵢ|² / √n, from the data; 4.5% here), and the same relative room for |G|² and B_noise
    (tr(HΣ) from 2048 examples, within 4 of its own standard errors more)."""
    d, sigma, n = 6, 0.7, 65536
    spec = NetSpec(data="gaussian", loss="squared", depth=1, activation="linear", inputs=d, examples=n,
                   label_noise=sigma, batch=8)
    params = start(spec)
    rng = np.random.default_rng([0, 7])  # the data set's own draws (otod.nets.model.data.load): x, then w*
    rng.standard_normal((n + int(round(0.2 * n / 0.8)), d))
    w_star = rng.standard_normal((d, 1)) / np.sqrt(d)
    delta = float(np.sum((params[0]["w"] - w_star) ** 2))
    closed = d + 2 + (d + 1) * sigma ** 2 / delta
    x, y = spec.training_arrays(np.float64)
    r = x @ params[0]["w"][:, 0] - y[:, 0]
    per_example = (np.sum(x * x, 1) + 1.0) * r * r  # |gᵢ|² = |(xᵢ, 1)|² rᵢ²
    rel = 4 * np.std(per_example) / np.sqrt(n) / np.mean(per_example)
    assert 0.005 < rel < 0.06
    out = ns.measure(spec, params, pairs=(), trace_examples=2048)[0]
    assert out["b_simple"] == pytest.approx(closed, rel=rel)
    assert out["g2"] == pytest.approx(delta, rel=rel)
    assert abs(out["b_noise"] - closed) < rel * closed + 4 * out["trace_h_sigma_se"] / out["gHg"]


def test_moving_a_problem_between_points_equals_a_fresh_one():
    spec = TINY[0]
    a, b = start(spec, 0), start(spec, 1)
    with jax.enable_x64(True):
        moved = ns.gradient_moments(ns.Problem(spec, a).at(b))
        fresh = ns.gradient_moments(ns.Problem(spec, b))
    for key in ("g2", "gHg", "trace_sigma", "trace_h_sigma"):
        assert moved[key] == fresh[key]



def test_the_memory_plan_counts_a_chunk_of_at_least_one_examples_gradient(monkeypatch):
    """`otod.nets.api.noise_plan` at P = 10⁸ (64 examples): float64 needs 8 copies of P for the moments, one
    per-example gradient (a chunk holds one at least: 2 × P for it and its batch sum) and a vmapped HVP's 4 × P,
    8 · 14 · 10⁸ = 11.2 GB. With 12 GiB free (8.4 GiB usable) it is refused; the old count of 2^22 floats a chunk
    (6.4 GB) let it run. Measured at P = 10⁷ (moments, then 4 draws of 8:64): 1.34 GB peak RSS, 1.1 GB counted."""
    from types import SimpleNamespace

    import otod.core.resources as resources
    from otod.core.errors import OtodError
    from otod.nets.api import noise_plan

    monkeypatch.setattr(resources, "host_memory_available", lambda: 12 * 2 ** 30)

    def linear(size):  # a dense layer 4 → size/4, shapes only: the norm pass holds 4 × P/4 activations (≤ 4P)
        def loss(p, batch):
            return jnp.mean((batch[0] @ p["w"]).sum(-1) - batch[1])

        return {"loss": loss, "params": {"w": jax.ShapeDtypeStruct((4, size // 4), jnp.float32)},
                "parameter_count": size}

    model = SimpleNamespace(**linear(10 ** 8), data=(np.zeros((64, 4)), np.zeros(64)), examples=64,
                            name="big.py:problem")
    with pytest.raises(OtodError, match=r"the noise scale of big.py:problem \(P = 100,000,000, 64 examples\) "
                                        r"needs about 10.4 GiB"):
        noise_plan(model)
    noise_plan(SimpleNamespace(**{**vars(model), **linear(10 ** 7)}))  # 1.1 GB counted: runs


def test_the_memory_plan_counts_one_example_of_the_norm_pass_where_it_exceeds_the_others(monkeypatch):
    """Where one example's floats in the per-example norm pass (`otod.nets.measure.example_norms.Plan`) exceed
    the chunk budgets (2^25 floats) and 4P, the plan counts them: 2·10⁹ floats an example, 16 GB, refused
    with 12 GiB free (8.4 GiB usable), while the same model at 10⁶ floats an example runs."""
    from types import SimpleNamespace

    import otod.core.resources as resources
    from otod.core.errors import OtodError
    from otod.nets.api import noise_plan
    from otod.nets.measure import example_norms

    monkeypatch.setattr(resources, "host_memory_available", lambda: 12 * 2 ** 30)
    model = SimpleNamespace(loss=None, params=None, parameter_count=10 ** 3, data=(np.zeros((64, 4)),),
                            examples=64, name="wide.py:problem")
    monkeypatch.setattr(example_norms, "plan", lambda *a: SimpleNamespace(example_floats=2 * 10 ** 9))
    with pytest.raises(OtodError, match=r"the noise scale of wide.py:problem .* needs about 15 GiB"):
        noise_plan(model)
    monkeypatch.setattr(example_norms, "plan", lambda *a: SimpleNamespace(example_floats=10 ** 6))
    noise_plan(model)
