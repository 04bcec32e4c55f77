"""Registers the depth sweeps for these tests, and says whether this CPU's XLA dot sums as the engine's written-out
products do."""

import functools

import numpy as np

import otod.depth  # noqa: F401


@functools.lru_cache(maxsize=1)
def xla_dot_is_the_written_chain() -> bool:
    """Whether XLA:CPU's dot contracting both operands' major dimension gives, on this machine, the bits of the
    written-out chain of fused multiply-adds (`otod.depth.linear.transposed_product`), probed at width 8 over 104
    matrices as the engine batches them. True on the machines where the bit-for-bit tests were written (CI passed
    them there); False on this project's 2026-11-27 AMD EPYC, where 2 of 216 hit counts of a heavy-ball lane moved by one
    iteration (291 against 292): XLA picks another kernel there and sums in another order. Where it is False the
    records may move by rounding order only, which the tests then check instead (the brief's record rule)."""
    import jax

    from otod.depth.linear import transposed_product

    rng = np.random.default_rng(8)
    a, b = (jax.numpy.asarray(rng.standard_normal((104, 8, 8)), jax.numpy.float32) for _ in range(2))
    by_dot = jax.jit(jax.vmap(lambda x, y: jax.lax.dot_general(x, y, (((0,), (0,)), ((), ())))))(a, b)
    written = jax.jit(jax.vmap(transposed_product))(a, b)
    return bool(np.array_equal(np.asarray(written), np.asarray(by_dot)))
