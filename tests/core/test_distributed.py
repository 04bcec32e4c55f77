"""Sweeps shared among processes (`otod.core.distributed`, `run_sweep`'s shares and part files, `merge`).

Each test observes the thing itself: the records of the merged file against a one-process run, the chunks a
rerun computes (only the missing ones), the refusal of a foreign part file and its message."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys

import pytest

from otod.condition.options import condition_sweep
from otod.core import journal as journal_io
from otod.core import results as results_io
from otod.core.distributed import check_options, share
from otod.core.errors import OtodError, ShareDone
from otod.core.finish import merge
from otod.core.plan import plan, share_of
from otod.core.sweep import run_sweep

from tests.conftest import SMALL_RANDOM, run_shares_in_turn

#: Four κ values, gd, heavy-ball and newton, every κ its own chunk: 12 chunks of 2 lanes.
CONFIG = condition_sweep((1.0, 5.0, 25.0, 125.0), methods=("gd", "heavy-ball", "newton"), problem=SMALL_RANDOM,
                         seeds=2, chunk_seconds=1e-9)


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    return run_sweep(CONFIG, path=tmp_path_factory.mktemp("one") / "one.json")


def test_share_is_lpt_balanced_and_deterministic():
    """Graham's bound: the LPT makespan is at most (4/3 − 1/(3m)) of the best split's, checked against brute
    force on every 8-item split of some cost lists."""
    for costs in ([5, 4, 3, 3, 3], [7, 1, 1, 1, 1, 1, 1, 1], [2, 3, 5, 7, 11, 13, 1, 4], [1] * 8):
        for m in (2, 3):
            owner = share(costs, m)
            assert owner == share(costs, m) and len(owner) == len(costs) and set(owner) <= set(range(m))
            makespan = max(sum(c for c, o in zip(costs, owner) if o == p) for p in range(m))
            best = min(max(sum(c for c, o in zip(costs, split) if o == p) for p in range(m))
                       for split in itertools.product(range(m), repeat=len(costs)))
            assert makespan <= (4 / 3 - 1 / (3 * m)) * best + 1e-12


def test_shares_cover_the_plan_once():
    chunks = plan(CONFIG)
    shares = [share_of(CONFIG, chunks, i, 3) for i in range(3)]
    keys = [c.key for s in shares for c in s]
    assert sorted(keys) == sorted(c.key for c in chunks) and all(shares)


@pytest.mark.parametrize("args,fragment", [
    (("node0", 2, 0), "need HOST:PORT"),
    (("node0:1234", 2, 2), "need 0 ≤ id < --num-processes (2)"),
    (("node0:1234", 0, 0), "--num-processes 0: need an integer ≥ 1"),
    (("node0:1234", None, 0), "give all of --coordinator"),
])
def test_bad_distributed_options_are_refused(args, fragment):
    with pytest.raises(OtodError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        check_options(*args)


def test_a_killed_process_loses_only_its_chunk_in_flight_and_a_rerun_finishes_its_share(tmp_path, one_process):
    """Process 1 of 2 is SIGKILLed after its first chunk; process 0 runs its whole share and cannot merge (one
    line, how many chunks are missing); process 1 rerun computes only its missing chunks; process 0 then merges
    the records of a one-process run. The barrier is a no-op here (one JAX process): the shares, part files and
    merge are the real ones."""
    path = tmp_path / "x.json"
    probe = (
        "import os, signal\nimport otod.condition\nfrom tests.core.test_distributed import CONFIG\n"
        "from otod.core.sweep import run_sweep\n"
        f"run_sweep(CONFIG, path={str(path)!r}, processes=(1, 2), "
        "progress=lambda p: os.kill(os.getpid(), signal.SIGKILL))\n")
    env = {**os.environ, "OTOD_COMPILATION_CACHE": "off"}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == -signal.SIGKILL, out.stderr
    part1 = journal_io.part_path(path, 1, 2)
    assert len(journal_io.read_journal(part1, CONFIG.digest())[1]) == 1

    chunks = plan(CONFIG)
    share1 = share_of(CONFIG, chunks, 1, 2)
    with pytest.raises(OtodError, match=f"{len(share1) - 1} of {len(chunks)} chunks are in no journal"):
        run_sweep(CONFIG, path=path, processes=(0, 2))

    ran = []
    with pytest.raises(ShareDone, match=f"process 1 of 2: ran {len(share1) - 1} chunks"):
        run_sweep(CONFIG, path=path, processes=(1, 2), progress=lambda p: ran.append(p["chunk"]))
    assert ran == [c.key for c in share1[1:]]  # the chunk the killed run finished is not rerun
    merged = run_sweep(CONFIG, path=path, processes=(0, 2))
    assert merged.records == one_process.records
    assert merged.meta["chunks"] == one_process.meta["chunks"]
    assert journal_io.journals(path) == []


def test_merge_joins_parts_and_refuses_another_configs(tmp_path, one_process):
    path = tmp_path / "x.json"
    run_shares_in_turn(CONFIG, path)
    parts = [journal_io.part_path(path, i, 2) for i in (0, 1)]
    hosts = [tmp_path / "host0", tmp_path / "host1"]
    for part, host in zip(parts, hosts):
        host.mkdir()
        shutil.copy(part, host / part.name)
    copies = [h / p.name for h, p in zip(hosts, parts)]
    merged = merge(copies, tmp_path / "merged.json")
    assert merged.records == one_process.records
    assert results_io.load(tmp_path / "merged.json").records == one_process.records
    assert [m["process"] for m in merged.meta["merged_from"]] == [0, 1]
    chunks = plan(CONFIG)
    missing = len(share_of(CONFIG, chunks, 1, 2))
    with pytest.raises(OtodError, match=rf"share 1 of 2 \({hosts[0] / parts[1].name}\) is missing "
                                        rf"\({missing} of {len(chunks)} chunks are in no part file\)"):
        merge(copies[:1], tmp_path / "half.json")

    other = condition_sweep((1.0, 5.0), methods=("gd",), problem=SMALL_RANDOM, seeds=2, chunk_seconds=1e-9)
    other_path = tmp_path / "other.json"
    with pytest.raises(ShareDone):
        run_sweep(other, path=other_path, processes=(1, 2))
    foreign = journal_io.part_path(other_path, 1, 2)
    with pytest.raises(OtodError, match=f"different sweep configs: {foreign} is a share of config {other.digest()}, "
                                        f"while the other 1 hold config {CONFIG.digest()}"):
        merge([copies[0], foreign], tmp_path / "mixed.json")

    edited = tmp_path / "edited.part-0-of-2"
    lines = copies[0].read_text().splitlines()
    header = json.loads(lines[0])
    header["config"]["seeds"] = 3
    edited.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    with pytest.raises(OtodError, match=f"part file {edited}: its config does not hash to its digest"):
        merge([edited, copies[1]], tmp_path / "edited.json")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def test_two_localhost_processes_give_the_records_of_one(tmp_path):
    """``otod sweep condition --distributed`` in two processes on this host (JAX's coordination service on
    localhost, two CPU devices each, so each process runs a program per device): the results file holds the records of
    the same command in one process, process 1 ran a share of the chunks and says so, standard output holds the
    report alone, and no part file is left. The one-process run they are compared with calls the same command line
    in this process (`CliRunner`), which saves an interpreter's and JAX's start (about 4 s)."""
    from click.testing import CliRunner

    from otod.cli import main

    args = ["sweep", "condition", "--k", "1..300:6:log", "--dim", "16", "--seeds", "2", "--method", "gd,nesterov",
            "--chunk-seconds", "1e-9", "--no-plot"]
    env = {**os.environ, "OTOD_CPU_DEVICES": "2", "OTOD_COMPILATION_CACHE": "off"}
    port = _free_port()
    cli = [sys.executable, "-m", "otod"]
    procs = [subprocess.Popen(cli + args + ["--out", str(tmp_path / "two"), "--distributed", "--coordinator",
                                            f"localhost:{port}", "--num-processes", "2", "--process-id", str(i)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for i in (0, 1)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert outs[0][0].startswith("condition sweep: ") and "cpu ×4 in 2 processes" in outs[0][0]
    assert "process 1 of 2: ran " in outs[1][1] and "ran 0 chunks" not in outs[1][1]
    one = CliRunner().invoke(main, args + ["--out", str(tmp_path / "one")])
    assert one.exit_code == 0, one.output
    [two_file], [one_file] = (list((tmp_path / d).glob("*.parquet")) for d in ("two", "one"))
    assert two_file.name == one_file.name  # same config, same digest
    two, single = results_io.load(two_file), results_io.load(one_file)
    assert two.records == single.records
    assert two.meta["processes"] == 2 and two.meta["environment"]["process_count"] == 2
    assert [p.name for p in (tmp_path / "two").iterdir() if ".part-" in p.name] == []


@pytest.mark.parametrize("args,fragment", [
    (["sweep", "condition", "--k", "1..10", "--coordinator", "localhost:1"], "belong to a --distributed run"),
    (["sweep", "noise", "--batch", "1..4", "--distributed", "--coordinator", "localhost",
      "--num-processes", "2", "--process-id", "0"], "need HOST:PORT"),
    (["merge", "nothing.part-0-of-2"], "part file nothing.part-0-of-2: no such file"),
])
def test_bad_distributed_input_is_one_line_and_exit_2(tmp_path, args, fragment):
    out = subprocess.run([sys.executable, "-m", "otod", *args], capture_output=True, text=True, cwd=tmp_path,
                         timeout=120)
    assert out.returncode == 2 and fragment in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
