"""``otod figures GROUP/NAME`` runs one figure of a group, not the whole group."""

from __future__ import annotations

import pytest

from otod.core import registry
from otod.core.errors import OtodError
from otod.core.figures import make_figures


@pytest.fixture
def experiments(tmp_path):
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
