"""The learning rate bracketed beyond its grid (`otod.core.bracket`): the rates beyond each end, which choices ask
for one, the small sweeps that run them, and, end to end (slow), the optimum theory places beyond a grid found
within one step of it, with the sweep's own lanes kept and nothing run twice."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

import otod.condition  # noqa: F401  registers the condition sweep
from otod.core import bracket
from otod.core.config import DEFAULT_LR_GRID, SweepConfig
from otod.core.errors import OtodError


def condition_config(**kwargs) -> SweepConfig:
    from otod.condition.options import condition_sweep

    return condition_sweep((4.0, 9.0), methods=("gd", "newton"), lr="tuned", seeds=2, **kwargs)


def test_the_ladder_continues_each_end_at_its_own_ratio():
    up = (3.0 / 0.1) ** (1 / 11)  # the default grid: 12 log-spaced from 0.1 to 3 (and 1)
    assert bracket.ladder(DEFAULT_LR_GRID, +1, 3) == pytest.approx([3 * up, 3 * up ** 2, 3 * up ** 3], rel=1e-12)
    assert bracket.ladder(DEFAULT_LR_GRID, -1, 2) == pytest.approx([0.1 / up, 0.1 / up ** 2], rel=1e-12)
    # each value computed from the end, so a rate is the same float in every round
    assert bracket.ladder((1.0, 2.0), +1, 4)[3] == 2.0 * 2.0 ** 4 == 32.0
    assert bracket.ladder((1.0,), +1, 4) == [] and bracket.ladder((1.0, 2.0), +1, 0) == []


@pytest.mark.parametrize("text, steps", [("0", 0), ("4", 4), ("64", 64), (12, 12)])
def test_lr_extend_takes_whole_steps_up_to_64(text, steps):
    assert bracket.check_steps(text) == steps


@pytest.mark.parametrize("text", ["-1", "65", "1.5", "nan", "inf", "-inf", "many", ""])
def test_lr_extend_refuses_anything_else(text):
    with pytest.raises(OtodError, match="--lr-extend"):
        bracket.check_steps(text)


def test_the_default_grid_is_bracketed_and_a_given_one_tried_as_given():
    assert bracket.default_steps(condition_config()) == bracket.DEFAULT_STEPS
    assert bracket.default_steps(condition_config(lr_grid=(0.5, 1.0))) == 0
    given = {"config": condition_config(lr_grid=(0.5, 1.0)).to_dict()}
    assert bracket.lr_given(given) and not bracket.lr_given({"config": condition_config().to_dict()})
    assert not bracket.lr_given({**given, "bracket": {"lr_steps": 3}})  # extended: its end is not the user's
    with pytest.raises(OtodError, match="--lr-extend 2: only a rate tuned"):
        from otod.condition.options import condition_sweep

        bracket.lr_extend_option({"lr_extend"}, "2", condition_sweep((4.0,), methods=("gd",), lr="theory"))
    assert bracket.lr_extend_option(set(), "2", condition_config()) is None


def records_of(counts: dict[tuple[str, float, float], tuple[str, int]], seeds: int = 2) -> list[dict]:
    """Records of a condition sweep: (method, κ, rate) → (status, iterations), the same on every seed."""
    return [{"kappa": k, "method": m, "seed": s, "lr_multiplier": r, "learning_rate": r, "status": st,
             "iterations": it} for (m, k, r), (st, it) in counts.items() for s in range(seeds)]


def choices(config: SweepConfig, records: list[dict], by: tuple[str, ...] = ()):
    """The choices the bracket's search reads (`otod.core.analysis.placements`: the analysis's choice on the
    point estimates, no bootstrap), over every axis but β, split by ``by`` as a kind's groups split a sweep."""
    from otod.core.analysis import frame_of, placements

    return placements(frame_of(records), point=tuple(n for n, _ in config.axes), by=by)


def test_only_a_choice_on_an_edge_asks_for_the_next_rate_beyond_it():
    config = condition_config(lr_grid=(0.5, 1.0, 2.0))
    counts = {("gd", 4.0, 0.5): ("converged", 30), ("gd", 4.0, 1.0): ("converged", 20),  # best inside
              ("gd", 4.0, 2.0): ("converged", 25),
              ("gd", 9.0, 0.5): ("converged", 30), ("gd", 9.0, 1.0): ("converged", 20),  # best on the top
              ("gd", 9.0, 2.0): ("converged", 10),
              ("newton", 4.0, 0.5): ("converged", 3), ("newton", 4.0, 1.0): ("converged", 5),  # best at the bottom
              ("newton", 4.0, 2.0): ("diverged", 1),
              ("newton", 9.0, 0.5): ("converged", 9), ("newton", 9.0, 1.0): ("converged", 1),  # inside, limit
              ("newton", 9.0, 2.0): ("diverged", 1)}
    wanted, stuck = bracket.requests(config, choices(config, records_of(counts)), steps=3)
    assert sorted(wanted) == [("gd", (("kappa", 9.0),), 4.0), ("newton", (("kappa", 4.0),), 0.25)]
    assert stuck == 0
    # with the extension run (4.0 better still, 0.25 worse): gd asks for 8.0, newton is inside
    counts.update({("gd", 9.0, 4.0): ("converged", 8), ("newton", 4.0, 0.25): ("converged", 6)})
    wanted, _ = bracket.requests(config, choices(config, records_of(counts)), steps=3)
    assert wanted == [("gd", (("kappa", 9.0),), 8.0)]
    # no steps left: the choice stays on the edge, counted as stuck, nothing asked
    assert bracket.requests(config, choices(config, records_of(counts)), steps=1) == ([], 1)


def test_the_small_sweeps_keep_the_sweeps_cap_precision_and_seeds():
    config = condition_config(lr_grid=(0.5, 1.0, 2.0))
    subs = bracket.sub_configs(config, [bracket.Request("gd", (("kappa", 9.0),), 4.0),
                                        bracket.Request("gd", (("kappa", 4.0),), 4.0),
                                        bracket.Request("newton", (("kappa", 4.0),), 0.25)])
    assert [(s.methods, s.values("kappa"), s.lr_grid) for s in subs] == [
        (("gd",), (4.0, 9.0), (4.0,)), (("newton",), (4.0,), (0.25,))]
    for sub in subs:
        # the automatic cap follows κ_max: a sub-sweep of κ = 4 alone keeps the sweep's (κ = 9) cap
        assert (sub.max_iters, sub.x64, sub.seeds, sub.seed, sub.target) == (
            config.resolved_max_iters, config.resolved_x64, config.seeds, config.seed, config.target)


# -- end to end: the command brackets, keeps the sweep's lanes and runs nothing twice (slow) --------------------

TWO_POINT = ["sweep", "condition", "--k", "9", "--spectrum", "two-point", "--start", "equal-loss", "--lr", "tuned",
             "--seeds", "2", "--no-plot"]


def run_json(args: list[str]) -> list[dict]:
    result = CliRunner().invoke(otod_main(), args + ["--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


def otod_main():
    from otod.cli import main

    return main


def chosen_rate(records: list[dict], method: str) -> tuple[float, str]:
    (rate, place), = {(r["lr_multiplier"], r["lr_place"]) for r in records if r["selected"] and r["method"] == method}
    return rate, place


@pytest.mark.slow
def test_gd_beyond_its_grid_finds_the_optimal_step_two_over_mu_plus_L(tmp_path):
    """gd on H with eigenvalues {1, κ} from an equal-loss start contracts by max(|1 − η|, |1 − ηκ|) per step,
    least at η = 2/(1 + κ): the multiplier 2κ/(1 + κ) = 1.8 of the reference step 1/κ at κ = 9. A grid of 0.5–0.9
    has its best on its top; bracketed at its ratio 1.8^(1/4) = 1.158, the choice is inside the rates tried and
    within one step below 1.8 (1.62: 1.62·1.158 = 1.876 > 1.8)."""
    grid = ["--lr-grid", "0.5..0.9:5:log", "--method", "gd"]
    records = run_json(TWO_POINT + grid + ["--lr-extend", "8", "--out", str(tmp_path / "b")])
    rate, place = chosen_rate(records, "gd")
    step = 1.8 ** (1 / 4)
    assert place == "interior" and 1.8 / step <= rate <= 1.8 * step, (rate, place)
    assert rate > 0.9  # moved off the grid's top
    # the grid's 5 rates × 2 seeds, then one rate a round until the choice is inside: 1.04, 1.21, 1.40, 1.62, 1.88
    assert len(records) == 20
    # the sweep's own lanes are the lanes the sweep alone runs, in the same order, first in the file
    alone = run_json(TWO_POINT + grid + ["--lr-extend", "0", "--out", str(tmp_path / "a")])
    keep = ("kappa", "method", "seed", "lr_multiplier", "status", "iterations", "hits")
    assert [{k: r[k] for k in keep} for r in records[:10]] == [{k: r[k] for k in keep} for r in alone]
    assert chosen_rate(alone, "gd") == (0.9, "list end")
    # the same command reads the merged file back: nothing runs again, the same choice
    again = CliRunner().invoke(otod_main(), TWO_POINT + grid + ["--lr-extend", "8", "--out", str(tmp_path / "b")])
    assert "read back" in again.output and "10 lanes ran at rates beyond --lr-grid" in again.output
    from otod.core.results import load

    (path,) = (tmp_path / "b").glob("condition-*.parquet")
    meta = load(path).meta
    assert meta["bracket"]["lanes"] == 10 and meta["bracket"]["planned_records"] == 10
    assert not list((tmp_path / "b").glob("*.bracket"))  # the rounds' files merged and removed
    # another sweep beside it takes κ = 9's grid lanes from it (otod.core.reuse), never the bracket's other rates
    wider = CliRunner().invoke(otod_main(), TWO_POINT[:3] + ["4,9"] + TWO_POINT[4:] + grid
                               + ["--lr-extend", "0", "--out", str(tmp_path / "b")])
    assert wider.exit_code == 0, wider.output
    (other,) = set((tmp_path / "b").glob("condition-*.parquet")) - {path}
    assert load(other).meta["reused"]["lanes"] == 10 and len(load(other)) == 20


@pytest.mark.slow
def test_heavy_ball_beyond_its_grid_finds_polyaks_step(tmp_path):
    """Heavy-ball at Polyak's β = ((√κ − 1)/(√κ + 1))² contracts fastest at his step 4/(√L + √μ)², the reference
    step (multiplier 1; Polyak 1964). From a grid of 0.5–0.9 the bracket stops within one step (1.8^(1/4)) of it."""
    records = run_json(TWO_POINT + ["--method", "heavy-ball", "--lr-grid", "0.5..0.9:5:log", "--lr-extend", "8",
                                    "--out", str(tmp_path)])
    rate, place = chosen_rate(records, "heavy-ball")
    step = 1.8 ** (1 / 4)
    assert place in ("interior", "limit") and 1 / step <= rate <= step, (rate, place)
    assert len(records) > 10  # the grid's top was the best: the bracket ran beyond it


@pytest.mark.slow
def test_a_choice_inside_the_default_grid_runs_no_extension(tmp_path):
    """gd's optimum, multiplier 1.8 at κ = 9, lies inside the default grid 0.1–3: the bracket runs no lane, the
    file holds the grid's 13 rates × 2 seeds and no bracket metadata."""
    records = run_json(TWO_POINT + ["--method", "gd", "--out", str(tmp_path)])
    assert len(records) == len(DEFAULT_LR_GRID) * 2 == 26
    rate, place = chosen_rate(records, "gd")
    below = max(v for v in DEFAULT_LR_GRID if v < 1.8)  # 1.616: the grid's value below the optimum
    assert place == "interior" and math.isclose(rate, below, rel_tol=1e-7), rate  # the record's float32 rate
    from otod.core.results import load

    (path,) = tmp_path.glob("condition-*.parquet")
    assert "bracket" not in load(path).meta


# -- β towards 1 (the simulated noise sweeps) ------------------------------------------------------------------


def test_beta_floor_is_where_a_float_resolves_one_minus_beta_to_a_percent():
    assert bracket.beta_floor(True) == pytest.approx(2.0 ** -53 / bracket.BETA_RESOLUTION)  # 9.3e-15
    assert bracket.beta_floor(False) == pytest.approx(2.0 ** -24 / bracket.BETA_RESOLUTION)  # 5.0e-6
    # the float just below 1 - floor is within 1.2% of it in 1 - β, in the run's precision
    for x64, dtype in ((True, np.float64), (False, np.float32)):
        floor = bracket.beta_floor(x64)
        assert abs((1.0 - float(dtype(1.0 - floor))) / floor - 1) <= bracket.BETA_RESOLUTION


def test_the_beta_ladder_continues_half_decades_down_to_the_floor():
    from otod.noise.search import DEFAULT_BETAS

    assert max(DEFAULT_BETAS) == 0.999
    wide = bracket.beta_ladder(DEFAULT_BETAS, bracket.beta_floor(True))
    narrow = bracket.beta_ladder(DEFAULT_BETAS, bracket.beta_floor(False))
    gaps = 1.0 - np.asarray(wide)
    assert len(wide) == 22 and gaps[0] == pytest.approx(10 ** -3.5, rel=1e-9) and gaps[-1] == pytest.approx(1e-14,
                                                                                                          rel=2e-3)
    # half a decade apart, as float64 holds 1 - β (to 0.1% at 10^-14: the resolution the floor allows)
    assert np.allclose(gaps[1:] / gaps[:-1], 10 ** -0.5, rtol=2 * bracket.BETA_RESOLUTION)
    assert narrow == wide[:4] and 1.0 - narrow[-1] == pytest.approx(1e-5, rel=1e-9)  # float32: 10^-3.5 ... 10^-5
    assert bracket.beta_ladder((0.0,), 1e-14) == [] and bracket.beta_ladder((0.5, 1.0), 1e-14) == []


def test_a_beta_on_the_top_of_the_list_asks_for_the_next_beta_at_every_rate():
    import otod.noise  # noqa: F401  registers the noise sweeps
    from otod.noise.options import noise_config

    config, _ = noise_config(batch="1,4", method="sgd,ema", mode="simulate", problem="nqm", dim="10", beta="0,0.9",
                             seeds=2, lr="tuned", lr_grid="0.5,1")
    rows = []
    for method, betas in (("sgd", (0.0,)), ("ema", (0.0, 0.9))):
        for batch in (1.0, 4.0):
            for beta in betas:
                for rate in (0.5, 1.0):
                    best = (beta == 0.9) if batch == 1.0 else (beta == 0.0)  # B = 1: the top β; B = 4: β = 0
                    rows += [{"batch": batch, "beta": beta, "dim": 10.0, "method": method, "seed": s,
                              "lr_multiplier": rate, "learning_rate": rate, "status": "converged",
                              "iterations": (10 if best else 20) + 5 * (rate == 0.5)} for s in range(2)]
    ladder = (0.99, 0.999)
    wanted, _ = bracket.requests(config, choices(config, rows, by=("dim",)), 0, ladder)
    assert wanted == [("ema", (("batch", 1.0), ("beta", 0.99), ("dim", 10.0)), None)]  # sgd reads no β
    (sub,) = bracket.sub_configs(config, wanted)
    assert sub.lr_grid == config.lr_grid and sub.values("beta") == (0.99,) and sub.values("batch") == (1.0,)
    # the next β worse: the choice is inside the β tried, nothing more to run
    rows += [{**r, "beta": 0.99, "iterations": 30} for r in rows if r["method"] == "ema" and r["batch"] == 1.0
             and r["beta"] == 0.9]
    assert bracket.requests(config, choices(config, rows, by=("dim",)), 0, ladder) == ([], 0)


@pytest.mark.slow
def test_the_simulated_ema_searches_its_decay_beyond_0999(tmp_path):
    """The EMA at B = 1 on a 100-dimensional NQM picks the default list's top, 0.999: the simulator tries 1 − β =
    10^(−3.5) at every rate of its grid (57 rates × 2 seeds), which is worse, so 0.999 is inside the β tried."""
    result = CliRunner().invoke(otod_main(), ["sweep", "noise", "--mode", "simulate", "--batch", "1", "--dim", "100",
                                              "--seeds", "2", "--method", "ema", "--no-plot", "--out", str(tmp_path),
                                              "--json"])
    assert result.exit_code == 0, result.output
    records = json.loads(result.stdout.strip().splitlines()[-1])
    (beta, place), = {(r["beta"], r["beta_place"]) for r in records if r["selected"]}
    assert (beta, place) == (0.999, "interior")
    from otod.core.results import load

    (path,) = tmp_path.glob("noise-*.parquet")
    meta = load(path).meta["bracket"]
    assert meta["lanes"] == 57 * 2 and meta["beta_floor"] == pytest.approx(1e-5, rel=1e-6)
    assert {round(1 - r["beta"], 8) for r in records[meta["planned_records"]:]} == {round(10 ** -3.5, 8)}


def test_the_report_says_where_the_chosen_rates_lie_and_what_the_bracket_ran():
    import pandas as pd

    summary = pd.DataFrame({"method": ["gd", "gd", "gd", "nesterov"], "value": [1.0, 2.0, 3.0, 3.0],
                            "lr_place": ["interior", "limit", "grid end", "list end"]})
    lines = bracket.place_lines(summary, "κ", {"bracket": {"lr_steps": 12, "lanes": 16, "rounds": 2,
                                                           "wall_time_s": 3.25}})
    assert lines == [
        "lr* (the chosen rate) lies inside the rates tried at 1 of 4 points; 16 lanes ran at rates beyond --lr-grid "
        "(--lr-extend 12: up to 12 steps of its end ratio) in 2 rounds, 3.25 s",
        "note: lr* lies at its stability limit (the next larger rate tried diverged on most seeds) (gd at κ = 2)",
        "warning: lr* lies on the end of the --lr-grid given: the best rate may lie beyond it; widen --lr-grid or add "
        "--lr-extend N (nesterov at κ = 3)",
        "warning: lr* lies on the edge of the rates tried after 12 steps beyond the grid: the best rate may lie "
        "beyond; raise --lr-extend (gd at κ = 3)"]
    many = pd.DataFrame({"method": "gd", "value": np.arange(1.0, 31.0), "lr_place": "limit"})
    assert bracket.place_lines(many, "κ", {})[1].endswith("(gd at κ = 1 … 30 (30 values))")
    assert bracket.place_lines(summary, "κ", {}, lr=False) == []
