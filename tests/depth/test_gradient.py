"""The square deep-linear family's metric and gradient are written out (`otod.depth.linear.metric_and_gradient`,
op for op the reverse mode of the metric, unrolled over the static depth, without the exact products by I): the
engine's records must be those of ``jax.value_and_grad`` of the metric, bit for bit, in float32 and float64."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from otod.core.engine import iterations_to_target
from otod.depth.kind import depth_target
from otod.depth.linear import DeepLinearSpec, init_code
from otod.depth.methods import METHODS, MethodOptions
from tests.depth.conftest import xla_dot_is_the_written_chain


@dataclasses.dataclass(frozen=True)
class AutodiffSpec(DeepLinearSpec):
    """The same problem with the engine's default gradient, ``jax.value_and_grad`` of the metric."""

    def family(self):
        return super().family()._replace(value_and_grad=None)


def solve(spec, method, beta, inits=("identity", "orthogonal", "xavier", "small"), rates=(0.5, 1.0, 2.0), seeds=3):
    combos = [(init_code(c), lr, s) for c in inits for lr in rates for s in range(seeds)]
    return iterations_to_target(spec, (METHODS[method],),
                                {"init": np.array([float(c) for c, _, _ in combos]),
                                 "beta": np.full(len(combos), beta)},
                                np.array([s for _, _, s in combos]), np.array([lr for _, lr, _ in combos]),
                                target=depth_target(1e-6), max_iters=3000, options=MethodOptions())


def assert_same_solution(new, old):
    """Every field of the two `Solution`s equal, bit for bit (NaN equal to NaN): iterations, hits, final metric,
    status, step size and the executed lane-iterations."""
    for field in old._fields:
        np.testing.assert_array_equal(getattr(new, field), getattr(old, field), err_msg=field, strict=True)


#: The deepest net, KFAC, adam, gd at depth 3 and the depth-5 residual net run with ``-m slow``: the fast suite keeps
#: gd at depth 1 and heavy ball at depth 4 on a general target with Σ ≠ I.
SLOW = pytest.mark.slow
CASES = [
    (dict(depth=1), "gd", 0.0),
    pytest.param(dict(depth=3), "gd", 0.0, marks=SLOW),
    pytest.param(dict(depth=8), "gd", 0.0, marks=SLOW),
    (dict(depth=4, input_kappa=10.0, target="general"), "heavy-ball", 0.9),
    pytest.param(dict(depth=5, problem="residual"), "gd", 0.0, marks=SLOW),
    pytest.param(dict(depth=3, width=4), "kfac", 0.0, marks=SLOW),
    pytest.param(dict(depth=4, balanced=True), "adam", 0.9, marks=SLOW),
]


@pytest.mark.parametrize("fields,method,beta", CASES)
def test_written_out_gradient_gives_the_records_of_autodiff_bit_for_bit(fields, method, beta):
    inits = ("orthogonal", "xavier", "small") if fields.get("problem") == "residual" else \
        ("identity", "orthogonal", "xavier", "small")
    new = solve(DeepLinearSpec(**fields), method, beta, inits)
    old = solve(AutodiffSpec(**fields), method, beta, inits)
    if xla_dot_is_the_written_chain():
        assert_same_solution(new, old)
    else:  # this CPU's dot sums in another order: float32 records move by rounding order only
        np.testing.assert_array_equal(new.status, old.status)
        converged = np.asarray(old.hits) > 0
        np.testing.assert_allclose(np.asarray(new.hits)[converged], np.asarray(old.hits)[converged], rtol=0.01)


def test_written_out_gradient_equals_autodiff_in_float64(x64):
    import jax

    spec = DeepLinearSpec(depth=6, input_kappa=5.0, target="general")
    family = spec.family()
    drawn = jax.tree.map(np.asarray, family.draws(np.random.default_rng([0, 1])))

    @jax.jit
    def set_up(drawn):  # the problem and the start as one program (run eagerly, each op compiled on its own: ~18)
        problem = family.make({"init": 2.0, "beta": 0.0}, drawn)
        return problem, family.init(problem) * 1.1

    problem, params = set_up(drawn)
    f, g = jax.jit(family.value_and_grad)(problem, params)
    f_ref, g_ref = jax.jit(jax.value_and_grad(family.metric, argnums=1))(problem, params)
    np.testing.assert_allclose(f, f_ref, rtol=1e-13)
    np.testing.assert_allclose(g, g_ref, rtol=1e-12, atol=1e-15)


DEVICE_COUNT = """
import json, os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
import jax
import numpy as np
from otod.core.compilation_cache import count_compilations
from otod.core.engine import collect, dispatch
from otod.depth.kind import depth_target
from otod.depth.linear import DeepLinearSpec, init_code
from otod.depth.methods import METHODS, MethodOptions
combos = [(b, lr, s) for b in (0.0, 0.5, 0.9, 0.99) for lr in (0.25, 0.5, 1.0, 2.0) for s in range(8)]
send = lambda devices, shape: dispatch(
    DeepLinearSpec(depth=5, width=8), (METHODS["adam"],),
    {"init": np.full(len(combos), float(init_code("xavier"))), "beta": np.array([b for b, *_ in combos])},
    np.array([s for *_, s in combos]), np.array([lr for _, lr, _ in combos]), group=(4, 8),
    target=depth_target(1e-6), max_iters=3000, options=MethodOptions(), block_lanes=32, devices=devices,
    one_device_shape=shape)
sent, compiles = {}, {}
for name, devices, shape in (("one", 1, False), ("two", 2, False), ("two, one-device shape", 2, True)):
    with count_compilations() as c:
        sent[name] = send(devices, shape)
    compiles[name] = len(c)
where = {k: [sorted(x.id for x in jax.tree.leaves(o)[0].devices()) for o in s.outputs] for k, s in sent.items()}
blocks = {k: [len(o[-1]) for o in s.outputs] for k, s in sent.items()}
got = {k: collect(s) for k, s in sent.items()}
def differ(a, b):
    return {f: int((~((getattr(a, f) == getattr(b, f)) | (np.isnan(getattr(a, f).astype(float))
                                                          & np.isnan(getattr(b, f).astype(float))))).sum())
            for f in a._fields[:-1]}
print(json.dumps({"lanes": len(got["one"].iterations), "differ": {k: differ(got["one"], v) for k, v in got.items()},
                  "where": where, "blocks": blocks, "compiles": compiles}))
"""


@pytest.mark.slow  # 14 s; the fast suite keeps the device-count contract on condition sweeps (tests/core)
def test_the_depth_records_do_not_depend_on_the_device_count():
    """The same 128 adam lanes (depth 5, width 8, xavier; 4 blocks) run on 1 device and dealt to 2, evenly and with the
    one-device shape, in a process with 2 CPU devices: every field bit for bit, the final metric included. While the
    2 devices ran one ``shard_map`` program, 8 of these 128 final metrics differed by a float32 ulp (measured with 2
    blocks of 64: XLA:CPU rounds a multi-device program otherwise); now each device runs a single-device program of
    its own (observed: one program on device 0 against one each on devices 0 and 1). Observed too: the even split
    compiles for both devices (2 blocks each), and the one-device shape (4 block slots each, 2 of them padding)
    reuses device 0's program and compiles for device 1 alone."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "OTOD_COMPILATION_CACHE": "off"}
    proc = subprocess.run([sys.executable, "-c", DEVICE_COUNT], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert found["where"] == {"one": [[0]], "two": [[0], [1]], "two, one-device shape": [[0], [1]]}, found
    assert found["blocks"] == {"one": [4], "two": [2, 2], "two, one-device shape": [4, 4]}, found
    assert found["compiles"] == {"one": 1, "two": 2, "two, one-device shape": 1}, found
    assert found["lanes"] == 128
    same = {"iterations": 0, "hits": 0, "final_metric": 0, "status": 0, "learning_rate": 0}
    assert found["differ"] == {"one": same, "two": same, "two, one-device shape": same}, found
