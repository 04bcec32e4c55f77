"""`otod.nets.model.size`: the closed-form counts equal what building the net and its data gives, and the checks refuse
before anything is drawn."""

from __future__ import annotations

import math

import pytest

from otod.core.errors import OtodError
from otod.nets.model import models, size
from otod.nets.model.problem import NetSpec

SPECS = [dict(model="mlp", width=32, depth=2, data="digits"),
         dict(model="mlp", width=7, depth=1, data="teacher", examples=100, loss="squared"),
         dict(model="mlp", width=13, depth=5, data="gaussian", loss="squared", inputs=5, outputs=3),
         dict(model="cnn", width=6, depth=2, data="digits"),
         dict(model="cnn", width=5, depth=4, data="digits", examples=300)]


@pytest.mark.parametrize("options", SPECS, ids=lambda o: f"{o['model']}-{o['width']}x{o['depth']}-{o['data']}")
def test_counts_equal_the_built_net_and_data(options):
    spec = NetSpec(**options)
    ds = spec.dataset()
    shape = size.data_shape(spec.data, spec.examples, spec.inputs, spec.outputs, spec.holdout)
    assert (shape.train, shape.test, shape.features, shape.outputs) == (ds.examples, len(ds.x_test), ds.features,
                                                                        ds.outputs)
    parameters, cubes, side = size.layer_sizes(spec.model, shape, spec.width, spec.depth)
    shapes = spec.shapes()
    sides = [max(math.prod(s[:-1]), s[-1]) for s in shapes]  # the square each orthogonal draw factors
    assert parameters == spec.parameter_count == models.parameter_count(shapes)
    assert cubes == sum(float(n) ** 3 for n in sides) and side == max(sides)


def test_a_net_that_cannot_fit_is_refused_before_it_is_drawn():
    """Half a GiB free: a width of 10⁶ (P ≈ 7.5·10⁷, 1.1 GiB of start) is refused naming the options; the default
    net (P = 2,410) passes."""
    with pytest.raises(OtodError, match="--width 1000000 .*GiB of memory.*smaller --width or --depth"):
        size.check_buildable("mlp", "digits", 10 ** 6, 2, available=2 ** 29)
    assert size.check_buildable("mlp", "digits", 32, 2, available=2 ** 29).parameters == 2410


def test_the_data_set_is_named_where_it_dominates():
    with pytest.raises(OtodError, match="smaller --examples"):
        size.check_buildable("mlp", "teacher", 32, 2, examples=10 ** 8, available=2 ** 30)


def test_an_orthogonal_start_counts_its_qr():
    """A width of 2·10⁴ on digits: 3 squares of 2·10⁴ (9.6 GB) for the orthogonal QR, 24 MB otherwise."""
    plain = size.footprint("mlp", "digits", 20_000, 2)
    assert plain.qr_bytes == 8 * 3 * 20_000 ** 2
    assert size.check_buildable("mlp", "digits", 20_000, 2, available=4 * 2 ** 30)
    with pytest.raises(OtodError, match="GiB of memory"):
        size.check_buildable("mlp", "digits", 20_000, 2, orthogonal=True, available=4 * 2 ** 30)


def test_depth_is_bounded():
    with pytest.raises(OtodError, match=f"--depth {size.MAX_DEPTH + 1}: at most {size.MAX_DEPTH}"):
        size.check_buildable("mlp", "digits", 4, size.MAX_DEPTH + 1)


def test_the_sweep_estimate_counts_the_draws(monkeypatch):
    """The net sweep's time estimate holds its seeds' draws: ``seconds_per_seed`` × seeds more than without them,
    the orthogonal QR of both 256-sided layers and the Gaussian weights, for each architecture."""
    import otod.nets.model.family as family
    from otod.core.plan import estimate
    from otod.nets.sweep.options import net_config

    config = net_config(batch="64", width="256", seeds=3, lr="0.1")
    spec = config.specs()[0]
    expected = 2 * (4.0 / 3.0 * (256.0 ** 3 + 256.0 ** 3) * size.SECONDS_PER_DRAW_FLOP
                    + len(models.INITS) * spec.parameter_count * family.SECONDS_PER_NORMAL)
    assert family.draw_seconds(spec) == pytest.approx(expected)
    with_draws = estimate(config).seconds
    monkeypatch.setattr(family, "draw_seconds", lambda spec: 0.0)
    assert with_draws - estimate(config).seconds == pytest.approx(3 * expected)
