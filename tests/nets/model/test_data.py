"""The nets' data sets (`otod.nets.model.data`): a training-set size axis sweeps nested subsets of one set, the same for
every seed; the teacher and the held-out set do not move with the size."""

from __future__ import annotations

import numpy as np
import pytest

from otod.nets.model import data


@pytest.mark.parametrize("name", ["teacher", "gaussian"])
def test_a_smaller_synthetic_set_is_exactly_the_first_examples_of_a_larger_one(name):
    small, large = data.load(name, 100, inputs=5, outputs=2), data.load(name, 1000, inputs=5, outputs=2)
    assert small.x_train.shape == (100, 5) and large.y_train.shape == (1000, 2)
    assert np.array_equal(small.x_train, large.x_train[:100]) and np.array_equal(small.y_train, large.y_train[:100])
    # the held-out set is the same too (256 examples at holdout 0.2, whatever the training size)
    assert np.array_equal(small.x_test, large.x_test) and small.x_test.shape == (256, 5)
    # the labels are the one teacher's: y − teacher(x) is the label noise, 0.1·N(0, 1)
    clean = data.teacher_outputs(name, data.teacher_weights(name, 5, 2, 32, 0), large.x_train)
    noise = (large.y_train - clean) / 0.1
    assert abs(noise.mean()) < 0.1 and noise.std() == pytest.approx(1.0, abs=0.05)
    # another data seed is another set
    assert not np.array_equal(data.load(name, 100, inputs=5, outputs=2, data_seed=1).x_train, small.x_train)


def test_an_examples_axis_gives_nested_sets_the_same_for_every_seed():
    """``--examples 64,256`` on the teacher: the point D = 64 trains on the first 64 examples of D = 256's set (the
    set is a function of the spec alone, whose ``data_seed`` no training seed enters: every seed trains on it);
    the records carry D; digits take the first D images."""
    import dataclasses

    from otod.nets.sweep.kind import record_fields
    from otod.nets.sweep.options import net_config

    config = net_config(data="teacher", examples="64,256", batch="8", seed=3, width="4")
    assert dict(config.axes)["examples"] == (64.0, 256.0) and "seed" not in config.problem.__dict__
    (x64, y64), (x256, y256) = (config.spec_at({"examples": d}).training_arrays(np.float64) for d in (64, 256))
    assert np.array_equal(x64, x256[:64]) and np.array_equal(y64, y256[:64])
    assert record_fields(config, point={"batch": 8.0, "examples": 64.0, "beta": 0.0})["examples"] == 64.0
    digits = dataclasses.replace(config.problem, data="digits", loss="cross-entropy")
    x100, _ = dataclasses.replace(digits, examples=100).training_arrays(np.float64)
    x400, _ = dataclasses.replace(digits, examples=400).training_arrays(np.float64)
    assert np.array_equal(x100, x400[:100]) and x400.shape == (400, 64)
