"""A generated sequence task for the transformer (``--model transformer --data sequence``): a random sparse order-2
Markov source over a vocabulary of V tokens, whose exact entropy rate is the next-token loss floor.

The source (drawn from the data seed's first child stream, `otod.nets.model.seeds.streams`): every token b has a
support S_b of m = ``support`` tokens (m distinct ones, uniformly at random) that may follow it; every context
(s_{t−2}, s_{t−1}) = (a, b), V² of them, allows ``branching`` = k next tokens (k distinct ones of S_b, uniformly at
random) with probabilities p(c | a, b) drawn from a flat Dirichlet(1, …, 1); every other token has probability 0.
So the source has structure at two depths a net learns in turn: the previous token alone narrows the next one to m
(H(s_t | s_{t−1}) ≤ log m, a bigram's floor: 1.87 nats at the defaults), the pair to k (the entropy rate below,
1.085 nats). With m = V it is the plain sparse order-2 source; that one (V = 32, k = 4) left a width-16
transformer at 3.34 nats after 512 SGD steps of B = 8 (the previous token alone says almost nothing about the
next), against 2.0 with m = 8. The contexts form a Markov chain, (a, b) → (b, c) with probability p(c | a, b).

Its stationary distribution π over contexts (π P = π) is the limit of the lazy chain's context distribution from the
uniform one, π ← ½(π + π P) (lazy: aperiodic whatever the chain's cycles, with the same stationary distributions),
iterated in NumPy until it moves by less than 10⁻¹⁴ in ℓ₁. Every sequence starts from a context drawn from π, so
the context at every position is π-distributed and the floor below is exact for every position (whatever the
chain's class structure: π is a stationary distribution, the one the sequences start from).

The loss floor, the entropy rate (Cover & Thomas 2006, §4.2, eq. 4.27, the conditional entropy of the next token
given its context under the stationary distribution):

    H = −Σ_{(a, b)} π(a, b) Σ_c p(c | a, b) log p(c | a, b)    (nats)

is the lowest expected cross-entropy any predictor of s_t from s_1..s_{t−1} reaches at a position t ≥ 3 (for an
order-2 source the two previous tokens are a sufficient statistic of the past). A sequence has T = ``length``
tokens s_1..s_T; the net reads s_1..s_{T−1} (the inputs x, T − 1 tokens) and is scored on s_3..s_T (the labels y,
T − 2 tokens), the positions whose full context it has seen, so its loss floor is H exactly.

Draws: sequence i of the training set (``--regime finite``) from fold_in(k_train, i), of the held-out set from
fold_in(k_held, i), the two keys from the data seed's second and fourth child streams, so the sets are nested (the
first N of N' > N sequences are the set of N) and the held-out set is the same for every D and seed; the stream
(``--regime stream``) draws step t's B sequences inside the compiled step from fold_in(seed's key, t)
(`stream_batch`), as the teacher's stream does (`otod.nets.model.data.stream_batch`). The fixed sets are drawn in
JAX's 32-bit mode whatever the caller's, so a set is the same in a float32 and a float64 process.

Two sequences coincide with probability Σ_s p(s)² = Σ π(a, b)² Π p(·)² summed over paths (`collision_probability`):
at the defaults (V = 32, m = 8, k = 4, T = 16, data seed 0) 1.8·10⁻⁸, so a held-out set of `HELD_OUT` sequences
repeats none (expected pairs C(256, 2)·1.8·10⁻⁸ = 6·10⁻⁴) and a stream of 10⁵ sequences about 90 pairs of its own
(C(10⁵, 2)·1.8·10⁻⁸): a repeat is a chance coincidence, never a reuse.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from otod.core.api import OtodError, lazy

jax = lazy("jax")
jnp = lazy("jax.numpy")

#: The vocabulary V: log 32 = 3.466 nats is the loss of a net that knows nothing.
VOCABULARY = 32
#: Allowed next tokens k per context: the floor is about E[H(Dirichlet(1⁴))] = ψ(5) − ψ(2) = 1.083 nats (1.085 at
#: data seed 0).
BRANCHING = 4
#: Tokens m that may follow a given previous token, whatever the one before it: the next token's support given
#: s_{t−1} alone, so H(s_t | s_{t−1}) ≤ log m = 2.08 nats, a bigram's floor a net reaches before it learns the pairs.
SUPPORT = 8
#: Tokens T per sequence: the net reads T − 1 = 15 and is scored on T − 2 = 14.
LENGTH = 16
#: The fixed held-out set's sequences (14 scored tokens each, 3,584 in all): the loss's per-token spread near the
#: floor is about 0.8 nats, so its mean is known to about 0.8/√3584 = 0.013 nats (1.2% of the floor), the teacher's
#: 2% (`otod.nets.model.data.STREAM_HELD_OUT`) at a sixteenth of the forward passes.
HELD_OUT = 256
#: The stationary distribution's power iteration stops when π moves by less than this in ℓ₁ (or refuses after
#: `MAX_ITERATIONS`).
TOLERANCE, MAX_ITERATIONS = 1e-14, 100_000


class Source(NamedTuple):
    """An order-2 source: ``next_tokens`` [V², k] (context a·V + b's allowed next tokens), ``probabilities``
    [V², k] their probabilities (rows sum to 1), ``stationary`` [V²] π."""

    next_tokens: np.ndarray
    probabilities: np.ndarray
    stationary: np.ndarray

    @property
    def vocabulary(self) -> int:
        return int(round(np.sqrt(self.next_tokens.shape[0])))

    @property
    def entropy_rate(self) -> float:
        return entropy_rate(self.next_tokens, self.probabilities, self.stationary)


def check(vocabulary: int, branching: int, length: int, support: int = SUPPORT) -> None:
    if not (vocabulary >= 2 and 1 <= branching <= support <= vocabulary and length >= 3):
        raise OtodError(f"sequence source: need V ≥ 2, 1 ≤ k ≤ m ≤ V and T ≥ 3 (got V = {vocabulary}, m = {support}, "
                        f"k = {branching}, T = {length}), e.g. V = 32, m = 8, k = 4, T = 16")


def stationary_distribution(next_tokens, probabilities) -> np.ndarray:
    """π over the V² contexts: the lazy chain ½(I + P) iterated from the uniform distribution (module docstring)."""
    next_tokens, probabilities = np.asarray(next_tokens), np.asarray(probabilities, float)
    contexts, k = next_tokens.shape
    v = int(round(np.sqrt(contexts)))
    successor = (np.arange(contexts)[:, None] % v) * v + next_tokens  # (a, b) → (b, c)
    pi = np.full(contexts, 1.0 / contexts)
    for _ in range(MAX_ITERATIONS):
        moved = np.bincount(successor.ravel(), weights=(pi[:, None] * probabilities).ravel(), minlength=contexts)
        new = 0.5 * (pi + moved)
        if np.abs(new - pi).sum() < TOLERANCE:
            return new / new.sum()
        pi = new
    raise OtodError(f"sequence source: the stationary distribution did not settle in {MAX_ITERATIONS} steps")


def entropy_rate(next_tokens, probabilities, stationary=None) -> float:
    """H = −Σ π(a, b) Σ_c p(c | a, b) log p(c | a, b) in nats (module docstring; 0·log 0 = 0)."""
    p = np.asarray(probabilities, float)
    pi = stationary_distribution(next_tokens, p) if stationary is None else np.asarray(stationary, float)
    per_context = -np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0), axis=1)
    return float(pi @ per_context)


def collision_probability(source: Source, length: int, power: int = 2) -> float:
    """Σ_s p(s)^r (r = ``power``) over the sequences of ``length`` tokens; r = 2: the chance two independent draws
    coincide, r = 3: three. q(a, b) = π(a, b)^r for the first context, then q ← Σ_a q(a, b)·p(c | a, b)^r moved to
    (b, c), T − 2 times; the sum of q."""
    contexts = source.next_tokens.shape[0]
    v = source.vocabulary
    successor = (np.arange(contexts)[:, None] % v) * v + source.next_tokens
    q = source.stationary ** power
    for _ in range(length - 2):
        q = np.bincount(successor.ravel(), weights=(q[:, None] * source.probabilities ** power).ravel(),
                        minlength=contexts)
    return float(q.sum())


@functools.lru_cache(maxsize=8)
def source(vocabulary: int = VOCABULARY, branching: int = BRANCHING, data_seed: int = 0,
           support: int = SUPPORT) -> Source:
    """The data seed's source (module docstring), drawn from its first child stream: the supports S_b, then each
    context's k of its S_b, then the probabilities."""
    from otod.nets.model.seeds import streams

    check(vocabulary, branching, 3, support)
    rng = streams(int(data_seed))[0]
    contexts = vocabulary * vocabulary
    supports = np.argsort(rng.random((vocabulary, vocabulary)), axis=1)[:, :support]  # S_b, per previous token b
    picks = np.argsort(rng.random((contexts, support)), axis=1)[:, :branching]  # k of S_b per context (a, b)
    next_tokens = np.take_along_axis(supports[np.arange(contexts) % vocabulary], picks, axis=1).astype(np.int32)
    probabilities = rng.dirichlet(np.ones(branching), size=contexts)
    return Source(next_tokens, probabilities, stationary_distribution(next_tokens, probabilities))


def tables(src: Source) -> tuple:
    """The source as JAX constants for `draw`: the cumulative distributions of π [V²] and of each context's next
    tokens [V², k] (summed in float64, held in float32: a context of π = 0 keeps an interval of width 0, so it is
    never drawn; `cumulative`) and the next tokens [V², k]."""
    return (jnp.asarray(cumulative(src.stationary[None])[0], jnp.float32),
            jnp.asarray(cumulative(src.probabilities), jnp.float32), jnp.asarray(src.next_tokens, jnp.int32))


def cumulative(p) -> np.ndarray:
    """Each row's cumulative sums, set to exactly 1 from its last positive entry on: a uniform u < 1 then never
    counts past the last outcome of positive probability (a float sum that ends just below 1 would)."""
    cum = np.cumsum(np.asarray(p, float), axis=1)
    last = p.shape[1] - 1 - np.argmax(np.asarray(p)[:, ::-1] > 0, axis=1)
    cum[np.arange(p.shape[1])[None, :] >= last[:, None]] = 1.0
    return cum


def draw(tabled: tuple, uniforms):
    """Sequences [..., T] int32 from uniforms [..., T − 1] in [0, 1) by inverse distribution functions: the first
    context (a, b) from π with the first uniform, then each next token c from p(· | a, b) with the next one, the
    context moving to (b, c). One uniform per token, so that compiling a draw holds one random call, not one per
    position (a categorical per step of the scan took 4.6 s to compile against 0.08 s to run)."""
    cum_pi, cum_p, next_tokens = tabled
    v = int(round(np.sqrt(cum_pi.shape[0])))
    contexts, k = next_tokens.shape
    u = jnp.moveaxis(jnp.asarray(uniforms, jnp.float32), -1, 0)
    context = jnp.minimum(jnp.sum(cum_pi[None] <= u[0][..., None], axis=-1), contexts - 1)

    def step(context, u_t):
        j = jnp.minimum(jnp.sum(cum_p[context] <= u_t[..., None], axis=-1), k - 1)
        c = jnp.take_along_axis(next_tokens[context], j[..., None], axis=-1)[..., 0]
        return (context % v) * v + c, c

    _, tail = jax.lax.scan(step, context, u[1:])
    tokens = jnp.concatenate([jnp.stack([context // v, context % v]), tail], axis=0)
    return jnp.moveaxis(tokens, 0, -1).astype(jnp.int32)


def split(tokens, dtype):
    """Sequences [n, T] → (x [n, T − 1] the net's inputs, as ``dtype`` (token ids are exact in a float), y [n,
    T − 2] int32 the scored next tokens s_3..s_T)."""
    return tokens[:, :-1].astype(dtype), tokens[:, 2:].astype(jnp.int32)


#: Sequences drawn per compiled call (`_draw_many`): every set, of any size and from any stream, is drawn in
#: blocks of this many, so one pair of programs (the uniforms and `draw`) serves them all; one program per size
#: and stream compiled 2 × 0.3–0.7 s for each D of a grid (and its held-out set).
DRAW_BLOCK = 256


@functools.lru_cache(maxsize=None)
def _block_uniforms(count: int, length: int):
    """The compiled (key, start) → uniforms [count, T − 1] of sequences start … start + count − 1, sequence i's
    from fold_in(key, i) (the key and start arguments, so every stream and block shares it)."""
    def uniforms(key, start):
        index = start + jnp.arange(count, dtype=jnp.uint32)
        return jax.vmap(lambda i: jax.random.uniform(jax.random.fold_in(key, i), (length - 1,)))(index)

    return jax.jit(uniforms)


@functools.lru_cache(maxsize=16)
def _draw_many(vocabulary: int, branching: int, support: int, data_seed: int, stream: int, n: int,
               length: int) -> np.ndarray:
    """The stream's first n sequences [n, T], sequence i from fold_in(key, i), drawn `DRAW_BLOCK` at a time
    (the last block's surplus dropped): each sequence depends on its own index alone, so a block's rows are the
    rows a draw of exactly n would give, bit for bit."""
    from otod.nets.model.seeds import streams

    src = source(vocabulary, branching, data_seed, support)
    seed = int(streams(int(data_seed))[stream].integers(0, 2 ** 31 - 1))
    with jax.enable_x64(False):
        key = jax.random.PRNGKey(seed)
        tabled, drawn, uniforms = tables(src), jax.jit(draw), _block_uniforms(DRAW_BLOCK, length)
        blocks = [np.asarray(drawn(tabled, uniforms(key, jnp.uint32(start))))
                  for start in range(0, max(n, 1), DRAW_BLOCK)]
    out = np.concatenate(blocks)[:n]
    out.setflags(write=False)
    return out


def training_sequences(n: int, vocabulary: int = VOCABULARY, branching: int = BRANCHING, length: int = LENGTH,
                       data_seed: int = 0, support: int = SUPPORT) -> np.ndarray:
    """The training set's first n sequences [n, T] (nested: sequence i from fold_in(k_train, i))."""
    check(vocabulary, branching, length, support)
    return _draw_many(vocabulary, branching, support, int(data_seed), 1, int(n), length)


def held_out_sequences(n: int = HELD_OUT, vocabulary: int = VOCABULARY, branching: int = BRANCHING,
                       length: int = LENGTH, data_seed: int = 0, support: int = SUPPORT) -> np.ndarray:
    """The fixed held-out set [n, T], from its own stream (the data seed's fourth child)."""
    check(vocabulary, branching, length, support)
    return _draw_many(vocabulary, branching, support, int(data_seed), 3, int(n), length)


def stream_batch(src: Source, key, t, batch: int, length: int, dtype):
    """Step t's minibatch of the stream regime, in JAX: B fresh sequences from fold_in(key, t) (``key``: the seed's),
    as (x, y) of `split`."""
    uniforms = jax.random.uniform(jax.random.fold_in(key, t), (batch, length - 1), jnp.float32)
    return split(draw(tables(src), uniforms), dtype)
