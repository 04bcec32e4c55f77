"""A user's model through the net sweep (`otod.nets.model.model_problem`, ``otod sweep net --model FILE.py:NAME``,
``otod.critical_batch``): the engine's lanes against the one reference loop, the starts per seed, the stored
config (read back without the user's file; a changed model refused), the default batches, and the command
against the Python function."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import otod
import otod.nets  # noqa: F401  (registers the net sweep)
from tests.nets.lanes import compare_with_reference
from otod.cli import main
from otod.core.config import SweepConfig
from otod.core.errors import OtodError
from otod.core.sweep import run_sweep
from otod.nets.model.contract import load
from otod.nets.model.model_problem import ModelProblem, problem_of, seed_starts
from otod.nets.sweep.options import default_batches, net_config

jax = pytest.importorskip("jax")

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "models" / "plain_jax.py"
DOCS = Path(__file__).resolve().parents[3] / "docs" / "models.md"


def small_config(reference: str = f"{FIXTURE}:mlp", **kw):
    options = dict(model=reference, batch="8,32", seeds=2, lr="tuned", lr_grid="0.1,0.3", target="0.3",
                   max_iters="300", x64=True)
    options.update(kw)
    return net_config(**options)


def test_model_sweep_lanes_equal_the_reference_loop(tmp_path):
    """Every lane's count and status equal the one reference loop's (float64, the fixture's tanh MLP with an
    init per seed: plain optax.sgd stepping the family's sampled gradient, the metric read on the same
    schedule)."""
    config = small_config(batch="16")  # one compiled program: the lane is every batch's
    results = run_sweep(config, out_dir=tmp_path)
    assert len(results.records) == 2 * 2
    assert compare_with_reference(config, results.records) >= 2
    assert {r["parameters"] for r in results.records} == {112.0}
    assert {r["examples"] for r in results.records} == {96.0}


def test_seeds_draw_starts_from_init_or_keep_the_given_params():
    """With an ``init``, seed s starts at init(key_s), a different start per seed; without one every seed starts
    at the given params (seeds vary the minibatch order only, as the contract says)."""
    with_init = problem_of(load(f"{FIXTURE}:mlp"))
    a, b = (seed_starts(with_init, np.random.default_rng([0, s])) for s in (0, 1))
    assert not np.allclose(a["params"]["w1"], b["params"]["w1"])
    plain = problem_of(load(f"{FIXTURE}:least_squares"))
    c, d = (seed_starts(plain, np.random.default_rng([0, s])) for s in (0, 1))
    np.testing.assert_array_equal(c["params"]["w"], np.full(5, 0.1))
    np.testing.assert_array_equal(d["params"]["w"], np.full(5, 0.1))
    assert c["shuffle"] != d["shuffle"]


def test_the_stored_config_reads_back_without_the_file_and_refuses_a_changed_model(tmp_path):
    """The results file's config names the model and its digest; it reads back (fit, plot) without importing
    the user's file, and a run that needs the model again refuses one whose file changed."""
    source = tmp_path / "model.py"
    source.write_text(FIXTURE.read_text())
    config = small_config(f"{source}:least_squares", batch="8,16", target="0.1")
    stored = config.to_dict()
    assert stored["problem"]["kind"] == "model" and stored["problem"]["reference"] == f"{source}:least_squares"
    assert "model" not in stored["problem"] and len(stored["problem"]["digest"]) == 16
    source.write_text(FIXTURE.read_text().replace("np.full(5, 0.1)", "np.full(5, 0.2)"))
    back = SweepConfig.from_dict(stored)
    assert back.digest() == config.digest() and isinstance(back.problem, ModelProblem)
    with pytest.raises(OtodError, match="changed since this sweep was run"):
        back.spec_at({"batch": 8.0}).loaded()


def test_a_user_models_default_batches_fit_its_data():
    """8, 16, …, up to the data (at most 1024), from 1 where fewer than 8 examples fit."""
    assert default_batches(96) == (8.0, 16.0, 32.0, 64.0)
    assert default_batches(5000) == tuple(float(2 ** k) for k in range(3, 11))
    assert default_batches(6) == (1.0, 2.0, 4.0)


@pytest.mark.slow
def test_the_python_function_gives_the_commands_numbers(tmp_path):
    """``otod.critical_batch`` on the fixture's loaded contract and ``otod sweep net --model FILE.py:NAME``
    with the same settings give the same lanes (count, status, lr, final loss) and the same B_crit."""
    out = tmp_path / "cli"
    args = ["sweep", "net", "--model", f"{FIXTURE}:mlp", "--batch", "4,8,16,32", "--target", "0.2", "--seeds", "5",
            "--lr-grid", "0.1,0.3,1", "--max-iters", "500", "--no-predict", "--no-plot", "--out", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    file = next(out.glob("net-*.parquet"))
    command = otod.load(file)
    model = load(f"{FIXTURE}:mlp")
    api = otod.critical_batch(model.loss, model.params, model.data, model.init, batches=(4, 8, 16, 32), target=0.2,
                              seeds=5, lr_grid=(0.1, 0.3, 1), max_iters=500, out=str(tmp_path / "api"))
    keys = ("batch", "seed", "learning_rate", "iterations", "status", "final_loss")
    assert [tuple(r[k] for k in keys) for r in api.records] == [tuple(r[k] for k in keys) for r in command.records]
    sgd = api.point("sgd")
    assert np.isfinite(sgd.b_crit) and sgd.b_crit_ci[0] <= sgd.b_crit <= sgd.b_crit_ci[1]
    assert f"B_crit {sgd.b_crit:.4g}" in result.output
    assert api.to_pandas().shape[0] == len(command.records)


@pytest.mark.slow
@pytest.mark.parametrize("fixture,needs", [("plain_jax.py:mlp", None), ("flax_mlp.py:problem", "flax"),
                                           ("equinox_mlp.py:problem", "equinox")])
def test_models_written_outside_otod_run_through_the_sweep(fixture, needs, tmp_path):
    """A plain-JAX, a Flax and an Equinox model (the contract's fixtures) each run through ``otod sweep net
    --model`` (every lane recorded, the report names the model and fits S(B)) and through ``otod.critical_batch``
    with the same settings (the same lanes)."""
    if needs:
        pytest.importorskip(needs)
    reference = f"{FIXTURE.parent / fixture}"
    start = problem_of(load(reference)).start_loss
    args = ["sweep", "net", "--model", reference, "--batch", "8,16,32", "--target", f"{start / 2:.4g}", "--seeds", "2",
            "--lr-grid", "0.1,0.3", "--max-iters", "300", "--no-predict", "--no-plot", "--out", str(tmp_path)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    records = otod.load(next(tmp_path.glob("net-*.parquet"))).records
    assert len(records) == 3 * 2 * 2 and {r["status"] for r in records} <= {"converged", "pruned", "censored"}
    assert f"net: {reference} (your model: P = " in result.output and "B_crit" in result.output
    model = load(reference)
    api = otod.critical_batch(model.loss, model.params, model.data, model.init, batches=(8, 16, 32),
                              target=float(f"{start / 2:.4g}"), seeds=2, lr_grid=(0.1, 0.3), max_iters=300, out=None)
    keys = ("batch", "seed", "learning_rate", "iterations", "status")
    assert [tuple(r[k] for k in keys) for r in api.records] == [tuple(r[k] for k in keys) for r in records]


def test_two_models_of_one_name_get_different_digests_and_results_files():
    """A model's digest covers its start and data (and its file), so two sizes of one named model never share a
    results file (the curvature and noise-scale commands name theirs by a config holding it)."""
    from otod.nets.api import _digest
    from otod.nets.model.contract import check

    loss, params, data = load(f"{FIXTURE}:least_squares").loss, np.full(5, 0.1), load(f"{FIXTURE}:least_squares").data
    one = check(loss, {"w": params}, data, name="same")
    again = check(loss, {"w": params.copy()}, tuple(np.array(a) for a in data), name="same")
    other = check(loss, {"w": params}, tuple(a[:32] for a in data), name="same")
    assert _digest(one) == _digest(again) != _digest(other)


def docs_model_and_sweep() -> tuple[str, list[str]]:
    """docs/models.md's ``my_model.py`` (the code block that starts ``# my_model.py``) and its ``otod sweep net``
    command, as a user pastes them."""
    text = DOCS.read_text()
    source = re.search(r"```python\n(# my_model\.py\n.*?)```", text, re.S).group(1)
    command = re.search(r"^\$ otod (sweep net --model my_model\.py:problem [^\n]*)$", text, re.M).group(1)
    return source, command.split()


def test_the_docs_model_sweep_runs_with_the_nqm_prediction(tmp_path, monkeypatch):
    """Issue 49: the docs' "your model" sweep, pasted (prediction on, the default), ran all its lanes and then
    failed in the NQM's prediction (``'ModelProblem' object has no attribute 'dataset'``). The command runs as
    written with a smaller grid appended (the documented grid's 595 lanes compile 17 programs: 100 s of one cold
    run; this one 25 CPU-s, 6 of them the prediction), and the recorded prediction measured seed 0's start: its SLQ λ_max is the dense Hessian's top
    eigenvalue (80 Lanczos steps on P = 320 converge it to rounding, float64) and its B_simple = tr Σ/|G|² that of
    the per-example gradients (exact over all 512 examples: 1e-9)."""
    from jax.flatten_util import ravel_pytree

    from otod.nets.sweep.predict import seed_start

    source, command = docs_model_and_sweep()
    assert command == ["sweep", "net", "--model", "my_model.py:problem", "--batch", "4..256:7:log", "--target",
                       "0.05"]
    (tmp_path / "my_model.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    smaller = ["--batch", "8,64,256", "--seeds", "2", "--lr-grid", "0.3,1", "--no-plot"]
    result = CliRunner().invoke(main, command + smaller, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "predicted (NQM from the net's spectrum and noise" in result.output
    loaded = otod.load(next(Path("results").glob("net-*.parquet")))
    (prediction,) = loaded.meta["nqm_prediction"]
    assert (prediction["examples"], prediction["parameters"], prediction["trace_examples"]) == (512, 320.0, 512.0)
    model = load("my_model.py:problem")
    spec = problem_of(model)
    start = seed_start(spec, np.random.default_rng([0, 0]))
    with jax.enable_x64(True):
        jnp = jax.numpy
        flat, unravel = ravel_pytree(jax.tree.map(jnp.asarray, start))
        x, y = (jnp.asarray(a, jnp.float64) for a in model.data)
        hessian = jax.jit(jax.hessian(lambda v: model.loss(unravel(v), (x, y))))(flat)
        grads = jax.jit(jax.vmap(jax.grad(lambda v, xi, yi: model.loss(unravel(v), (xi[None], yi[None]))),
                                 (None, 0, 0)))(flat, x, y)
    top = np.linalg.eigvalsh(np.asarray(hessian))[-1]
    g = np.asarray(grads).mean(0)
    trace_sigma = np.mean(np.sum((np.asarray(grads) - g) ** 2, axis=1))
    assert prediction["lambda_max"] == pytest.approx(top, rel=1e-6)
    assert prediction["measured_b_simple"] == pytest.approx(trace_sigma / (g @ g), rel=1e-9)


def test_data_compiled_as_constants_is_refused_before_anything_is_computed():
    """`otod.nets.sweep.options.refuse_embedded_data`: 2·10⁷ examples of 8 float32 features and a float32 label (0.72 GB;
    3 copies are 2.16 GB of constants, JAX's captured 2.16 GB as measured) pass the 2 GB of constants and are
    refused, naming --examples; 10⁶ of them (36 MB) run unless 10 copies pass the free memory's share. Views of
    zeros: nothing of that size is allocated."""
    from types import SimpleNamespace

    from otod.nets.sweep.options import refuse_embedded_data

    n = 20_000_000
    model = SimpleNamespace(data=(np.broadcast_to(np.zeros(8, np.float32), (n, 8)),
                                  np.broadcast_to(np.zeros((), np.float32), (n,))))
    with pytest.raises(OtodError, match=r"--model big.py:many: its 20,000,000 training examples \(0.72 GB\) would "
                                        r"be compiled into the sweep's programs as 2.16 GB of constants"):
        refuse_embedded_data(model, "big.py:many", n)
    refuse_embedded_data(model, "big.py:many", 10 ** 6, available=2 ** 30)  # 0.36 GB against 0.7 GiB: runs
    with pytest.raises(OtodError, match=r"needs about 0.335 GiB of memory and 0.25 GiB is free; use fewer --examples"):
        refuse_embedded_data(model, "big.py:many", 10 ** 6, available=2 ** 28)
