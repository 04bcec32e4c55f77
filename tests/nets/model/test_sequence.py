"""The transformer's generated sequence task (`otod.nets.model.sequence`): its loss floor, the entropy rate under the
stationary distribution of contexts, equals a hand computation and a long sample's mean log-loss under the source;
the held-out set repeats sequences at the rate the collision probability predicts; the sets are nested, the same in
a float64 process, and the stream never repeats a step's draws."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from otod.nets.model import sequence


def hand_source() -> tuple[np.ndarray, np.ndarray]:
    """V = 2, contexts (a, b) = 00, 01, 10, 11: 00 → 1; 01 → 0 or 1 at ½ each; 10 → 0; 11 → 0."""
    next_tokens = np.array([[0, 1]] * 4)
    probabilities = np.array([[0.0, 1.0], [0.5, 0.5], [1.0, 0.0], [1.0, 0.0]])
    return next_tokens, probabilities


def test_the_floor_of_a_hand_source_is_its_entropy_rate_by_hand():
    """π solves π(00) = π(10), π(01) = π(00), π(10) = ½π(01) + π(11), π(11) = ½π(01): π = (2, 2, 2, 1)/7; only
    context 01 is uncertain (log 2), so H = (2/7)·log 2 = 0.19804 nats, to 1e-12."""
    next_tokens, probabilities = hand_source()
    pi = sequence.stationary_distribution(next_tokens, probabilities)
    assert pi == pytest.approx(np.array([2, 2, 2, 1]) / 7, abs=1e-12)
    assert sequence.entropy_rate(next_tokens, probabilities) == pytest.approx(2 / 7 * math.log(2), abs=1e-12)


def sequences_of_stream(src, n: int, batch: int = 256) -> np.ndarray:
    """n sequences [n, T] drawn as the stream draws them (`sequence.stream_batch`, steps 0, 1, …), rebuilt from
    (x = s_1..s_{T−1}, y = s_3..s_T)."""
    draw = jax.jit(lambda t: sequence.stream_batch(src, jax.random.PRNGKey(7), t, batch, sequence.LENGTH,
                                                   jnp.float32))
    out = []
    for t in range(n // batch):
        x, y = draw(t)
        out.append(np.concatenate([np.asarray(x, int), np.asarray(y)[:, -1:]], axis=1))
    return np.concatenate(out)


def log_losses(src, tokens: np.ndarray) -> np.ndarray:
    """Each sequence's mean −log p(s_t | s_{t−2}, s_{t−1}) over t = 3..T under the source's own table (+∞ where a
    drawn token has probability 0)."""
    v = src.vocabulary
    context = tokens[:, :-2] * v + tokens[:, 1:-1]
    nxt = tokens[:, 2:]
    p = np.zeros(nxt.shape)
    for j in range(src.next_tokens.shape[1]):
        hit = src.next_tokens[context, j] == nxt
        p[hit] += src.probabilities[context, j][hit]
    with np.errstate(divide="ignore"):
        return -np.log(p).mean(axis=1)


def test_the_floor_is_a_long_samples_mean_log_loss_under_the_source():
    """8,192 stream sequences (114,688 scored tokens): every drawn token is allowed by its context, and the mean of
    −log p(next | context) (an unbiased estimate of the entropy rate when every context is π-distributed) lies
    within 4 standard errors of the formula's H (the sequences are independent; measured SE about 0.002). The
    held-out set agrees within its own 4 SE. (Weighting the contexts uniformly instead of by π moves H by only 8·10⁻⁴
    here, the contexts' entropies being drawn alike: the hand case above is the check of π.)"""
    src = sequence.source()
    h = src.entropy_rate
    per = log_losses(src, sequences_of_stream(src, 8192))
    assert np.isfinite(per).all()
    se = per.std(ddof=1) / math.sqrt(len(per))
    assert abs(per.mean() - h) < 4 * se
    held = log_losses(src, sequence.held_out_sequences())
    assert abs(held.mean() - h) < 4 * held.std(ddof=1) / math.sqrt(len(held))
    assert 1.0 < h < math.log(sequence.SUPPORT) < math.log(sequence.VOCABULARY)


def coincident_pairs(tokens: np.ndarray) -> int:
    _, counts = np.unique(tokens, axis=0, return_counts=True)
    return int((counts * (counts - 1) // 2).sum())


def test_the_held_out_sets_repeats_are_the_collision_probabilitys():
    """A held-out set of n = 1,500 sequences of a small source (V = 6, m = 3, k = 2, T = 10) holds E = C(n, 2)·q
    coinciding pairs, q = Σ_s p(s)²; the count's variance is C(n, 2)(q − q²) + n(n − 1)(n − 2)(Σ p³ − q²) (a
    U-statistic's). Within 4 σ. At the defaults E = C(256, 2)·q is below 10⁻², and the set holds none."""
    v, m, k, t, n = 6, 3, 2, 10, 1500
    src = sequence.source(v, k, 0, m)
    q, q3 = sequence.collision_probability(src, t), sequence.collision_probability(src, t, power=3)
    pairs = n * (n - 1) / 2
    expected = pairs * q
    sigma = math.sqrt(pairs * (q - q * q) + n * (n - 1) * (n - 2) * (q3 - q * q))
    assert expected > 100
    held = sequence.held_out_sequences(n, v, k, t, support=m)
    assert abs(coincident_pairs(held) - expected) < 4 * sigma
    default = sequence.source()
    assert 256 * 255 / 2 * sequence.collision_probability(default, sequence.LENGTH) < 1e-2
    assert coincident_pairs(sequence.held_out_sequences()) == 0


def test_the_sets_are_nested_distinct_and_the_same_in_a_float64_process():
    """The first 100 training sequences of 1,000 are the set of 100; the held-out set is not the training set's
    start; drawn again under jax_enable_x64, both are the same arrays."""
    small, large = sequence.training_sequences(100), sequence.training_sequences(1000)
    assert small.shape == (100, sequence.LENGTH) and np.array_equal(small, large[:100])
    held = sequence.held_out_sequences()
    assert not np.array_equal(held[:100], small)
    sequence._draw_many.cache_clear()
    with jax.enable_x64(True):
        assert np.array_equal(sequence.training_sequences(100), small)
        assert np.array_equal(sequence.held_out_sequences(), held)


def test_the_stream_draws_other_sequences_at_every_step():
    """Step t's batch comes from fold_in(key, t): 64 steps of B = 16 give 1,024 distinct sequences (the chance of a
    coincidence is C(1024, 2)·q ≈ 0.01 at the defaults), and the same step drawn twice is the same batch."""
    src = sequence.source()
    tokens = sequences_of_stream(src, 1024, batch=16)
    assert coincident_pairs(tokens) == 0
    again = sequences_of_stream(src, 16, batch=16)
    assert np.array_equal(again, tokens[:16])


def test_bad_sizes_are_refused_in_one_line():
    from otod.core.errors import OtodError

    with pytest.raises(OtodError, match="1 ≤ k ≤ m ≤ V"):
        sequence.source(4, 3, 0, 2)
