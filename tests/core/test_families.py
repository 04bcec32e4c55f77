"""The core is general: two families defined only here (no line of otod/core names them) run through the engine
and the sweep runner. One is stochastic (a sampled gradient with a per-step key and a traced batch size), one has
pytree parameters (a tuple of matrices) and a non-convex loss, and a method that reads information recomputed
from the parameters at every step."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from otod.core.axes import Axis
from otod.core.engine import iterations_to_target
from otod.core.errors import OtodError
from otod.core.family import Family
from otod.core.methods import Method
from otod.core.reference import reference_run
from otod.core.registry import Obstacle, SweepKind, register
from otod.core.stopping import Status, Target
from otod.core.config import SweepConfig
from otod.core.sweep import run_sweep


@dataclass(frozen=True)
class NoOptions:
    pass


# -- a stochastic family: a noisy quadratic with a traced batch size ---------------------------------------------

H = np.array([1.0, 0.5, 0.25, 0.125])
SIGMA = 0.5  # per-example gradient noise: g = Hx + (σ/√B)·ξ, ξ ~ N(0, I)


@dataclass(frozen=True)
class NoisySpec:
    """½ Σ h_i x_i² with h = (1, ½, ¼, ⅛), x₀ = 1 (the same for every seed: seeds differ only in the noise)."""

    dim: int = 4

    @property
    def kind(self) -> str:
        return "noisy"

    def family(self) -> Family:
        h = H[: self.dim]

        def make(point, drawn):
            dtype = jnp.result_type(point["batch"], float)
            return {"h": jnp.asarray(h, dtype), "batch": point["batch"], "x0": jnp.ones(self.dim, dtype)}

        def metric(p, x):
            return 0.5 * jnp.sum(p["h"] * x * x)

        def gradient(p, x, key):
            noise = jax.random.normal(key, x.shape, x.dtype)
            return p["h"] * x + SIGMA / jnp.sqrt(p["batch"]) * noise

        return Family(draws=lambda rng: {"unused": rng.standard_normal(1)}, make=make, init=lambda p: p["x0"],
                      metric=metric, gradient=gradient, floats_per_seed=1, floats_per_lane=6 * self.dim)


def sgd_method() -> Method:
    return Method(reference_lr=lambda info: 1.0, build=lambda lr, info, o, hp=None: optax.sgd(lr),
                  reference="a fixed step", program="sgd")


SGD = sgd_method()


def expected_loss(lr: float, batch: float, steps: int) -> float:
    """The closed-form recursion: E[x_{t+1}²] = (1 − η h)² E[x_t²] + η² σ²/B per coordinate, from x₀ = 1."""
    m = np.ones_like(H)
    for _ in range(steps):
        m = (1 - lr * H) ** 2 * m + lr ** 2 * SIGMA ** 2 / batch
    return float(0.5 * np.sum(H * m))


@pytest.mark.parametrize("batch", [1.0, 16.0])
def test_monte_carlo_mean_loss_matches_the_closed_form_within_three_standard_errors(x64, batch):
    """512 seeds run exactly 30 steps (an unreachable absolute target censors them all at the cap); the mean of
    their exact losses matches the moment recursion within 3 standard errors."""
    seeds, steps, lr = 512, 30, 0.5
    sol = iterations_to_target(NoisySpec(), (SGD,), {"batch": np.full(seeds, batch)}, np.arange(seeds),
                               np.full(seeds, lr), relative_lr=False, target=Target(1e-300, kind="absolute"),
                               max_iters=steps, options=NoOptions())
    assert np.all(sol.status == Status.CENSORED) and np.all(sol.iterations == steps)
    losses = sol.final_metric
    se = losses.std(ddof=1) / np.sqrt(seeds)
    assert abs(losses.mean() - expected_loss(lr, batch, steps)) < 3 * se


def test_stochastic_lanes_equal_the_reference_loop_and_keys_do_not_depend_on_blocks(x64):
    """Per-step keys are fold_in(fold_in(root, seed), t): the reference loop draws the same noise, so counts are
    identical; and the same lanes split into blocks of 2 or of 256 give identical results."""
    batch = np.array([1.0, 4.0, 1.0, 4.0])
    seeds = np.array([0, 0, 1, 1])
    target = Target(0.02, kind="absolute")
    kw = dict(relative_lr=False, target=target, max_iters=400, options=NoOptions())
    wide = iterations_to_target(NoisySpec(), (SGD,), {"batch": batch}, seeds, np.full(4, 0.3), **kw)
    narrow = iterations_to_target(NoisySpec(), (SGD,), {"batch": batch}, seeds, np.full(4, 0.3), block_lanes=2,
                                  **kw)
    assert wide.iterations.tolist() == narrow.iterations.tolist()
    assert np.array_equal(wide.final_metric, narrow.final_metric)
    ref = [reference_run(NoisySpec(), SGD, {"batch": b}, s, target=target, max_iters=400, lr=0.3,
                         relative_lr=False, options=NoOptions()).iterations for b, s in zip(batch, seeds)]
    assert wide.iterations.tolist() == ref


# -- a pytree family: two 3×3 matrices, a non-convex loss, information recomputed every step ---------------------


@dataclass(frozen=True)
class TwoLayerSpec:
    """½‖W₂W₁ − Φ‖²_F with W = (W₁, W₂) near the identity: linear in the product, non-convex in the factors."""

    width: int = 3

    @property
    def kind(self) -> str:
        return "two-layer"

    def family(self) -> Family:
        n = self.width

        def draws(rng):
            return {"phi": np.eye(n) + 0.3 * rng.standard_normal((n, n)),
                    "w1": 0.1 * rng.standard_normal((n, n)), "w2": 0.1 * rng.standard_normal((n, n))}

        def make(point, drawn):
            dtype = drawn["phi"].dtype
            return {"phi": drawn["phi"] * point["scale"], "w0": (jnp.eye(n, dtype=dtype) + drawn["w1"],
                                                                 jnp.eye(n, dtype=dtype) + drawn["w2"])}

        def metric(p, w):
            r = w[1] @ w[0] - p["phi"]
            return 0.5 * jnp.sum(r * r)

        def info(p, w):
            return {"size": 1.0 + jnp.sum(w[0] * w[0]) / n}

        return Family(draws=draws, make=make, init=lambda p: p["w0"], metric=metric, info=info,
                      provides=frozenset({"size"}), info_every_step=True, floats_per_seed=3 * n * n,
                      floats_per_lane=10 * n * n)


def _scaled(lr, info, o, hp=None):
    """gd with its step divided by the current 1 + ‖W₁‖²/n, read from info recomputed at every step."""
    return optax.chain(optax.scale_by_learning_rate(lr),
                       optax.stateless(lambda u, params: jax.tree.map(lambda g: g / info["size"], u)))


TWO_LAYER_METHODS = {
    "gd": Method(reference_lr=lambda info: 0.2, build=lambda lr, info, o, hp=None: optax.sgd(lr),
                 reference="0.2"),
    "heavy-ball": Method(reference_lr=lambda info: 0.1,
                         build=lambda lr, info, o, hp=None: optax.sgd(lr, momentum=0.5), reference="0.1, β = ½"),
    "scaled": Method(reference_lr=lambda info: 0.3, build=_scaled, reference="0.3/(1 + ‖W₁‖²/n)",
                     needs=frozenset({"size"})),
    "needs-curvature": Method(reference_lr=lambda info: 1.0 / info["curvature"],
                              build=lambda lr, info, o, hp=None: optax.sgd(lr), reference="1/L",
                              needs=frozenset({"curvature"})),
}


@pytest.mark.parametrize("method", ["gd", "heavy-ball", "scaled"])
def test_pytree_family_equals_the_reference_loop_exactly(x64, method):
    scale = np.repeat([0.5, 1.0, 1.5], 2)
    seeds = np.tile([0, 1], 3)
    target = Target(1e-8)
    sol = iterations_to_target(TwoLayerSpec(), (TWO_LAYER_METHODS[method],), {"scale": scale}, seeds,
                               np.ones(6), target=target, max_iters=3000, options=NoOptions())
    ref = [reference_run(TwoLayerSpec(), TWO_LAYER_METHODS[method], {"scale": c}, s, target=target,
                         max_iters=3000, options=NoOptions()) for c, s in zip(scale, seeds)]
    assert sol.iterations.tolist() == [r.iterations for r in ref]
    assert [int(x) for x in sol.status] == [int(Status[r.status.upper()]) for r in ref]
    assert np.all(sol.status == Status.CONVERGED)


# -- both through the sweep runner, with a test-only sweep kind -----------------------------------------------------

NOISY_KIND = SweepKind(
    name="test-noisy", axes=(Axis("batch", "B", "batch size B", "--batch", traced=True, minimum=1),
                             Axis("dim", "d", "dimension d", "--dim", traced=False, minimum=1, integer=True)),
    methods={"sgd": SGD}, problems={"noisy": NoisySpec}, options=NoOptions, max_iters=lambda config: 500,
    x64=lambda config: True)
TWO_LAYER_KIND = SweepKind(
    name="test-two-layer", axes=(Axis("scale", "s", "target scale", "--scale", traced=True),),
    methods=TWO_LAYER_METHODS, problems={"two-layer": TwoLayerSpec}, options=NoOptions,
    max_iters=lambda config: 3000, x64=lambda config: True)
register(Obstacle(name="test-only", summary="families defined in tests", sweeps=lambda: (NOISY_KIND, TWO_LAYER_KIND)))


def test_a_two_axis_grid_with_a_static_axis_runs_one_program_per_static_value(tmp_path):
    """batch (traced) × dim (static): records carry both axes by name; one compiled program per dimension."""
    config = SweepConfig(sweep="test-noisy", axes=(("batch", (1.0, 4.0, 16.0)), ("dim", (2.0, 4.0))),
                         problem=NoisySpec(), methods=("sgd",), target=Target(0.05, kind="absolute"), seeds=4,
                         lr=0.4)
    results = run_sweep(config, out_dir=tmp_path)
    assert results.meta["compile_count"] + results.meta["cache_loads"] == 2
    assert len(results.records) == 3 * 2 * 4
    assert {(r["batch"], r["dim"]) for r in results.records} == {(b, d) for b in (1, 4, 16) for d in (2, 4)}
    assert all("final_loss" in r and r["status"] == "converged" for r in results.records)
    by_batch = {b: np.median([r["iterations"] for r in results.records if r["batch"] == b and r["dim"] == 4])
                for b in (1.0, 16.0)}
    assert by_batch[16.0] <= by_batch[1.0]  # less noise, no more steps


def test_a_method_needing_what_the_family_lacks_is_refused_in_one_line():
    with pytest.raises(OtodError, match="needs-curvature: needs curvature, which the two-layer problem does not "
                                        "provide"):
        SweepConfig(sweep="test-two-layer", axes=(("scale", (1.0,)),), problem=TwoLayerSpec(),
                    methods=("needs-curvature",))


def test_tuned_learning_rate_on_the_pytree_family(tmp_path):
    config = SweepConfig(sweep="test-two-layer", axes=(("scale", (0.5, 1.0)),), problem=TwoLayerSpec(),
                         methods=("gd",), target=Target(1e-6), seeds=3, lr="tuned", lr_grid=(0.25, 1.0, 2.0))
    results = run_sweep(config, out_dir=tmp_path)
    from otod.core.analysis import frame_of, select

    chosen = select(frame_of(results), ("scale",)).to_dict("records")
    assert len(chosen) == 2 * 3 and len({(r["scale"], r["lr_multiplier"]) for r in chosen}) == 2
