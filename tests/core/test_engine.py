"""The engine's layout of lanes: the seed-major layout gives the same numbers as one row of lanes each holding its
own seed's draws (that per-seed matrices stay one per seed is tested in test_lanes.py)."""

import jax
import numpy as np
import pytest

from otod.condition.methods import METHODS, MethodOptions
from otod.core.engine import iterations_to_target
from otod.core.stopping import Target

from tests.conftest import KRONECKER_PERTURBED, SMALL_ROTATED


@pytest.mark.parametrize("spec,method,rates", [(SMALL_ROTATED, "nesterov", 1), (SMALL_ROTATED, "adam", 3),
                                               pytest.param(KRONECKER_PERTURBED, "kfac", 1, marks=pytest.mark.slow),
                                               pytest.param(KRONECKER_PERTURBED, "gd", 3, marks=pytest.mark.slow)])
def test_seed_major_layout_gives_the_numbers_of_one_row_of_lanes(spec, method, rates, x64):
    """Whole points (rates × 4 seeds) run seed-major (shared per-seed arrays) and, with each point's seeds in
    another order so no such layout exists, as one row of lanes each holding its own seed's draws: identical
    counts and statuses, pruning of learning rates included. In float64: batched products by seed and per-lane
    ones round differently, and in float32 that can move a count by one and so the moment a rate is pruned."""
    seeds, kappas = 4, np.array([2.0, 30.0, 300.0])
    grid = [(k, r, s) for k in kappas for r in range(rates) for s in range(seeds)]
    v = np.array([g[0] for g in grid])
    r = np.array([(0.5, 1.0, 2.0)[g[1]] if rates > 1 else 1.0 for g in grid])
    s = np.array([g[2] for g in grid])
    kw = dict(target=Target(1e-6), max_iters=3000, block_lanes=2 * rates * seeds, group=(rates, seeds),
              options=MethodOptions())
    seed_major = iterations_to_target(spec, (METHODS[method],), {"kappa": v}, s, r, **kw)
    flip = (np.arange(len(s)) // seeds) * seeds + (seeds - 1 - s)  # each (point, rate)'s seeds reversed
    one_row = iterations_to_target(spec, (METHODS[method],), {"kappa": v[flip]}, s[flip], r[flip], **kw)
    back = np.argsort(flip)
    assert np.array_equal(seed_major.iterations, one_row.iterations[back])
    assert np.array_equal(seed_major.status, one_row.status[back])


#: The sweep both processes run: `probe` runs it in another process into argv[1]'s file.
VALUES = (1.0, 3.0, 10.0, 30.0, 100.0, 300.0)
SWEEP = ("import otod.condition, sys\nfrom otod.condition.options import condition_sweep\n"
         "from otod.core.sweep import run_sweep\nfrom tests.conftest import SMALL_RANDOM\n"
         f"run_sweep(condition_sweep({VALUES!r}, methods=('gd', 'nesterov'), problem=SMALL_RANDOM, seeds=4), "
         "path=sys.argv[1])\n")


def _on_host_devices(code, devices, *args):
    """``code`` run by a fresh Python with ``devices`` CPU devices (the compilation cache off, so it compiles its
    own programs), this checkout first on its path; the completed process."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}",
           "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "OTOD_COMPILATION_CACHE": "off"}
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True,
                          timeout=300, env=env)


@pytest.fixture(scope="module")
def two_devices(tmp_path_factory):
    """One process with 2 CPU devices runs both multi-device checks of this file, one after the other (a second
    process cost another 2 s of interpreter and JAX start): `NO_COLLECTIVES`, then `SWEEP` into a file.
    Returns (the process, the file)."""
    path = tmp_path_factory.mktemp("two") / "many.json"
    return _on_host_devices(NO_COLLECTIVES + SWEEP, 2, path), path


@pytest.mark.parametrize("devices", [2, pytest.param(4, marks=pytest.mark.slow)])
def test_blocks_shared_among_host_devices_give_the_records_of_one(tmp_path, devices, request):
    """The same sweep in a process with 2 or 4 CPU devices (its blocks dealt among them, one program per device) and in this
    one (one device): identical records, and the results file says how many devices there were. The 2-device
    process is the one `two_devices` starts."""
    import json

    from otod.condition.options import condition_sweep
    from otod.core.sweep import run_sweep
    from tests.conftest import SMALL_RANDOM

    here = run_sweep(condition_sweep(VALUES, methods=("gd", "nesterov"), problem=SMALL_RANDOM, seeds=4),
                     path=tmp_path / "one.json")
    assert here.meta["environment"]["device_count"] == 1
    if devices == 2:
        out, path = request.getfixturevalue("two_devices")
    else:
        path = tmp_path / "many.json"
        out = _on_host_devices(SWEEP, devices, path)
    assert out.returncode == 0, out.stderr[-2000:]
    there = json.loads(path.read_text())
    assert there["meta"]["environment"]["device_count"] == devices
    assert there["records"] == here.records


def test_deal_balances_blocks_by_predicted_cost_with_equal_counts_per_device():
    """`deal` is a permutation giving every device the same number of blocks; its busiest device carries no more
    than round-robin's on cost-sorted blocks with padding (cost 0) last, and is optimal on small cases (brute
    force over every equal-count split)."""
    import itertools

    from otod.core.engine import deal

    for costs, devices in (([1, 2, 4, 0], 2), ([1, 2, 3, 5, 8, 13, 0, 0], 2), ([1, 1, 2, 3, 5, 8, 13, 21], 4),
                           ([3, 3, 3, 3, 3, 3], 3)):
        order = deal(costs, devices)
        assert sorted(order.tolist()) == list(range(len(costs)))
        rows = np.asarray(costs)[order].reshape(devices, -1)
        round_robin = np.asarray(costs).reshape(-1, devices).sum(0).max()
        assert rows.sum(1).max() <= round_robin
        per = len(costs) // devices
        best = min(max(sum(costs[i] for i in perm[d * per:(d + 1) * per]) for d in range(devices))
                   for perm in itertools.permutations(range(len(costs))))
        assert rows.sum(1).max() == best


class _Clock:
    """The engine's clock (`otod.core.engine.time`), stood in for so that a test reads the watchdog's decisions
    off the polls it makes instead of off the wall: each ``sleep`` advances its ``reading`` (the stood-in
    monotonic clock) by its nap and the process's CPU time by ``cpu_share`` of it (0: a wedged program, 1: one
    core busy), and is recorded; ``on_sleep`` runs
    inside each nap (a Ctrl-C pressed while the engine waits). A wait still polling after 100 s of this clock
    fails the test instead of spinning on."""

    def __init__(self, cpu_share: float, on_sleep=None):
        self.reading = self.cpu = 0.0
        self.cpu_share, self.on_sleep, self.naps = cpu_share, on_sleep, []

    def monotonic(self):
        return self.reading

    def process_time(self):
        return self.cpu

    def sleep(self, seconds):
        self.naps.append(seconds)
        self.reading += seconds
        self.cpu += self.cpu_share * seconds
        assert self.reading < 100.0, "the engine still waits after 100 s of its clock"
        if self.on_sleep is not None:
            self.on_sleep(len(self.naps))


class _Output:
    """A dispatched result on a CPU device, ready once ``clock``'s reading reaches ``ready_at`` (never, by default:
    to the watchdog exactly the wedged program it exists to catch; a real one was caught in the fix's commit: the
    batched-eigh deadlock, 6 of 6 runs stopped after 5 s); ``checks`` counts the engine's polls. A host callback
    cannot stand in for a wedged program: XLA:CPU runs a program with one synchronously, at dispatch."""

    def __init__(self, clock: _Clock, ready_at: float = float("inf")):
        self.clock, self.ready_at, self.checks = clock, ready_at, 0

    def is_ready(self):
        self.checks += 1
        return self.clock.reading >= self.ready_at

    def devices(self):
        return {jax.devices("cpu")[0]}


@pytest.mark.parametrize("cpu_share", [0.0, 0.005])  # none, and half the idle fraction (1 % of a core)
def test_the_watchdog_stops_a_program_that_makes_no_progress(monkeypatch, cpu_share):
    """Less than 1 % of a core for ``stall_seconds``: `Abandoned` naming the program, at the first poll past the
    stated time (the engine's own clock says when), not before and not a poll later."""
    import otod.core.engine as engine
    from otod.core.errors import Abandoned

    clock = _Clock(cpu_share)
    monkeypatch.setattr(engine, "time", clock)
    output = _Output(clock)
    with pytest.raises(Abandoned, match=r"the test program on 1 device made no progress for 1 s") as caught:
        engine.wait_for_devices([output], "test program on 1 device", stall_seconds=1.0)
    assert not caught.value.interrupted
    assert clock.reading >= 1.0 and clock.reading - clock.naps[-1] < 1.0
    assert output.checks == len(clock.naps)  # every nap followed a poll that found the program still running


@pytest.mark.parametrize("cpu_share", [1.0, 0.02])  # one core busy, and twice the idle fraction
def test_the_watchdog_leaves_a_busy_program_alone(monkeypatch, cpu_share):
    """A program that uses CPU time for 20 times ``stall_seconds`` runs to its end: the wait returns once it is
    ready, at the first poll after, and the watchdog never fired on the way."""
    import otod.core.engine as engine

    clock = _Clock(cpu_share)
    monkeypatch.setattr(engine, "time", clock)
    output = _Output(clock, ready_at=20 * 0.05)
    engine.wait_for_devices([output], "busy program", stall_seconds=0.05)
    assert clock.reading >= 20 * 0.05 and clock.reading - clock.naps[-1] < 20 * 0.05  # it outlasted the watchdog's time
    assert output.checks == len(clock.naps) + 1  # the last poll found it ready


def test_ctrl_c_while_the_engine_waits_ends_the_wait(monkeypatch):
    """A KeyboardInterrupt (the sweep's second Ctrl-C: a real SIGINT, raised here during the engine's third nap)
    becomes `Abandoned` (interrupted) at once, although the program runs on: no poll after it. The CLI then ends
    the process without waiting for the program."""
    import signal

    import otod.core.engine as engine
    from otod.core.errors import Abandoned

    def press_ctrl_c(nap):
        if nap == 3:
            signal.raise_signal(signal.SIGINT)

    clock = _Clock(1.0, on_sleep=press_ctrl_c)
    monkeypatch.setattr(engine, "time", clock)
    output = _Output(clock)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's own: KeyboardInterrupt
    try:
        with pytest.raises(Abandoned, match="interrupted while the test program was running") as caught:
            engine.wait_for_devices([output], "test program", stall_seconds=None)
    except KeyboardInterrupt:
        pytest.fail("the Ctrl-C left the wait as a KeyboardInterrupt, not as Abandoned")
    finally:
        signal.signal(signal.SIGINT, previous)
    assert caught.value.interrupted
    assert len(clock.naps) == 3 and output.checks == 3  # the wait ended in the nap the Ctrl-C came in


NO_COLLECTIVES = """
import os, re
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
import numpy as np
import otod.core.engine as engine
from otod.condition.methods import METHODS
from otod.condition.quadratic import QuadraticSpec
from otod.core.stopping import Target
calls = []
original = engine._grid
engine._grid = lambda *args: calls.append(args) or original(*args)
v = np.repeat(np.geomspace(1, 100, 8), 4)
s = np.tile(np.arange(4), 8)
run = lambda n: engine.iterations_to_target(QuadraticSpec(dim=16), (METHODS["gd"],), {"kappa": v}, s, np.ones_like(v),
                                            target=Target(1e-6), block_lanes=4, devices=n)
two, one = run(2), run(1)
assert all((a == b).all() for a, b in zip(two[:5], one[:5])), "records depend on the device count"
text = original.lower(*calls[0]).compile().as_text()
print(sum(len(re.findall(rf"\\b{op}(-start)?\\(", text))
          for op in ("all-gather", "all-reduce", "all-to-all", "collective-permute", "reduce-scatter")))
"""


def test_the_multi_device_program_has_no_collective_across_devices(two_devices):
    """Each device runs its own blocks and nothing joins them inside the program: a cross-device collective is a
    rendezvous where the device that finished first waits for the slowest, and XLA:CPU ends the process when that
    wait passes 40 s (it did, on a loaded machine, at the output reorder). The same lanes give the same numbers
    on 1 and 2 devices. (The 2-device process `two_devices` runs this first.)"""
    proc, _ = two_devices
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "0"


@pytest.mark.parametrize("value", ["abc", "-5", "0", "nan"])
def test_a_bad_watchdog_time_is_one_line_and_exit_2_before_anything_is_written(tmp_path, value):
    """Refused by ``otod sweep`` before JAX is imported (`otod.core.devices.watchdog_seconds`): each process takes
    0.3 s of CPU, not the 3.5 s of importing JAX and the obstacle first (so "-5" and "nan" run in the fast suite
    again)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "OTOD_WATCHDOG_SECONDS": value, "OTOD_COMPILATION_CACHE": "off"}
    proc = subprocess.run([sys.executable, "-m", "otod", "sweep", "condition", "--k", "1..10:3", "--seeds", "2",
                           "--no-plot", "--out", str(tmp_path / "out")], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"otod: error: OTOD_WATCHDOG_SECONDS={value}: give a number of seconds ≥ 1 (the shortest idle time the "
        "watchdog can judge) or off, e.g. OTOD_WATCHDOG_SECONDS=120"]
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_the_watchdog_time_reads_off_and_seconds(monkeypatch):
    from otod.core.devices import WATCHDOG_SECONDS, watchdog_seconds

    monkeypatch.delenv("OTOD_WATCHDOG_SECONDS", raising=False)
    assert watchdog_seconds() == WATCHDOG_SECONDS
    monkeypatch.setenv("OTOD_WATCHDOG_SECONDS", "off")
    assert watchdog_seconds() is None
    monkeypatch.setenv("OTOD_WATCHDOG_SECONDS", "120")
    assert watchdog_seconds() == 120.0
    monkeypatch.setenv("OTOD_WATCHDOG_SECONDS", "1")  # the shortest it can judge
    assert watchdog_seconds() == 1.0
    from otod.core.errors import OtodError

    for short in ("1e-9", "0.5"):  # 1e-9 was accepted and could never fire
        monkeypatch.setenv("OTOD_WATCHDOG_SECONDS", short)
        with pytest.raises(OtodError, match=f"OTOD_WATCHDOG_SECONDS={short}: give a number of seconds ≥ 1 "
                                            r"\(the shortest idle time the watchdog can judge\)"):
            watchdog_seconds()


#: Sweeps whose blocks end with a few lanes running long after the rest (censored at the cap, or tuned rates that
#: cannot be pruned), in every engine path: depth (fixed-point stall rule, seed-major, pruning), condition rotated
#: (per-seed rotation shared by the lanes, the prepared set-up), toy, noise regression (stochastic, the split
#: step/measure path, the held epoch order) and nets (the split path with a check schedule).
COMPACTED = {
    "depth": ["sweep", "depth", "--depth", "3,4", "--init", "orthogonal,small", "--seeds", "8", "--max-iters", "5000"],
    # KFAC's solves (`otod.core.linalg.spd_solve`) at depth 2: one lane of 104 runs to the cap, the rest stop by ~60
    "kfac": ["sweep", "depth", "--depth", "2", "--init", "xavier", "--method", "kfac", "--seeds", "8", "--max-iters",
             "3000"],
    "condition": ["sweep", "condition", "--k", "10,300", "--dim", "8", "--basis", "rotated", "--seeds", "4",
                  "--method", "heavy-ball", "--lr", "tuned", "--max-iters", "400"],
    "toy": ["sweep", "toy", "--layers", "3,4", "--seeds", "4", "--max-iters", "3000"],
    "noise": ["sweep", "noise", "--problem", "regression", "--batch", "1,16", "--seeds", "4", "--method", "sgd",
              "--max-iters", "3000"],
    "net": ["sweep", "net", "--batch", "32", "--width", "8", "--seeds", "8", "--max-iters", "3000", "--lr-grid",
            "0.03..3:5:log"],
}


def _sweep_records(tmp_path, monkeypatch, args, compact: bool, unroll: int | None = None) -> dict:
    import json

    from click.testing import CliRunner

    import otod.core.engine as engine
    import otod.core.plan as planning
    from otod.cli import main

    monkeypatch.setattr(planning, "COMPACT_LANE_ITERATIONS", 0.0 if compact else float("inf"))
    if unroll is not None:
        monkeypatch.setattr(engine, "UNROLL", unroll)
    out = tmp_path / f"{'compact' if compact else 'wide'}{'' if unroll is None else unroll}.json"
    result = CliRunner().invoke(main, [*args, "--no-plot", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text())


def _check_compaction(tmp_path, monkeypatch, args):
    """Every record equal with and without compaction, and fewer lane-iterations executed (the same needed)."""
    wide = _sweep_records(tmp_path, monkeypatch, args, compact=False)
    narrow = _sweep_records(tmp_path, monkeypatch, args, compact=True)
    assert narrow["records"] == wide["records"]  # every field of every lane, in order
    before, after = wide["meta"]["lane_iterations"], narrow["meta"]["lane_iterations"]
    assert after["needed"] == before["needed"]
    assert after["needed"] <= after["executed"] < before["executed"], (before, after)
    return before, after


@pytest.mark.parametrize("by_seed", [pytest.param(False, marks=pytest.mark.slow), True])  # one row: 3.6 s
def test_a_compacted_block_gives_the_records_of_the_whole_block_and_runs_fewer_lane_iterations(by_seed):
    """A block of 32 lanes on a rotated quadratic (the rotation shared by a seed's lanes), 8 κ × 4 seeds, one κ
    (3000) running to the cap while the others (2..9) stop within 60 iterations: as one row of lanes (compacted to
    ⌈32/8⌉ = 4) and seed-major (4 rows of 8, compacted to 2 per seed, the least). Identical counts, hits, final gaps and
    statuses; executed lane-iterations below half the whole block's (≈ 32·T against 4·T or 8·T)."""
    seeds, kappas = 4, np.array([2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 9.0, 3000.0])
    v, s = np.repeat(kappas, seeds), np.tile(np.arange(seeds), len(kappas))
    kw = dict(target=Target(1e-6), max_iters=2000, block_lanes=32, group=(1, seeds) if by_seed else None)
    wide, narrow = (iterations_to_target(SMALL_ROTATED, (METHODS["gd"],), {"kappa": v}, s, np.ones_like(v),
                                         compact=compact, **kw) for compact in (False, True))
    for field in ("iterations", "hits", "final_metric", "status"):
        assert np.array_equal(getattr(wide, field), getattr(narrow, field), equal_nan=True), field
    assert np.all(wide.iterations[v == 3000.0] == 2000) and np.all(wide.iterations[v < 10] < 100)
    assert wide.lane_iterations == 32 * 2000
    assert wide.iterations.sum() <= narrow.lane_iterations < 0.5 * wide.lane_iterations


@pytest.mark.slow
def test_compacted_depth_blocks_give_the_records_of_whole_blocks_and_run_fewer_lane_iterations(tmp_path,
                                                                                               monkeypatch):
    """Depth 3 and 4, orthogonal and small inits, 8 seeds × 13 rates a block: at depth 4 orthogonal three lanes
    of 104 run to 2109–4847 iterations while the rest stop by 85 (the README example's records), so whole blocks
    execute 2.29 lane-iterations per one needed; gathered into rows of ⌈13/8⌉ = 2 lanes per seed, the last
    lanes go on alone: 1.25 measured, and less than 0.6 of the whole blocks' work is asserted."""
    before, after = _check_compaction(tmp_path, monkeypatch, COMPACTED["depth"])
    assert after["executed"] < 0.6 * before["executed"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["condition", "toy", "noise", "kfac"])
def test_compaction_gives_the_records_of_whole_blocks_in_every_engine_path(tmp_path, monkeypatch, kind):
    _check_compaction(tmp_path, monkeypatch, COMPACTED[kind])


@pytest.mark.slow
def test_a_family_that_is_not_compactable_runs_whole_blocks(tmp_path, monkeypatch):
    """The nets' full training loss rounds differently batched over fewer lanes (one final loss of 280 changed in
    its last bits when 56 lanes a block went on as 16), so the net family is not `compactable`: the sweep asked
    to compact runs whole blocks, and its records and executed lane-iterations are those of whole blocks."""
    wide = _sweep_records(tmp_path, monkeypatch, COMPACTED["net"], compact=False)
    asked = _sweep_records(tmp_path, monkeypatch, COMPACTED["net"], compact=True)
    assert asked["records"] == wide["records"]
    assert asked["meta"]["lane_iterations"] == wide["meta"]["lane_iterations"]
    assert wide["meta"]["lane_iterations"]["ratio"] > 2  # whole blocks do wait here: compaction would have run


#: A record's outcome fields; the rest name its lane (point, rate, seed, method).
OUTCOMES = {"iterations", "status", "final_loss", "final_gap", "final_metric", "hits", "loss_trace", "trace"}


def _medians_by_point(records) -> dict:
    """Median iterations over seeds per (every field but the seed and the outcomes)."""
    groups: dict = {}
    for r in records:
        key = repr(sorted((k, v) for k, v in r.items() if k not in OUTCOMES | {"seed"}))
        groups.setdefault(key, []).append(r["iterations"])
    return {k: (float(np.median(v)), float(np.subtract(*np.percentile(v, [75, 25])))) for k, v in groups.items()}


def _same_counts(one: list, more: list) -> None:
    """Every field of every record equal but the last metric read, which may round otherwise by an ulp (within a
    relative 1e-13)."""
    assert len(one) == len(more)
    for a, b in zip(one, more):
        finals = {k for k in a if k.startswith("final_")}
        assert {k: v for k, v in a.items() if k not in finals} == {k: v for k, v in b.items() if k not in finals}
        for k in finals:
            assert a[k] == pytest.approx(b[k], rel=1e-13, nan_ok=True), (k, a, b)


@pytest.mark.slow  # 6 s for condition alone at K = 2
@pytest.mark.parametrize("unroll", [2, 16])
@pytest.mark.parametrize("kind", ["condition", "depth", "toy", "noise", "net"])
def test_iterations_per_trip_of_the_loop_move_records_by_rounding_order_only(tmp_path, monkeypatch, kind, unroll):
    """`otod.core.engine.UNROLL` (iterations per trip of the while loop, each with its own check; the cost model
    gives 1 on a CPU, up to 16 on a GPU) is a speed setting, on the sweeps that exercise every engine path
    (`COMPACTED`: pruning, the seed-major and prepared set-ups, the fixed-point stall rule, the stochastic split
    step/measure path, compaction's second loop). In float64 every count, hit, status and rate is equal with 1
    and K iterations a trip, each lane's first hit at its exact iteration, and the last metric read equal to an
    ulp: issue 38's rule asks for identical records, and XLA:CPU rounds 1–2 final values of a sweep in their last
    bit at K = 4 and 16 (`otod.core.engine._trips`), which is why the CPU keeps K = 1. In float32 every point's
    median count moves by no more than its seed-to-seed IQR. K a trip can only run past a block's last stop by
    K − 1 iterations, so it never executes fewer lane-iterations."""
    args = [*COMPACTED[kind], "--x64"]
    (tmp_path / "64").mkdir()
    one = _sweep_records(tmp_path / "64", monkeypatch, args, compact=True, unroll=1)
    more = _sweep_records(tmp_path / "64", monkeypatch, args, compact=True, unroll=unroll)
    _same_counts(one["records"], more["records"])
    assert one["meta"]["lane_iterations"]["needed"] == more["meta"]["lane_iterations"]["needed"]
    assert one["meta"]["lane_iterations"]["executed"] <= more["meta"]["lane_iterations"]["executed"]
    before = _medians_by_point(_sweep_records(tmp_path, monkeypatch, COMPACTED[kind], compact=True,
                                              unroll=1)["records"])
    after = _medians_by_point(_sweep_records(tmp_path, monkeypatch, COMPACTED[kind], compact=True,
                                             unroll=unroll)["records"])
    assert before.keys() == after.keys()
    for point, (median, iqr) in before.items():
        assert abs(after[point][0] - median) <= iqr, (point, median, iqr, after[point])
