"""The problems' noise: its size in d and B, and sampling without replacement."""

import jax
import jax.numpy as jnp
import numpy as np

from otod.noise.problems import IsotropicSpec, Step, epoch_batch


def _noise(d: int, batches, draws: int) -> np.ndarray:
    """RMS of ‖g − ∇f‖ of the isotropic family's sampled gradient at x* (so g is pure noise) over ``draws``
    draws, per batch size (one compiled function per d)."""
    family = IsotropicSpec(dim=d).family()
    keys = jax.random.split(jax.random.PRNGKey(0), draws)

    @jax.jit
    def rms(batch):
        problem = family.make({"batch": batch}, {"theta0": jnp.zeros(d)})
        g = jax.vmap(lambda k: family.gradient(problem, jnp.zeros(d), Step(k, 0.0)))(keys)
        return jnp.sqrt(jnp.mean(jnp.sum(g * g, -1)))

    return np.array([float(rms(jnp.asarray(float(b)))) for b in batches])


def test_noise_rms_grows_like_root_d_and_an_average_of_n_samples_shrinks_like_one_over_root_n():
    """Log-log slopes of the RMS noise: vs d (B = 1) 0.5 ± 0.05; vs the batch n at d = 100: −0.5 ± 0.05."""
    dims = np.array([10, 100, 1000, 10000])
    slope_d = np.polyfit(np.log(dims), np.log([_noise(int(d), [1.0], 200)[0] for d in dims]), 1)[0]
    ns = np.array([1, 4, 16, 64, 256])
    slope_n = np.polyfit(np.log(ns), np.log(_noise(100, ns, 200)), 1)[0]
    assert abs(slope_d - 0.5) <= 0.05 and abs(slope_n + 0.5) <= 0.05, (slope_d, slope_n)


def test_each_epoch_uses_every_example_once():
    """n = 24, B = 6: the 4 steps of an epoch take disjoint batches of 6 covering all 24; the next epoch is another
    order. B = 5: 4 steps of 5, the 4 left over sit the epoch out."""
    key = jax.random.PRNGKey(3)
    masks = np.array([np.asarray(epoch_batch(key, float(t), 6.0, 24, jnp.float32)) for t in range(8)])
    assert np.all(masks.sum(1) == 6)
    assert np.all(masks[:4].sum(0) == 1) and np.all(masks[4:].sum(0) == 1)
    assert not np.array_equal(masks[:4], masks[4:])
    masks5 = np.array([np.asarray(epoch_batch(key, float(t), 5.0, 24, jnp.float32)) for t in range(4)])
    assert np.all(masks5.sum(1) == 5) and masks5.sum(0).max() == 1 and masks5.sum() == 20
