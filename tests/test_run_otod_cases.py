"""The test helper `tests.conftest.run_otod_cases`, which the bad-input tables rely on: each case's exit code and
output are its own, a case that ends the process is recorded and the cases after it still run, and a process
that does not answer within the timeout is killed and its case recorded."""

from __future__ import annotations

import math

from tests.conftest import run_otod_cases


def test_each_case_keeps_its_own_exit_code_and_output_and_a_dead_process_loses_only_its_case(tmp_path):
    (tmp_path / "a").mkdir()
    runs = run_otod_cases([(["--version"], tmp_path / "a"),
                           (["fit", "missing.json"], tmp_path / "a"),
                           (["--version"], tmp_path / "gone"),  # chdir fails outside the call: the process dies
                           (["sweep", "condition", "--k", "abc"], tmp_path / "a")], tmp_path / "captures")
    (version, s1), (missing, s2), (dead, s3), (bad_k, s4) = runs
    assert (version.returncode, version.stderr) == (0, "") and version.stdout.startswith("otod, version")
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.startswith("otod: error: results file missing.json: no such file")
    assert dead.returncode == 1 and "FileNotFoundError" in dead.stderr and math.isnan(s3)
    assert bad_k.returncode == 2 and bad_k.stderr.startswith("otod: error: --k abc")
    assert all(0 <= s < math.inf for s in (s1, s2, s4))  # each answered case's own seconds


def test_a_process_that_does_not_answer_in_time_is_killed_and_its_case_recorded(tmp_path, monkeypatch):
    """Each process is made to wait for a signal that never comes before its first case, so it answers in no
    time at all, however fast the machine: each case is killed at the timeout and recorded, and the next case
    runs in a new process."""
    driver = run_otod_cases.__globals__["_CASES_DRIVER"]
    monkeypatch.setitem(run_otod_cases.__globals__, "_CASES_DRIVER", "import signal\nsignal.pause()\n" + driver)
    (tmp_path / "a").mkdir()
    runs = run_otod_cases([(["--version"], tmp_path / "a")] * 2, tmp_path / "captures", timeout=1)
    assert [proc.returncode for proc, _ in runs] == [None, None]
    assert all("no answer within 1 s" in proc.stderr and math.isnan(s) for proc, s in runs)


def test_a_case_may_carry_environment_variables_for_itself_only(tmp_path):
    """A case ``(args, cwd, env)`` runs with ``env`` set (None removes a variable), and the next case runs in the
    environment before it: OTOD_CPU_DEVICES=abc refuses one ``otod fit``, not the one after it."""
    (tmp_path / "a").mkdir()
    runs = run_otod_cases([(["fit", "missing.json"], tmp_path / "a", {"OTOD_CPU_DEVICES": "abc"}),
                           (["fit", "missing.json"], tmp_path / "a"),
                           (["fit", "missing.json"], tmp_path / "a", {"OTOD_CPU_DEVICES": None})],
                          tmp_path / "captures")
    (bad, _), (after, _), (removed, _) = runs
    assert bad.returncode == 2 and bad.stderr.startswith("otod: error: OTOD_CPU_DEVICES=abc: "), bad.stderr
    for proc in (after, removed):
        assert proc.returncode == 2 and proc.stderr.startswith("otod: error: results file missing.json: no such file")
