"""Per-layer curvature (`otod.nets.measure.curvature_layers`, issue 36 item 6): each layer's top eigenvalue equals the top
eigenvalue of the dense Hessian's diagonal block in float64; on linear least squares (one layer) the block is the
whole Hessian XᵀX/n; the layers are the pytree's parent groups; the command prints and records them."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from click.testing import CliRunner

import otod
from otod.nets.measure import curvature_layers as L
from otod.nets.measure.curvature import flatten
from otod.nets.model.problem import NetSpec
from tests.fixtures.models import plain_jax

#: Lanczos on a block of ≤ 80 parameters against `numpy.linalg.eigh` of the dense block, both float64.
DENSE = 1e-6


def dense_blocks(loss, params, data) -> dict:
    """name → the top eigenvalue of the dense Hessian's diagonal block on that layer's coordinates: `jax.hessian`
    of the flat loss (ravel_pytree order: the leaves in `tree_leaves` order, each raveled), rows and columns of
    the layer's leaves."""
    flat, unflatten = flatten(params)
    h = np.asarray(jax.hessian(lambda f: loss(unflatten(f), data))(flat))
    ends = np.cumsum([np.size(leaf) for leaf in jax.tree.leaves(params)])
    starts = ends - [np.size(leaf) for leaf in jax.tree.leaves(params)]
    out = {}
    for layer in L.layers_of(params):
        index = np.concatenate([np.arange(starts[i], ends[i]) for i in layer.members])
        out[layer.name] = float(np.linalg.eigvalsh(h[np.ix_(index, index)])[-1])
    return out


@pytest.mark.slow  # 16-47 s on the shared 2-core machine: the dense spectrum, the top-k and 3 block Lanczos compiles
def test_each_layer_equals_the_top_eigenvalue_of_its_dense_diagonal_block(x64):
    """A tanh MLP 5 → 16 → 1 (112 parameters; its pytree {"b1", "w1", "w2"} gives 3 layers of 16, 80 and 16):
    λ_max(H_ℓℓ) from `otod.curvature(per_layer=True)` equals `eigvalsh` of the dense block to 1e-6 relative
    (the 16-parameter blocks are exact after 16 Lanczos steps, the 80-parameter one converges in 43), each below
    the whole net's λ_max (Cauchy interlacing), with residual bounds below 1e-6·λ."""
    loss, params, data, init = plain_jax.mlp()
    result = otod.curvature(loss, params, data, init, k=1, probes=2, x64=True, per_layer=True)
    record, point = result.records[0], result.points[0]
    exact = dense_blocks(loss, jax.tree.map(jnp.asarray, params), tuple(jnp.asarray(a) for a in data))
    assert list(record["layer_names"]) == ["['b1']", "['w1']", "['w2']"] == list(point.layer_names)
    assert list(record["layer_parameters"]) == [16, 80, 16]
    np.testing.assert_allclose(point.layer_lambda_max, [exact[n] for n in point.layer_names], rtol=DENSE)
    assert max(point.layer_lambda_max) <= point.lambda_max * (1 + DENSE)
    assert all(r <= DENSE * t for r, t in zip(record["layer_residuals"], record["layer_lambda_max"]))
    frame = result.layers_to_pandas()
    assert list(frame["layer"]) == list(point.layer_names) and list(frame["net_lambda_max"]) == [point.lambda_max] * 3


@pytest.mark.slow  # 43 s on the shared machine: an own net's full curvature record and 2 block Lanczos compiles
def test_otods_own_net_groups_each_weight_layer_and_matches_the_dense_blocks(x64):
    """otod's own relu MLP on 100 digits, width 4 (64·4 + 4 = 260 and 4·10 + 10 = 50 parameters in layers [0]
    and [1]: each layer's w and b together): the blocks' top eigenvalues from `curvature_at` equal the dense
    blocks' to 1e-6 (Lanczos takes min(P_ℓ, 43) steps; the top eigenvalue of these blocks is well separated)."""
    from otod.nets.model.contract import from_spec
    from otod.nets.measure.curvature import curvature_at

    spec = NetSpec(width=4, depth=2, examples=100)
    model = from_spec(spec, np.float64)
    rec = curvature_at(model, model.params, 1, probes=2, steps=10, per_layer=True)
    exact = dense_blocks(model.loss, model.params, model.data)
    assert rec["layer_names"] == ["[0]", "[1]"] and rec["layer_parameters"] == [260, 50]
    np.testing.assert_allclose(rec["layer_lambda_max"], [exact["[0]"], exact["[1]"]], rtol=DENSE)


def test_least_squares_one_layer_block_is_the_whole_hessian(x64):
    """½ mean (xᵀw − y)² has one layer, ['w'], whose block is all of H = XᵀX/n: its top eigenvalue is XᵀX/n's
    largest to 1e-6 and equals the whole net's λ_max."""
    loss, params, data = plain_jax.least_squares()
    x = data[0]
    point = otod.curvature(loss, params, data, k=1, x64=True, per_layer=True).points[0]
    top = np.linalg.eigvalsh(x.T @ x / len(x))[-1]
    assert point.layer_names == ("['w']",)
    assert point.layer_lambda_max[0] == pytest.approx(top, rel=DENSE)
    assert point.lambda_max == pytest.approx(point.layer_lambda_max[0], rel=DENSE)


def test_layers_are_the_leaves_that_share_a_parent():
    """The grouping rule on the pytrees people write: otod's tuple of {w, b}, Flax linen's nested dict, a flat
    dict (each entry its own layer), a list of (w, b) under a key, and a bare array (one layer)."""
    z = np.zeros

    def groups(params):
        return [(layer.name, layer.parameters) for layer in L.layers_of(params)]

    assert groups(({"w": z((3, 4)), "b": z(4)}, {"w": z((4, 2)), "b": z(2)})) == [("[0]", 16), ("[1]", 10)]
    linen = {"params": {"Dense_0": {"kernel": z((3, 4)), "bias": z(4)}, "Dense_1": {"kernel": z((4, 1))}}}
    assert groups(linen) == [("['params']['Dense_0']", 16), ("['params']['Dense_1']", 4)]
    assert groups({"w1": z((3, 4)), "b1": z(4)}) == [("['b1']", 4), ("['w1']", 12)]
    assert groups({"layers": [(z((2, 2)), z(2)), (z((2, 1)), z(1))]}) == [("['layers'][0]", 6),
                                                                          ("['layers'][1]", 3)]
    assert groups(z(7)) == [("(all)", 7)]


def test_block_loss_holds_the_other_layers_fixed(x64):
    """f(θ_ℓ, others) rebuilds the parameters: at the layer's own values it is the loss, and moving θ_ℓ moves only
    that layer (the loss equals the loss of the parameters with that layer replaced)."""
    loss, params, data, _ = plain_jax.mlp()
    params = jax.tree.map(jnp.asarray, params)
    layer = L.layers_of(params)[1]  # ['w1']
    f, block, others = L.block_loss(lambda p, *d: loss(p, d), params, layer)
    assert float(f(block, others, *data)) == pytest.approx(float(loss(params, data)), rel=1e-15)
    moved = {**params, "w1": params["w1"] + 0.1}
    assert float(f((block[0] + 0.1,), others, *data)) == pytest.approx(float(loss(moved, data)), rel=1e-15)


@pytest.mark.slow  # 13 s on the shared machine (load 9): the whole command, every kernel compiled
def test_command_prints_the_per_layer_table_and_records_it(tmp_path):
    """``otod curvature --model …:least_squares --per-layer`` prints a per-layer row beside the whole net's λ_max
    (one layer: ratio 1) and writes the layer fields into the results file."""
    from otod.nets.curvature_cli import curvature_command

    out = tmp_path / "c.json"
    result = CliRunner().invoke(curvature_command, ["--model", "tests/fixtures/models/plain_jax.py:least_squares",
                                       "--steps", "0", "--k", "1", "--x64", "--per-layer", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "per layer: the top eigenvalue of each layer's diagonal Hessian block" in result.output
    row = [line for line in result.output.splitlines() if line.split()[1:2] == ["['w']"]]
    assert len(row) == 1 and row[0].split()[-1] == "1"
    record = otod.load(out).records[0]
    assert list(record["layer_names"]) == ["['w']"]
    assert record["layer_lambda_max"][0] == pytest.approx(record["lambda_max"], rel=DENSE)


def test_a_flax_nnx_net_gives_one_block_per_layer_equal_to_its_dense_block(x64):
    """Issue 49: a 3-layer Flax nnx MLP (nnx.Linear 4 → 6 → 6 → 1, each kernel and bias boxed in an nnx.Param)
    gives 3 layers, not 6 (a block per kernel and per bias, the Variable box taken for the layer), and each
    block's top eigenvalue equals that of the dense Hessian's rows and columns of its kernel and bias, chosen
    here by the leaves' paths (those under the layer's attribute), to 1e-6 in float64."""
    nnx = pytest.importorskip("flax.nnx")
    from jax.flatten_util import ravel_pytree
    from jax.tree_util import keystr, tree_flatten_with_path

    from otod.nets.measure.curvature import top_eigenvalues

    rng = np.random.default_rng(0)

    def kernel(key, shape, dtype):  # N(0, 1/fan-in) drawn by NumPy: flax's truncated normal compiles per shape
        return jnp.asarray(rng.standard_normal(shape) / np.sqrt(shape[0]), dtype)

    class MLP3(nnx.Module):
        def __init__(self, rngs):
            self.l1, self.l2, self.out = (nnx.Linear(a, b, kernel_init=kernel, param_dtype=jnp.float64, rngs=rngs)
                                          for a, b in ((4, 6), (6, 6), (6, 1)))

        def __call__(self, x):
            return self.out(jnp.tanh(self.l2(jnp.tanh(self.l1(x)))))[:, 0]

    graph, params = nnx.split(MLP3(nnx.Rngs(0)), nnx.Param)
    x = rng.standard_normal((64, 4))
    x, y = jnp.asarray(x), jnp.asarray(np.sin(x @ rng.standard_normal(4)))

    def loss(p, *batch):
        return 0.5 * jnp.mean((nnx.merge(graph, p)(batch[0]) - batch[1]) ** 2)

    assert [(layer.name, layer.parameters) for layer in L.layers_of(params)] == [
        ("['l1']", 30), ("['l2']", 42), ("['out']", 7)]
    record = L.layer_curvature(top_eigenvalues, loss, params, (x, y))
    flat, unflatten = ravel_pytree(params)
    h = np.asarray(jax.jit(jax.hessian(lambda v: loss(unflatten(v), x, y)))(flat))
    leaves = tree_flatten_with_path(params)[0]
    ends = np.cumsum([leaf.size for _, leaf in leaves])
    for name, top in zip(record["layer_names"], record["layer_lambda_max"], strict=True):
        index = np.concatenate([np.arange(end - leaf.size, end) for (path, leaf), end in zip(leaves, ends)
                                if keystr(path).startswith(name)])
        assert top == pytest.approx(np.linalg.eigvalsh(h[np.ix_(index, index)])[-1], rel=DENSE), name
