"""The nets obstacle's data sets, generated from seeds or shipped inside the package (no download at run time).

* ``digits``: the 1,797 8×8 grey-level images of hand-written digits that scikit-learn bundles as
  ``load_digits`` (the test set of the UCI "Optical Recognition of Handwritten Digits" data, Alpaydin & Kaynak
  1998; CC BY 4.0), shipped as ``otod/nets/model/data/digits.npz`` (uint8 pixels 0..16, labels 0..9). Inputs are
  pixels/16, so each lies in [0, 1]. The last ``holdout`` fraction (20% by default) is kept out of training for
  test accuracy; the target is always the training loss on the rest.
* ``teacher``: a synthetic teacher–student regression: x ~ N(0, I) in ``inputs`` dimensions, a random teacher MLP
  (one tanh hidden layer of ``teacher_width`` units, weights N(0, 1/fan_in)) gives y = teacher(x) +
  ``label_noise``·ε, ε ~ N(0, I). The number of examples is an option, so the parameter count of the student can
  be scaled against a fixed amount of data.
* ``sequence``: token sequences of a random sparse order-2 Markov source for the transformer
  (`otod.nets.model.sequence`): x the T − 1 tokens the net reads (as exact floats), y [n, T − 2] the scored next
  tokens; ``examples`` sequences (default 1,024) and a fixed held-out set of `otod.nets.model.sequence.HELD_OUT`,
  nested as the teacher's (``inputs``, ``outputs``, ``teacher_width``, ``label_noise`` and ``holdout`` do not
  apply).
* ``gaussian``: a linear teacher y = xᵀw* + ``label_noise``·ε with x ~ N(0, I): with a linear model (depth 1) and
  the squared loss it is a quadratic whose Hessian is the inputs' second moment and whose per-example gradient
  covariance is known (`otod.nets.theory`), the check of the whole package against exact numbers.

Every draw comes from ``numpy.random.default_rng([data_seed, 7])``, so a data set is the same in every process.
The synthetic sets draw from four child streams of it (`streams`): the teacher's weights, the training inputs,
the training label noise, and the held-out set (its inputs, then its noise). So the teacher and the held-out set do
not depend on the number of examples, and the sets are nested: the first N examples of a set of N' > N are the set
of N, exactly (an ``--examples`` axis sweeps nested subsets of one training set, the same for every seed; digits
takes the first N images). Held out: ``holdout``/(1 − ``holdout``) × 1,024 examples (256 at the default 0.2),
whatever the training set's size.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import NamedTuple

import numpy as np

from otod.core.api import OtodError
from otod.nets.model.seeds import streams

DATASETS = ("digits", "teacher", "gaussian", "sequence")

#: The digits' size: 1,797 images of 8×8 pixels, 10 classes.
DIGITS_EXAMPLES, DIGITS_PIXELS, DIGITS_CLASSES = 1797, 64, 10


class Dataset(NamedTuple):
    """Training and held-out arrays: x [n, features] (float64), y [n] integer labels (``classes`` > 0) or
    [n, outputs] targets (``classes`` == 0); ``image`` is the (height, width) of an input that is an image."""

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    classes: int
    image: tuple[int, int] | None = None

    @property
    def examples(self) -> int:
        return int(self.x_train.shape[0])

    @property
    def features(self) -> int:
        return int(self.x_train.shape[1])

    @property
    def outputs(self) -> int:
        return self.classes if self.classes else int(self.y_train.shape[1])


@functools.lru_cache(maxsize=1)
def digits_arrays() -> tuple[np.ndarray, np.ndarray]:
    """The shipped digits: pixels [1797, 64] uint8 in 0..16 and labels [1797] uint8."""
    with resources.files("otod.nets.model").joinpath("data/digits.npz").open("rb") as f:
        data = np.load(f)
        return data["images"], data["labels"]


def split(n: int, holdout: float) -> int:
    """How many of n examples train: n − round(holdout·n), at least 1."""
    return max(1, n - int(round(holdout * n)))


@functools.lru_cache(maxsize=16)
def load(name: str = "digits", examples: int | None = None, inputs: int = 16, outputs: int = 1,
         teacher_width: int = 32, label_noise: float = 0.1, holdout: float = 0.2, data_seed: int = 0) -> Dataset:
    """The data set ``name`` (see the module docstring). ``examples`` is the training set's size: for digits at
    most the 1,797 − holdout images kept for training (None: all of them), for the synthetic sets the number drawn
    (None: 1,024)."""
    if name not in DATASETS:
        raise OtodError(f"--data {name}: unknown data set; choose from {', '.join(DATASETS)}, e.g. --data digits")
    if not 0.0 <= holdout < 1.0:
        raise OtodError(f"--holdout {holdout:g}: the held-out fraction must lie in [0, 1), e.g. --holdout 0.2")
    if name == "digits":
        pixels, labels = digits_arrays()
        x, y = pixels.astype(np.float64) / 16.0, labels.astype(np.int64)
        n_train = split(DIGITS_EXAMPLES, holdout)
        if examples is not None:
            if not 1 <= int(examples) <= n_train:
                raise OtodError(f"--examples {examples}: digits keeps {n_train} images for training "
                                f"(holdout {holdout:g}); use --examples ≤ {n_train}")
            n_use = int(examples)
        else:
            n_use = n_train
        return Dataset("digits", x[:n_use], y[:n_use], x[n_train:], y[n_train:], DIGITS_CLASSES, (8, 8))
    if examples is not None and int(examples) < 1 or inputs < 1 or outputs < 1 or teacher_width < 1:
        raise OtodError("--examples, --inputs, --outputs and --teacher-width must be ≥ 1, e.g. --examples 1024")
    if not (label_noise >= 0 and np.isfinite(label_noise)):
        raise OtodError(f"--label-noise {label_noise:g}: must be ≥ 0, e.g. --label-noise 0.1")
    n_train = DEFAULT_EXAMPLES if examples is None else int(examples)
    if name == "sequence":
        from otod.nets.model import sequence

        x, y = sequence.split(sequence.training_sequences(n_train, data_seed=data_seed), np.float64)
        x_test, y_test = sequence.split(sequence.held_out_sequences(data_seed=data_seed), np.float64)
        return Dataset(name, x, y.astype(np.int64), x_test, y_test.astype(np.int64), sequence.VOCABULARY)
    weights = teacher_weights(name, inputs, outputs, teacher_width, data_seed)
    _, train_x, train_noise, test = streams(data_seed)
    x = train_x.standard_normal((n_train, inputs))
    y = teacher_outputs(name, weights, x) + label_noise * train_noise.standard_normal((n_train, outputs))
    x_test, y_test = held_out(name, weights, test, inputs, outputs, label_noise, held_out_size(holdout))
    return Dataset(name, x, y, x_test, y_test, 0)


#: The synthetic sets' training size where ``examples`` is not given; the held-out set is sized from it.
DEFAULT_EXAMPLES = 1024


def held_out_size(holdout: float) -> int:
    """The synthetic sets' held-out examples: round(holdout · 1,024 / (1 − holdout)), 256 at holdout 0.2 (the
    split of a default set of 1,024 training examples), the same for every training size."""
    return int(round(holdout * DEFAULT_EXAMPLES / (1.0 - holdout)))


@functools.lru_cache(maxsize=16)
def teacher_weights(name: str, inputs: int, outputs: int, teacher_width: int, data_seed: int) -> tuple:
    """The teacher: ``teacher`` (W₁ [inputs, teacher_width], W₂ [teacher_width, outputs], entries N(0, 1/fan_in))
    or ``gaussian`` (w* [inputs, outputs], N(0, 1/inputs)), from the teacher's own stream."""
    rng = streams(data_seed)[0]
    if name == "teacher":
        w1 = rng.standard_normal((inputs, teacher_width)) / np.sqrt(inputs)
        return w1, rng.standard_normal((teacher_width, outputs)) / np.sqrt(teacher_width)
    return (rng.standard_normal((inputs, outputs)) / np.sqrt(inputs),)


def teacher_outputs(name: str, weights: tuple, x, xp=np):
    """The teacher's clean outputs at inputs x [n, inputs]: tanh(x W₁) W₂ (``teacher``) or x w* (``gaussian``);
    ``xp``: numpy, or jax.numpy inside a compiled step (the stream regime draws its examples there)."""
    if name == "teacher":
        return xp.tanh(x @ weights[0]) @ weights[1]
    return x @ weights[0]


def held_out(name: str, weights: tuple, rng: np.random.Generator, inputs: int, outputs: int, label_noise: float,
             n: int) -> tuple[np.ndarray, np.ndarray]:
    """n held-out examples from their own stream: inputs x ~ N(0, I), then y = teacher(x) + label_noise · ε."""
    x = rng.standard_normal((n, inputs))
    return x, teacher_outputs(name, weights, x) + label_noise * rng.standard_normal((n, outputs))


#: The held-out examples the stream regime's metric averages over (their first `held_out_size` are the finite
#: set's held-out set): with a loss near the label noise's variance σ², the mean over 4,096 examples has a relative
#: standard error of about √(2/4096) = 2%, the same set for every lane, batch and seed.
STREAM_HELD_OUT = 4096


@functools.lru_cache(maxsize=4)
def stream_held_out(name: str, inputs: int, outputs: int, teacher_width: int, label_noise: float,
                    data_seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The stream regime's fixed held-out set: `STREAM_HELD_OUT` examples of the teacher from the held-out stream."""
    weights = teacher_weights(name, inputs, outputs, teacher_width, data_seed)
    return held_out(name, weights, streams(data_seed)[3], inputs, outputs, label_noise, STREAM_HELD_OUT)


def stream_batch(name: str, weights: tuple, key, t, batch: int, inputs: int, outputs: int, label_noise: float,
                 dtype):
    """Step t's minibatch of the stream regime, in JAX: B fresh examples x ~ N(0, I), y = teacher(x) +
    label_noise·ε, from the key fold_in(key, t) (``key``: the seed's), so no example repeats across steps (a
    collision of two Gaussian draws has probability 0) and a seed's run is reproducible."""
    import jax
    import jax.numpy as jnp

    kx, ke = jax.random.split(jax.random.fold_in(key, t))
    x = jax.random.normal(kx, (batch, inputs), dtype)
    clean = teacher_outputs(name, tuple(jnp.asarray(w, dtype) for w in weights), x, jnp)
    return x, clean + label_noise * jax.random.normal(ke, (batch, outputs), dtype)
