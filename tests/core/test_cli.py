"""The shared command helpers: the progress line shows on a terminal only."""

import io

from otod.core.cli import count_progress, terminal_progress


class Terminal(io.StringIO):
    def isatty(self):
        return True


EVENT = {"lanes_done": 400, "lanes_total": 1600, "elapsed": 3.0, "lanes_per_second": 133.3, "eta": 9.0,
         "chunk": "0/gd/0"}


def test_progress_shows_lanes_rate_and_eta_on_a_terminal_after_a_few_seconds():
    tty = Terminal()
    report = terminal_progress(tty)
    report({**EVENT, "elapsed": 0.5})
    assert tty.getvalue() == ""  # short sweeps stay quiet
    report(EVENT)
    assert "400/1600 lanes, 133 lanes/s, ETA 9 s" in tty.getvalue()


def test_progress_is_silent_when_not_a_terminal():
    pipe = io.StringIO()
    terminal_progress(pipe)(EVENT)
    assert pipe.getvalue() == ""


def test_a_measurement_in_parts_shows_parts_done_elapsed_and_eta_from_the_mean_part():
    """After 3 of 5 checkpoints in 30 s: 10 s a part, so 20 s left; quiet before 2 s and on a pipe; a newline at
    the end."""
    now = [0.0]
    tty, pipe = Terminal(), io.StringIO()
    report, quiet = (count_progress("curvature checkpoints", s, clock=lambda: now[0]) for s in (tty, pipe))
    now[0] = 1.0
    report(1, 5)
    assert tty.getvalue() == ""
    now[0] = 30.0
    report(3, 5)
    quiet(3, 5)
    assert tty.getvalue() == "\rcurvature checkpoints: 3/5, 30 s, ETA 20 s   " and pipe.getvalue() == ""
    now[0] = 50.0
    report(5, 5)
    assert tty.getvalue().endswith("5/5, 50 s, ETA 0 s   \n")


# -- the checks made before a sweep, plot or figures command writes or allocates anything -------------------------


def test_results_out_accepts_folders_and_results_files_and_refuses_other_extensions(tmp_path):
    import pytest

    from otod.core.errors import OtodError
    from otod.core.preflight import results_out

    (tmp_path / "runs.v2").mkdir()
    for good in ("results", "runs/", "x.parquet", "x.json", "runs/big.npz", str(tmp_path / "runs.v2")):
        assert results_out(good) == good
    for bad in ("x.csv", "runs/table.txt"):
        with pytest.raises(OtodError, match="--out"):
            results_out(bad)
    (tmp_path / "notes").write_text("a file")
    with pytest.raises(OtodError, match="not a results file"):
        results_out(str(tmp_path / "notes"))


def test_a_command_of_several_sweeps_gives_each_its_own_file_beside_a_named_one():
    """``--out FILE.parquet`` with ``--batch-schedule`` or ``--branch-at``: FILE-<name>.parquet per sweep, in the
    same folder and format; a folder is left as it is (each sweep's file is named by its config there)."""
    from otod.core.preflight import part_out

    assert part_out("runs/s.parquet", "phase1") == "runs/s-phase1.parquet"
    assert part_out("a.b/x.json", "step30") == "a.b/x-step30.json"
    assert part_out("x.npz", "constant") == "x-constant.npz"
    assert part_out("runs/", "step30") == "runs/" and part_out("results", "constant") == "results"


def test_an_out_that_cannot_be_written_is_refused_before_anything_is_made(tmp_path):
    """`refuse_unwritable`: a new nested folder or results file under a writable folder passes and nothing is
    created; under a file, or in /proc (no file can be made there), it is refused naming the nearest folder."""
    import pytest

    from otod.core.errors import OtodError
    from otod.core.preflight import refuse_unwritable

    for good in (tmp_path / "a" / "b", tmp_path / "a" / "r.parquet", tmp_path):
        refuse_unwritable(good)
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "f").write_text("")
    with pytest.raises(OtodError, match=r"--out .*f/sub/r.json: .*f is a file, not a folder"):
        refuse_unwritable(tmp_path / "f" / "sub" / "r.json")
    with pytest.raises(OtodError, match=r"--out /proc/otod/x: cannot write in /proc \("):
        refuse_unwritable("/proc/otod/x")


def test_make_folder_refuses_what_cannot_be_created(tmp_path):
    import pytest

    from otod.core.errors import OtodError
    from otod.core.preflight import make_folder

    assert make_folder(tmp_path / "a" / "b").is_dir()
    (tmp_path / "f").write_text("")
    for bad in (tmp_path / "f", tmp_path / "f" / "sub"):
        with pytest.raises(OtodError, match="--out"):
            make_folder(bad)


def test_the_sampled_estimate_is_the_estimate_for_small_grids_and_close_for_long_ones():
    from otod.condition.options import sweep_config_from_options
    from otod.core.preflight import SAMPLE_POINTS, full_estimate, thinned
    from otod.core.plan import estimate

    small = sweep_config_from_options(k="1..50", seeds=2, method="gd")
    assert thinned(small) == (small, 1.0)
    exact, sampled = estimate(small), full_estimate(small)
    assert (sampled.lanes, sampled.lane_iterations, sampled.bytes) == (exact.lanes, exact.lane_iterations, exact.bytes)
    long = sweep_config_from_options(k="1..5000", seeds=2, method="gd")
    sample, scale = thinned(long)
    kappas = sample.values("kappa")
    assert len(kappas) == SAMPLE_POINTS and (kappas[0], kappas[-1]) == (1.0, 5000.0) and scale == 10.0
    exact, sampled = estimate(long), full_estimate(long)
    assert sampled.lanes == exact.lanes and sampled.bytes == exact.bytes
    assert abs(sampled.lane_iterations / exact.lane_iterations - 1) < 0.05
