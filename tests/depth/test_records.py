"""(lr, β) chosen by the median over seeds: β with the lowest median, censored lanes worst, ties to the smaller β;
the series of a depth sweep are method·init."""

from __future__ import annotations

from pathlib import Path

from otod.core import results as results_io
from otod.core.analysis import frame_of
from otod.depth.records import analysis_of, depth_analysis
from otod.depth.report import text_report


def rows(beta, counts, censored=()):
    return [{"depth": 2.0, "init": 0.0, "method": "heavy-ball", "beta": beta, "seed": s,
             "iterations": c, "status": "censored" if s in censored else "converged"} for s, c in enumerate(counts)]


def chosen_betas(records) -> set:
    analysis = analysis_of(frame_of(records), axis="depth", point=("depth", "init", "beta"))
    assert [s.name for s in analysis.series] == ["heavy-ball·identity"]
    return set(analysis.chosen["beta"])


def test_the_beta_with_the_lowest_median_wins_not_the_luckiest_seed():
    """β = 0.9 has the single best seed (1) but a median of 50; β = 0.5 has median 20 and wins."""
    assert chosen_betas(rows(0.5, [20, 20, 21]) + rows(0.9, [1, 50, 60])) == {0.5}


def test_censored_lanes_count_as_worst_and_ties_go_to_the_smaller_beta():
    records = rows(0.0, [30, 30, 30]) + rows(0.5, [5, 5, 5], censored=(0, 1)) + rows(0.9, [30, 30, 30])
    assert chosen_betas(records) == {0.0}


# -- records carry the init by name; files written before that (codes) load with names --------------------------

import json  # noqa: E402

import numpy as np  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from otod.depth.linear import INITS  # noqa: E402


@pytest.fixture(scope="module")
def small_sweep(tmp_path_factory):
    """Depth 1..2, identity and xavier, 2 seeds at the reference step, tol 1e-3: a new-style results file (JSON,
    which these tests read as text)."""
    from otod.core.sweep import run_sweep
    from otod.depth.options import depth_config_from_options

    config = depth_config_from_options(depth="1..2", init="identity,xavier", seeds=2, lr="theory", tol=1e-3)
    return run_sweep(config, path=tmp_path_factory.mktemp("results") / "depth.json")


def old_style_copy(results, path):
    """The same file as otod wrote it before the init axis had labels: codes in the records, no labels in the
    metadata, the chunk checksums recomputed over those records (so `load` verifies it as a genuine file), and no
    metadata checksum (otod wrote none then)."""
    payload = json.loads(results.path.read_text())
    records = [{**r, "init": float(INITS.index(r["init"]))} for r in payload["records"]]
    meta = payload["meta"]
    meta["axes"] = [{k: v for k, v in a.items() if k != "labels"} for a in meta["axes"]]
    del meta["meta_sha256"]
    start = 0
    for chunk in meta["chunks"]:
        chunk["sha256"] = results_io.records_checksum(records[start:start + chunk["lanes"]])
        start += chunk["lanes"]
    path.write_text(json.dumps({**payload, "meta": meta, "records": records}))
    return path


def test_records_carry_the_init_by_name_in_memory_and_on_disk(small_sweep):
    on_disk = json.loads(small_sweep.path.read_text())
    assert {r["init"] for r in on_disk["records"]} == {"identity", "xavier"}
    assert {r["init"] for r in small_sweep.records} == {"identity", "xavier"}
    assert [a.get("labels") for a in on_disk["meta"]["axes"] if a["name"] == "init"] == [list(INITS)]


def test_an_old_file_with_init_codes_loads_with_names(small_sweep, tmp_path):
    path = old_style_copy(small_sweep, tmp_path / "old.json")
    assert {r["init"] for r in json.loads(path.read_text())["records"]} == {0.0, 2.0}
    old = results_io.load(path)
    assert [r["init"] for r in old.records] == [r["init"] for r in small_sweep.records]
    assert [r["iterations"] for r in old.records] == [r["iterations"] for r in small_sweep.records]


def test_tables_and_legends_show_init_names_for_old_and_new_files(small_sweep, tmp_path):
    from otod.depth.figures import draw_series
    from otod.depth.records import depth_analysis
    from otod.depth.report import text_report

    for results in (small_sweep, results_io.load(old_style_copy(small_sweep, tmp_path / "old.json"))):
        text = text_report(results)
        assert "gd·identity" in text and "gd·xavier" in text
        fig, ax = plt.subplots()
        draw_series(ax, depth_analysis(results).series, "depth")
        labels = ax.get_legend_handles_labels()[1]
        plt.close(fig)
        assert sorted(label.split(":")[0] for label in labels) == ["gd·identity", "gd·xavier"]


def test_otod_plot_draws_an_old_file_with_init_names(small_sweep, tmp_path):
    from click.testing import CliRunner

    from otod.cli import main

    path = old_style_copy(small_sweep, tmp_path / "old.json")
    out = CliRunner().invoke(main, ["plot", str(path), "--out", str(tmp_path / "figs")])
    assert out.exit_code == 0, out.output
    assert (tmp_path / "figs" / "old.png").is_file()


FORMAT2 = Path(__file__).parents[1] / "fixtures" / "depth-format2-lr_selected.json"


def test_otod_fit_on_a_file_written_before_the_one_pipeline_gives_the_new_analysis():
    """The fixture was written by otod 992b4aa (``otod sweep depth --depth 2..4 --method heavy-ball --beta 0,0.9
    --init xavier --seeds 3 --lr-grid 0.5,1``): its ``lr_selected`` marks name the best rate at every β (18
    records), then β was chosen apart. The analysis chooses (lr, β) together from the counts: one setting per
    depth among the old marks (9 records), and the law that version printed (exponential, b = 2.73, c = 0.987;
    its CIs then, [2.33, 3.7] and [0.847, 1.28], came from a bootstrap over 3 seeds, 10 distinct resamples, and
    are now withheld, with the reason: issue 34); ``otod fit`` prints the analysis's report."""
    from click.testing import CliRunner

    from otod.cli import main

    old = results_io.load(FORMAT2)
    assert all("lr_selected" in r and "selected" not in r for r in old.records)
    analysis = depth_analysis(old)
    chosen = analysis.chosen
    assert len(chosen) == 9 and chosen.groupby("depth")[["lr_multiplier", "beta"]].nunique().eq(1).all().all()
    assert set(chosen.index) <= {i for i, r in enumerate(old.records) if r["lr_selected"]}
    (fit,) = analysis.groups[0].fits
    assert fit.law == "exponential"
    assert " ".join(f"{v:.3g}" for v in (fit.power_b, *fit.power_ci, fit.exp_c, *fit.exp_ci)) == \
        "2.73 nan nan 0.987 nan nan"
    out = CliRunner().invoke(main, ["fit", str(FORMAT2)])
    assert out.exit_code == 0, out.output
    assert out.output == f"{FORMAT2}\n{text_report(old, analysis=analysis)}\n"
    assert out.output.count("no CI: 3 seeds give 10 distinct bootstrap resamples; a CI needs ≥ 5 seeds") == 2


def test_a_sweep_whose_chunks_split_the_betas_chooses_one_lr_and_beta_per_point(tmp_path):
    """Every traced point (init, β) its own chunk: a point's β values lie in different chunks. The analysis, made
    once the file is in, chooses one (lr, β) per depth (every seed's record there); the file carries no marks."""
    from otod.core.plan import plan
    from otod.core.sweep import run_sweep
    from otod.depth.options import depth_config_from_options

    config = depth_config_from_options(depth="1..2", init="xavier", method="heavy-ball", beta="0,0.9", seeds=2,
                                       lr="tuned", lr_grid="0.5,1", tol=1e-3, max_iters=300, chunk_seconds=1e-9)
    assert len(plan(config)) == 4
    results = run_sweep(config, out_dir=tmp_path)
    assert not any("selected" in r for r in results.records)
    chosen = depth_analysis(results).chosen
    assert len(chosen) == 2 * 2
    assert len({(r.depth, r.lr_multiplier, r.beta) for r in chosen.itertuples()}) == 2
    assert results_io.load(results.path).records == results.records


def test_the_depth_report_warns_where_a_choice_sits_on_an_edge():
    """heavy-ball at depth 2: rates 0.5, 1, 2 × β 0, 0.9, best at (2, 0.9): on the lr grid's top and β's top; at
    depth 3 best at (1, 0): interior lr, β on its bottom edge, 0, its true limit (no warning). gd gives the same
    counts at every β (it ignores β): its β = 0 choice is no β edge, and its interior best rate 1 no lr edge. So
    3 of the 4 chosen rates are interior; with the lists given (``given``), the ends are the user's lists'."""
    import pandas as pd

    from otod.depth.records import analysis_of
    from otod.depth.report import edge_lines

    rows = []
    for depth, best in ((2.0, (2.0, 0.9)), (3.0, (1.0, 0.0))):
        for rate in (0.5, 1.0, 2.0):
            for beta in (0.0, 0.9):
                for seed in range(3):
                    hb = 50 if (rate, beta) == best else 100 + 10 * rate + 100 * beta
                    gd = 60 if rate == 1.0 else 90
                    rows += [{"method": m, "depth": depth, "seed": seed, "lr_multiplier": rate, "beta": beta,
                              "status": "converged", "iterations": n + seed}
                             for m, n in (("heavy-ball", hb), ("gd", gd))]
    (group,) = analysis_of(pd.DataFrame(rows), axis="depth", point=("depth", "beta"), n_boot=10).groups
    assert edge_lines(group.summary, "L") == [
        "lr* (the chosen rate) lies inside the rates tried at 3 of 4 points",
        "warning: lr* lies on the end of the default grid, tried as given: the best rate may lie beyond it; widen "
        "--lr-grid (heavy-ball at L = 2)",
        "warning: β* lies on the end of the default β list, 0.999 (heavy-ball at L = 2): the best β may lie beyond "
        "it; widen --beta"]
    (group,) = analysis_of(pd.DataFrame(rows), axis="depth", point=("depth", "beta"), n_boot=10,
                           given=("lr", "beta")).groups
    assert edge_lines(group.summary, "L")[1:] == [
        "warning: lr* lies on the end of the --lr-grid given: the best rate may lie beyond it; widen --lr-grid or add "
        "--lr-extend N (heavy-ball at L = 2)",
        "warning: β* lies on the end of the --beta list given (heavy-ball at L = 2): the best β may lie beyond it; "
        "widen --beta"]


def test_depth_and_toy_bracket_beta_beyond_the_default_lists_0999_and_try_a_given_list_as_given():
    """Heavy-ball's and Adam's β on the depth and toy sweeps' default list (0, 1 − 10^(−j/2), j = 1…6) continue
    towards 1 at half a decade of 1 − β a step, 10^(−3.5) first, down to the run's float limit
    (`otod.core.bracket.beta_floor`: 9.3·10⁻¹⁵ in float64, 5.0·10⁻⁶ in float32; the ladder stops at the last
    half decade at or above it); a --beta list the user gave, or
    a sweep of gd alone (β 0 only), gets none."""
    from otod.core.bracket import beta_floor
    from otod.depth.options import depth_config_from_options, toy_config_from_options
    from otod.depth.kind import depth_betas

    for x64 in (True, False):
        config = depth_config_from_options(method="heavy-ball", depth="1..3", x64=x64)
        ladder = depth_betas(config)
        gaps = [1 - b for b in ladder]
        floor = beta_floor(config.resolved_x64)
        # the list's 0.996838 is rounded to 6 digits: its last ratio of 1 − β is 3.162, not √10, to 1e-4
        assert gaps[0] == pytest.approx(10 ** -3.5, rel=1e-4)
        assert gaps[-1] >= floor > gaps[-1] / 3.162, (x64, gaps[-1], floor)  # down to the float limit, not past
        np.testing.assert_allclose(np.diff(np.log10(gaps)), -0.5, rtol=2e-3)  # β a float: 1 − β to 0.1% near 1e-13
    toy = depth_betas(toy_config_from_options(method="adam"))
    assert toy and 1 - toy[0] == pytest.approx(10 ** -3.5, rel=1e-4)
    assert depth_betas(toy_config_from_options(method="gd")) == ()
    assert depth_betas(depth_config_from_options(method="heavy-ball", beta="0,0.9,0.99")) == ()
    assert depth_betas(depth_config_from_options(method="gd")) == ()
