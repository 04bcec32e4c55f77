"""otod: measurements of why training takes so many sequential iterations.

The name is the initials of the three Obstacles TO Decreasing serial complexity: nonlinearity, conditioning and
gradient noise; beside them otod measures the cost of one iteration.

``otod.load(path)`` reads a results file of any format; ``otod.load(path).to_pandas()`` is its data frame.
``otod.curvature(loss, params, data, …)`` and ``otod.noise_scale(loss, params, data, …)`` measure any JAX model
given as a mean loss over a batch, a parameter pytree and a tuple of data arrays (docs/models.md);
``otod.critical_batch(loss, params, data, batches=…, target=…)`` runs its steps to a target against batch size
through the sweep engine and fits its critical batch; ``otod.critical_batch_grid(examples, widths, …)`` runs a joint data × parameters grid and fits
B_crit ∝ D^a·P^b; ``otod.critical_batch_along_training(steps, …)`` measures
the critical batch of one of otod's nets or a user's model at checkpoints of its training (given as steps or
as loss levels), by branching S(B) sweeps from them; ``otod.batch_schedule(schedule, …)`` runs a batch schedule
on one of otod's nets against its best constant batch.
"""

from otod.core.version import __version__

__all__ = ["__version__", "batch_schedule", "critical_batch", "critical_batch_along_training", "critical_batch_grid",
           "curvature", "load", "noise_scale"]


def load(path):
    """Load and verify a results file (``.parquet``, ``.json`` or ``.npz``, by its suffix) as
    `otod.core.results.Results`: ``.records``, ``.meta``, ``.to_pandas()``. The results module is imported on
    the first call, so ``import otod`` (and ``otod --help``) imports no NumPy, pandas or JAX."""
    from otod.core.results import load as load_results

    return load_results(path)


def curvature(loss, params, data, init=None, **options):
    """The Hessian spectrum of any JAX model's mean training loss (`otod.nets.api.curvature`: its options and
    its `CurvatureResult`); JAX is imported on the first call."""
    from otod.nets.api import curvature as measure

    return measure(loss, params, data, init, **options)


def noise_scale(loss, params, data, init=None, **options):
    """The gradient noise scales B_simple and B_noise of any JAX model (`otod.nets.api.noise_scale`: its options
    and its `NoiseScaleResult`); JAX is imported on the first call."""
    from otod.nets.api import noise_scale as measure

    return measure(loss, params, data, init, **options)


def critical_batch(loss, params, data, init=None, **options):
    """Steps to a training-loss target against batch size of any JAX model, and its critical batch
    (`otod.nets.batch_api.critical_batch`: its options and its `CriticalBatchResult`); JAX is imported on the
    first call."""
    from otod.nets.batch_api import critical_batch as measure

    return measure(loss, params, data, init, **options)


def critical_batch_grid(examples, widths, **options):
    """The joint grid of data size D × width of one of otod's nets: every cell an S(B) sweep (stream or finite data,
    each cell stopped at its reference run's held-out loss after D examples), and the joint law B_crit ∝ D^a·P^b
    with CIs on a, b, a − b and its verdict (`otod.nets.batch_api.critical_batch_grid`: its options and its
    `GridResult`); JAX is imported on the first call."""
    from otod.nets.batch_api import critical_batch_grid as measure

    return measure(examples, widths, **options)


def critical_batch_along_training(steps=None, **options):
    """B_crit(t) and S_min(t) with CIs of one of otod's nets or a user's model (``model="FILE.py:NAME"``) at
    checkpoints of its training (``steps``, default 0, 100, 1000; or ``losses=``, loss levels), each from S(B)
    sweeps branched at the checkpoint (`otod.nets.along.branching.critical_batch_along_training`: its options and its
    `AlongTrainingResult`); JAX is imported on the first call."""
    from otod.nets.along.branching import critical_batch_along_training as measure

    return measure(steps, **options)


def batch_schedule(schedule, **options):
    """A batch schedule (phases ``"B@r,…"`` or ``"doubling:B0..B1@r"``) of one of otod's nets against its constant
    batches, steps and examples to the same final target with CIs (`otod.nets.schedule.batch_schedule.batch_schedule`: its options
    and its `ScheduleResult`); JAX is imported on the first call."""
    from otod.nets.schedule.batch_schedule import batch_schedule as measure

    return measure(schedule, **options)
