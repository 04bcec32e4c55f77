"""otod.nets.schedule_figures: the panel draws the constant batches at (B·S(B), S(B)) and the schedule at (its
examples, its steps), from a result built on known counts."""

from __future__ import annotations

import numpy as np

from otod.nets.schedule import ScheduleResult, parse_schedule
from otod.nets.schedule_start import PhaseRun
from otod.nets.schedule_stats import compare
from tests.nets.test_schedule_stats import cube


def result():
    rng = np.random.default_rng(0)
    # phases: 10 then 20 steps (every seed), constant: 50, 30, 25 steps at B = 8, 16, 32
    phases = [cube(np.full((1, 1, 5), 10.0), [0.1], (8.0,)), cube(np.full((1, 1, 5), 20.0), [0.1], (16.0,))]
    constant = cube(np.array([50.0, 30.0, 25.0])[:, None, None] + rng.integers(0, 1, (3, 1, 5)), [0.1],
                    (8.0, 16.0, 32.0))
    comparison = compare(phases, (8, 16), constant, n_boot=20)
    runs = (PhaseRun(8, "sgd", 0.1, 0.0, (10,) * 5), PhaseRun(16, "sgd", 0.1, 0.0, (20,) * 5))
    return ScheduleResult(parse_schedule("8@0.3,16@0.1"), 1.0, (0.3, 0.1), runs, (8.0, 16.0, 32.0), comparison,
                          (), "")


def test_panel_puts_each_run_at_its_examples_and_steps():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from otod.nets.schedule_figures import draw

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
