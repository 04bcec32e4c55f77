"""Workloads larger than a toy, as model-contract instances (`otod.nets.model.contract`): name one on the command line as
``--model otod.nets.model.zoo:transformer`` (``otod curvature``, ``otod noise-scale``), or call it in Python for
``(loss, params, data, init)``.

``transformer``: a small decoder-only transformer on modular addition, the task on which Power et al. 2022
("Grokking") and Nanda et al. 2023 studied small attention models. Each example is the token sequence
``a b =`` (a, b in 0..p−1, ``=`` the token p) and its label c = (a + b) mod p; the net reads the three tokens and
its output at the last position (``=``) is scored by cross-entropy against c over the whole vocabulary of
V = p + 1 tokens, so the loss of a net that knows nothing is log V. The data are all p² pairs (or a ``fraction``
of them), in an order drawn from ``numpy.random.default_rng([seed, 11])``: nothing is downloaded.

The net (pre-layer-norm, as GPT-2; Radford et al. 2019): token embedding E [V, d] plus a learned position
embedding [3, d]; ``layers`` blocks of h ← h + Attn(LN(h)), h ← h + MLP(LN(h)), the attention causal (position t
attends to positions ≤ t only) with ``heads`` heads of d/heads dimensions each and softmax(QKᵀ/√(d/heads)), the
MLP d → ``mlp`` → d with a GELU; a final LN and the unembedding U [d, V]. Init: embeddings N(0, 1), every weight
N(0, 1/fan_in), the residual branches' output projections scaled by 1/√(2·layers) (GPT-2's scaling), biases 0,
LN gains 1, and U N(0, s²/d) with s = `LOGIT_SCALE`, so that the logits at init are about N(0, s²) and the loss at
init is log V + s²(1 − 1/V)/2 to second order in s (the test's number).

At the defaults (p = 23, d = 24, 2 heads, 1 layer, MLP 48) P = 6,048 parameters (`parameter_count`), 529
examples: just above the dense Hessian's limit, so its spectrum is measured by SLQ (P > 5,000; a dense Hessian of
P = 4,064 took longer than SLQ's 900 products); ``otod curvature`` and ``otod noise-scale`` at their defaults
(checkpoints 0, 100, 1000) took 309 s and 249 s on 2 shared CPU cores at load average 11 (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from otod.core.api import OtodError, lazy

jax = lazy("jax")
jnp = lazy("jax.numpy")

#: The logit scale s at init: U ~ N(0, s²/d) behind a unit-variance LN, so the logits are about N(0, s²).
LOGIT_SCALE = 0.1

#: The sequence length: a, b and the "=" token.
LENGTH = 3


def modular_addition(p: int = 23, fraction: float = 1.0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(tokens [n, 3] int32: ``a b =`` with ``=`` the token p, labels [n] int32: (a + b) mod p): the first
    ``fraction`` of the p² pairs in a seeded random order."""
    a, b = np.meshgrid(np.arange(p), np.arange(p), indexing="ij")
    a, b = a.ravel(), b.ravel()
    order = np.random.default_rng([seed, 11]).permutation(p * p)[: max(1, int(round(fraction * p * p)))]
    tokens = np.stack([a[order], b[order], np.full(order.size, p)], axis=1).astype(np.int32)
    return tokens, ((a[order] + b[order]) % p).astype(np.int32)


def init_transformer(key, vocabulary: int, d: int = 24, heads: int = 2, layers: int = 1, mlp: int = 48,
                     dtype=None, length: int = LENGTH) -> dict:
    """The parameters (module docstring's init), float32 unless ``dtype``; ``length`` positions (the sequence
    task's T − 1, `otod.nets.model.sequence`; modular addition's 3)."""
    dtype = dtype or jnp.float32
    keys = iter(jax.random.split(key, 3 + 6 * layers))
    branch = 1.0 / math.sqrt(2 * layers)

    def normal(shape, std):
        return std * jax.random.normal(next(keys), shape, dtype)

    blocks = []
    for _ in range(layers):
        blocks.append({
            "ln1": {"g": jnp.ones(d, dtype), "b": jnp.zeros(d, dtype)},
            "q": normal((d, d), d ** -0.5), "k": normal((d, d), d ** -0.5), "v": normal((d, d), d ** -0.5),
            "o": normal((d, d), branch * d ** -0.5),
            "ln2": {"g": jnp.ones(d, dtype), "b": jnp.zeros(d, dtype)},
            "w1": normal((d, mlp), d ** -0.5), "b1": jnp.zeros(mlp, dtype),
            "w2": normal((mlp, d), branch * mlp ** -0.5), "b2": jnp.zeros(d, dtype)})
    return {"embed": normal((vocabulary, d), 1.0), "position": normal((length, d), 1.0), "blocks": blocks,
            "ln": {"g": jnp.ones(d, dtype), "b": jnp.zeros(d, dtype)},
            "unembed": normal((d, vocabulary), LOGIT_SCALE * d ** -0.5)}


def layer_norm(h, p, eps: float = 1e-5):
    mean = jnp.mean(h, axis=-1, keepdims=True)
    var = jnp.mean((h - mean) ** 2, axis=-1, keepdims=True)
    return (h - mean) / jnp.sqrt(var + eps) * p["g"] + p["b"]


def attention(h, block, heads: int):
    """Causal multi-head self-attention of h [n, T, d]: position t attends to positions ≤ t."""
    n, length, d = h.shape
    split = lambda a: a.reshape(n, length, heads, d // heads)  # noqa: E731
    q, k, v = split(h @ block["q"]), split(h @ block["k"]), split(h @ block["v"])
    scores = jnp.einsum("nthe,nshe->nhts", q, k) / math.sqrt(d // heads)
    causal = jnp.tril(jnp.ones((length, length), bool))
    scores = jnp.where(causal, scores, jnp.finfo(scores.dtype).min)
    out = jnp.einsum("nhts,nshe->nthe", jax.nn.softmax(scores, axis=-1), v).reshape(n, length, d)
    return out @ block["o"]


def logits(params, tokens, heads: int):
    """The logits [n, T, V] at every position of the token sequences [n, T]."""
    h = params["embed"][tokens] + params["position"][: tokens.shape[1]]
    for block in params["blocks"]:
        h = h + attention(layer_norm(h, block["ln1"]), block, heads)
        z = jax.nn.gelu(layer_norm(h, block["ln2"]) @ block["w1"] + block["b1"])
        h = h + z @ block["w2"] + block["b2"]
    return layer_norm(h, params["ln"]) @ params["unembed"]


def answer_loss(params, batch, heads: int):
    """The mean cross-entropy over the batch of the last position's logits against the labels."""
    tokens, labels = batch
    logp = jax.nn.log_softmax(logits(params, tokens, heads)[:, -1, :], axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None].astype(jnp.int32), axis=-1))


def parameter_count(p: int = 23, d: int = 24, layers: int = 1, mlp: int = 48, length: int = LENGTH,
                    vocabulary: int | None = None) -> int:
    """P = V·d (embedding) + length·d (positions) + layers·(4d² + 2d·mlp + mlp + d + 4d) + 2d (final LN) + d·V;
    V = p + 1 unless ``vocabulary``."""
    vocabulary = p + 1 if vocabulary is None else int(vocabulary)
    return 2 * vocabulary * d + length * d + layers * (4 * d * d + 2 * d * mlp + mlp + 5 * d) + 2 * d


def next_token_losses(params, tokens, labels, heads: int):
    """Each sequence's mean next-token cross-entropy [n] (the sequence task, `otod.nets.model.sequence`): the
    logits at positions 1..T − 2 of the inputs ``tokens`` [n, T − 1] (token ids, as integers or exact floats)
    against ``labels`` [n, T − 2], the tokens s_3..s_T, each predicted from a context holding both previous
    tokens."""
    out = logits(params, tokens.astype(jnp.int32), heads)[:, 1:, :]
    logp = jax.nn.log_softmax(out, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, labels[..., None].astype(jnp.int32), axis=-1)[..., 0], axis=-1)


def activation_floats(vocabulary: int, length: int, d: int, heads: int, layers: int, mlp: int) -> int:
    """The floats one sequence's forward pass holds for its backward (what a lane's step costs beside its
    parameters; the planner's, `otod.nets.model.family`): the embedding's sum T·d; per block the two LN outputs,
    q, k, v, the attention's output and projection and the MLP's output (8·T·d), the MLP's hidden layer before and
    after the GELU (2·T·mlp) and the attention's scores and softmax (2·heads·T²); the final LN (T·d) and the
    logits and their log-softmax (2·T·V); T = ``length`` positions."""
    t = int(length)
    return t * d + layers * (8 * t * d + 2 * t * mlp + 2 * heads * t * t) + t * d + 2 * t * vocabulary


class _Loss:
    """``answer_loss`` with its head count, compared and hashed by its settings (so jit caches per net)."""

    def __init__(self, heads: int):
        self.heads = heads

    def __eq__(self, other):
        return isinstance(other, _Loss) and other.heads == self.heads

    def __hash__(self):
        return hash((_Loss, self.heads))

    def __call__(self, params, batch):
        return answer_loss(params, batch, self.heads)


def transformer_problem(p: int = 23, d: int = 24, heads: int = 2, layers: int = 1, mlp: int = 48,
                        fraction: float = 1.0, seed: int = 0):
    """(loss, params, data, init) of the transformer on modular addition mod p (module docstring)."""
    if d % heads:
        raise OtodError(f"transformer_problem: d = {d} is not a multiple of heads = {heads}; e.g. d = 24, heads = 2")
    data = modular_addition(p, fraction, seed)

    init = jax.jit(functools.partial(init_transformer, vocabulary=p + 1, d=d, heads=heads, layers=layers, mlp=mlp))
    return _Loss(heads), init(jax.random.PRNGKey(seed)), data, init


def transformer():
    """The default transformer workload (``--model otod.nets.model.zoo:transformer``): p = 23, d = 24, 2 heads, 1 layer,
    MLP 48, all 529 pairs; P = 6,048."""
    return transformer_problem()
