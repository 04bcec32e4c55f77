"""``otod sweep ... --share I/N`` (issue 20): the shares of a sweep run alone, at different times, as the tasks of
a job array run them, each into its part file with no distributed runtime; ``otod merge`` joins them into the
records one process writes, and refuses a missing share or a share of another sweep by name.

The three shares run one after another in one real process (`run_otod_cases`: the command line called afresh
for each, its exit code and the lines on its file descriptors caught, with a timeout), as a scheduler would start
them; the merges and the one-process run compared with them call the same command line in this process
(`CliRunner`: its exit code, stdout and stderr), which saves interpreters' and JAX imports' 2-4 s each. Every
observation is of the files and lines a user sees."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from otod.condition.options import condition_sweep
from otod.core import journal as journal_io
from otod.core.distributed import current_share, parse_share
from otod.core.errors import OtodError, ShareWritten
from otod.core.finish import merge
from otod.core.sweep import run_sweep

from tests.conftest import SMALL_RANDOM, run_otod, run_otod_cases

#: A tiny condition sweep: 3 κ × 2 methods × 2 seeds, every (κ, method) its own chunk: 6 chunks for 3 shares.
SWEEP = ["sweep", "condition", "--k", "1,10,100", "--dim", "8", "--seeds", "2", "--method", "gd,heavy-ball",
         "--chunk-seconds", "1e-9", "--no-plot"]
#: Seconds a process may take (a share here takes about 3 s on 2 shared cores).
TIMEOUT = 120


def cli_run(args):
    """``otod ARGS`` called in this process, as `CliRunner` calls it (exit code, stdout, stderr)."""
    from otod.cli import main

    return CliRunner().invoke(main, args)


def one_line(proc) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


def test_three_shares_run_at_different_times_then_merged_give_the_records_of_one_process(tmp_path):
    results = tmp_path / "shared" / "k.json"
    parts = [journal_io.part_path(results, i, 3) for i in range(3)]
    cases = [([*SWEEP, "--out", str(results), "--share", f"{i}/3"], tmp_path) for i in range(3)]
    for i, (proc, _) in enumerate(run_otod_cases(cases, tmp_path / "captures", timeout=TIMEOUT)):
        assert proc.returncode == 0, proc.stderr
        assert one_line(proc).startswith(f"otod: share {i} of 3: ran ") and f"into {parts[i]}" in proc.stderr
        assert not proc.stdout  # a share has no report of its own
    # each ended without waiting for the shares still to come (run one after another, a wait would never end), and
    # none merged
    assert sorted(p.name for p in results.parent.iterdir()) == [p.name for p in parts]
    early = cli_run(["merge", *map(str, parts[:2])])  # share 2's part not given: merge names it, and writes nothing
    assert early.exit_code == 2 and not results.exists()
    assert f"share 2 of 3 ({parts[2]}) is missing" in one_line(early)
    assert "--share 2/3" in early.stderr

    merged = cli_run(["merge", *map(str, parts)])
    assert merged.exit_code == 0, merged.output
    assert merged.stdout.strip() == f"{results}: 12 records from 3 part files"

    single = tmp_path / "one" / "k.json"
    one = cli_run([*SWEEP, "--out", str(single)])
    assert one.exit_code == 0, one.output
    shared_doc, one_doc = (json.loads(p.read_text()) for p in (results, single))
    assert shared_doc["records"] == one_doc["records"] and len(one_doc["records"]) == 12  # every field, in order
    assert shared_doc["meta"]["digest"] == one_doc["meta"]["digest"]
    assert shared_doc["meta"]["chunks"] == one_doc["meta"]["chunks"]  # the same chunks, with the same checksums
    assert all(p.exists() for p in parts)  # merge leaves the parts in place

    # share 2 stopped before its last chunk (its part file less its last line): merge names it unfinished
    cut = tmp_path / "cut"
    cut.mkdir()
    for part in parts:
        (cut / part.name).write_text(part.read_text())
    lines = parts[2].read_text().splitlines(keepends=True)
    (cut / parts[2].name).write_text("".join(lines[:-1]))
    with pytest.raises(OtodError, match=rf"share 2 of 3 \({cut / parts[2].name}\) lacks 1 of its {len(lines) - 1} "
                                        r"chunks \(1 of 6 chunks are in no part file\); run the sweep command with "
                                        r"--share 2/3"):
        merge(sorted(cut.iterdir()), tmp_path / "cut.json")


def test_merge_refuses_a_share_of_another_sweep_by_name(tmp_path):
    """Shares 0 and 2 of one sweep with share 1 of another (one more κ), run in this process through the library:
    ``otod merge`` ends in one line naming the foreign part, and writes nothing."""
    ours, theirs = tmp_path / "a" / "k.json", tmp_path / "b" / "k.json"
    runs = [(ours, 0), (theirs, 1), (ours, 2)]
    for path, i in runs:
        k = (1.0, 10.0, 100.0, 1000.0) if path == theirs else (1.0, 10.0, 100.0)
        config = condition_sweep(k, methods=("gd", "heavy-ball"), problem=SMALL_RANDOM, seeds=2, chunk_seconds=1e-9)
        with pytest.raises(ShareWritten, match=f"share {i} of 3: ran "):
            run_sweep(config, path=path, share=(i, 3))
    parts = [journal_io.part_path(path, i, 3) for path, i in runs]
    mixed, _ = run_otod(["merge", *map(str, parts), "--out", str(tmp_path / "mixed.json")], tmp_path, timeout=TIMEOUT)
    assert mixed.returncode == 2
    line = one_line(mixed)
    assert line.startswith("otod: error: otod merge: the part files come from different sweep configs: ")
    assert f"{parts[1]} is a share of config " in line and str(parts[0]) not in line
    assert not (tmp_path / "mixed.json").exists()


@pytest.mark.parametrize("args,fragment", [
    (["--share", "3/3"], "--share 3/3: shares are numbered from 0, so I must lie in 0..2"),
    (["--share", "0/0"], "--share 0/0: need N ≥ 1 shares"),
    (["--share", "x"], "--share x: need I/N"),
    (["--share", "0/2", "--distributed"], "--share 0/2 --distributed: --share runs one share alone"),
    (["--share", "1/2", "--coordinator", "localhost:1"], "--share 1/2: --coordinator, --num-processes and"),
])
def test_bad_shares_are_one_line_and_exit_2_before_any_file_is_written(tmp_path, args, fragment):
    from otod.cli import main

    result = CliRunner().invoke(main, [*SWEEP, "--out", str(tmp_path / "r"), *args])
    assert result.exit_code == 2 and result.stderr.startswith("otod: error: "), result.output
    assert fragment in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert list(tmp_path.iterdir()) == []
    assert current_share() is None


def test_parse_share():
    assert parse_share("0/4") == (0, 4) and parse_share("3/4") == (3, 4) and parse_share(" 0 / 1 ") == (0, 1)
    for bad in ("4/4", "-1/4", "1/0", "1", "1/2/3", "a/b", ""):
        with pytest.raises(OtodError, match="--share "):
            parse_share(bad)


def test_a_share_joins_no_runtime_and_meets_no_barrier(tmp_path, monkeypatch):
    """In process: jax.distributed.initialize and the barrier fail if called; a share runs and ends without them,
    and the share it set is cleared when the command ends."""
    import jax

    from otod.cli import main
    from otod.core import distributed

    def forbidden(*args, **kwargs):
        raise AssertionError("a --share must not join the distributed runtime or meet a barrier")

    monkeypatch.setattr(jax.distributed, "initialize", forbidden)
    monkeypatch.setattr(distributed, "initialize", forbidden)
    monkeypatch.setattr(distributed, "barrier", forbidden)
    out = tmp_path / "k.json"
    result = CliRunner().invoke(main, [*SWEEP, "--out", str(out), "--share", "0/3"])
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith("otod: share 0 of 3: ran ") and not result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.json.part-0-of-3"]
    assert current_share() is None
