"""otod's transformer as a net spec (`otod.nets.model.transformer_net`): its parameter count is the closed form, its
loss at init is log V plus the logits' variance term, it is causal on the sequence task's inputs, and a net the
options cannot build is refused in one line."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from otod.core.errors import OtodError
from otod.nets.model import sequence, zoo
from otod.nets.model.problem import NetSpec


def spec(width: int = 8, depth: int = 1, **kw) -> NetSpec:
    return NetSpec(model="transformer", data="sequence", loss="cross-entropy", width=width, depth=depth, batch=4,
                   **kw)


@pytest.mark.parametrize("width,depth,heads", [(8, 1, None), (16, 2, 4), (12, 1, 3)])
def test_the_parameter_count_is_the_closed_form(width, depth, heads):
    """P = 2·V·d + (T − 1)·d + L·(12d² + 9d) + 2d with V = 32, T = 16 (embedding and unembedding, positions, per
    block q, k, v, o (4d²), the MLP d → 4d → d with its biases (8d² + 5d) and two LNs (4d), the final LN): 1,488 at
    d = 8, L = 1; the spec's count and the drawn start's leaves both equal it."""
    v, t = sequence.VOCABULARY, sequence.LENGTH
    formula = 2 * v * width + (t - 1) * width + depth * (12 * width ** 2 + 9 * width) + 2 * width
    net = spec(width, depth, heads=heads)
    assert net.parameter_count == formula
    start = net.initial_params(np.random.default_rng(0))
    assert sum(np.asarray(a).size for a in jax.tree.leaves(start)) == formula
    assert spec(8).parameter_count == 1488


def test_the_loss_at_init_is_log_v_plus_the_logit_variance_term():
    """At init the logits are about N(0, s²) (a unit-variance LN times U ~ N(0, s²/d)), so the expected
    cross-entropy is log V + s²(1 − 1/V)/2 = 3.4657 + 0.0048 = 3.4706 at V = 32, s = 0.1 (`zoo.LOGIT_SCALE`),
    whatever the data and the depth (the final LN sets the scale). On the held-out set (3,584 tokens) for 3 seeds,
    at d = 8 (one block, 2 heads) and d = 16 (two blocks, 4 heads: the net of the causality test, whose start is
    compiled once for both): within 0.01 (the logits' variance is s² only on average over U's draw, spread about
    s²·√(2/d) ≤ 0.005; a U of scale s = 1 moves the loss by about 0.5)."""
    v, s = sequence.VOCABULARY, zoo.LOGIT_SCALE
    expected = math.log(v) + s * s * (1 - 1 / v) / 2
    for width, depth, heads in ((8, 1, None), (16, 2, 4)):
        net = spec(width, depth, heads=heads, stream=True)
        for seed in range(3):
            assert net.initial_loss(seed=seed) == pytest.approx(expected, abs=0.01)


def test_the_net_is_causal_on_the_sequence_inputs():
    """Changing token t of the inputs leaves the logits at every position before t unchanged (exactly) and changes
    those at t."""
    net = spec(16, depth=2, heads=4)
    params = jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), net.initial_params(np.random.default_rng(1)))
    x, _ = net.held_out_arrays(np.float32)
    x = jnp.asarray(x[:8])
    logits = jax.jit(net.outputs_of)
    before = np.asarray(logits(params, x))
    assert before.shape == (8, sequence.LENGTH - 1, sequence.VOCABULARY)
    for t in (0, 5, sequence.LENGTH - 2):
        changed = x.at[:, t].set((x[:, t] + 1) % sequence.VOCABULARY)
        after = np.asarray(logits(params, changed))
        assert np.array_equal(after[:, :t], before[:, :t])
        assert np.abs(after[:, t] - before[:, t]).max() > 0


@pytest.mark.parametrize("kw,message", [
    (dict(model="transformer", data="sequence", width=10, heads=4), "--width 10: the transformer's d_model must be "
                                                                    "a multiple of --heads 4"),
    (dict(model="mlp", data="sequence"), "--data sequence: token sequences for the transformer"),
    (dict(model="transformer", data="teacher", loss="squared"), "--model transformer: reads token sequences"),
    (dict(model="mlp", data="teacher", loss="squared", heads=2), "--heads 2: the transformer's attention heads"),
    (dict(model="transformer", data="sequence", init="orthogonal"), "--init, --architecture: the MLP's"),
])
def test_a_net_the_options_cannot_build_is_refused_in_one_line(kw, message):
    kw = {"loss": "cross-entropy", **kw}
    with pytest.raises(OtodError, match=message.replace("(", r"\(")) as error:
        NetSpec(**kw)
    assert "\n" not in str(error.value)


def test_the_planner_costs_the_activations():
    """A lane's floats (`otod.nets.model.family.lane_floats`) are 8·P plus B × one sequence's activations: with
    T = 15 positions, T·d (embedding) + L·(8·T·d + 2·T·4d + 2·heads·T²) + T·d (final LN) + 2·T·V (logits and
    log-softmax): 10,500 at d = 32, one block, 2 heads; doubling B adds B × that, the attention's T² included."""
    from otod.nets.model.family import lane_floats

    net = spec(32)
    t, d, v = sequence.LENGTH - 1, 32, sequence.VOCABULARY
    per_sequence = t * d + (8 * t * d + 2 * t * 4 * d + 2 * 2 * t * t) + t * d + 2 * t * v
    assert per_sequence == 10500
    assert lane_floats(net, 8) == 8 * net.parameter_count + 8 * per_sequence
    assert lane_floats(net, 16) - lane_floats(net, 8) == 8 * per_sequence
    four_heads = spec(32, heads=4)
    assert lane_floats(four_heads, 1) - lane_floats(net, 1) == 2 * 2 * t * t


def test_the_planner_costs_a_lane_by_its_flops():
    """The planner's FLOPs of a lane's step are 6·P_nonembed·B·T + 12·L·B·T²·d and of a held-out check
    2·P_nonembed·N·T + 4·L·N·T²·d (`otod.nets.model.transformer_net.step_flops`, ``check_flops``), with
    P_nonembed = L·(12d² + 9d) + 2d + d·V the parameters less the embeddings: at d = 16, L = 1, B = 32, T = 15,
    V = 32, N = 256 held-out sequences, P_nonembed = 3,760, a step 12,211,200 FLOPs and a check 32,563,200 (exact
    integers); a lane-iteration's seconds add the step's at the CPU's rate to the float term, and the family
    declares the measured compile time."""
    from otod.core.device_costs import CPU
    from otod.core.plan import lane_seconds
    from otod.nets.model import transformer_net

    d, layers, b, t, v, n = 16, 1, 32, sequence.LENGTH - 1, sequence.VOCABULARY, sequence.HELD_OUT
    assert (t, v, n) == (15, 32, 256)
    nonembed = layers * (12 * d * d + 9 * d) + 2 * d + d * v
    assert nonembed == 3760
    net = NetSpec(model="transformer", data="sequence", loss="cross-entropy", width=d, depth=layers, batch=b,
                  stream=True)
    family = net.family()
    assert family.flops_per_lane == 6 * nonembed * b * t + 12 * layers * b * t * t * d == 12_211_200
    assert family.flops_per_check == 2 * nonembed * n * t + 4 * layers * n * t * t * d == 32_563_200
    assert family.compile_seconds == transformer_net.COMPILE_SECONDS
    assert lane_seconds(net) == pytest.approx(family.floats_per_lane * CPU.seconds_per_float_iteration
                                              + 12_211_200 * CPU.seconds_per_flop, rel=1e-12)


def test_the_planner_compiles_one_program_per_cell_whatever_its_batches(monkeypatch):
    """A cell's batch sizes share one compiled program (`otod.core.variants`), so the pre-flight adds the
    transformer's compile time once per cell: 2 cells (d 4 and 8) cost 2 × `COMPILE_SECONDS` with one batch size and
    with three (was 6 ×, once per cell and batch). The compile time is set to 10⁷ s so the count reads off the
    estimate's seconds (the lanes' own, 64 iterations, are far below it); the start-loss check of the config's
    validation is stubbed (a start of +inf; it compiles each net's loss and is not what this tests)."""
    from otod.core.plan import estimate
    from otod.nets.model import transformer_net
    from otod.nets.sweep.options import net_config

    monkeypatch.setattr(transformer_net, "COMPILE_SECONDS", 1e7)
    monkeypatch.setattr(NetSpec, "initial_loss", lambda self, seed=0, s=0: float("inf"))
    for batches, static_points in (("2", 2), ("2,8,32", 6)):
        config = net_config(data="sequence", model="transformer", depth="1", width="4,8", batch=batches,
                            lr_grid="1,3", max_iters="64", seeds=2)
        assert len(config.specs()) == static_points
        assert estimate(config).seconds // 1e7 == 2
