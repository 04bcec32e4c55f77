"""The predictor-ratio figure (`otod.nets.figures.predictors`), drawn from a synthetic along-training result whose
numbers the test chooses: each predictor's ratio and its joint-CI bars, the line at 1, a checkpoint off the grid
left out, the ablation's variants not drawn, and the best predictor in the caption."""

from __future__ import annotations

import numpy as np

from otod.nets.along.branching import AlongTrainingResult, Branching, Checkpoint
from tests.nets.along.test_branching import point


def _result() -> AlongTrainingResult:
    """B_crit 10, 20 and 2 (the last below the batches 8..64: no ratio); B_simple 20, 60, 9 on every seed
    (ratios 2, 3), NQM C∝H 10, 20 (ratios 1, 1) with joint CIs given; an ablation variant beside them."""
    cps = []
    for step, b_crit, simple, nqm in ((0, 10.0, 20.0, 10.0), (100, 20.0, 60.0, 20.0), (1000, 2.0, 9.0, 3.0)):
        cis = {"sgd": {"b_simple": (0.5 * simple / b_crit, 2 * simple / b_crit), "nqm_scaled": (0.8, 1.25)}}
        cps.append(Checkpoint(step, 1.0, (1.0,) * 3, 0.5, (point(b_crit, (0.8 * b_crit, 1.25 * b_crit)),), None,
                              (simple,) * 3, (), {"nqm_scaled": (nqm,) * 3, "ablation_fractional": (1.0,) * 3}, cis))
    return AlongTrainingResult(tuple(cps), Branching((0, 100, 1000)), {"seeds": 3}, "")


def test_draws_each_predictor_s_ratio_with_its_joint_ci():
    from otod.core.plotting import plt
    from otod.nets.figures.predictors import caption, draw

    result = _result()
    fig, ax = plt.subplots()
    assert draw(result.rows(), ax) == ["b_simple", "nqm_scaled"]     # the ablation's variant is not drawn
    lines = {c.get_label(): c for c in ax.containers}
    simple = lines["B_simple"]
    np.testing.assert_allclose(simple.lines[0].get_ydata(), [2.0, 3.0])   # step 1000: B_crit off the grid
    bars = simple.lines[2][0].get_segments()
    np.testing.assert_allclose([(s[0][1], s[1][1]) for s in bars], [(1.0, 4.0), (1.5, 6.0)])
    np.testing.assert_allclose(lines["NQM C∝H"].lines[0].get_ydata(), [1.0, 1.0])
    assert any(np.allclose(ln.get_ydata(), 1.0) for ln in ax.get_lines())
    assert ax.get_yscale() == "log" and ax.get_xscale() == "symlog"
    assert "Best: NQM C∝H, typical miss ×1 " in caption(result)
    plt.close(fig)


def test_the_maker_draws_the_tables_net_through_the_registry(tmp_path, monkeypatch):
    """The smoke test of ``nets-predictor-ratios`` (issue 53): experiments/nets.toml's ``predictor_ratios_digits``
    at checkpoints 0, 100, 1000, run as ``otod figures`` runs it (`tests.smoke.draw_tiny`), the branching
    measurement stood in for by `_result` (its numbers chosen above): the maker asks for the table's checkpoints and
    the NQM with the branching run's batch, rate and fraction, and draws one column wide, titled as the table says, each predictor's ratio to the measured B_crit,
    its caption naming the checkpoints and the best predictor."""
    import otod.nets.along.branching as branching
    from tests.smoke import assert_printed_width, close_all, draw_tiny

    asked = []

    def measure(checkpoints, nqm=False, **options):
        asked.append((checkpoints, nqm, options))
        return _result()

    monkeypatch.setattr(branching, "critical_batch_along_training", measure)
    drawn = draw_tiny("nets", "predictor_ratios_digits", tmp_path, monkeypatch, checkpoints=[0, 100, 1000])
    # the typed spec passes the branching run's settings as the table (here their defaults) gives them
    assert asked == [((0, 100, 1000), True, {"branch_batch": 32, "branch_lr": 0.1, "fraction": 0.5})]
    assert [f.name for f in drawn.files] == ["nets_predictor_ratios_digits.png", "nets_predictor_ratios_digits.pdf"]
    assert_printed_width(drawn, columns=1)
    caption = drawn.caption()
    assert "Checkpoints t = 0, 100, 1000 of each seed's reference run" in caption
    assert "Best: NQM C∝H, typical miss ×1 " in caption
    (fig,) = drawn.figures
    ax = fig.axes[0]
    assert ax.get_title() == "digits MLP (P = 2,410)"
    lines = {c.get_label(): c for c in ax.containers}
    np.testing.assert_allclose(lines["B_simple"].lines[0].get_ydata(), [2.0, 3.0])
    np.testing.assert_allclose(lines["NQM C∝H"].lines[0].get_ydata(), [1.0, 1.0])
    close_all(drawn)
