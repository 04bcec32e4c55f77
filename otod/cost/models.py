"""Networks as pure JAX functions over explicit parameter pytrees, with the layer formulas beside the code.

A `Network` is a tuple of layers (frozen dataclasses). Each layer knows three things:

* ``out_shape(in_shape)`` and ``init(key, in_shape)``: shapes and parameters (per example, no batch axis);
* ``apply(params, x)``: the batched computation (NHWC images, HWIO kernels);
* ``products(in_shape)``: its forward FLOPs per example from the layer formula, split into products with a
  parameter operand (``weight``: dense, conv) and products of two activations (``activation``: attention).

The formulas are those of Hobbhahn & Sevilla, "What's the backward-forward FLOP ratio for neural networks?",
Epoch AI 2021: a dense layer costs 2·in·out FLOPs per example forward, a convolution
2·k_h·k_w·C_in·C_out·H_out·W_out; ReLUs, biases, pooling and the loss are "negligible" and left out.

The four networks of that text's appendix are here (`linearnet`, `onenet`, `convnet`, `deeperconvnet`; inputs
224×224×3, 10 classes), plus an MLP of given widths and a small pre-LayerNorm transformer block, so users can ask
about their own shapes. `network(name, ...)` builds one by name; unknown names and malformed widths raise
`OtodError`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import jax
import jax.numpy as jnp

from otod.core.api import OtodError

Shape = tuple[int, ...]
IMAGE = (224, 224, 3)
CLASSES = 10


class Products(NamedTuple):
    """Forward FLOPs of a layer per example by the layer formula: ``weight`` (one operand is a parameter) and
    ``activation`` (both operands are activations, e.g. attention scores)."""

    weight: float = 0.0
    activation: float = 0.0


def _he(key, shape, fan_in):
    return jax.random.normal(key, shape, jnp.float32) * math.sqrt(2.0 / fan_in)


# ----------------------------------------------------------------------------------------------------- layers


@dataclass(frozen=True)
class Dense:
    """``y = x @ W + b``; forward 2·in·out FLOPs per example (Epoch: "2*#input*#hidden*#batch")."""

    out: int
    bias: bool = True

    def out_shape(self, s: Shape) -> Shape:
        return (self.out,)

    def init(self, key, s: Shape):
        p = {"w": _he(key, (s[0], self.out), s[0])}
        if self.bias:
            p["b"] = jnp.zeros((self.out,), jnp.float32)
        return p

    def apply(self, p, x):
        y = x @ p["w"].astype(x.dtype)
        return y + p["b"].astype(x.dtype) if self.bias else y

    def products(self, s: Shape) -> Products:
        return Products(weight=2.0 * s[0] * self.out)


@dataclass(frozen=True)
class Conv:
    """2-D convolution, NHWC/HWIO; forward 2·k²·C_in·C_out·H_out·W_out FLOPs per example (every tap, padding
    included — XLA counts only the taps that fall inside the image)."""

    out: int
    kernel: int
    stride: int = 1
    padding: int = 0
    bias: bool = False

    def out_shape(self, s: Shape) -> Shape:
        h, w, _ = s
        f = lambda n: (n + 2 * self.padding - self.kernel) // self.stride + 1
        return (f(h), f(w), self.out)

    def init(self, key, s: Shape):
        fan_in = self.kernel * self.kernel * s[2]
        p = {"w": _he(key, (self.kernel, self.kernel, s[2], self.out), fan_in)}
        if self.bias:
            p["b"] = jnp.zeros((self.out,), jnp.float32)
        return p

    def apply(self, p, x):
        pad = [(self.padding, self.padding)] * 2
        y = jax.lax.conv_general_dilated(x, p["w"].astype(x.dtype), (self.stride, self.stride), pad,
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return y + p["b"].astype(x.dtype) if self.bias else y

    def products(self, s: Shape) -> Products:
        h, w, c = self.out_shape(s)
        return Products(weight=2.0 * self.kernel ** 2 * s[2] * c * h * w)


@dataclass(frozen=True)
class ReLU:
    """max(x, 0); no parameters, not in the layer formula (Epoch: "negligible")."""

    def out_shape(self, s):
        return s

    def init(self, key, s):
        return {}

    def apply(self, p, x):
        return jax.nn.relu(x)

    def products(self, s):
        return Products()


@dataclass(frozen=True)
class MaxPool:
    """Max over k×k windows (padding with -inf, as torch.nn.MaxPool2d); comparisons only, not in the formula."""

    kernel: int
    stride: int
    padding: int = 0

    def out_shape(self, s):
        h, w, c = s
        f = lambda n: (n + 2 * self.padding - self.kernel) // self.stride + 1
        return (f(h), f(w), c)

    def init(self, key, s):
        return {}

    def apply(self, p, x):
        pad = [(0, 0), (self.padding, self.padding), (self.padding, self.padding), (0, 0)]
        return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, self.kernel, self.kernel, 1),
                                     (1, self.stride, self.stride, 1), pad)

    def products(self, s):
        return Products()


@dataclass(frozen=True)
class GlobalAvgPool:
    """Mean over height and width (torch AdaptiveAvgPool2d((1, 1)) then flatten)."""

    def out_shape(self, s):
        return (s[2],)

    def init(self, key, s):
        return {}

    def apply(self, p, x):
        return jnp.mean(x, axis=(1, 2))

    def products(self, s):
        return Products()


@dataclass(frozen=True)
class Flatten:
    """Reshape each example to a vector (torch.flatten(x, 1))."""

    def out_shape(self, s):
        return (math.prod(s),)

    def init(self, key, s):
        return {}

    def apply(self, p, x):
        return x.reshape(x.shape[0], -1)

    def products(self, s):
        return Products()


@dataclass(frozen=True)
class Repeat:
    """``layers`` applied ``times`` times in a row (shapes must be preserved). ``shared=True`` reuses one set of
    parameters, as the appendix's DeeperConvNet does (``self.conv_layer`` called in a loop). Unrolled in Python:
    XLA would count a ``lax.scan`` body once."""

    layers: tuple
    times: int
    shared: bool = True

    def out_shape(self, s):
        return s

    def init(self, key, s):
        if self.shared:
            return init_layers(self.layers, key, s)
        return [init_layers(self.layers, k, s) for k in jax.random.split(key, self.times)]

    def apply(self, p, x):
        for i in range(self.times):
            x = apply_layers(self.layers, p if self.shared else p[i], x)
        return x

    def products(self, s):
        one = sum_products(self.layers, s)
        return Products(one.weight * self.times, one.activation * self.times)


@dataclass(frozen=True)
class TransformerBlock:
    """Pre-LayerNorm transformer block on (tokens, d_model): x + Attn(LN(x)), then x + MLP(LN(x)).

    Forward FLOPs per example (T tokens, width d, MLP width r·d): projections Q,K,V and output 2·T·d·4d, MLP
    2·T·d·2rd (weight products); scores QKᵀ and weights·V 2·2·T²·d (activation products). Both LayerNorms
    have learnable scale and bias, so every matmul inside needs its input gradient too (2:1 throughout)."""

    heads: int = 4
    mlp_ratio: int = 4

    def out_shape(self, s):
        return s

    def init(self, key, s):
        t, d = s
        k = jax.random.split(key, 6)
        r = self.mlp_ratio * d
        ln = lambda: {"scale": jnp.ones((d,), jnp.float32), "bias": jnp.zeros((d,), jnp.float32)}
        return {"ln1": ln(), "ln2": ln(), "wq": _he(k[0], (d, d), d), "wk": _he(k[1], (d, d), d),
                "wv": _he(k[2], (d, d), d), "wo": _he(k[3], (d, d), d),
                "w1": _he(k[4], (d, r), d), "b1": jnp.zeros((r,), jnp.float32),
                "w2": _he(k[5], (r, d), r), "b2": jnp.zeros((d,), jnp.float32)}

    @staticmethod
    def _ln(p, x):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + 1e-5) * p["scale"].astype(x.dtype) + p["bias"].astype(x.dtype)

    def apply(self, p, x):
        b, t, d = x.shape
        hd = d // self.heads
        c = lambda name: p[name].astype(x.dtype)
        h = self._ln(p["ln1"], x)
        split = lambda y: y.reshape(b, t, self.heads, hd)
        q, k, v = split(h @ c("wq")), split(h @ c("wk")), split(h @ c("wv"))
        scores = jnp.einsum("bthd,bshd->bhts", q, k) / math.sqrt(hd)
        att = jnp.einsum("bhts,bshd->bthd", jax.nn.softmax(scores, axis=-1), v).reshape(b, t, d)
        x = x + att @ c("wo")
        h = self._ln(p["ln2"], x)
        return x + jax.nn.relu(h @ c("w1") + c("b1")) @ c("w2") + c("b2")

    def products(self, s):
        t, d = s
        return Products(weight=2.0 * t * d * d * (4 + 2 * self.mlp_ratio), activation=4.0 * t * t * d)


@dataclass(frozen=True)
class MeanTokens:
    """Mean over the token axis: (tokens, d) -> (d,)."""

    def out_shape(self, s):
        return (s[1],)

    def init(self, key, s):
        return {}

    def apply(self, p, x):
        return x.mean(axis=1)

    def products(self, s):
        return Products()


# ------------------------------------------------------------------------------------------ layer sequences


def init_layers(layers, key, s: Shape) -> list:
    """Parameters of a layer sequence: one pytree (dict, possibly empty) per layer."""
    params = []
    for layer, k in zip(layers, jax.random.split(key, len(layers))):
        params.append(layer.init(k, s))
        s = layer.out_shape(s)
    return params


def apply_layers(layers, params, x):
    for layer, p in zip(layers, params):
        x = layer.apply(p, x)
    return x


def sum_products(layers, s: Shape) -> Products:
    w = a = 0.0
    for layer in layers:
        pr = layer.products(s)
        w, a = w + pr.weight, a + pr.activation
        s = layer.out_shape(s)
    return Products(w, a)


def _has_params(layer) -> bool:
    return not isinstance(layer, (ReLU, MaxPool, GlobalAvgPool, Flatten, MeanTokens))


# ------------------------------------------------------------------------------------------------- networks


@dataclass(frozen=True)
class Network:
    """A named sequence of layers on inputs of shape ``input_shape`` (per example) with ``classes`` outputs."""

    name: str
    layers: tuple
    input_shape: Shape
    classes: int = CLASSES
    config: dict = field(default_factory=dict, compare=False)

    def init(self, key) -> list:
        """The parameter pytree (a list with one dict per layer)."""
        return init_layers(self.layers, key, self.input_shape)

    def abstract_params(self):
        """Parameter shapes and dtypes only (`jax.eval_shape`): nothing is allocated."""
        return jax.eval_shape(self.init, jax.random.PRNGKey(0))

    def apply(self, params, x):
        """Logits of a batch ``x`` of shape (batch, *input_shape)."""
        return apply_layers(self.layers, params, x)

    def n_params(self) -> int:
        return sum(math.prod(l.shape) for l in jax.tree_util.tree_leaves(self.abstract_params()))

    def out_shape(self) -> Shape:
        s = self.input_shape
        for layer in self.layers:
            s = layer.out_shape(s)
        return s


def loss(network: Network, params, x, y):
    """Mean softmax cross-entropy of the logits against integer labels ``y`` (computed in float32)."""
    logits = network.apply(params, x).astype(jnp.float32)
    logp = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))


class Analytic(NamedTuple):
    """FLOPs of one iteration by the layer formulas (Epoch AI 2021)."""

    forward: float
    backward: float          # gradient of the passes only, update not included
    first_layer_forward: float
    params: int


def analytic_flops(network: Network, batch: int) -> Analytic:
    """Forward and backward FLOPs by the Epoch formulas, walking the layers in order.

    A product with a parameter operand costs its forward FLOPs once more for the weight gradient, and once more
    again for the input gradient unless no parameter lies upstream (the first layer: 1:1, the others 2:1).
    A product of two activations (attention) needs both operand gradients, 2× forward, if any parameter lies
    upstream. backward = first + 2·others, as in "backward / forward = (FIRST + 2·OTHER + UPDATE) /
    (FIRST + OTHER)".
    """
    s = network.input_shape
    fwd = bwd = first = 0.0
    upstream = False
    for layer in network.layers:
        pr = layer.products(s)
        if not upstream:
            first += pr.weight + pr.activation
        fwd += pr.weight + pr.activation
        bwd += pr.weight + ((pr.weight + 2 * pr.activation) if upstream else 0.0)
        if isinstance(layer, TransformerBlock) and not upstream:
            # its LayerNorm parameters come before every matmul inside: all of them need input gradients
            bwd += pr.weight + 2 * pr.activation
        upstream = upstream or _has_params(layer)
        s = layer.out_shape(s)
    return Analytic(fwd * batch, bwd * batch, first * batch, network.n_params())


def linearnet() -> Network:
    """Appendix A LinearNet: 150528 → 4096 → 128 → 10, ReLUs; almost all weights in the first layer."""
    return Network("linearnet", (Flatten(), Dense(4096), ReLU(), Dense(128), ReLU(), Dense(CLASSES)), IMAGE)


def onenet() -> Network:
    """Appendix A OneNet: 1 → 4096 → 128 → 10; almost all weights in the later layers (ratio up to 3:1)."""
    return Network("onenet", (Flatten(), Dense(4096), ReLU(), Dense(128), ReLU(), Dense(CLASSES)), (1,))


def convnet(image: int = 224) -> Network:
    """Appendix A ConvNet: conv7×7/2 (3→32) → ReLU → maxpool3/2 → conv7×7/2 (32→64) → ReLU → maxpool3/2 →
    global average pool → dense 64→10. Convs have no bias (as in the appendix)."""
    layers = (Conv(32, 7, 2, 3), ReLU(), MaxPool(3, 2, 1), Conv(64, 7, 2, 3), ReLU(), MaxPool(3, 2, 1),
              GlobalAvgPool(), Dense(CLASSES))
    return Network("convnet", layers, (image, image, 3), config={"image": image})


def deeperconvnet(depth: int = 100, image: int = 224, shared: bool = True) -> Network:
    """Appendix A DeeperConvNet: conv7×7/2 (3→32) → ReLU → maxpool3/2 (no padding) → N × [conv3×3 (32→32) →
    ReLU] → conv7×7/2 (32→64) → ReLU → global average pool → dense 64→10. The appendix code reuses one
    intermediate layer N = 100 times (``shared=True``); ``shared=False`` gives each its own weights."""
    if depth < 0:
        raise OtodError(f"--depth {depth}: the number of intermediate conv layers must be ≥ 0, e.g. --depth 8")
    middle = (Repeat((Conv(32, 3, 1, 1), ReLU()), depth, shared),) if depth else ()
    layers = ((Conv(32, 7, 2, 3), ReLU(), MaxPool(3, 2, 0)) + middle
              + (Conv(64, 7, 2, 3), ReLU(), GlobalAvgPool(), Dense(CLASSES)))
    return Network("deeperconvnet", layers, (image, image, 3),
                   config={"depth": depth, "image": image, "shared": shared})


def mlp(widths: tuple[int, ...]) -> Network:
    """Multilayer perceptron with ReLUs; ``widths`` = (input, hidden..., output), e.g. (784, 512, 10)."""
    widths = tuple(widths)
    if len(widths) < 2 or any(w < 1 for w in widths):
        raise OtodError(f"--widths {','.join(map(str, widths))}: need at least an input and an output width, "
                        "all ≥ 1, e.g. --widths 784,512,10")
    layers: list = []
    for w in widths[1:-1]:
        layers += [Dense(w), ReLU()]
    layers.append(Dense(widths[-1]))
    return Network("mlp", tuple(layers), (widths[0],), classes=widths[-1], config={"widths": list(widths)})


def transformer(tokens: int = 64, width: int = 128, heads: int = 4, blocks: int = 1) -> Network:
    """A small transformer classifier on float token embeddings (tokens × width): ``blocks`` pre-LN blocks,
    mean over tokens, dense width → 10."""
    if width % heads:
        raise OtodError(f"--width {width}: must be a multiple of --heads {heads}, e.g. --width 128 --heads 4")
    layers = tuple(TransformerBlock(heads) for _ in range(blocks)) + (MeanTokens(), Dense(CLASSES))
    return Network("transformer", layers, (tokens, width),
                   config={"tokens": tokens, "width": width, "heads": heads, "blocks": blocks})


from otod.cost.names import NETWORKS  # noqa: E402  (the names live apart so the CLI can list them cheaply)


def parse_widths(text: str) -> tuple[int, ...]:
    """``"784,512,10"`` → (784, 512, 10); anything else raises `OtodError` with the accepted form."""
    parts = [p.strip() for p in str(text).split(",")]
    try:
        widths = tuple(int(p) for p in parts)
    except ValueError:
        widths = ()
    if len(widths) < 2 or any(w < 1 for w in widths):
        raise OtodError(f"--widths {text}: widths must be ≥ 2 comma-separated integers ≥ 1, "
                        "e.g. --widths 784,512,10")
    return widths


def network(name: str, *, widths: tuple[int, ...] | None = None, depth: int = 100, image: int = 224,
            shared: bool = True, tokens: int = 64, width: int = 128, heads: int = 4, blocks: int = 1) -> Network:
    """Build a network by name (one of `NETWORKS`); options that do not apply to it are ignored."""
    key = str(name).strip().lower()
    if key == "linearnet":
        return linearnet()
    if key == "onenet":
        return onenet()
    if key == "convnet":
        return convnet(image)
    if key == "deeperconvnet":
        return deeperconvnet(depth, image, shared)
    if key == "mlp":
        return mlp(widths if widths is not None else (784, 512, 10))
    if key == "transformer":
        return transformer(tokens, width, heads, blocks)
    raise OtodError(f"--model {name}: unknown model; known: {', '.join(NETWORKS)}, e.g. --model convnet")
