"""The net sweep: the engine's lanes against the one reference loop, the minibatch sampler, the metric's check
schedule, the records' fields and the sweep's bad input."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

import otod.nets  # noqa: F401  (registers the net sweep)
from tests.nets.lanes import compare_with_reference
from otod.cli import main
from otod.core.sweep import run_sweep
from otod.nets.model.family import checks, minibatch
from otod.nets.sweep.options import net_config

jax = pytest.importorskip("jax")


def small_config(**kw):
    options = dict(batch="16,64", width="8", examples="256", seeds=2, lr="tuned", lr_grid="0.3,1", target="0.5",
                   max_iters="400", x64=True)
    options.update(kw)
    return net_config(**options)


@pytest.mark.slow  # 27 s (489.7 s suite on 2 quiet cores, over 480); the fast suite keeps the model path's lanes
# against the reference loop (tests/nets/model/test_model_problem.py) and the nets' bad-input and figure checks
def test_engine_lanes_equal_the_reference_loop(tmp_path):
    """Every lane's count and status equal the one reference loop's (float64; plain optax.sgd stepping the
    family's sampled gradient with the same keys, the metric read on the same schedule)."""
    config = small_config()
    results = run_sweep(config, out_dir=tmp_path)
    assert len(results.records) == 2 * 2 * 2
    assert compare_with_reference(config, results.records) >= 4


def test_the_stream_draws_fresh_examples_every_step_reproducibly():
    """The stream's minibatches (`otod.nets.model.data.stream_batch`): no input row of steps 0–3 equals another (4 × 256
    fresh draws), the same (key, t) gives the same batch bit for bit, another seed's key another batch, and
    y − teacher(x) is the label noise: mean 0 and standard deviation 0.1 within 3 standard errors (σ/√(2n) for
    the SD over n = 1024)."""
    from otod.nets.model import data

    weights = data.teacher_weights("teacher", 16, 1, 32, 0)
    draw = jax.jit(lambda key, t: data.stream_batch("teacher", weights, key, t, 256, 16, 1, 0.1, np.float32))
    key = jax.random.PRNGKey(5)
    draws = [draw(key, t) for t in range(4)]
    x = np.concatenate([np.asarray(b[0]) for b in draws])
    assert x.shape == (1024, 16) and len(np.unique(x, axis=0)) == 1024
    again = draw(key, 2)
    assert np.array_equal(np.asarray(again[0]), np.asarray(draws[2][0]))
    assert np.array_equal(np.asarray(again[1]), np.asarray(draws[2][1]))
    other = draw(jax.random.PRNGKey(6), 2)
    assert not np.array_equal(np.asarray(other[0]), np.asarray(draws[2][0]))
    noise = np.concatenate([np.asarray(y, np.float64) - data.teacher_outputs("teacher", weights,
                                                                              np.asarray(xb, np.float64))
                            for xb, y in draws]).ravel() / 0.1
    assert abs(noise.mean()) < 3 / np.sqrt(1024) and abs(noise.std() - 1) < 3 / np.sqrt(2 * 1024)


@pytest.mark.slow
def test_stream_lanes_equal_the_reference_loop_and_repeat(tmp_path):
    """A stream sweep (teacher, fresh examples every step, the held-out loss as the metric): every lane equals the
    reference loop stepping the family's stream gradient (float64), the records carry no training-set size, and
    the same command and seed give the same records twice."""
    config = small_config(data="teacher", examples=None, stream=True, target="0.1,0.05", max_iters="300")
    assert config.problem.stream and config.target.ladder == (0.1, 0.05)
    first = run_sweep(config, out_dir=tmp_path / "a")
    second = run_sweep(config, out_dir=tmp_path / "b")
    strip = lambda rs: [{k: v for k, v in r.items() if "time" not in k and "seconds" not in k} for r in rs]  # noqa
    assert strip(first.records) == strip(second.records)
    assert all("examples" not in r for r in first.records)
    assert compare_with_reference(config, first.records) >= 4


def test_minibatches_are_drawn_without_replacement_within_an_epoch():
    """An epoch of ⌊n/B⌋ steps takes ⌊n/B⌋·B distinct examples; the next epoch draws a new order."""
    key, n, batch = jax.random.PRNGKey(3), 100, 16
    epoch = np.concatenate([np.asarray(minibatch(key, t, batch, n)) for t in range(6)])
    assert epoch.size == 96 and len(set(epoch.tolist())) == 96
    again = np.concatenate([np.asarray(minibatch(key, t, batch, n)) for t in range(6, 12)])
    assert len(set(again.tolist())) == 96 and not np.array_equal(epoch, again)


def test_the_metric_is_read_every_step_to_32_then_at_a_relative_spacing_of_one_in_32():
    read = np.array([bool(checks(t)) for t in range(1, 5000)])
    assert read[:32].all()
    steps = np.flatnonzero(read) + 1
    gaps = np.diff(steps)
    assert (gaps <= np.maximum(1, steps[:-1] / 32)).all()  # a count is known to within 1/32 of itself
    assert read.sum() < 5000 / 10  # and the loss is read on far fewer than every step


@pytest.mark.slow
def test_records_carry_the_nets_parameter_count_and_shape(tmp_path):
    config = net_config(batch="32", width="4,8", examples="128", seeds=1, lr="0.3", target="1.0", max_iters="50")
    results = run_sweep(config, out_dir=tmp_path)
    by_width = {r["width"]: r["parameters"] for r in results.records}
    # 64·n + n + n·10 + 10 weights and biases for one hidden layer of width n on the 8×8 digits
    assert by_width == {4.0: 64 * 4 + 4 + 4 * 10 + 10, 8.0: 64 * 8 + 8 + 8 * 10 + 10}
    assert all(r["dim"] == r["parameters"] and r["batch"] == 32 for r in results.records)


@pytest.mark.parametrize("args, says", [
    (["--batch", "4096"], "larger than the data set"),
    (["--width", "0"], "--width"),
    (["--depth", "0"], "--depth"),
    (["--target", "0"], "--target"),
    (["--target", "50"], "initial training loss"),
    (["--method", "newton"], "unknown method"),
    (["--model", "cnn", "--data", "teacher"], "image data"),
    (["--data", "teacher", "--loss", "cross-entropy"], "--loss squared"),
    (["--examples", "5000"], "--examples"),
    (["--init", "zeros"], "--init"),
    (["--model", "transformer"], "--model"),
    (["--data", "mnist"], "--data"),
])
def test_bad_input_is_one_line_and_exit_2(args, says, tmp_path):
    result = CliRunner().invoke(main, ["sweep", "net", *args, "--out", str(tmp_path)])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and says in lines[0], result.output
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("args", [
    ["--data", "teacher", "--stream", "--target", "0.05,0.03,0.02", "--batch", "4..256:7:log"],
    ["--batch", "32"],
])
def test_no_predict_beside_a_sweep_that_cannot_predict_runs_that_sweep_unpredicted(args, monkeypatch, tmp_path):
    """``--no-predict`` asks for what a stream sweep (or one without a batch axis) does anyway, so it is accepted,
    not refused as "drop --predict" (docs/claims.toml's teacher stream command names it): the sweep is handed on
    with predict off and the stream's config; ``--predict`` there stays refused (tests/test_bad_input_nets.py)."""
    import otod.nets.commands as commands

    seen = []
    monkeypatch.setattr(commands, "_echo_sweep", lambda config, given, lr_extend, predict, **kw: seen.append(
        (config, predict)))
    result = CliRunner().invoke(main, ["sweep", "net", *args, "--no-predict", "--no-plot", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    (config, predict), = seen
    assert predict is False and bool(config.problem.stream) == ("--stream" in args)


@pytest.mark.slow
def test_the_report_shows_the_measured_b_crit_beside_the_recorded_prediction(tmp_path):
    """`otod sweep net` records the NQM's prediction for its net (the same numbers `net_prediction` gives from seed
    0's start) and prints B_crit and the predicted one side by side."""
    from otod.core.results import load
    from otod.nets.model.family import seed_starts, start_of
    from otod.nets.sweep.predict import net_prediction

    args = ["sweep", "net", "--batch", "16,64", "--width", "8", "--examples", "256", "--seeds", "2",
            "--lr", "0.5", "--target", "0.5", "--max-iters", "400", "--no-plot", "--out", str(tmp_path)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "B_crit" in result.output and "predicted" in result.output
    path = next(tmp_path.glob("net-*.parquet"))
    recorded = load(path).meta["nqm_prediction"]
    config = net_config(batch="16,64", width="8", examples="256", seeds=2, lr="0.5", target="0.5", max_iters="400")
    spec = config.spec_at({"width": 8})
    again = net_prediction(spec, start_of(spec, seed_starts(spec, np.random.default_rng([0, 0]))), 0.5)
    assert len(recorded) == 1
    assert recorded[0]["b_crit"] == pytest.approx(again["b_crit"], rel=1e-9)
    assert f"B_crit {recorded[0]['b_crit']:.4g}" in result.output


NET_ON_DEVICES = """
import json, os, sys, tempfile
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=" + sys.argv[1]
os.environ["OTOD_COMPILATION_CACHE"] = "off"
import otod.nets
from otod.core.sweep import run_sweep
from otod.nets.sweep.options import net_config
config = net_config(batch="32", width="8", examples="256", init="kaiming,small", architecture="plain,residual",
                    seeds=2, target="1.0", max_iters="100")
runs = []
with tempfile.TemporaryDirectory() as d:
    for i in range(int(sys.argv[2])):
        runs.append(run_sweep(config, path=os.path.join(d, f"r{i}.json")).records)
assert all(r == runs[0] for r in runs)
print(json.dumps(runs[0]))
"""


@pytest.mark.slow
def test_a_net_sweep_of_two_blocks_on_two_devices_runs_repeatedly_and_equals_one_device():
    """Four coded points × 17 lrs × 2 seeds make two blocks, dealt to two CPU devices (the block's iteration count
    drives a lax.cond inside each device's loop): three runs in one process finish within the timeout and give the
    records one device gives."""
    import json
    import subprocess
    import sys

    def run(devices: str, times: str):
        proc = subprocess.run([sys.executable, "-c", NET_ON_DEVICES, devices, times], capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])

    two, one = run("2", "3"), run("1", "1")
    assert len(two) == 4 * 17 * 2 and two == one


def test_the_seeds_help_states_the_net_sweeps_own_default():
    """``sweep net --help`` says the 5 seeds the net sweep runs without --seeds (it said 8, the other sweeps')."""
    from otod.nets.commands import NET_SEEDS, sweep_net
    from otod.nets.sweep.options import DEFAULTS

    [seeds] = [o for o in sweep_net.params if o.name == "seeds"]
    assert NET_SEEDS == DEFAULTS["seeds"] and f"Default {DEFAULTS['seeds']}." in seeds.help


def test_a_stored_net_config_reads_back_without_its_start_loss_and_keeps_the_other_checks(monkeypatch):
    """A net config read back from a results file (`SweepConfig.from_dict`) gets the kind's ``validate_stored``:
    NetSpec.initial_loss is called 0 times (the run that wrote the file compared its target with it), while a
    config made from it (`dataclasses.replace`) is checked in full, 1 call for its one net (the batch does not
    change the start). A stored config the sweep cannot use is still refused in one line: a relative target, a
    net deeper than MAX_DEPTH, a batch larger than the data set."""
    import dataclasses
    import json

    from otod.core.config import SweepConfig
    from otod.core.errors import OtodError
    from otod.nets.model.problem import NetSpec
    from otod.nets.model.size import MAX_DEPTH

    config = net_config(batch="8,32", width="8", examples="256", seeds=1, target="0.1", max_iters="50")
    stored = json.loads(json.dumps(config.to_dict()))
    measured, calls = NetSpec.initial_loss, []
    monkeypatch.setattr(NetSpec, "initial_loss", lambda self, *a, **k: calls.append(self) or measured(self, *a, **k))
    back = SweepConfig.from_dict(stored)
    assert back == config and back.digest() == config.digest() and calls == []
    assert dataclasses.replace(back, seeds=2).seeds == 2 and len(calls) == 1
    for edit, says in [(lambda d: d["target"].update(kind="relative", tol=0.1, ladder=[0.1]), "absolute training"),
                       (lambda d: d["problem"].update(depth=MAX_DEPTH + 1), f"at most {MAX_DEPTH} layers"),
                       (lambda d: d["axes"].update(batch=[8, 4096]), "larger than the data set")]:
        bad = json.loads(json.dumps(stored))
        edit(bad)
        with pytest.raises(OtodError, match=says) as caught:
            SweepConfig.from_dict(bad)
        assert "\n" not in str(caught.value)
