"""``otod figures GROUP/NAME`` runs one figure of a group, not the whole group."""

from __future__ import annotations

import pytest

from otod.core import registry
from otod.core.errors import OtodError
from otod.core.figures import make_figures


@pytest.fixture
def experiments(tmp_path, monkeypatch):
    monkeypatch.setattr("otod.core.figures.SECONDS_FILE", tmp_path / "figure-seconds.json")  # not the user's cache
    ran = []
    registry.register(registry.Obstacle(name="figures-test", summary="",
                                        figure_makers=lambda: {"record": lambda spec, out: ran.append(spec["name"])
                                                               or []}))
    folder = tmp_path / "experiments"
    folder.mkdir()
    (folder / "g.toml").write_text('[a]\nmaker = "record"\n\n[b]\nmaker = "record"\n')
    yield folder, ran
    registry._OBSTACLES.pop("figures-test")


def test_group_slash_name_runs_that_figure_alone(experiments, tmp_path):
    folder, ran = experiments
    make_figures(["g/b"], out_dir=tmp_path, experiments_dir=folder, log=lambda line: None)
    assert ran == ["b"]
    make_figures(["g"], out_dir=tmp_path, experiments_dir=folder, log=lambda line: None)
    assert ran == ["b", "a", "b"]


def test_an_unknown_figure_names_the_group_s_figures(experiments, tmp_path):
    folder, _ = experiments
    with pytest.raises(OtodError, match=r"unknown figure g/c; known in g: a, b"):
        make_figures(["g/c"], out_dir=tmp_path, experiments_dir=folder, log=lambda line: None)


def test_each_figure_gets_a_progress_line_with_an_eta_from_the_last_run(experiments, tmp_path):
    """The first run knows no times (ETA ?), then the mean of what ran; it keeps each figure's seconds, and the
    next run's first line sums them."""
    import json

    from otod.core.figures import eta_seconds

    folder, _ = experiments
    seconds = tmp_path / "seconds.json"
    lines = []
    make_figures(["g"], out_dir=tmp_path, experiments_dir=folder, log=lines.append, seconds_file=seconds)
    assert lines[0] == "figure 1/2 g/a ... (ETA ? for the 2 left)"
    assert lines[2].startswith("figure 2/2 g/b ... (ETA ")
    kept = json.loads(seconds.read_text())
    assert set(kept) == {"g/a", "g/b"}
    seconds.write_text(json.dumps({"g/a": 30.0, "g/b": 90.0}))
    lines.clear()
    make_figures(["g"], out_dir=tmp_path, experiments_dir=folder, log=lines.append, seconds_file=seconds)
    assert lines[0] == "figure 1/2 g/a ... (ETA 2.0 min for the 2 left)"
    # a run twice as slow as the last on what it has done so far is expected to stay twice as slow
    assert eta_seconds({"g/a": 60.0}, ["g/b"], {"g/a": 30.0, "g/b": 90.0}) == 180.0


def test_a_machine_that_never_ran_the_figures_gets_the_shipped_seconds_as_its_eta(experiments, tmp_path):
    """With no times of its own, the first line sums the seconds shipped beside the specs (the development
    machine's); the machine's own last time of a figure wins over the shipped one; only the machine's own times
    are kept."""
    import json

    folder, _ = experiments
    (folder / "figure-seconds.json").write_text(json.dumps({"g/a": 50.0, "g/b": 100.0}))
    seconds, lines = tmp_path / "seconds.json", []
    make_figures(["g"], out_dir=tmp_path, experiments_dir=folder, log=lines.append, seconds_file=seconds)
    assert lines[0] == "figure 1/2 g/a ... (ETA 2.5 min for the 2 left)"
    kept = json.loads(seconds.read_text())
    assert set(kept) == {"g/a", "g/b"} and kept["g/b"] < 10  # measured here, not the shipped 100 s
    seconds.write_text(json.dumps({"g/a": 10.0}))
    lines.clear()
    make_figures(["g"], out_dir=tmp_path, experiments_dir=folder, log=lines.append, seconds_file=seconds)
    assert lines[0] == "figure 1/2 g/a ... (ETA 110 s for the 2 left)"


def test_the_programs_a_figure_compiled_are_released_before_the_next_figure(tmp_path, monkeypatch):
    """Each figure compiles the same jitted program; when figure b starts, JAX holds no compiled copy of it
    (`release_compiled`), and none after the last figure. Without the release all figures in one process kept
    every program's code mapped until the kernel's map limit aborted the process (measured in the 19th of 24)."""
    import jax
    import jax.numpy as jnp

    monkeypatch.setattr("otod.core.figures.SECONDS_FILE", tmp_path / "figure-seconds.json")
    square = jax.jit(lambda x: x * x)
    held_at_start = []

    def compile_one(spec, out):
        held_at_start.append(square._cache_size())
        square(jnp.ones(3)).block_until_ready()
        assert square._cache_size() == 1
        return []

    registry.register(registry.Obstacle(name="figures-release", summary="",
                                        figure_makers=lambda: {"compile": compile_one}))
    folder = tmp_path / "experiments"
    folder.mkdir()
    (folder / "g.toml").write_text('[a]\nmaker = "compile"\n\n[b]\nmaker = "compile"\n')
    try:
        make_figures(["g"], out_dir=tmp_path, experiments_dir=folder, log=lambda line: None)
    finally:
        registry._OBSTACLES.pop("figures-release")
    assert held_at_start == [0, 0]  # b found nothing of a's held (without the release: [0, 1])
    assert square._cache_size() == 0


def test_a_table_is_parsed_into_its_makers_spec_and_an_unknown_key_refused_before_any_figure(tmp_path, monkeypatch):
    """A typed maker's table becomes its spec (defaults from the dataclass, ``name`` from the table's name); a key
    the spec lacks (a misspelt ``kapa``) is refused in one line naming the file, the table, the key and the keys
    known, before the first figure of the group runs; a key it needs and the table lacks likewise."""
    from dataclasses import dataclass

    from otod.core.figures import FigureSpec, TypedMaker

    @dataclass(frozen=True)
    class Spec(FigureSpec):
        kappa: float = 10.0
        steps: int = 3

    drawn = []
    makers = {"typed": TypedMaker(Spec, lambda spec, out: drawn.append(spec) or [])}
    monkeypatch.setattr("otod.core.figures.SECONDS_FILE", tmp_path / "figure-seconds.json")
    registry.register(registry.Obstacle(name="figures-typed", summary="", figure_makers=lambda: makers))
    try:
        folder = tmp_path / "experiments"
        folder.mkdir()
        (folder / "g.toml").write_text('[a]\nmaker = "typed"\nkappa = 100.0\n\n[b]\nmaker = "typed"\nkapa = 1.0\n')
        with pytest.raises(OtodError) as caught:
            make_figures(["g"], out_dir=tmp_path, experiments_dir=folder, log=lambda line: None)
        assert str(caught.value) == ("experiments/g.toml [b]: unknown key kapa for maker 'typed'; known: kappa, "
                                     "maker, steps")
        assert drawn == []  # refused before [a] ran
        make_figures(["g/a"], out_dir=tmp_path, experiments_dir=folder, log=lambda line: None)
        assert drawn == [Spec(name="a", maker="typed", kappa=100.0, steps=3)]
    finally:
        registry._OBSTACLES.pop("figures-typed")


def test_a_sweep_figure_takes_the_sweeps_options_and_refuses_others():
    """A sweep figure's table: its own keys (``results_dir``) as fields, every other key an option of the sweep,
    checked against the option function's parameters (``given`` is not a table's key)."""
    from otod.core.figures import SweepFigureSpec, TypedMaker, parse_figure

    def options_of(*, k="1..10", tol=1e-6, given=frozenset()):
        return k, tol

    maker = TypedMaker(SweepFigureSpec, lambda spec, out: [], options_of)
    spec = parse_figure(maker, {"name": "f", "maker": "m", "k": "1..5", "results_dir": "r"}, "[f]")
    assert spec == SweepFigureSpec(name="f", maker="m", results_dir="r", options={"k": "1..5"})
    with pytest.raises(OtodError, match=r"^\[f\]: unknown keys given, tl for maker 'm'; known: k, maker, "
                                        r"results_dir, tol$"):
        parse_figure(maker, {"name": "f", "maker": "m", "tl": 1, "given": 2}, "[f]")


def test_otod_figures_refuses_an_unknown_key_in_one_line_with_exit_code_2(tmp_path):
    """The command line: a misspelt key of a shipped maker's table (cost's ``ratio_depth``) is one line on stderr
    and exit code 2, nothing computed."""
    import os
    import subprocess
    import sys

    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "cost.toml").write_text('[ratio_depth]\nmaker = "cost-ratio-depth"\ndepht = 3\n')
    env = {**os.environ, "OTOD_FIGURE_SECONDS": str(tmp_path / "s.json")}
    out = subprocess.run([sys.executable, "-m", "otod", "figures", "cost", "--out", str(tmp_path / "f")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "experiments/cost.toml [ratio_depth]: unknown key depht for maker " \
                                "'cost-ratio-depth'; known: batches, depths, image, maker, optimizer" in lines[0]
