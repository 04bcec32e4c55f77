"""The nets obstacle's models as pure functions of a parameter pytree: MLPs (plain or residual) and a small CNN,
their initializations and their losses.

Parameters are a tuple of layers ``{"w": W, "b": b}``; a dense W is [fan_in, fan_out], a convolution's
[3, 3, c_in, c_out] (HWIO). ``depth`` counts the weight layers, so depth 1 is a linear model:

* ``mlp``: features → width → … → width → outputs, ``depth − 1`` hidden layers with the activation after each.
  ``residual`` (a number in [0, 1], so that plain and residual nets share one compiled program) adds the skip
  h ← r·h + φ(Wh + b) to each width → width layer (He et al. 2016's identity shortcut on an MLP);
* ``cnn``: ``depth − 1`` 3×3 convolutions of ``width`` channels (SAME padding, the activation after each, the
  same skip where ``residual``) on the 8×8 image, a 2×2 average pool, then one dense layer to the outputs.

Inits (biases 0): ``kaiming`` N(0, g²/fan_in) with the activation's gain g (√2 for relu, 1 otherwise; He et al.
2015), ``xavier`` N(0, 2/(fan_in + fan_out)) (Glorot & Bengio 2010), ``orthogonal`` g × a Haar (semi-)orthogonal
matrix scaled to unit gain per fan_in (Saxe et al. 2014), ``small`` N(0, 10⁻⁴/fan_in) (a near-zero start, from
which a deep net sits near the saddle at 0). Residual branches (the width → width layers of a residual net) are
scaled by 1/√(their number) so that the forward signal's variance stays O(1) at any depth (as GPT-2 and Fixup
scale theirs).

Losses: ``cross-entropy`` (softmax over the outputs; integer labels) and ``squared`` (½‖f(x) − y‖², one-hot y for
labels), each averaged over the examples.
"""

from __future__ import annotations

import math

import numpy as np

from otod.core.api import OtodError, lazy

jax = lazy("jax")
jnp = lazy("jax.numpy")

#: otod's own nets: the MLP and CNN of this module, and the transformer on the sequence task
#: (`otod.nets.model.transformer_net`).
MODELS = ("mlp", "cnn", "transformer")
ACTIVATIONS = ("relu", "tanh", "linear")
INITS = ("kaiming", "xavier", "orthogonal", "small")
ARCHITECTURES = ("plain", "residual")
LOSSES = ("cross-entropy", "squared")


def gain(activation: str) -> float:
    """The init gain that keeps a layer's output variance equal to its input's: √2 for relu, 1 for tanh (at 0) and
    linear."""
    return math.sqrt(2.0) if activation == "relu" else 1.0


def layer_shapes(model: str, features: int, outputs: int, width: int, depth: int,
                 image: tuple[int, int] | None = None) -> list[tuple[int, ...]]:
    """The weight shapes, first layer first."""
    if model == "mlp":
        dims = [features] + [width] * (depth - 1) + [outputs]
        return [(dims[i], dims[i + 1]) for i in range(depth)]
    if image is None:
        raise OtodError("--model cnn: needs image data (--data digits)")
    h, w = image
    channels = [1] + [width] * (depth - 1)
    convs = [(3, 3, channels[i], channels[i + 1]) for i in range(depth - 1)]
    pooled = (h // 2) * (w // 2) * channels[-1]
    return convs + [(pooled, outputs)]


def residual_layers(shapes) -> list[bool]:
    """Which layers are residual branches (their input and output have the same width): the middle ones."""
    n = len(shapes)
    return [0 < i < n - 1 and shapes[i][-1] == shapes[i][-2] for i in range(n)]


def parameter_count(shapes) -> int:
    return int(sum(math.prod(s) + s[-1] for s in shapes))


def _orthogonal(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """A (semi-)orthogonal rows×cols matrix (orthonormal columns if rows ≥ cols, else rows), Haar-distributed: QR
    of a Gaussian matrix with R's diagonal signs moved into Q."""
    n = max(rows, cols)
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    q = q * np.sign(np.diag(r))
    return q[:rows, :cols]


def init_layer(rng: np.random.Generator, shape: tuple[int, ...], init: str, activation: str,
               branch_scale: float = 1.0) -> dict:
    """One layer's {"w", "b"} drawn in NumPy (see the module docstring)."""
    fan_in, fan_out = math.prod(shape[:-1]), shape[-1]
    g = gain(activation)
    if init == "kaiming":
        w = rng.standard_normal(shape) * g / math.sqrt(fan_in)
    elif init == "xavier":
        w = rng.standard_normal(shape) * math.sqrt(2.0 / (fan_in + fan_out))
    elif init == "orthogonal":
        w = (_orthogonal(rng, fan_in, fan_out) * g * math.sqrt(max(1.0, fan_in / fan_out))).reshape(shape)
    elif init == "small":
        w = rng.standard_normal(shape) * 1e-2 / math.sqrt(fan_in)
    else:
        raise OtodError(f"--init {init}: unknown init for nets; choose from {', '.join(INITS)}, e.g. --init kaiming")
    return {"w": w * branch_scale, "b": np.zeros(fan_out)}


def init_params(rng: np.random.Generator, shapes, init: str, activation: str, residual: bool) -> tuple:
    """Every layer's initial weights; with ``residual`` the branches are scaled by 1/√(number of branches)."""
    branches = residual_layers(shapes)
    scale = 1.0 / math.sqrt(max(1, sum(branches))) if residual else 1.0
    return tuple(init_layer(rng, s, init, activation, scale if b else 1.0) for s, b in zip(shapes, branches))


def activate(name: str, z):
    if name == "relu":
        return jax.nn.relu(z)
    if name == "tanh":
        return jnp.tanh(z)
    return z


def apply(model: str, activation: str, params, x, residual=0.0, image: tuple[int, int] | None = None):
    """The outputs [n, outputs] of the net at inputs x [n, features]. ``residual`` may be a traced scalar."""
    n = x.shape[0]
    shapes = [p["w"].shape for p in params]
    branches = residual_layers(shapes)
    if model == "mlp":
        h = x
        for i, (p, branch) in enumerate(zip(params, branches)):
            z = h @ p["w"] + p["b"]
            if i == len(params) - 1:
                return z
            z = activate(activation, z)
            h = residual * h + z if branch else z
    h = x.reshape(n, *image, 1)
    for p, branch in zip(params[:-1], branches[:-1]):
        z = activate(activation, convolve(h, p["w"]) + p["b"])
        h = residual * h + z if branch else z
    c = h.shape[-1]
    h = h.reshape(n, image[0] // 2, 2, image[1] // 2, 2, c).mean(axis=(2, 4)).reshape(n, -1)
    return h @ params[-1]["w"] + params[-1]["b"]


def convolve(h, w):
    """A 3×3 SAME convolution (NHWC input, HWIO weights) as one matmul of the image patches (im2col): the same
    numbers as ``lax.conv_general_dilated`` to rounding, and under a vmap over lanes a batched matmul, where
    XLA:CPU's batched convolution was 30× slower on the sweep's CNN (1.6 s against 0.05 s for the full training
    loss of 6 lanes)."""
    kh, kw = w.shape[:2]
    height, width = h.shape[1:3]
    padded = jnp.pad(h, ((0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2), (0, 0)))
    patches = jnp.concatenate([padded[:, i:i + height, j:j + width, :] for i in range(kh) for j in range(kw)], -1)
    return patches @ w.reshape(-1, w.shape[-1])


def example_losses(loss: str, outputs, y, classes: int):
    """Each example's loss [n]: cross-entropy of integer labels, or ½‖f − y‖² (one-hot y for labels)."""
    if loss == "cross-entropy":
        logp = jax.nn.log_softmax(outputs, axis=-1)
        return -jnp.take_along_axis(logp, y[:, None].astype(jnp.int32), axis=-1)[:, 0]
    target = jax.nn.one_hot(y, classes, dtype=outputs.dtype) if classes else y
    return 0.5 * jnp.sum((outputs - target) ** 2, axis=-1)


def accuracy(outputs, y) -> float:
    return jnp.mean(jnp.argmax(outputs, axis=-1) == y)
