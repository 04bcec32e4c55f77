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
