"""Issue 33 for the environment variables, ``otod merge`` and an empty ``--out``: bad input gets one line on stderr
(``otod: error: ...`` naming the variable or option), exit code 2, within seconds, and no file written; never a
traceback, a hang (``OTOD_CPU_DEVICES=100000`` hung while JAX started its devices) or a silent default (``=abc``
and ``OTOD_COMPILATION_CACHE=/proc/x`` were ignored, ``--out ''`` wrote into the working folder). What is meant
still runs: ``OTOD_CPU_DEVICES=1``, and a default cache folder that cannot be made (said once, not refused).

Every case runs in a real process (`run_otod_cases`: one process for the table, each case with its own
environment variables).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import is_one_line_refusal
from tests.conftest import run_otod_cases as run_cases

#: A refusal must come well before any sweep could run: the CPU seconds the refusing process may spend (CPU time,
#: which a machine busy with other jobs does not stretch as it stretches wall time).
CPU_SECONDS = 10.0

#: The smallest sweep that runs the whole path (one method: one compiled program; the default four methods take
#: two, and these sweeps run with the cache off or in a fresh process).
COND = ["sweep", "condition", "--k", "1..10:3", "--seeds", "2", "--method", "gd", "--no-plot", "--out", "out"]
FIG = ["figures", "--out", "figs", "condition/zigzag"]


@pytest.fixture(scope="module")
def results_file(tmp_path_factory) -> Path:
    """A small finished condition results file (Parquet), for merge and plot to be given: input to the cases, not a
    case, so the sweep runs in this process (`CliRunner`), sparing a process's start (about 3 s)."""
    from click.testing import CliRunner

    from otod.cli import main

    folder = tmp_path_factory.mktemp("results")
    result = CliRunner().invoke(main, COND[:-1] + [str(folder / "r.parquet")])
    assert result.exit_code == 0, result.output
    return folder / "r.parquet"


#: (args, environment of the case, fragment of the one line). In each case's folder: ``cachefile`` (a regular
#: file), ``notes.txt`` (text that is not figure seconds), ``empty``, ``other.json``, ``binary``, ``folder``;
#: RESULTS stands for the finished results file, CACHEFILE for the case folder's ``cachefile``.
CASES = [
    # -- OTOD_CPU_DEVICES: an integer from 1 to devices.MAX_DEVICES ----------------------------------------------------
    *[(COND, {"OTOD_CPU_DEVICES": v}, f"OTOD_CPU_DEVICES={v}: ") for v in ("0", "-1", "abc", "2.5", "1e9", "100000")],
    (["fit", "RESULTS"], {"OTOD_CPU_DEVICES": "abc"}, "OTOD_CPU_DEVICES=abc: "),
    # -- XLA_FLAGS's host device count: at least 1, and not another count than OTOD_CPU_DEVICES ----------------------
    (COND, {"XLA_FLAGS": "--xla_force_host_platform_device_count=0"},
     "XLA_FLAGS=--xla_force_host_platform_device_count=0: need a whole number of host devices ≥ 1"),
    (COND, {"OTOD_CPU_DEVICES": "1", "XLA_FLAGS": "--xla_force_host_platform_device_count=3"},
     "OTOD_CPU_DEVICES=1 beside XLA_FLAGS=--xla_force_host_platform_device_count=3: two device counts"),
    # -- OTOD_COMPILATION_CACHE: a folder the user names must be usable -----------------------------------------------
    (COND, {"OTOD_COMPILATION_CACHE": "/proc/x"}, "OTOD_COMPILATION_CACHE=/proc/x: cannot be made a folder"),
    (COND, {"OTOD_COMPILATION_CACHE": "CACHEFILE"}, "cachefile: a file, not a folder"),
    (COND, {"OTOD_COMPILATION_CACHE": "CACHEFILE/sub"}, "OTOD_COMPILATION_CACHE="),
    # -- OTOD_WATCHDOG_SECONDS, OTOD_FIGURE_SECONDS --------------------------------------------------------------------
    (COND, {"OTOD_WATCHDOG_SECONDS": "abc"}, "OTOD_WATCHDOG_SECONDS=abc: "),
    (COND, {"OTOD_WATCHDOG_SECONDS": "-5"}, "OTOD_WATCHDOG_SECONDS=-5: "),
    (COND, {"OTOD_WATCHDOG_SECONDS": "1e-9"}, "OTOD_WATCHDOG_SECONDS=1e-9: give a number of seconds ≥ 1 (the shortest"),
    (FIG, {"OTOD_FIGURE_SECONDS": "/proc/x/s.json"}, "OTOD_FIGURE_SECONDS=/proc/x/s.json: "),
    (FIG, {"OTOD_FIGURE_SECONDS": "folder"}, "OTOD_FIGURE_SECONDS=folder: a folder"),
    (FIG, {"OTOD_FIGURE_SECONDS": "notes.txt"}, "OTOD_FIGURE_SECONDS=notes.txt: not a file of figure seconds"),
    # -- otod merge on what is not a share ----------------------------------------------------------------------------
    (["merge", "RESULTS"], {}, "a finished results file (condition sweep, 6 records), not a part file: it is "
                               "merged already; read it with otod fit"),
    (["merge", "other.json"], {}, "part file other.json: a JSON file"),
    (["merge", "empty"], {}, "part file empty: an empty file"),
    (["merge", "folder"], {}, "part file folder: a folder"),
    (["merge", "binary"], {}, "part file binary: a binary file"),
    # -- an empty --out ----------------------------------------------------------------------------------------------
    (COND[:-1] + [""], {}, "--out '': an empty name"),
    (COND[:-1] + ["  "], {}, "--out '  ': an empty name"),
    (["plot", "RESULTS", "--out", ""], {}, "--out '': an empty name"),
    (FIG[:1] + ["--out", ""] + FIG[3:], {}, "--out '': an empty name"),
    # -- once more after the watchdog cases imported JAX in the table's process: still refused ------------------------
    (COND, {"OTOD_CPU_DEVICES": "100000"}, "OTOD_CPU_DEVICES=100000: "),
]


def make_case_folder(folder: Path) -> None:
    """The files a case may be given (`CASES`)."""
    folder.mkdir()
    (folder / "cachefile").write_text("")
    (folder / "notes.txt").write_text("my notes\n")
    (folder / "empty").write_bytes(b"")
    (folder / "other.json").write_text('{"a": 1}\n')
    (folder / "binary").write_bytes(bytes(range(256)) * 4)
    (folder / "folder").mkdir()


def listing(folder: Path) -> dict[str, int]:
    """Every path under ``folder`` with its size (folders -1): what a case must leave as it found it."""
    return {str(p.relative_to(folder)): -1 if p.is_dir() else p.stat().st_size for p in folder.rglob("*")}


def test_bad_environment_and_non_shares_are_one_line_exit_2_and_write_nothing(tmp_path, results_file):
    """Every case of `CASES` in a fresh folder: exit 2, one line with its fragment, no traceback, under `CPU_SECONDS` of CPU time,
    the folder as it was (for the cache named as a regular file: nothing beside it). Every failing case is named,
    with its stderr."""
    folders, runs = [], []
    for i, (args, env, _) in enumerate(CASES):
        folder = tmp_path / f"case{i}"
        make_case_folder(folder)
        folders.append((folder, listing(folder)))

        def concrete(text: str) -> str:
            return text.replace("RESULTS", str(results_file)).replace("CACHEFILE", str(folder / "cachefile"))

        runs.append(([concrete(a) for a in args], folder, {k: concrete(v) for k, v in env.items()}))
    done = run_cases(runs, tmp_path / "captures")
    failed = []
    for (args, env, fragment), (folder, before), (proc, cpu) in zip(CASES, folders, done):
        after = listing(folder)
        if not (is_one_line_refusal(proc, cpu, fragment, CPU_SECONDS, stdout_empty=False) and after == before):
            failed.append(f"{env} otod {' '.join(args)}: exit {proc.returncode} in {cpu:.1f} CPU s, expected one "
                          f"line with {fragment!r}; written: {sorted(set(after) - set(before))}; "
                          f"stderr: {proc.stderr[-600:]}")
    assert not failed, f"{len(failed)} of {len(CASES)} cases:\n" + "\n".join(failed)
    assert listing(results_file.parent) == {results_file.name: results_file.stat().st_size}


def test_one_cpu_device_still_runs_a_sweep(tmp_path):
    (tmp_path / "a").mkdir()
    [(proc, _)] = run_cases([(COND, tmp_path / "a", {"OTOD_CPU_DEVICES": "1"})], tmp_path / "captures")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and len(list((tmp_path / "a" / "out").glob("*.parquet"))) == 1


def test_a_default_cache_folder_that_cannot_be_made_is_said_once_and_the_sweep_runs(tmp_path):
    """Unset, the cache folder is ~/.cache/otod/xla; a HOME where it cannot be made is not the user's choice: one
    line says the run compiles without a cache, and the sweeps run (said once for the process's two runs)."""
    (tmp_path / "a").mkdir()
    env = {"OTOD_COMPILATION_CACHE": None, "HOME": "/proc/otod-home"}
    runs = run_cases([(COND, tmp_path / "a", env), (COND[:-1] + ["out2"], tmp_path / "a", env)],
                     tmp_path / "captures")
    (first, _), (second, _) = runs
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    said = [line for line in first.stderr.splitlines() if line.startswith("otod: ")]
    assert len(said) == 1 and said[0].startswith("otod: no compilation cache: /proc/otod-home/"), first.stderr
    assert "compilation cache" not in second.stderr and "Traceback" not in first.stderr + second.stderr


# -- the checks themselves ---------------------------------------------------------------------------------------


def test_device_counts(monkeypatch):
    import sys

    from otod.core.devices import MAX_DEVICES, requested_devices, use_every_core
    from otod.core.errors import OtodError

    assert "jax" in sys.modules  # imported by conftest: use_every_core sets nothing, but still checks
    monkeypatch.setenv("OTOD_CPU_DEVICES", "abc")
    with pytest.raises(OtodError, match="OTOD_CPU_DEVICES=abc: "):
        use_every_core()
    monkeypatch.setenv("OTOD_CPU_DEVICES", "2")
    assert use_every_core() is None
    flag = "--xla_force_host_platform_device_count"
    monkeypatch.setenv("XLA_FLAGS", f"--xla_cpu_foo=1 {flag}=3")
    with pytest.raises(OtodError, match=f"OTOD_CPU_DEVICES=2 beside XLA_FLAGS={flag}=3: two device counts"):
        use_every_core()
    monkeypatch.setenv("OTOD_CPU_DEVICES", "3")  # the same count twice: no conflict
    assert use_every_core() is None
    from otod.core.devices import flag_devices

    assert flag_devices("") is None and flag_devices("--xla_cpu_foo=1") is None
    assert flag_devices(f"{flag}=4 --xla_cpu_foo=1") == 4 and flag_devices(f"{flag}=2 {flag}=5") == 5
    for bad in ("0", "-2", "x", ""):
        with pytest.raises(OtodError, match=f"XLA_FLAGS={flag}={bad}: need a whole number of host devices ≥ 1"):
            flag_devices(f"{flag}={bad}")

    assert requested_devices("") is None and requested_devices(" 4 ") == 4
    assert requested_devices("1") == 1 and requested_devices(str(MAX_DEVICES)) == MAX_DEVICES
    for bad in ("0", "-1", "abc", "2.5", "1e9", str(MAX_DEVICES + 1)):
        with pytest.raises(OtodError, match=f"OTOD_CPU_DEVICES={bad}: need an integer from 1 to {MAX_DEVICES}"):
            requested_devices(bad)


def test_a_cache_folder_given_to_enable_that_cannot_be_used_is_refused(tmp_path):
    from otod.core.compilation_cache import enable, unusable_folder
    from otod.core.errors import OtodError

    (tmp_path / "f").write_text("")
    assert unusable_folder(tmp_path / "new" / "xla") is None and (tmp_path / "new" / "xla").is_dir()
    assert list((tmp_path / "new" / "xla").iterdir()) == []  # the probe leaves nothing
    assert unusable_folder(tmp_path / "f") == "a file, not a folder"
    assert unusable_folder(tmp_path / "f" / "x").startswith("cannot be made a folder")
    with pytest.raises(OtodError, match="a file, not a folder"):
        enable(tmp_path / "f")


def test_an_empty_out_is_refused_by_both_checks():
    from otod.core.errors import OtodError
    from otod.core.preflight import make_folder, results_out

    for check in (results_out, make_folder):
        for empty in ("", " ", "\t"):
            with pytest.raises(OtodError, match="--out .*: an empty name"):
                check(empty)
