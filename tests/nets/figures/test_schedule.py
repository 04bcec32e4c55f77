"""otod.nets.figures.schedule: the panel draws the constant batches at (B·S(B), S(B)) and the schedule at (its
examples, its steps), from a result built on known counts."""

from __future__ import annotations

import numpy as np

from otod.nets.schedule.batch_schedule import ScheduleResult, parse_schedule
from otod.nets.model.schedule_start import PhaseRun
from otod.core.analysis import chosen
from otod.nets.schedule.stats import compare
from tests.nets.schedule.test_stats import cube


def result():
    rng = np.random.default_rng(0)
    # phases: 10 then 20 steps (every seed), constant: 50, 30, 25 steps at B = 8, 16, 32
    phases = [cube(np.full((1, 1, 5), 10.0), [0.1], (8.0,)), cube(np.full((1, 1, 5), 20.0), [0.1], (16.0,))]
    constant = cube(np.array([50.0, 30.0, 25.0])[:, None, None] + rng.integers(0, 1, (3, 1, 5)), [0.1],
                    (8.0, 16.0, 32.0))
    comparison = compare([chosen(p) for p in phases], (8, 16), chosen(constant), n_boot=20)
    runs = (PhaseRun(8, "sgd", 0.1, 0.0, (10,) * 5), PhaseRun(16, "sgd", 0.1, 0.0, (20,) * 5))
    return ScheduleResult(parse_schedule("8@0.3,16@0.1"), 1.0, (0.3, 0.1), runs, (8.0, 16.0, 32.0), comparison,
                          (), "")


def test_panel_puts_each_run_at_its_examples_and_steps():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from otod.nets.figures.schedule import draw

    r = result()
    fig, ax = plt.subplots()
    draw(ax, "toy", [r])
    constant, schedule = ax.containers[0].lines[0], ax.containers[-1].lines[0]  # errorbar's data lines
    np.testing.assert_allclose(constant.get_xdata(), [400, 480, 800])
    np.testing.assert_allclose(constant.get_ydata(), [50, 30, 25])
    np.testing.assert_allclose(np.asarray(schedule.get_xdata(), float), [400])   # 8·10 + 16·20
    np.testing.assert_allclose(np.asarray(schedule.get_ydata(), float), [30])
    # the legend gives the ratio to the constant frontier at the schedule's 400 examples: B = 8's 50 steps, 30/50
    assert "0.60 [0.60, 0.60]× the constant frontier's steps" in ax.get_legend_handles_labels()[1][-1]
    plt.close(fig)


def test_maker_writes_one_panel_per_workload_with_its_caption(tmp_path, monkeypatch):
    import otod.nets.figures.schedule as sf
    from otod.core.plotting import plt

    asked = []
    monkeypatch.setattr(sf, "measured", lambda w: (asked.append(w), [result()] * len(w.schedules))[1])
    drawn = []
    real_draw = sf.draw
    monkeypatch.setattr(sf, "draw", lambda ax, label, results, first=1: (real_draw(ax, label, results, first),
                                                                          drawn.append((ax, label, first))))
    spec = {"maker": "nets-schedule", "name": "schedule",
            "workloads": [{"label": "A", "schedules": ["8@0.3,16@0.1", "doubling:8..16@0.1"], "seeds": 3},
                          {"label": "B", "data": "teacher", "schedules": ["8@0.3,16@0.1"]}]}
    files = sf.MAKERS["nets-schedule"](spec, tmp_path)
    assert files and all(f.exists() for f in files) and files[0].name == "nets_schedule.png"
    assert [(w.label, w.options) for w in asked] == [("A", {"seeds": 3}), ("B", {"data": "teacher"})]
    # two panels, the second's schedule styled after the first panel's two
    assert [(label, first) for _, label, first in drawn] == [("A", 1), ("B", 3)]
    titles = [d[0].get_title() for d in drawn]  # lettered by save: a figure of two panels
    assert titles == ["(a) A: to training loss 0.1", "(b) B: to training loss 0.1"]
    assert "frontier" in (tmp_path / "nets_schedule.caption.txt").read_text()
    plt.close("all")


def test_measured_passes_the_nets_options_and_each_schedule(monkeypatch):
    import otod.nets.schedule.batch_schedule as schedule_module
    from otod.nets.figures.schedule import Workload, measured

    calls = []
    monkeypatch.setattr(schedule_module, "batch_schedule", lambda s, **o: calls.append((s, o)) or s)
    workload = Workload(label="A", schedules=("8@0.3", "16@0.2"), options={"data": "teacher", "seeds": 3})
    assert measured(workload) == ["8@0.3", "16@0.2"]
    assert calls == [("8@0.3", {"data": "teacher", "seeds": 3}), ("16@0.2", {"data": "teacher", "seeds": 3})]
