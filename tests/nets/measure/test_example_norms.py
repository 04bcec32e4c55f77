"""`otod.nets.measure.example_norms` (per-example squared norms from the layers' inputs and output gradients) against
the vmapped per-example gradients of `otod.nets.measure.noise_scale` (the path it replaces for tr Σ), in float64:
every model family, a model whose leaves the jaxpr walk cannot recognise (the per-leaf fallback, still exact),
and a sequence model on which the naive per-position |x|²|γ|² is off by far more than the tolerance."""

from __future__ import annotations

import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from otod.nets.measure import example_norms as en
from otod.nets.measure.noise_scale import Problem, gradient_moments
from otod.nets.model.contract import check, from_spec
from otod.nets.model.problem import NetSpec

#: Σᵢ|gᵢ|² − n|G|² against Σᵢ|gᵢ − G|², each a float64 sum of ≤ 10³ terms: rounding is 1e-15 relative times
#: 1 + 1/B_simple (≤ 10 on these models), so 1e-10 leaves 10⁴ of room; a wrong layer's norm (a missing
#: cross-position term, a missing bias) is off by percents.
RTOL = 1e-10


def _fixture(name: str):
    module, _, function = name.partition(":")
    return getattr(importlib.import_module(f"tests.fixtures.models.{module}"), function)()[:3]


def _spec(model: str):
    spec = NetSpec(model=model, width=6, depth=3, activation="tanh", data="digits", examples=40,
                   loss="cross-entropy", batch=4)
    with jax.enable_x64(True):
        m = from_spec(spec, np.float64)
    return m.loss, m.params, m.data


def _transformer():
    from otod.nets.model.zoo import transformer_problem

    return transformer_problem(p=5, d=8, heads=2, layers=1, mlp=12)[:3]


MODELS = {"least-squares": lambda: _fixture("plain_jax:least_squares"), "mlp": lambda: _fixture("plain_jax:mlp"),
          "otod-mlp": lambda: _spec("mlp"), "otod-cnn": lambda: _spec("cnn"), "transformer": _transformer,
          "flax": lambda: _fixture("flax_mlp:problem"), "equinox": lambda: _fixture("equinox_mlp:problem")}
#: Slow-marked, for the fast suite's budget: the transformer's two compiles (the norm pass and the vmapped
#: gradients) take about 18 s on 2 cores, the CNN and the Flax MLP 11–15 s at load 14; the fast suite keeps a dot
#: with the leaf on either side (least squares, Equinox), Gram and Xᵀ Γ dots, biases and a real convolution.
SLOW = {"transformer", "otod-cnn", "flax"}


def _both(loss, params, data):
    """(the norms' tr Σ, the vmapped per-example gradients' tr Σ, the plan) at ``params``, G the mean gradient:
    `example_norms.square_sums` over all examples against gradient_moments' centred sum of vmapped gradients.
    G, the norms' per-leaf sums and the vmapped gradients' centred sums are one compiled program (three programs
    and a reduction per leaf shape op by op took 1-2 CPU-s more per model)."""
    from otod.nets.model.chunked import example_loss

    with jax.enable_x64(True):
        params = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), params)
        data = tuple(jnp.asarray(a, jnp.float64 if np.issubdtype(a.dtype, np.floating) else a.dtype) for a in data)
        n = int(data[0].shape[0])
        plan = en.plan(loss, params, data)

        def parts(p, b):
            G = jax.grad(loss)(p, b)
            grads = jax.vmap(jax.grad(example_loss(loss)), (None,) + (0,) * len(b))(p, *b)
            centred = [jnp.sum((g - c) ** 2) for g, c in zip(jax.tree.leaves(grads), jax.tree.leaves(G))]
            return G, en.square_sums(plan, p, G, b), centred

        G, sums, centred = jax.jit(parts)(params, data)
        fast = en.centred_square_sum(plan, sums, G, n) / n
        exact = sum(float(c) for c in centred) / n
        return fast, exact, plan


@pytest.mark.parametrize("name", [pytest.param(m, marks=pytest.mark.slow) if m in SLOW else m for m in MODELS])
def test_the_layers_norms_give_the_vmapped_trace_sigma(name):
    """tr Σ from the layers' norms equals the vmapped per-example gradients' to 1e-10, every leaf recognised
    (dense layers, im2col and gathered embeddings, biases, layer norms' gains): no fallback on these models."""
    if name in ("flax", "equinox"):
        pytest.importorskip({"flax": "flax", "equinox": "equinox"}[name])
    fast, exact, plan = _both(*MODELS[name]())
    assert fast == pytest.approx(exact, rel=RTOL)
    assert plan.fallback == ()


def test_b_simple_with_drawn_trace_examples_takes_the_norms_and_equals_the_exact_one():
    """With tr(HΣ) from m < n drawn examples, gradient_moments takes tr Σ from the norms: B_simple and |G|² as
    with all n per-example gradients, to 1e-10; tr(HΣ) still from the drawn examples with its error."""
    loss, params, data = _fixture("plain_jax:mlp")
    with jax.enable_x64(True):
        problem = Problem.of_model(check(loss, params, data, finite=False))
        exact, drawn = gradient_moments(problem), gradient_moments(problem, trace_examples=8)
    assert "norms" in problem._compiled  # the norm pass ran
    assert drawn["b_simple"] == pytest.approx(exact["b_simple"], rel=RTOL)
    assert drawn["g2"] == exact["g2"]
    assert drawn["trace_examples"] == 8 and drawn["trace_h_sigma_se"] > 0


def _unrecognised():
    """A loss with one leaf of each kind the walk must not take: ``a`` through tanh, ``tied`` used twice (in and
    out), ``loop`` inside a scan, beside a plain dense ``w`` and a real convolution's kernel ``k``."""
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((30, 6, 6, 1)), rng.standard_normal(30)

    def loss(p, batch):
        xb, yb = batch
        h = jax.lax.conv_general_dilated(xb, p["k"], (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        h = jnp.tanh(h).reshape(xb.shape[0], -1) @ p["w"]  # [n, 4]
        h = jnp.tanh(h @ jnp.tanh(p["a"]))
        h = jnp.tanh(h @ p["tied"]) @ p["tied"].T
        h, _ = jax.lax.scan(lambda c, _: (jnp.sin(c @ p["loop"]), None), h, None, length=2)
        return 0.5 * jnp.mean((h.sum(-1) - yb) ** 2)

    params = {"k": rng.standard_normal((3, 3, 1, 2)) / 3, "w": rng.standard_normal((72, 4)) / 8,
              "a": rng.standard_normal((4, 4)) / 2, "tied": rng.standard_normal((4, 3)) / 2,
              "loop": rng.standard_normal((4, 4)) / 2}
    return loss, params, (x, y)


def test_leaves_the_walk_does_not_recognise_fall_back_to_their_per_example_gradients_exactly():
    """tanh(W), a tied weight and a weight inside a scan fall back (their per-example gradients, vmapped); the
    dense weight and the convolution's kernel are recognised; the sum is the vmapped one to 1e-10."""
    fast, exact, plan = _both(*_unrecognised())
    names = ["a", "k", "loop", "tied", "w"]  # the dict's leaves, sorted
    assert sorted(names[j] for j in plan.fallback) == ["a", "loop", "tied"]
    assert sorted(names[u.leaf] for u in plan.uses) == ["k", "w"]
    assert fast == pytest.approx(exact, rel=RTOL)


def test_a_model_with_no_recognised_leaf_is_all_fallback_and_exact():
    """Least squares through tanh(w): no leaf recognised, the pass is the vmapped gradients alone, to 1e-10."""
    loss, params, data = _fixture("plain_jax:least_squares")
    fast, exact, plan = _both(lambda p, b: loss({"w": jnp.tanh(p["w"])}, b), params, data)
    assert plan.uses == () and plan.fallback == (0,)
    assert fast == pytest.approx(exact, rel=RTOL)


def _sequence():
    """A dense layer applied at each of T = 5 positions (K = F = 12: the Gram matrices are cheaper, T(K + F) <
    KF), summed over positions, whose inputs are alike across positions: the per-example gradient Σₜ xₜᵀγₜ has
    large cross-position terms."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((25, 1, 12)) + 0.3 * rng.standard_normal((25, 5, 12))  # positions alike
    y = rng.standard_normal(25)

    def loss(p, batch):
        xb, yb = batch
        h = jnp.tanh(xb @ p["w"])  # [n, T, 12]
        return 0.5 * jnp.mean((h.sum((1, 2)) - yb) ** 2)

    return loss, {"w": rng.standard_normal((12, 12)) / 4}, (x, y)


def test_a_sequence_layer_needs_its_cross_position_terms():
    """On the sequence model the Gram form equals the vmapped tr Σ to 1e-10, while the naive per-position
    Σₜ |xₜ|²|γₜ|² (no cross terms) is more than 50 % off: a trick missing them fails the first assertion."""
    loss, params, data = _sequence()
    fast, exact, plan = _both(loss, params, data)
    (use,) = plan.uses
    assert use.ghost is True
    assert fast == pytest.approx(exact, rel=RTOL)
    with jax.enable_x64(True):
        G = jax.grad(loss)(params, data)

        def naive(xi, yi):
            zero = jnp.zeros((1, 5, 12))
            gamma = jax.grad(lambda e: loss_at(e, xi, yi))(zero)[0]
            return jnp.sum(jnp.sum(xi ** 2, -1) * jnp.sum(gamma ** 2, -1))

        def loss_at(e, xi, yi):
            h = jnp.tanh(xi[None] @ params["w"] + e)
            return 0.5 * jnp.mean((h.sum((1, 2)) - yi[None]) ** 2)

        naive_sum = float(jnp.sum(jax.vmap(naive)(*(jnp.asarray(a) for a in data))))
        naive_trace = naive_sum / len(data[1]) - float(jnp.sum(G["w"] ** 2))
    assert abs(naive_trace / exact - 1) > 0.5


def test_the_chunk_holds_the_plans_floats():
    """A chunk of examples holds at most `CHUNK_FLOATS` at the plan's floats an example, and at least one."""
    plan = en.plan(*_sequence())
    assert en.chunk_size(plan, 25, floats=plan.example_floats * 3 + 1) == 3
    assert en.chunk_size(plan, 25, floats=1) == 1
    assert plan.example_floats >= 2 * 5 * 5  # two 5 × 5 Gram matrices at least
