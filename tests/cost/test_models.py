"""Layer formulas (Hobbhahn & Sevilla, Epoch AI 2021) and the networks of the text's appendix."""

import jax
import jax.numpy as jnp
import pytest

from otod.cost import models as M
from otod.core.errors import OtodError


def test_dense_formula_is_2_in_out_batch():
    # Epoch: forward of a linear layer = 2·#input·#hidden·#batch.
    net = M.mlp((784, 10))
    assert M.analytic_flops(net, 32).forward == 2 * 784 * 10 * 32


def test_conv_formula_convnet_first_layer():
    # conv 7×7/2, pad 3, 3→32 on 224×224: output 112×112; forward = 2·7·7·3·32·112·112 per example.
    conv = M.Conv(32, 7, 2, 3)
    assert conv.out_shape((224, 224, 3)) == (112, 112, 32)
    assert conv.products((224, 224, 3)).weight == 2 * 7 * 7 * 3 * 32 * 112 * 112
    a = M.analytic_flops(M.convnet(), 1)
    # second conv: 56×56×32 → 28×28×64, dense 64→10
    second = 2 * 7 * 7 * 32 * 64 * 28 * 28
    assert a.forward == 2 * 7 * 7 * 3 * 32 * 112 * 112 + second + 2 * 64 * 10
    assert a.first_layer_forward == 2 * 7 * 7 * 3 * 32 * 112 * 112


def test_backward_first_layer_1x_others_2x():
    # Epoch: backward = FIRST + 2·OTHER (first layer has no input gradient).
    w = (100, 50, 20, 10)
    f = [2 * a * b * 8 for a, b in zip(w[:-1], w[1:])]
    a = M.analytic_flops(M.mlp(w), 8)
    assert a.forward == sum(f)
    assert a.backward == f[0] + 2 * (f[1] + f[2])


def test_transformer_block_all_2x():
    # Pre-LN with learnable scale: every matmul inside needs its input gradient, so backward = 2·forward for
    # the block; the final dense layer is 2× too.
    net = M.transformer(tokens=8, width=16, heads=2)
    a = M.analytic_flops(net, 3)
    assert a.backward == pytest.approx(2 * a.forward)


def test_parameter_counts_of_appendix_networks():
    # LinearNet: 150528·4096 + 4096 + 4096·128 + 128 + 128·10 + 10 (≈ 617M).
    assert M.linearnet().n_params() == 150528 * 4096 + 4096 + 4096 * 128 + 128 + 128 * 10 + 10
    assert M.onenet().n_params() == 1 * 4096 + 4096 + 4096 * 128 + 128 + 128 * 10 + 10
    assert M.convnet().n_params() == 7 * 7 * 3 * 32 + 7 * 7 * 32 * 64 + 64 * 10 + 10
    shared = M.deeperconvnet(5).n_params()
    assert shared == M.deeperconvnet(0).n_params() + 3 * 3 * 32 * 32  # one shared intermediate layer
    assert M.deeperconvnet(5, shared=False).n_params() == M.deeperconvnet(0).n_params() + 5 * 3 * 3 * 32 * 32


# the conv nets and the transformer (3.8-4.6 s each) run with -m slow; the flops and profile tests apply them too
@pytest.mark.parametrize("net", [pytest.param(M.convnet(16), marks=pytest.mark.slow),
                                 pytest.param(M.deeperconvnet(2, 16), marks=pytest.mark.slow), M.mlp((12, 8, 10)),
                                 pytest.param(M.transformer(4, 8, 2), marks=pytest.mark.slow), M.onenet()])
def test_apply_gives_logits(net):
    params = jax.jit(net.init)(jax.random.PRNGKey(0))
    x = jnp.ones((2,) + net.input_shape)
    out = jax.jit(net.apply)(params, x)
    assert out.shape == (2, net.classes)
    assert bool(jnp.all(jnp.isfinite(out)))
    assert net.out_shape() == (net.classes,)


@pytest.mark.parametrize("text", ["7,,x", "784", "", "3,0,2", "a,b"])
def test_malformed_widths(text):
    with pytest.raises(OtodError, match="--widths"):
        M.parse_widths(text)


def test_unknown_model_and_bad_shapes():
    with pytest.raises(OtodError, match="unknown model"):
        M.network("nope")
    with pytest.raises(OtodError):
        M.transformer(width=10, heads=3)
    with pytest.raises(OtodError):
        M.deeperconvnet(-1)
    assert M.parse_widths(" 784, 512 ,10") == (784, 512, 10)
