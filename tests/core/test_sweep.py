"""Sweeps never lose work: chunks, interrupts and resumes, damaged files, concurrent runs, read-back, estimates.
Each test observes the thing itself: identical records, the refusal and its message, the absence of compiles."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from otod.condition.kronecker import KroneckerSpec
from otod.condition.options import condition_sweep
from otod.condition.quadratic import QuadraticSpec
from otod.core import journal as journal_io
from otod.core import results as results_io
from otod.core import plan as planning
from otod.core.compilation_cache import count_compilations
from otod.core.errors import Interrupted, OtodError
from otod.core.plan import check_estimate, estimate, plan
from otod.core.sweep import run_sweep

from tests.conftest import SMALL_RANDOM

#: Four κ values, two methods of one program and newton; chunk_seconds tiny, so every κ is its own chunk: 12 chunks.
MANY_CHUNKS = dict(methods=("gd", "heavy-ball", "newton"), problem=SMALL_RANDOM, seeds=2, chunk_seconds=1e-9)
VALUES = (1.0, 5.0, 25.0, 125.0)


def test_plan_has_equal_chunks_per_program_covering_every_point():
    config = condition_sweep(tuple(np.geomspace(1, 100, 10)), methods=("gd", "nesterov"), problem=SMALL_RANDOM,
                             seeds=2, chunk_seconds=2e-4)
    chunks = plan(config)
    assert len({len(c.point_indices) for c in chunks}) == 1
    for name in ("gd", "nesterov"):
        covered = sorted({i for c in chunks if c.program[c.method_index] == name for i in c.point_indices})
        assert covered == list(range(10))
    assert len(chunks) > 2


def test_metadata_records_config_versions_provenance_and_one_compile_per_program(tmp_path):
    config = condition_sweep((1.0, 5.0, 9.0, 13.0), methods=("gd", "nesterov"), problem=SMALL_RANDOM, seeds=2)
    r = run_sweep(config, out_dir=tmp_path)
    m = r.meta
    assert m["complete"] and m["config"]["problem"]["dim"] == 16 and m["precision"] == "float32"
    assert {"jax", "otod", "device", "backend", "cpu", "utc_time", "command_line", "git_commit"} <= set(
        m["environment"])
    assert len(r.records) == 4 * 2 * 2 and m["record_count"] == 16
    assert m["compile_count"] + m["cache_loads"] == 1  # gd and nesterov share one program (compiled or loaded)
    assert m["axes"][0]["name"] == "kappa" and m["axes"][0]["symbol"] == "κ"


def test_a_file_whose_settings_differ_in_a_computed_last_bit_is_read_back_not_measured_again(tmp_path):
    """The same command on a CPU whose NumPy rounds a computed setting's last bit the other way (np.geomspace's
    points of a log range: 0.9486828012438605 on one AMD EPYC, …606 on another) has another digest, so another file
    name; `otod.core.config.twin_file` finds the finished file of the same settings to 1e-7 and it is read back
    (no compilation, records identical), and so is one a float32 rounding apart (5e-8 relative: a target read off a
    compiled float32 run moves that much between CPUs). A setting 1e-6 apart is another sweep: measured, in a file
    of its own."""
    import dataclasses

    from otod.core.config import default_path, same_settings

    config = condition_sweep((3.0, 30.0), methods=("gd",), problem=SMALL_RANDOM, seeds=2, lr="tuned",
                             lr_grid=(0.5, 0.9486828012438605, 2.0))
    first = run_sweep(config, out_dir=tmp_path)
    other_cpu = dataclasses.replace(config, lr_grid=(0.5, np.nextafter(0.9486828012438605, 1.0), 2.0))
    assert other_cpu.digest() != config.digest()
    assert same_settings(other_cpu.to_dict(), config.to_dict())
    assert default_path(other_cpu, tmp_path) == first.path
    loads: list = []
    with count_compilations(loads) as compiled:
        again = run_sweep(other_cpu, out_dir=tmp_path)
    assert compiled == [] and loads == [] and again.meta.get("read_back") and again.records == first.records
    rounding = dataclasses.replace(config, lr_grid=(0.5, 0.9486828012438605 * (1 + 5e-8), 2.0))
    assert default_path(rounding, tmp_path) == first.path
    apart = dataclasses.replace(config, lr_grid=(0.5, 0.9486828012438605 * (1 + 1e-6), 2.0))
    assert not same_settings(apart.to_dict(), config.to_dict())
    assert default_path(apart, tmp_path) != first.path
    assert not run_sweep(apart, out_dir=tmp_path).meta.get("read_back")
    assert not same_settings({"max_iters": 10_000_000}, {"max_iters": 10_000_001})  # counts compare exactly
    assert same_settings({"lr": 3.0}, {"lr": 3}) and not same_settings({"lr": 1.0}, {"lr": "1.0"})
    assert len(list(tmp_path.glob("condition-*.parquet"))) == 2


#: One small sweep's settings for the tests that need some finished sweep and count no compile: its program (4
#: lanes) is compiled once in this process and run by each of them.
SMALL = dict(methods=("gd",), problem=SMALL_RANDOM, seeds=2)


def test_same_config_same_numbers(tmp_path):
    config = condition_sweep((3.0, 30.0), **SMALL)
    assert run_sweep(config, path=tmp_path / "a.json").records == run_sweep(config, path=tmp_path / "b.json").records


def test_results_are_written_with_the_usual_mode(tmp_path):
    old = os.umask(0o022)
    try:
        r = run_sweep(condition_sweep((2.0, 20.0), **SMALL), out_dir=tmp_path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(r.path).st_mode) == 0o644


def _interrupt_after(n_chunks: int):
    """A progress callback that delivers Ctrl-C (SIGINT) to this process after ``n_chunks`` chunks."""
    seen = {"chunks": 0}

    def progress(p):
        seen["chunks"] += 1
        if seen["chunks"] == n_chunks:
            os.kill(os.getpid(), signal.SIGINT)

    return progress


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    config = condition_sweep(VALUES, **MANY_CHUNKS)
    return config, run_sweep(config, path=tmp_path_factory.mktemp("full") / "full.json")


@pytest.mark.parametrize("after", [1, 4, 7, 11])
def test_interrupt_at_any_chunk_then_resume_gives_the_uninterrupted_file(tmp_path, uninterrupted, after):
    config, full = uninterrupted
    path = tmp_path / "part.json"
    with pytest.raises(Interrupted) as info:
        run_sweep(config, path=path, progress=_interrupt_after(after))
    assert info.value.lanes_saved == after * 2 and info.value.lanes_total == len(full.records)
    assert not path.exists() and journal_io.journal_path(path).exists()
    assert len(journal_io.journal_path(path).read_text().splitlines()) == 1 + after
    resumed = run_sweep(config, path=path)
    assert resumed.meta["resumed_chunks"] == after
    assert resumed.records == full.records
    assert resumed.meta["chunks"] == full.meta["chunks"]
    assert not journal_io.journal_path(path).exists()


def test_resuming_with_another_chunk_seconds_finishes_the_journal_with_identical_records(tmp_path, uninterrupted,
                                                                                      capfd):
    """--chunk-seconds does not change the records, so it is not in the digest: a resume under another value
    keeps the file name, finishes the journal's chunking (resumed chunks observed) and says so."""
    import dataclasses

    config, full = uninterrupted
    other = dataclasses.replace(config, chunk_seconds=50.0)
    assert other.digest() == config.digest() and other.legacy_digest() != config.legacy_digest()
    path = tmp_path / "part.json"
    with pytest.raises(Interrupted):
        run_sweep(config, path=path, progress=_interrupt_after(4))
    resumed = run_sweep(other, path=path)
    assert resumed.meta["resumed_chunks"] == 4 and resumed.records == full.records
    assert not journal_io.journal_path(path).exists()
    assert "with its --chunk-seconds 1e-09" in capfd.readouterr().err


def test_the_eta_comes_from_the_cost_model_not_from_lanes_done():
    """Chunks that cost 2·predicted + 0.1 s, cheap ones first: after three, the ETA is the exact remaining time
    (the model is linear), plus a compile per program still to come; counting chunks done would say 3 × 0.3 s."""
    from otod.core.plan import eta_seconds

    predicted = [0.05, 0.1, 0.2, 1.0, 2.0, 4.0]
    took = [2 * p + 0.1 for p in predicted]
    done = list(zip(predicted[:3], took[:3]))
    assert eta_seconds(done[:1], predicted[1:]) == float("inf")  # one chunk cannot separate scale and fixed cost
    assert eta_seconds(done, predicted[3:]) == pytest.approx(sum(took[3:]))
    assert eta_seconds(done, predicted[3:], compile_seconds=2.5, programs_left=2) == pytest.approx(sum(took[3:]) + 5)
    assert eta_seconds(done, []) == 0.0
    assert sum(took[3:]) > 10 * sum(took[:3])  # far from what counting chunks done would extrapolate
    assert eta_seconds([(0.1, 0.3), (0.1, 0.3)], [1.0]) == pytest.approx(3.0)  # equal predictions: proportional


def test_a_finished_file_with_edited_metadata_is_refused_not_trusted(tmp_path, uninterrupted):
    """What a re-run reads back (here the stored theory medians or FLOPs of the metadata) is checksummed like the
    records: an edit is refused by name, and the file is left as it was."""
    config, full = uninterrupted
    path = tmp_path / "done.json"
    run_sweep(config, path=path)
    payload = json.loads(path.read_text())
    assert payload["meta"]["meta_sha256"] == results_io.meta_checksum(payload["meta"])
    payload["meta"]["config"]["seeds"] = 3
    path.write_text(json.dumps(payload))
    before = path.read_text()
    with pytest.raises(OtodError, match="its metadata does not match its checksum"):
        run_sweep(config, path=path)
    assert path.read_text() == before


def test_a_chunk_cut_short_by_a_kill_is_dropped_and_rerun(tmp_path, uninterrupted):
    config, full = uninterrupted
    path = tmp_path / "killed.json"
    with pytest.raises(Interrupted):
        run_sweep(config, path=path, progress=_interrupt_after(3))
    with open(journal_io.journal_path(path), "a") as f:
        f.write('{"key": "0/gd/3", "lanes": 2, "records": [{"kap')  # the write a SIGKILL interrupted
    assert run_sweep(config, path=path).records == full.records


def test_a_damaged_journal_line_is_refused_by_name(tmp_path, uninterrupted):
    config, _ = uninterrupted
    path = tmp_path / "damaged.json"
    with pytest.raises(Interrupted):
        run_sweep(config, path=path, progress=_interrupt_after(3))
    journal = journal_io.journal_path(path)
    lines = journal.read_text().splitlines()
    entry = json.loads(lines[2])
    entry["records"][0]["iterations"] += 7  # an injected count
    lines[2] = json.dumps(entry)
    journal.write_text("\n".join(lines) + "\n")
    with pytest.raises(OtodError, match=f"results journal {journal}: chunk .* does not match its checksum"):
        run_sweep(config, path=path)


@pytest.mark.parametrize("damage,fragment", [
    ("inject", "do not match their checksum"),
    ("drop", "holds 23 records but its metadata says 24"),
    ("truncate", "not readable as JSON"),
])
def test_a_results_file_that_does_not_match_its_metadata_is_refused_and_never_overwritten(tmp_path, damage,
                                                                                           fragment, uninterrupted):
    config, _ = uninterrupted  # its programs compiled already: the file costs no compile
    path = run_sweep(config, path=tmp_path / "r.json").path  # the same refusals of Parquet: tests/core/test_parquet.py
    payload = json.loads(path.read_text())
    if damage == "inject":
        payload["records"][3]["iterations"] = 999
        path.write_text(json.dumps(payload))
    elif damage == "drop":
        payload["records"].pop()
        path.write_text(json.dumps(payload))
    else:
        path.write_text(path.read_text()[:-200])
    before = path.read_bytes()
    with pytest.raises(OtodError, match=fragment):
        results_io.load(path)
    with pytest.raises(OtodError, match=f"results file {path}: .*{fragment}"):
        run_sweep(config, path=path)
    assert path.read_bytes() == before


def test_rerunning_a_finished_sweep_reads_it_back_without_computing(tmp_path):
    config = condition_sweep((2.0, 20.0), **SMALL)
    first = run_sweep(config, out_dir=tmp_path)
    mtime = first.path.stat().st_mtime_ns
    with count_compilations() as compiles:
        again = run_sweep(config, out_dir=tmp_path)
    assert again.meta["read_back"] is True and compiles == []
    assert again.records == first.records and first.path.stat().st_mtime_ns == mtime


def test_a_second_run_on_the_same_file_is_refused_while_the_first_holds_it(tmp_path):
    """The test holds the lock as a running sweep would; a real `otod sweep` process on the same file exits 2
    at once with one line, and does no work (no journal, no file)."""
    args = ["sweep", "condition", "--k", "2,20", "--dim", "8", "--seeds", "2", "--method", "gd", "--no-plot",
            "--out", str(tmp_path)]
    config = condition_sweep((2.0, 20.0), methods=("gd",), problem=QuadraticSpec(dim=8), seeds=2)
    path = tmp_path / f"condition-{config.digest()}.parquet"
    with journal_io.lock(path):
        proc = subprocess.run([sys.executable, "-m", "otod", *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "another otod run is writing it" in proc.stderr
    assert not path.exists() and not journal_io.journal_path(path).exists()


#: ``python -m otod ARGS`` with Ctrl-C pressed at a known point of the sweep instead of after a guessed sleep: a real
#: SIGINT, raised in the process (Python's signal path runs as for a terminal's Ctrl-C), once the sweep has saved
#: SAVED chunks to its journal, as its wait on the running chunks begins; with PRESSES 2, again from inside that
#: wait (the engine's first nap after the first press), where the engine polls the devices. Each press is
#: announced on stderr ("otod-test: Ctrl-C n ...").
CTRL_C = r"""
import signal, sys, time
import otod.core.engine as engine
import otod.core.journal as journal
saved_before, presses, args = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
saved, pressed = [], []
append_chunk, first_ready = journal.append_chunk, engine.first_ready


def press(where):
    pressed.append(where)
    sys.stderr.write(f"otod-test: Ctrl-C {len(pressed)} {where}\n")
    sys.stderr.flush()
    signal.raise_signal(signal.SIGINT)


def saving(*a, **k):
    entry = append_chunk(*a, **k)
    saved.append(entry)
    return entry


def waiting(outputs, programs, *a, **k):
    if len(saved) >= saved_before and not pressed:
        press(f"after {len(saved)} chunks saved, as the wait on the {' and the '.join(programs)} begins")
    return first_ready(outputs, programs, *a, **k)


class Clock:
    def __getattr__(self, name):
        return getattr(time, name)

    def sleep(self, seconds):
        if len(pressed) == 1 and presses == 2:
            press("inside the wait")
        time.sleep(seconds)


journal.append_chunk, engine.first_ready, engine.time = saving, waiting, Clock()
from otod.cli import main
main(args, prog_name="otod")
"""


def test_ctrl_c_on_a_real_process_saves_finished_chunks_and_the_same_command_finishes(tmp_path):
    """Ctrl-C once 2 of the 20 chunks are saved: the running chunks finish and are saved, no other starts, exit
    130 saying so; the same command then resumes exactly the chunks the journal holds and finishes (called in
    this process: the resume reads only the journal the interrupted process left)."""
    from click.testing import CliRunner

    from otod.cli import main

    args = ["sweep", "condition", "--k", "1..400:10:log", "--dim", "32", "--seeds", "4", "--method", "gd,nesterov",
            "--chunk-seconds", "0.0001", "--no-plot", "--out", str(tmp_path)]
    proc = subprocess.run([sys.executable, "-c", CTRL_C, "2", "1", *args], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 130, proc.stderr
    assert "otod-test: Ctrl-C 1 after 2 chunks saved" in proc.stderr
    assert "lanes are saved" in proc.stderr and "the same command resumes" in proc.stderr
    (journal,) = tmp_path.glob("*.partial")
    saved = len(journal.read_text().splitlines()) - 1
    assert 3 <= saved < 20  # the 2, the running ones (one per device) finished after the Ctrl-C, nothing more
    done = CliRunner().invoke(main, args)
    assert done.exit_code == 0, done.output
    assert f"resumed: {saved} chunks" in done.stdout


def test_a_second_ctrl_c_while_the_devices_run_ends_the_process_at_once_keeping_the_journal(tmp_path):
    """Two chunks: κ = 1 (quick), then κ = 10⁹ on the two-point spectrum (gd to the 10⁸ cap: hours). Once the first
    is in the journal the engine waits on the second; a Ctrl-C there says it stops once the running chunk is
    saved, a second one inside the wait ends the process, exit 130, with one line naming the program and what the
    journal keeps, and the journal left for a resume. The program runs for hours, so the process ending at all
    (the timeout only guards against a hang) is it ending at once, without waiting for the program. Before, one
    Ctrl-C did nothing and after a second the process stayed until kill -9."""
    args = ["sweep", "condition", "--k", "1,1e9", "--spectrum", "two-point", "--start", "equal-loss", "--dim", "64",
            "--seeds", "32", "--method", "gd", "--max-iters", "1e8", "--chunk-seconds", "1e-9", "--no-plot", "--yes",
            "--out", str(tmp_path)]
    env = {**os.environ, "OTOD_COMPILATION_CACHE": "off", "OTOD_WATCHDOG_SECONDS": "off"}
    proc = subprocess.run([sys.executable, "-c", CTRL_C, "1", "2", *args], capture_output=True, text=True, env=env,
                          timeout=120)
    err = proc.stderr
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert "otod-test: Ctrl-C 1 after 1 chunks saved, as the wait on the condition program gd (chunk " in err, err
    assert "otod: stopping once the running chunks are saved; Ctrl-C again stops at once" in err, err
    assert "otod-test: Ctrl-C 2 inside the wait" in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("otod: interrupted while the condition program gd (chunk ") and "on " in last, err
    assert "32 of 64 lanes are saved in the journal" in last and "the same command resumes" in last, err
    (journal,) = tmp_path.glob("*.partial")
    assert len(journal.read_text().splitlines()) == 2  # the header and κ = 1: the second chunk never finished


def test_estimates_refuse_what_cannot_fit_or_would_take_hours():
    huge = condition_sweep((1.0, 10.0), methods=("gd",), problem=QuadraticSpec(dim=10**9))
    with pytest.raises(OtodError, match="GiB of memory"):
        check_estimate(huge)
    dense = condition_sweep((1.0, 10.0), methods=("gd",), problem=QuadraticSpec(dim=100_000, basis="rotated"))
    assert estimate(dense).bytes > 1e10
    kron = condition_sweep((1.0,), methods=("gd",), problem=KroneckerSpec(rows=2000, cols=2000))
    with pytest.raises(OtodError, match="GiB of memory"):
        check_estimate(kron)
    slow = condition_sweep(tuple(np.geomspace(1, 1e8, 60)), methods=("gd",), problem=QuadraticSpec(dim=10_000),
                           seeds=64)
    with pytest.raises(OtodError, match="pass --yes"):
        check_estimate(slow)
    assert check_estimate(slow, yes=True).seconds > 3600
    small = estimate(condition_sweep((1.0, 10.0), methods=("gd",), problem=SMALL_RANDOM, seeds=2))
    assert small.lanes == 4 and small.bytes < 1e7


def test_blocks_follow_predicted_cost_so_lanes_rarely_wait(tmp_path):
    """Points run in order of their predicted count and the cost model sizes blocks: on the default grid (κ =
    1..100, d = 100, 8 seeds) the while loops execute at most 15% more lane-iterations than the lanes' own counts
    (with blocks of 256 lanes it was 29%), and never fewer (every lane counts until its block stops)."""
    config = condition_sweep(tuple(float(k) for k in range(1, 101)), methods=("gd",), problem=QuadraticSpec(),
                             seeds=8)
    work = run_sweep(config, out_dir=tmp_path).meta["lane_iterations"]
    assert work["needed"] <= work["executed"] <= 1.15 * work["needed"], work


def test_cost_model_trades_waiting_lanes_against_loop_trips():
    from otod.core.engine import choose_points_per_block

    # equal costs: nothing waits, so the largest block (fewest trips) wins, up to the lane limit
    assert choose_points_per_block([100.0] * 64, 8, 1e-8, trip_seconds=1e-6, max_lanes=128) == 16
    # costs spread 1..1e4 geometrically: any two points in one block waste most of the cheaper one's trips
    assert choose_points_per_block(list(np.geomspace(1, 1e4, 25)), 8, 1e-8, trip_seconds=1e-7) == 1
    # a free trip makes one point per block optimal whatever the costs
    assert choose_points_per_block(list(range(1, 101)), 8, 1e-8, trip_seconds=0.0) == 1


def test_a_sweep_killed_after_its_first_chunk_resumes_to_the_uninterrupted_records(tmp_path, uninterrupted):
    """A real SIGKILL (no handler runs) once the first chunk is journalled: the rerun computes only the other
    chunks and its file holds the uninterrupted run's records."""
    config, full = uninterrupted
    path = tmp_path / "killed.json"
    probe = ("import os, signal\nimport otod.condition\nfrom otod.condition.options import condition_sweep\n"
             "from otod.core.sweep import run_sweep\nfrom tests.core.test_sweep import MANY_CHUNKS, VALUES\n"
             f"run_sweep(condition_sweep(VALUES, **MANY_CHUNKS), path={str(path)!r}, "
             "progress=lambda p: os.kill(os.getpid(), signal.SIGKILL))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "OTOD_COMPILATION_CACHE": "off"})
    assert out.returncode == -signal.SIGKILL, out.stderr
    assert not path.exists() and len(journal_io.journal_path(path).read_text().splitlines()) == 2
    ran = []
    resumed = run_sweep(config, path=path, progress=lambda p: ran.append(p["chunk"]))
    assert len(ran) == len(full.meta["chunks"]) - 1 and resumed.meta["resumed_chunks"] == 1
    assert resumed.records == full.records


# -- tuned sweeps: pruning never changes the choice, and the records carry it ------------------------------------


@pytest.fixture(scope="module")
def tuned_pair(tmp_path_factory):
    """The same tuned sweep with pruning (the engine's default under --lr tuned) and with every lane run to the
    end (the sweep split so that each rate is its own one-rate sweep)."""
    values = tuple(np.geomspace(1, 300, 6))
    grid = (0.25, 0.5, 1.0, 1.5, 1.9)
    kw = dict(methods=("gd", "nesterov"), problem=SMALL_RANDOM, seeds=5)
    out = tmp_path_factory.mktemp("tuned")
    pruned = run_sweep(condition_sweep(values, lr="tuned", lr_grid=grid, **kw), out_dir=out)
    full = [r for g in grid for r in run_sweep(condition_sweep(values, lr="tuned", lr_grid=(g,), **kw),
                                               out_dir=out).records]
    return pruned, full


def test_pruning_keeps_the_choice_and_the_counts_at_the_chosen_rate(tuned_pair):
    from otod.core.analysis import frame_of, select

    pruned, full = tuned_pair
    key = ["kappa", "method", "seed"]
    chosen = select(frame_of(pruned), ("kappa",)).sort_values(key)
    reference = select(frame_of(full), ("kappa",)).sort_values(key)
    columns = ["lr_multiplier", "iterations", "status"]
    assert chosen[columns].to_numpy().tolist() == reference[columns].to_numpy().tolist()


def test_a_tuned_sweep_writes_no_selection_its_analysis_makes_it_once(tuned_pair):
    """The sweep writes no ``selected``, ``lr_on_edge`` or ``beta_on_edge`` (nor ``lr_selected``, their old name):
    the choice is the one analysis's (`otod.core.pipeline`), which ``--json`` prints as marks
    (`marked_records`): one selected record per seed and point, edge flags only on selected records, the same
    records `otod.core.analysis.select` picks."""
    from otod.core.analysis import frame_of, select
    from otod.core.pipeline import marked_records, present

    pruned, _ = tuned_pair
    assert not any({"selected", "lr_on_edge", "beta_on_edge", "lr_selected"} & r.keys() for r in pruned.records)
    marked = marked_records(present(pruned, text=False))
    assert sum(r["selected"] for r in marked) == 6 * 2 * 5
    assert not any(r["lr_on_edge"] or r["beta_on_edge"] for r in marked if not r["selected"])
    picked = select(frame_of(pruned), ("kappa",))
    assert sorted(picked.index) == [i for i, r in enumerate(marked) if r["selected"]]
    assert results_io.load(pruned.path).records == pruned.records


def test_pruning_saves_lane_iterations(tuned_pair):
    """Rates that can no longer win stop early: far fewer lane-iterations than running every lane out."""
    pruned, full = tuned_pair
    assert any(r["status"] == "pruned" for r in pruned.records)
    assert sum(r["iterations"] for r in pruned.records) < 0.7 * sum(r["iterations"] for r in full)


def test_tuned_is_never_worse_than_the_reference_step_on_the_same_seeds(tmp_path):
    """The default grid holds multiplier 1, so each κ's tuned median is at most --lr theory's."""
    from otod.core.analysis import frame_of, select

    spec = QuadraticSpec(dim=12, spectrum="two-point", start="equal-loss")
    values = (1.0, 10.0, 100.0)
    tuned = select(frame_of(run_sweep(condition_sweep(values, methods=("gd",), problem=spec, seeds=3, lr="tuned"),
                                      out_dir=tmp_path)), ("kappa",))
    theory = run_sweep(condition_sweep(values, methods=("gd",), problem=spec, seeds=3), out_dir=tmp_path).records
    for k in values:
        t = np.median(tuned.loc[tuned["kappa"] == k, "iterations"])
        th = np.median([r["iterations"] for r in theory if r["kappa"] == k])
        assert t <= th
    assert np.median(tuned.loc[tuned["kappa"] == 1.0, "iterations"]) == 1


def test_programs_are_compacted_where_their_predicted_work_pays_for_the_second_loop():
    """`compacted_programs`: the README's first depth example (4 inits × 13 rates × 8 seeds at the 20,000 cap,
    8.3·10⁶ lane-iterations a depth) compacts every depth's program; `--depth 4,8 --init xavier` (2.1·10⁶) and the
    default condition sweep (theory's counts, at most a few thousand) compact none."""
    import otod.depth  # noqa: F401  (registers the depth sweeps)
    from otod.condition.options import sweep_config_from_options
    from otod.core.plan import COMPACT_LANE_ITERATIONS, compacted_programs, predicted_costs
    from otod.depth.options import depth_config_from_options

    def compacted(config):
        costs = predicted_costs(config)
        return compacted_programs(config, plan(config, costs), costs)

    readme = depth_config_from_options(depth="1..12", init="identity,orthogonal,xavier,small", seeds=8)
    assert 4 * 13 * 8 * 20_000 >= COMPACT_LANE_ITERATIONS > 13 * 8 * 20_000
    assert {static for static, _ in compacted(readme)} == set(range(12))
    assert compacted(depth_config_from_options(depth="4,8", init="xavier", seeds=8)) == set()
    assert compacted(sweep_config_from_options(k="1..100")) == set()


SIDE_BY_SIDE = """
import json, sys
from otod.condition.options import condition_sweep
from otod.core.sweep import run_sweep
from tests.conftest import SMALL_RANDOM
for i in range(3):
    r = run_sweep(condition_sweep({values!r}, methods=("gd", "heavy-ball", "newton"), problem=SMALL_RANDOM, seeds=2,
                                  chunk_seconds=1e-9), path=sys.argv[1] + f"/run{{i}}.json")
    print(json.dumps([r.meta["most_running"], r.meta["chunks_per_device"]]))
"""


def test_chunks_side_by_side_on_two_devices_give_the_records_of_one_device(tmp_path, uninterrupted):
    """12 one-point chunks in a process with 2 CPU devices run one per device side by side (observed: two running
    at once, both devices used), three times over, each within the timeout: the records of this one-device
    process, bit for bit, every time."""
    config, full = uninterrupted
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2", "OTOD_COMPILATION_CACHE": "off"}
    out = subprocess.run([sys.executable, "-c", SIDE_BY_SIDE.format(values=VALUES), str(tmp_path)],
                         capture_output=True, text=True, timeout=240, env=env)
    assert out.returncode == 0, out.stderr
    for i, line in enumerate(out.stdout.splitlines()):
        most_running, per_device = json.loads(line)
        assert most_running == 2 and per_device["0"] > 0 and per_device["1"] > 0, line
        assert sum(per_device.values()) == len(full.meta["chunks"])
        assert json.loads((tmp_path / f"run{i}.json").read_text())["records"] == full.records
    assert i == 2


def _chunk(key, static=0, program=("gd",), points=1, block=1):
    return planning.Chunk(key, static, program, 0, tuple(range(points)), points, block)


def test_next_chunk_prefers_a_program_compiled_for_the_device_then_a_new_one_then_one_worth_compiling_again():
    a0, a1, b0 = _chunk("a0"), _chunk("a1"), _chunk("b0", static=1)
    predicted = {"a0": 1.0, "a1": 1.0, "b0": 1.0}
    a, b = (0, ("gd",)), (1, ("gd",))
    assert planning.next_chunk([a0, b0], 1, {a: {1}}, {a: 3.0}, predicted) == 0  # compiled for device 1
    assert planning.next_chunk([a0, b0], 0, {a: {1}}, {a: 3.0}, predicted) == 1  # b compiled nowhere: compile it
    # only a is left, compiled for device 1 in 3 s: 2 s of its chunks do not pay a compile for device 0; 4 s do
    assert planning.next_chunk([a0, a1], 0, {a: {1}, b: {0}}, {a: 3.0}, predicted) is None
    assert planning.next_chunk([a0, a1], 0, {a: {1}, b: {0}}, {a: 3.0}, {**predicted, "a1": 3.0}) == 0


def test_the_last_chunk_spans_the_devices_when_half_of_it_outlasts_one_more_compile():
    """W > 2c: the expected seconds against the program's measured compile, else the sweep's slowest, else the
    first-compile guess; and only with two blocks or more to deal."""
    four, two = _chunk("a", points=4, block=2), _chunk("a", points=2, block=2)
    assert planning.spans_devices(four, {(0, ("gd",)): 0.9}, 2.0)
    assert not planning.spans_devices(four, {(0, ("gd",)): 1.1}, 2.0)
    assert not planning.spans_devices(four, {(1, ("gd",)): 1.1}, 2.0)  # another program's compile stands in
    assert planning.spans_devices(four, {}, 2.1 * planning.FIRST_COMPILE_SECONDS)
    assert not planning.spans_devices(four, {}, 1.9 * planning.FIRST_COMPILE_SECONDS)
    assert not planning.spans_devices(two, {}, 1e6)  # one block: nothing to split


def test_expected_seconds_scale_the_prediction_by_the_methods_measured_ratio_else_every_chunks():
    adam, gd = planning.Chunk("x", 0, ("gd", "adam"), 1, (0,), 1, 1), planning.Chunk("y", 0, ("gd", "adam"), 0, (0,), 1, 1)
    predicted = {"x": 2.0, "y": 1.0}
    assert planning.expected_seconds([adam, gd], predicted, {}) == {"x": 2.0, "y": 1.0}
    assert planning.expected_seconds([adam], predicted, {"gd": [1.0, 3.0, 5.0]}) == {"x": 6.0}  # every chunk's median
    assert planning.expected_seconds([adam, gd], predicted, {"gd": [1.0], "adam": [4.0, 6.0, 20.0]}) == {
        "x": 12.0, "y": 1.0}


SPLIT_LAST = """
import json, sys
from otod.condition.options import condition_sweep
from otod.core import scheduler, sweep
from tests.conftest import SMALL_RANDOM
scheduler.spans_devices = lambda chunk, compile_seconds, seconds, program_of=None: -(-chunk.n_points // chunk.block_points) > 1
for i in range(3):
    r = sweep.run_sweep(condition_sweep({values!r}, methods=("gd", "heavy-ball"), problem=SMALL_RANDOM, seeds=2),
                        path=sys.argv[1] + f"/run{{i}}.json")
    print(json.dumps(r.meta["chunks_per_device"]))
"""


def test_a_last_chunk_split_among_two_devices_gives_the_records_of_one_device(tmp_path):
    """The sweep's last chunk (heavy-ball, 8 points in 2 blocks) split between 2 CPU devices, each device's program
    of the one-device shape, the first chunk having run on device 0: three times over, each within the timeout,
    observed split (one chunk on every device) and with the records of this one-device process, bit for bit. The
    split is forced (`spans_devices` patched): at this size half the chunk does not outlast a compile."""
    values = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0)
    here = run_sweep(condition_sweep(values, methods=("gd", "heavy-ball"), problem=SMALL_RANDOM, seeds=2),
                     path=tmp_path / "one.json")
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2", "OTOD_COMPILATION_CACHE": "off",
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, "-c", SPLIT_LAST.format(values=values), str(tmp_path)],
                         capture_output=True, text=True, timeout=240, env=env)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 3
    for i, line in enumerate(lines):
        assert json.loads(line) == {"0": 1, "1": 0, "all": 1}, line
        assert json.loads((tmp_path / f"run{i}.json").read_text())["records"] == here.records
