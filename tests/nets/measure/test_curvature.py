"""Curvature of nets (`otod.nets.measure.curvature`, `otod curvature`): Lanczos against the dense Hessian, the linear
model on Gaussian inputs against its known H, SLQ's moments against exact traces, and the command's bad input.

Each test states the number theory predicts and its tolerance."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from click.testing import CliRunner

from otod.nets.measure import curvature as C
from otod.nets.model.family import seed_starts, start_of
from otod.nets.model.problem import NetSpec


def start(spec: NetSpec, seed: int = 0):
    """Seed 0's start under root ``seed`` as the sweep draws it, as float64 JAX arrays."""
    return jax.tree.map(jnp.asarray, start_of(spec, seed_starts(spec, np.random.default_rng([seed, 0]))))


def data(spec: NetSpec):
    return tuple(jnp.asarray(a) for a in spec.training_arrays(np.float64))


def dense_hessian(spec: NetSpec, params, xy) -> np.ndarray:
    flat, unflatten = C.flatten(params)
    return np.asarray(jax.jit(jax.hessian(lambda f: spec.mean_loss(unflatten(f), *xy)))(flat))


#: A relu MLP on 600 digits with 910 parameters (≤ 2,000: `jax.hessian` is cheap).
SMALL_NET = NetSpec(width=12, depth=2, examples=600)
#: The linear model ½ mean ‖xᵀW + b − y‖² on Gaussian inputs (16 features, 3 outputs): 17·3 = 51 parameters.
LINEAR = NetSpec(model="mlp", depth=1, data="gaussian", loss="squared", outputs=3, examples=256)


def linear_theory(spec: NetSpec):
    """H of the linear model: for ½ mean over examples of Σ_o (xᵀw_o + b_o − y_o)², the Hessian in (w_o, b_o) is
    M = mean [x, 1][x, 1]ᵀ for each output o and 0 across outputs, so H = M ⊗ I_outputs (up to the order of the
    coordinates): its eigenvalues are M's, each repeated once per output."""
    x, _ = spec.training_arrays(np.float64)
    z = np.hstack([x, np.ones((x.shape[0], 1))])
    m = z.T @ z / x.shape[0]
    outputs = spec.dataset().outputs
    return m, np.kron(m, np.eye(outputs))


def test_lanczos_top_eigenvalues_equal_dense_hessian(x64):
    """The 10 largest Ritz values after the default 3k + 40 = 70 steps equal the 10 largest eigenvalues of
    `jax.hessian` (via `numpy.linalg.eigvalsh`) to 1e-4 relative (theory: Ritz values converge to the extreme
    eigenvalues, error ~ residual²/gap; the measured error is ~1e-14); the residual bounds say so too."""
    params, xy = start(SMALL_NET), data(SMALL_NET)
    assert SMALL_NET.parameter_count <= 2000
    exact = np.linalg.eigvalsh(dense_hessian(SMALL_NET, params, xy))[::-1][:10]
    top = C.top_eigenvalues(SMALL_NET.mean_loss, params, 10, xy)
    assert top.steps == 70
    np.testing.assert_allclose(top.eigenvalues, exact, rtol=1e-4)
    assert np.all(top.residuals <= 1e-4 * exact[0])


def test_linear_model_hessian_is_the_second_moment(x64):
    """The linear model's H (jax.hessian) has M ⊗ I's eigenvalues to 1e-12 relative, and Lanczos run to P = 51
    steps finds all 51 of them with their multiplicity 3 to 1e-9 relative (the Krylov space of one start holds
    only M's 17 distinct ones: Lanczos must go on past the breakdown, in a new direction orthogonal to the basis;
    without re-orthogonalization this fails)."""
    params, xy = start(LINEAR), data(LINEAR)
    _, h = linear_theory(LINEAR)
    size = LINEAR.parameter_count
    assert size == 51
    theory = np.sort(np.linalg.eigvalsh(h))[::-1]
    measured = np.linalg.eigvalsh(dense_hessian(LINEAR, params, xy))[::-1]
    np.testing.assert_allclose(measured, theory, rtol=1e-12)
    top = C.top_eigenvalues(LINEAR.mean_loss, params, size, xy, steps=size)
    np.testing.assert_allclose(top.eigenvalues, theory, rtol=1e-9)


def test_slq_moments_of_the_linear_model(x64):
    """SLQ on the linear model: per probe, Gauss quadrature with m = 10 nodes is exact for polynomials of degree
    ≤ 19, so Σ_i w_i θ_i^j = vᵀH^j v/‖v‖² for j = 0, 1, 2 to 1e-10 (weights per probe sum to 1/probes). Averaged
    over N = 80 Rademacher probes the moments estimate tr H/P and tr H²/P with the Hutchinson variance
    Var(vᵀAv)/P² = 2(‖A‖_F² − Σ_i A_ii²)/P² per probe: the tolerance is 4 standard deviations of the mean over N,
    computed from the exact H (and below 5% of each moment, so a wrong weight or node fails)."""
    params, xy = start(LINEAR), data(LINEAR)
    _, h = linear_theory(LINEAR)
    size, probes = h.shape[0], 80  # 64 gave 4 sd = 5.04% of tr H/P on the nested gaussian set
    spectrum = C.slq(LINEAR.mean_loss, params, probes, 10, xy, seed=3)
    assert spectrum.nodes.shape == (probes, 10)
    # the quadrature of each probe against its own quadratic forms (coordinates reordered to the flat vector's)
    flat_h = dense_hessian(LINEAR, params, xy)
    starts, _ = C.slq_starts(3, probes, size, "rademacher", np.float64)
    v = np.asarray(starts) / np.sqrt(size)
    for j, a in ((0, np.eye(size)), (1, flat_h), (2, flat_h @ flat_h)):
        forms = np.einsum("pi,ij,pj->p", v, a, v) / probes
        np.testing.assert_allclose((spectrum.weights * spectrum.nodes ** j).sum(axis=1), forms, rtol=1e-10)
    for power, a in ((1, h), (2, h @ h)):
        exact = np.trace(a) / size
        sd = math.sqrt(2 * (np.sum(a ** 2) - np.sum(np.diag(a) ** 2)) / probes) / size
        assert 4 * sd < 0.05 * exact
        assert abs(C.spectral_moment(spectrum.nodes, spectrum.weights, power) - exact) <= 4 * sd


@pytest.mark.slow
def test_kappa_of_the_linear_model(x64):
    """With m = P Lanczos steps every probe's nodes are M's eigenvalues, so λ_min and λ_max are exact (1e-9) and
    κ_δ = (λ_max + δ)/(λ_min + δ) exactly; no eigenvalue is negative (negative mass 0), and λ_q lies within
    [λ_min, λ_max]."""
    params, xy = start(LINEAR), data(LINEAR)
    m, _ = linear_theory(LINEAR)
    lo, hi = np.linalg.eigvalsh(m)[[0, -1]]
    r = C.curvature_record(LINEAR.mean_loss, params, xy, k=3, probes=4, steps=51, damping=0.01)
    np.testing.assert_allclose([r["lambda_min"], r["lambda_max"]], [lo, hi], rtol=1e-9)
    assert r["kappa_damped"] == pytest.approx((hi + 0.01) / (lo + 0.01), rel=1e-9)
    assert r["negative_mass"] == 0.0
    assert lo <= r["lambda_q"] <= hi and r["kappa_q"] == pytest.approx(hi / r["lambda_q"])
    assert sum(r["slq_weights"]) == pytest.approx(1.0, abs=1e-12)


def test_spectral_quantile_and_density_of_a_known_measure():
    """On the measure 0.1 δ(1) + 0.2 δ(2) + 0.3 δ(3) + 0.4 δ(4): the 0.3-quantile is 2, the 0.31-quantile 3, the
    0.9-quantile 4; the broadened density integrates to 1 (trapezoid, 1e-6) with mean 3.0 (1e-6); κ_q is None
    where λ_q ≤ 0."""
    nodes, weights = np.array([4.0, 1.0, 3.0, 2.0]), np.array([0.4, 0.1, 0.3, 0.2])
    assert [C.spectral_quantile(nodes, weights, q) for q in (0.3, 0.31, 0.9)] == [2.0, 3.0, 4.0]
    grid = np.linspace(-5, 10, 20001)
    phi = C.broadened_density(nodes, weights, grid, 0.3)
    assert np.trapezoid(phi, grid) == pytest.approx(1.0, abs=1e-6)
    assert np.trapezoid(grid * phi, grid) == pytest.approx(3.0, abs=1e-6)
    assert C.kappa_quantile(5.0, -0.1) is None and C.kappa_quantile(5.0, 0.5) == 10.0
    assert C.kappa_damped(5.0, -1.0, 0.1) == pytest.approx(51.0)


@pytest.mark.parametrize("args, message", [
    (["--width", "8", "--k", "700"], "--k 700: larger than the parameter count 610"),
    (["--model", "resnet"], "--model resnet: unknown"),
    (["--data", "mnist"], "--data mnist: unknown"),
    (["--width", "0"], "--width 0: need an integer ≥ 1"),
    (["--depth", "0"], "--depth 0: need an integer ≥ 1"),
    (["--steps", "0,x"], "--steps x"),
    (["--lr", "-1"], "--lr -1: need a positive number"),
    (["--quantile", "1.5"], "--quantile 1.5"),
    (["--probes", "0"], "--probes 0"),
    (["--out", "a.csv"], "--out a.csv"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    from otod.nets.curvature_cli import curvature_command

    result = CliRunner().invoke(curvature_command, args)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("otod: error: ") and message in lines[0]


@pytest.mark.slow
def test_command_prints_and_records(tmp_path):
    """A tiny run (the linear model, 2 checkpoints, k = 3) prints the table and writes a results file whose
    records are the checkpoints and whose metadata holds the config, environment, precision and definitions."""
    from otod.core import results
    from otod.nets.curvature_cli import curvature_command

    out = tmp_path / "curv.parquet"
    result = CliRunner().invoke(curvature_command, [
        "--data", "gaussian", "--depth", "1", "--examples", "128", "--k", "3", "--probes", "2",
        "--lanczos-steps", "10", "--steps", "0,5", "--lr", "0.05", "--x64", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "κ_q" in result.output and "top 3 eigenvalues" in result.output
    assert "spectrum: exact, all 17 eigenvalues of the dense Hessian" in result.output  # P = 17 ≤ the limit
    assert "every number in the table is exact to float64 rounding" in result.output
    loaded = results.load(out)
    assert loaded.meta["exact"] == list(C.EXACT_QUANTITIES) and loaded.meta["config"]["spectrum"] == "dense"
    assert all(r["spectrum"] == "dense" and r["exact"] == list(C.EXACT_QUANTITIES) for r in loaded.records)
    assert [r["step"] for r in loaded.records] == [0, 5]
    assert loaded.meta["kind"] == "curvature" and loaded.meta["precision"] == "float64"
    assert {"config", "environment", "definitions", "wall_time_s"} <= set(loaded.meta)
    assert loaded.meta["environment"]["command_line"]
    assert len(loaded.records[0]["top_eigenvalues"]) == 3


# -- exact where P is small, an interval for every estimate above (issue 34, item 5) --------------------------------

#: A relu MLP on 200 digits: 64·4 + 4 + 4·10 + 10 = 310 parameters, far under the dense limit.
TINY = NetSpec(width=4, depth=2, examples=200)


@pytest.mark.slow  # 11 s; test_lanczos_top_eigenvalues_equal_dense_hessian keeps a dense check in the fast suite
def test_the_exact_path_equals_an_independent_dense_eigendecomposition(x64):
    """Under `DENSE_MAX_PARAMETERS` the record is the dense spectrum's: against `numpy.linalg.eigvalsh` of the
    Hessian `jax.hessian` gives (not the Hessian-vector products the record's columns come from), λ_max, λ_min,
    λ_q (the ⌈0.9·P⌉-th smallest), κ_q, κ_δ, the negative mass (a count), tr H/P = trace/P and tr H²/P =
    ‖H‖_F²/P agree to 1e-10, as do all P nodes (weights 1/P); the record says every one is exact and each
    interval is the value itself."""
    params, xy = start(TINY), data(TINY)
    h = dense_hessian(TINY, params, xy)
    size = h.shape[0]
    assert size == TINY.parameter_count == 310
    eig = np.linalg.eigvalsh(h)
    lam_q = np.sort(eig)[math.ceil(0.9 * size) - 1]
    r = C.curvature_record(TINY.mean_loss, params, xy, k=3, probes=2, steps=10, damping=0.01)
    expected = {"lambda_max": eig[-1], "lambda_min": eig[0], "lambda_q": lam_q, "kappa_q": eig[-1] / lam_q,
                "kappa_damped": (eig[-1] + 0.01) / (max(eig[0], 0.0) + 0.01),
                "negative_mass": np.sum(eig < -1e-3 * eig[-1]) / size, "trace_per_parameter": np.trace(h) / size,
                "square_trace_per_parameter": np.sum(h * h) / size}
    for name, value in expected.items():
        assert r[name] == pytest.approx(value, rel=1e-10, abs=1e-14), name
    np.testing.assert_allclose(r["slq_nodes"], eig, rtol=1e-10, atol=1e-12)
    assert r["slq_weights"] == [1 / size] * size
    assert r["spectrum"] == "dense" and set(r["exact"]) == set(expected)
    assert all(r[f"{name}_interval"] == [r[name], r[name]] for name in
               ("lambda_q", "kappa_q", "negative_mass", "trace_per_parameter", "square_trace_per_parameter"))


#: Probe sets (SLQ seeds) of the coverage test, and the coverage measured over them.
COVERAGE_SEEDS = range(20)


@pytest.mark.slow  # a coverage measurement over 20 probe sets (13 s); benchmarks/slq_error.py measures it at scale
def test_above_the_limit_each_interval_covers_the_dense_value_for_most_probe_sets(x64, monkeypatch):
    """With the dense limit lowered to 100 the same 310-parameter net goes through SLQ (8 probes × 40 Lanczos
    steps, float64). Over the 20 probe sets here (seeds 0-19) the 95% intervals held the dense values: λ_q, κ_q
    and the negative mass (quadrature bounds widened by the probes' spread) in 20 of 20, tr H/P and tr H²/P in 19 of
    20 each (the Student t interval printed before issue 49: 17 of 20 each); over seeds 0-199, in 99.5%, 99.5%,
    100%, 98.5% and 97.5% (t: 90.5% and 90.5%). The test asks for at least 19 of 20 and 18 of 20, so that rounding
    on another machine moving one borderline set does not fail it, while the t interval's 17 would. Each estimate
    lies in its own interval, and the λ_q interval within the spectrum (an interval that covers because it is
    unbounded would pass the count). The record says nothing is exact."""
    from otod.nets.measure import dense as curvature_dense
    from otod.nets.measure.slq_error import slq_estimates

    params, xy = start(TINY), data(TINY)
    exact = C.curvature_record(TINY.mean_loss, params, xy, k=1, probes=2, steps=10)
    monkeypatch.setattr(curvature_dense, "DENSE_MAX_PARAMETERS", 100)
    first = C.curvature_record(TINY.mean_loss, params, xy, k=1, probes=8, steps=40, seed=0)
    assert first["spectrum"] == "slq" and first["exact"] == [] and first["lambda_min_residual"] > 0
    names = ("lambda_q", "kappa_q", "negative_mass", "trace_per_parameter", "square_trace_per_parameter")
    covered = dict.fromkeys(names, 0)
    for seed in COVERAGE_SEEDS:  # the record's own SLQ (its probes from seed + 1) and estimates, less its top-k
        spectrum = C.slq(TINY.mean_loss, params, 8, 40, xy, seed + 1)
        r = slq_estimates(spectrum.nodes, spectrum.weights, first["lambda_max"], 0.9, C.NEGATIVE_TOLERANCE,
                          C.parameter_size(params))
        r["kappa_q"] = C.kappa_quantile(first["lambda_max"], r["lambda_q"])
        if seed == 0:
            assert all(r[name] == first[name] and r[f"{name}_interval"] == first[f"{name}_interval"]
                       for name in names)
        for name in names:
            lo, hi = r[f"{name}_interval"]
            assert lo <= r[name] <= hi, (seed, name, lo, r[name], hi)
            covered[name] += lo <= exact[name] <= hi
        assert exact["lambda_min"] <= r["lambda_q_interval"][0] and r["lambda_q_interval"][1] <= exact["lambda_max"]
    assert min(covered[n] for n in ("lambda_q", "kappa_q", "negative_mass")) >= 19, covered
    assert min(covered[n] for n in ("trace_per_parameter", "square_trace_per_parameter")) >= 18, covered


@pytest.mark.slow
def test_above_the_limit_the_command_prints_each_estimate_with_its_interval(tmp_path, monkeypatch):
    """With the dense limit lowered below P, the same command prints SLQ's estimates, says none is exact, and
    gives each checkpoint's 95% intervals (λ_q, κ_q, neg. mass, tr H/P) and λ_min's residual bound; the results
    file records no exact quantity and every interval."""
    from otod.core import results
    from otod.nets.measure import dense as curvature_dense
    from otod.nets.curvature_cli import curvature_command

    monkeypatch.setattr(curvature_dense, "DENSE_MAX_PARAMETERS", 10)
    out = tmp_path / "curv.parquet"
    result = CliRunner().invoke(curvature_command, [
        "--data", "gaussian", "--depth", "1", "--examples", "128", "--k", "3", "--probes", "4",
        "--lanczos-steps", "10", "--steps", "0,5", "--lr", "0.05", "--x64", "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = result.output
    assert "spectrum: SLQ estimates, 4 Rademacher probes × 10 Lanczos steps (P = 17 > 10" in text
    assert "none is exact: the 95% intervals below the table give each one's error" in text
    rows = text.split("95% intervals.")[1].splitlines()
    header = next(i for i, line in enumerate(rows) if line.split()[:2] == ["step", "λ_q"])
    assert [line.split()[0] for line in rows[header + 1:header + 3]] == ["0", "5"]
    assert all(line.count("[") == 4 for line in rows[header + 1:header + 3])
    assert "an eigenvalue of H lies within" in text
    loaded = results.load(out)
    assert loaded.meta["exact"] == [] and loaded.meta["config"]["spectrum"] == "slq"
    for r in loaded.records:
        lo, hi = r["trace_per_parameter_interval"]
        assert r["spectrum"] == "slq" and lo <= r["trace_per_parameter"] <= hi
