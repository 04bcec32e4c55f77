"""Issue 36 items 1 and 2: any JAX model through the contract (`otod.nets.model.contract`), measured by
``otod curvature --model``/``otod noise-scale --model`` and ``otod.curvature``/``otod.noise_scale`` with the same
numbers; on linear least squares the curvature and the noise scales equal their closed forms; the loss, gradient
and HVPs accumulated over chunks of the data equal the one-call ones (`otod.nets.model.chunked`)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import otod
from otod.core.errors import OtodError
from otod.nets.model.chunked import activation_floats, chunked_mean, pieces
from tests.conftest import run_otod
from tests.fixtures.models import plain_jax

#: Closed forms against float64 measurements; chunked against one call (sums in another order).
CLOSED, CHUNKED = 1e-6, 1e-10


def closed_forms(params, data) -> dict:
    """Linear least squares ½ mean (xᵀw − y)²: H = XᵀX/n, per-example gradients gᵢ = (xᵢᵀw − yᵢ)xᵢ, Σ their
    covariance (1/n); B_simple = tr Σ/|G|², B_noise = tr(HΣ)/GᵀHG."""
    x, y = data
    n = len(x)
    grads = (x @ params["w"] - y)[:, None] * x
    G = grads.mean(0)
    D = grads - G
    sigma = D.T @ D / n
    H = x.T @ x / n
    return {"eigenvalues": np.linalg.eigvalsh(H), "g2": G @ G, "trace_sigma": np.trace(sigma), "gHg": G @ H @ G,
            "trace_h_sigma": np.trace(H @ sigma), "b_simple": np.trace(sigma) / (G @ G),
            "b_noise": np.trace(H @ sigma) / (G @ H @ G), "loss": 0.5 * np.mean((x @ params["w"] - y) ** 2)}


def test_least_squares_curvature_equals_its_closed_form():
    loss, params, data = plain_jax.least_squares()
    exact = closed_forms(params, data)
    point = otod.curvature(loss, params, data, k=3, x64=True).points[0]
    lam = exact["eigenvalues"]
    np.testing.assert_allclose(point.top_eigenvalues, lam[::-1][:3], rtol=CLOSED)
    np.testing.assert_allclose([point.lambda_max, point.lambda_min, point.trace_per_parameter, point.train_loss],
                               [lam[-1], lam[0], lam.mean(), exact["loss"]], rtol=CLOSED)
    assert point.spectrum == "dense" and point.kappa_q == pytest.approx(lam[-1] / lam[4], rel=CLOSED)


def test_least_squares_noise_scales_equal_their_closed_forms():
    loss, params, data = plain_jax.least_squares()
    exact = closed_forms(params, data)
    result = otod.noise_scale(loss, params, data, x64=True, pairs=[(8, 32)], draws=8)
    point = result.points[0]
    for name in ("g2", "trace_sigma", "gHg", "trace_h_sigma", "b_simple", "b_noise", "loss"):
        assert getattr(point, name) == pytest.approx(exact[name], rel=CLOSED), name
    frame = result.to_pandas()
    assert list(frame["b_small"]) == [8] and list(frame["b_big"]) == [32]
    assert frame["b_noise"].iloc[0] == point.b_noise


CHUNKINGS = (96, 7)


def _loss_gradient_and_hvp(f, params, data, u):
    """f(params, *data), its gradient and its Hessian-vector product with u, as one flat list (the leaves in
    tree order)."""
    grad = jax.grad(lambda p: f(p, *data))
    return [f(params, *data), *jax.tree.leaves(grad(params)), *jax.tree.leaves(jax.jvp(grad, (params,), (u,))[1])]


def test_chunked_loss_gradient_and_hvp_equal_one_call():
    """n = 96 in chunks of 7: 13 full chunks in the scan and 5 left over (chunks of 1, 96 in the scan, run with the
    slow checks: `test_chunks_of_one_equal_one_call`). Each side is one jitted call (compiled once, as the nets
    code calls it; run op by op it took 8.7 s of dispatch and small compiles); the one call is the plain loss."""
    loss, params, data, _ = plain_jax.mlp()
    assert pieces(96, 7) == (7, 13, 5)
    with jax.enable_x64(True):
        params = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), params)
        data = tuple(jnp.asarray(a, jnp.float64) for a in data)
        u = jax.tree.map(lambda a: jnp.cos(jnp.arange(a.size, dtype=jnp.float64).reshape(a.shape)), params)
        out = {chunk: jax.jit(functools.partial(_loss_gradient_and_hvp, chunked_mean(loss, chunk)))(params, data, u)
               for chunk in CHUNKINGS}
        one = jax.jit(functools.partial(_loss_gradient_and_hvp, lambda p, *d: loss(p, d)))(params, data, u)
    for chunk in CHUNKINGS:
        for a, b in zip(out[chunk], one, strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=CHUNKED, atol=CHUNKED * 1e-3)


@pytest.mark.slow
def test_chunks_of_one_equal_one_call(monkeypatch):
    """The chunked loss, gradient and HVP with one example per chunk (96 in the scan)."""
    monkeypatch.setitem(globals(), "CHUNKINGS", (1,))
    test_chunked_loss_gradient_and_hvp_equal_one_call()


def _close(a: dict, b: dict, names, rtol=CHUNKED, scale=1.0):
    for name in names:
        x, y = np.asarray(a[name], float), np.asarray(b[name], float)
        np.testing.assert_allclose(x, y, rtol=rtol, atol=rtol * scale, err_msg=name)


CURVATURE_FIELDS = ("train_loss", "lambda_max", "lambda_min", "lambda_q", "kappa_damped", "trace_per_parameter",
                    "square_trace_per_parameter", "top_eigenvalues", "slq_nodes")
NOISE_FIELDS = ("loss", "g2", "gHg", "trace_sigma", "trace_h_sigma", "b_simple", "b_noise", "g2_estimate",
                "trace_sigma_estimate")


# Both variants (dense 37 s, SLQ 20 s on 2 cores) run with the slow checks; the fast suite keeps the chunked loss,
# gradient and HVP below, which both rest on.
@pytest.mark.slow
@pytest.mark.parametrize("dense", [True, False], ids=["dense", "slq"])
def test_chunked_curvature_and_noise_equal_one_call(dense, monkeypatch):
    """Every measured number, at init and after 30 SGD steps, with the data in chunks of 7 against one chunk (n =
    96): the dense spectrum's, and (the dense limit lowered below P = 112) SLQ's and Lanczos's."""
    from otod.nets.measure import dense as curvature_dense

    if not dense:
        monkeypatch.setattr(curvature_dense, "DENSE_MAX_PARAMETERS", 50)
    loss, params, data, init = plain_jax.mlp()
    kw = dict(steps=(0, 30), x64=True, seed=2)
    one = otod.curvature(loss, params, data, init, k=4, probes=3, lanczos_steps=40, **kw)
    chunked = otod.curvature(loss, params, data, init, k=4, probes=3, lanczos_steps=40, chunk=7, **kw)
    assert [r["chunk"] for r in one.records] == [96, 96] and [r["chunk"] for r in chunked.records] == [7, 7]
    assert one.records[0]["spectrum"] == ("dense" if dense else "slq")
    for a, b in zip(one.records, chunked.records):
        _close(a, b, CURVATURE_FIELDS, scale=a["lambda_max"])
    if dense:
        noise_one = otod.noise_scale(loss, params, data, init, pairs=[(4, 32)], draws=8, **kw)
        noise_chunked = otod.noise_scale(loss, params, data, init, pairs=[(4, 32)], draws=8, chunk=7, **kw)
        for a, b in zip(noise_one.records, noise_chunked.records):
            _close(a, b, NOISE_FIELDS)


@pytest.mark.slow  # 8 s; the slq and chunked-HVP checks stay in the fast suite
def test_a_spec_net_measured_as_a_contract_instance_is_unchanged():
    """otod's own net through the contract (`from_spec`) in chunks equals its one-call loss and noise scales."""
    from otod.nets.measure import noise_scale as ns
    from otod.nets.model.contract import from_spec
    from otod.nets.model.problem import NetSpec

    spec = NetSpec(model="mlp", width=4, depth=2, activation="tanh", data="teacher", examples=12, inputs=3,
                   outputs=2, loss="squared", batch=4)
    with jax.enable_x64(True):
        model = from_spec(spec, np.float64)
        whole = ns.gradient_moments(ns.Problem(spec, model.params))
        pieces_ = ns.gradient_moments(ns.Problem.of_model(model, chunk=5))
    _close(whole, pieces_, ("loss", "g2", "gHg", "trace_sigma", "trace_h_sigma", "b_simple", "b_noise"))


@pytest.mark.slow  # 110 s on the shared 2-core machine: two processes, each compiling every kernel
def test_command_and_python_function_give_the_same_numbers(tmp_path):
    """``otod curvature/noise-scale --model package.module:NAME`` write what ``otod.curvature/noise_scale``
    return (same arguments; another process)."""
    reference = "tests.fixtures.models.plain_jax:mlp"
    common = ["--model", reference, "--steps", "0,20", "--seed", "1", "--batch", "16", "--lr", "0.05"]
    proc, _ = run_otod(["curvature", *common, "--k", "3", "--probes", "2", "--x64", "--out", "c.json"],
                       cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    proc2, _ = run_otod(["noise-scale", *common, "--pairs", "4:32", "--draws", "8", "--out", "n.json"],
                        cwd=tmp_path, timeout=300)
    assert proc2.returncode == 0, proc2.stderr
    assert "B_simple" in proc2.stdout and "results: n.json" in proc2.stdout
    loss, params, data, init = plain_jax.mlp()
    api = otod.curvature(loss, params, data, init, steps=(0, 20), seed=1, batch=16, lr=0.05, k=3, probes=2, x64=True)
    api_noise = otod.noise_scale(loss, params, data, init, steps=(0, 20), seed=1, batch=16, lr=0.05, pairs=[(4, 32)],
                                 draws=8)
    cli, cli_noise = otod.load(tmp_path / "c.json").records, otod.load(tmp_path / "n.json").records
    for a, b in zip(api.records, cli):
        _close(a, b, CURVATURE_FIELDS, rtol=1e-12, scale=a["lambda_max"])
    for a, b in zip(api_noise.records, cli_noise):
        _close(a, b, NOISE_FIELDS, rtol=1e-12)
    assert len(api.records) == len(cli) == 2 and len(api_noise.records) == len(cli_noise) == 2


def test_seeds_draw_from_init_and_otherwise_reorder_the_minibatches_only():
    from otod.nets.model.contract import check
    from otod.nets.measure.trajectory import model_start

    loss, params, data, init = plain_jax.mlp()
    with_init, without = check(loss, params, data, init), check(loss, params, data)
    leaf = lambda p: np.asarray(p["w1"])  # noqa: E731
    assert np.array_equal(leaf(model_start(with_init, 0)), leaf(params))
    assert not np.array_equal(leaf(model_start(with_init, 3)), leaf(params))
    assert np.array_equal(leaf(model_start(without, 3)), leaf(params))


def test_python_functions_refuse_a_bad_contract_in_one_line():
    loss, params, (x, y) = plain_jax.least_squares()
    with pytest.raises(OtodError, match=r"otod.curvature: loss returns shape \(2,\)"):
        otod.curvature(*plain_jax.vector_loss())
    with pytest.raises(OtodError, match="unequal leading axes"):
        otod.noise_scale(loss, params, (x, y[:3]))
    with pytest.raises(OtodError, match="the loss at the start is nan"):
        otod.noise_scale(*plain_jax.nan_start())
    with pytest.raises(OtodError, match="every leaf must be a float array"):
        otod.curvature(loss, {"w": np.arange(5)}, (x, y))
    with pytest.raises(OtodError, match="init"):
        otod.curvature(loss, params, (x, y), init=lambda key: {"v": jnp.zeros(5)})


def test_activations_are_estimated_per_example():
    loss, params, data, _ = plain_jax.mlp()
    floats = activation_floats(loss, params, data)
    assert 16 <= floats <= 200  # the hidden layer's 16 pre- and post-activations and a few scalars per example


@pytest.mark.slow  # 90-145 s each on the shared 2-core machine
@pytest.mark.parametrize("fixture", ["flax_mlp", "equinox_mlp"])
def test_flax_and_equinox_models_run_through_both_commands_and_functions(fixture, tmp_path):
    pytest.importorskip({"flax_mlp": "flax", "equinox_mlp": "equinox"}[fixture])
    import importlib

    module = importlib.import_module(f"tests.fixtures.models.{fixture}")
    loss, params, data, init = module.problem()
    curvature = otod.curvature(loss, params, data, init, steps=(0, 10), k=2, x64=True)
    noise = otod.noise_scale(loss, params, data, init, steps=(0, 10), pairs=[(4, 32)], draws=8)
    assert curvature.points[0].lambda_max > 0 and np.isfinite(noise.points[1].b_simple)
    assert curvature.to_pandas().shape[0] == 2
    for command in (["curvature", "--k", "2"], ["noise-scale", "--pairs", "4:32", "--draws", "8"]):
        proc, _ = run_otod([*command, "--model", f"tests.fixtures.models.{fixture}:problem", "--steps", "0",
                            "--out", "out"], cwd=tmp_path, timeout=300)
        assert proc.returncode == 0, proc.stderr


def test_trace_h_sigma_estimated_from_drawn_examples_carries_its_error():
    """tr(HΣ) from 32 of the 64 examples: its standard error is printed beside it and covers the exact value."""
    loss, params, data = plain_jax.least_squares()
    exact = closed_forms(params, data)["trace_h_sigma"]
    point = otod.noise_scale(loss, params, data, x64=True, pairs=[], trace_examples=32).points[0]
    assert 0 < point.trace_h_sigma_se and abs(point.trace_h_sigma - exact) < 4 * point.trace_h_sigma_se


def test_the_users_own_failure_is_one_line_naming_its_line_in_python_too():
    """Issue 49 through the Python functions: the user's loss raising only on larger batches is refused before the
    work as "your model's loss raised X: message (file:line)"; a zero gradient at a checkpoint names the step
    instead of dividing by zero (`otod.nets.measure.noise_scale.refuse_zero_gradient`)."""
    from otod.nets.model.contract import check
    from otod.nets.measure.noise_scale import Problem, measure_at
    from tests.fixtures.models import broken

    with pytest.raises(OtodError, match=r"^otod.noise_scale: your model's loss raised ValueError: this model takes at "
                                        r"most 16 examples, got 32 \(\S*broken.py:\d+\), on a batch of 32$"):
        otod.noise_scale(*broken.big_batch_raises(), batch=32, pairs=[])
    with jax.enable_x64(True):
        problem = Problem.of_model(check(*broken.zero_gradient()))
        with pytest.raises(OtodError, match=r"the mean gradient is exactly zero at step 7 \(\|G\|² = 0"):
            measure_at(problem, pairs=[], step=7)


def test_a_flax_nnx_model_meets_the_contract():
    """Issue 49: Flax nnx in the contract's fast checks (the whole commands on it run with the slow ones): the
    state ``nnx.split`` gives passes `check` (the loss, its gradient and HVP traced at every size the work uses),
    its start loss is the module's own ½ mean squared error over the data, ``init(key)`` draws another start at
    seed 3 (`model_start`), and --per-layer sees its two nnx.Linear layers, kernel and bias together."""
    pytest.importorskip("flax")
    from flax import nnx

    from otod.nets.model.contract import check, start_loss, trace_loss, trace_sizes
    from otod.nets.measure.curvature_layers import layers_of
    from otod.nets.measure.trajectory import model_start
    from tests.fixtures.models import flax_mlp

    loss, params, data, init = flax_mlp.problem()
    model = check(loss, params, data, init)
    trace_loss(model, trace_sizes(model.examples, (32,), 50, one=True), hvp=True)
    x, y = data
    graph = nnx.graphdef(flax_mlp.MLP(6, 16, nnx.Rngs(0)))
    direct = 0.5 * np.mean((np.asarray(nnx.merge(graph, params)(x)) - y) ** 2)
    assert start_loss(model) == pytest.approx(direct, rel=1e-6)
    assert not np.allclose(model_start(model, 3)["hidden"]["kernel"].get_value(),
                           params["hidden"]["kernel"].get_value())
    assert [(layer.name, layer.parameters) for layer in layers_of(params)] == [("['hidden']", 6 * 16 + 16),
                                                                                ("['out']", 16 + 1)]
