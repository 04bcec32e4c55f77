"""`otod.core.precision`: every program a sweep traces has its float32 products in float32 (no TF32 on a GPU),
and the results file says so. On a CPU the numbers cannot show it (XLA:CPU has no TF32), so these tests observe
the setting itself: the matmul precision in force when the engine is handed a chunk, and the precision that the
lowered program's dots carry."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import otod.core.engine as engine
from otod.core.precision import MATMUL_PRECISION, exact_float32
from otod.core.sweep import run_sweep


def test_the_engine_is_handed_every_chunk_under_the_exact_precision_and_the_file_records_it(tmp_path, monkeypatch):
    from otod.condition.options import condition_sweep
    from otod.condition.quadratic import QuadraticSpec

    seen, original = [], engine.dispatch

    def watching(*args, **kwargs):
        seen.append(jax.config.jax_default_matmul_precision)
        return original(*args, **kwargs)

    monkeypatch.setattr(engine, "dispatch", watching)
    before = jax.config.jax_default_matmul_precision
    config = condition_sweep((1.0, 4.0), methods=("gd",), problem=QuadraticSpec(dim=8, basis="rotated"), seeds=2,
                             max_iters=500)
    results = run_sweep(config, out_dir=tmp_path)
    assert seen and set(seen) == {MATMUL_PRECISION} == {"highest"}
    assert results.meta["matmul_precision"] == "highest"
    assert jax.config.jax_default_matmul_precision == before  # restored: a notebook's own setting is its own


def _dot_precisions(text: str) -> set[str]:
    """The ``precision`` attributes of the dots in a lowered program (StableHLO text)."""
    import re

    return set(re.findall(r"precision = \[([A-Z, ]+)\]", text))


def test_a_dot_traced_inside_carries_the_highest_precision_whatever_the_setting_outside():
    """Outside, a TF32 setting (what a GPU's default amounts to) gives HIGH; inside, even nested in it, HIGHEST."""
    a = jnp.ones((4, 4), jnp.float32)
    with jax.default_matmul_precision("tensorfloat32"):
        outside = jax.jit(lambda x: x @ x).lower(a).as_text()
        with exact_float32():
            inside = jax.jit(lambda x: x @ x).lower(a).as_text()
    assert _dot_precisions(inside) == {"HIGHEST, HIGHEST"}
    assert _dot_precisions(outside) == {"HIGH, HIGH"}


def test_the_curvature_records_are_computed_under_the_exact_precision(monkeypatch):
    import otod.nets.measure.trajectory as trajectory
    from otod.nets.measure.curvature import curvature_along_training

    seen = []

    def train(*args, **kwargs):
        seen.append(jax.config.jax_default_matmul_precision)
        raise StopIteration  # only the setting in force is wanted

    monkeypatch.setattr(trajectory, "train", train)
    with pytest.raises(StopIteration):
        curvature_along_training(None, [0], 0.1)
    assert seen == ["highest"]


def test_the_cpu_gives_the_same_float32_product_under_either_setting():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 64)).astype(np.float32)
    with exact_float32():
        exact = np.asarray(jax.jit(lambda x: x @ x)(a))
    default = np.asarray(jax.jit(lambda x: x @ x)(a))
    assert jax.default_backend() != "cpu" or np.array_equal(exact, default)
