"""The noise commands as a user meets them: a small sweep runs end to end and its records carry the named fields
(bad input: the real-process table of tests/test_bad_input_noise_cost.py)."""

import pandas as pd
from click.testing import CliRunner

from otod.cli import main
from otod.core import results as results_io


def test_an_exact_noise_sweep_prints_its_table_and_records_carry_the_named_fields(tmp_path):
    result = CliRunner().invoke(main, ["sweep", "noise", "--mode", "exact", "--dim", "200", "--batch", "1..64:7:log",
                                       "--method", "sgd,heavy-ball", "--beta", "0.5,0.9", "--target", "0.05",
                                       "--out", str(tmp_path), "--no-plot"])
    assert result.exit_code == 0, result.output
    assert "critical batch" in result.output and "perfect scaling up to B" in result.output
    path = next(tmp_path.glob("noise-exact-*.parquet"))
    records = pd.read_parquet(path)
    assert {"batch", "dim", "method", "beta", "learning_rate"} <= set(records.columns)
    assert set(records.loc[records["method"] == "heavy-ball", "beta"]) == {0.5, 0.9}


def test_records_carry_the_schedule_and_the_path_by_name(tmp_path):
    """A reader of the bare file (pandas) sees every record's schedule and mode (exact or simulate) by name, on
    both paths."""

    from otod.noise.options import noise_config
    from otod.noise.runner import run

    for mode, schedule in (("exact", "constant"), ("simulate", "cosine")):
        seeds = None if mode == "exact" else 2  # the exact path samples nothing: --seeds is refused there
        config, mode = noise_config(batch="1,4", method="sgd", mode=mode, dim=20, seeds=seeds, schedule=schedule,
                                    target="0.5", lr="1")
        path = run(config, mode, out=str(tmp_path / mode)).path
        assert path.suffix == ".parquet"
        records = pd.read_parquet(path).to_dict("records")
        assert records and {(r["schedule"], r["mode"]) for r in records} == {(schedule, mode)}


def test_a_chosen_lr_on_the_edge_of_a_short_grid_is_marked_and_warned_about(tmp_path):
    """Exact NQM (d = 10⁴), SGD at B = 512, 1024: the best multipliers are 1.28 and 1.63 (within 2^(1/16) by the
    default search), so a --lr-grid that stops at 1 chooses its largest point at both batches: the table marks
    it (1*), the warning names the method and the points and says to widen the grid; the default search, which
    reaches the stability limit 2, finds both inside the lrs it tried: no mark, no warning. Both commands run in
    this process (`CliRunner`: what they print is what a user sees; two real processes cost 2-3 s more)."""

    def run(*extra):
        return CliRunner().invoke(main, ["sweep", "noise", "--batch", "512,1024", "--method", "sgd", "--no-plot",
                                         "--out", str(tmp_path / str(len(extra))), *extra])

    short, default = run("--lr-grid", "1e-3..1:7:log"), run()
    assert short.exit_code == 0 and default.exit_code == 0, short.output + default.output
    table = short.stdout.split("steps: median")[0]
    assert table.count("1*") == 2, table
    assert ("warning: lr* lies on the edge of the lrs tried (sgd at B = 512, 1024): the best step may lie beyond "
            "them; widen --lr-grid") in short.stdout
    assert "*" not in default.stdout.split("steps: median")[0] and "lr*" not in default.stdout


def test_edge_lines_tell_the_stability_limit_from_a_grid_that_stopped_short():
    """Chosen records on the largest lr: within `search.LIMIT_MARGIN` (1.1·10⁻³) of the limit (SGD's 2, heavy-ball's
    2(1 + β) = 3.8 at β = 0.9) they are the limit itself, not a failure; 1.5 (SGD) is a grid's edge. β = 0 on its
    edge is said to mean no momentum; 1 − β = 10⁻¹⁴ is β's limit (float64's resolution); 0.999 on the edge is the
    end of the default list where the simulator tries it as given, or of a --beta list."""
    from otod.noise import search
    from otod.noise.search import edge_lines

    def chosen(method, batch, multiplier, beta=0.0, lr_edge=True, beta_edge=False, given=(True, True)):
        return {"method": method, "batch": batch, "lr_multiplier": multiplier, "beta": beta,
                "lr_place": search.lr_place(method, multiplier, beta, lr_edge, given[0]),
                "beta_place": search.beta_place(beta, beta_edge, given[1])}

    lines = edge_lines([chosen("sgd", 1024.0, 2 * (1 - 1e-3)), chosen("heavy-ball", 64.0, 3.8 * (1 - 5e-4), 0.9),
                        chosen("sgd", 2.0, 1.5), chosen("ema", 4.0, 0.1, 0.999, False, True, (False, False)),
                        chosen("ema", 8.0, 0.1, 1 - 1e-14, False, True, (False, False)),
                        chosen("ema", 16.0, 0.1, 0.999, False, True),
                        chosen("heavy-ball", 8.0, 0.3, 0.0, False, True)], "batch")
    assert lines[0].startswith("lr* at the stability limit (heavy-ball at B = 64; sgd at B = 1024)")
    assert "not a failure of the search" in lines[0]
    assert lines[1].startswith("warning: lr* lies on the edge of the lrs tried (sgd at B = 2)")
    assert lines[2] == "β* = 0 (heavy-ball at B = 8): no momentum (or no averaging) is best there"
    assert lines[3] == ("β* at its limit, 1 − β at the run's float precision (10⁻¹⁴ in float64, 10⁻⁵ in float32) "
                        "(ema at B = 8): no β closer to 1 is resolved")
    # a float32 simulation's limit is 1 − β = 10⁻⁵ (otod.core.bracket.beta_floor), its bracket's last β
    assert search.beta_place(1 - 1e-5, True, False, floor=1e-5) == search.LIMIT
    assert search.beta_place(1 - 10 ** -4.5, True, False, floor=1e-5) == search.GRID_END
    assert lines[4] == "warning: β* lies on the edge of --beta (ema at B = 16): widen --beta"
    assert lines[5].startswith("warning: β* lies on the end of the default β list, 0.999, tried as given (ema at "
                               "B = 4)")
    assert len(lines) == 6
    assert edge_lines([chosen("sgd", 1024.0, 2 * (1 - 3e-3))], "batch")[0].startswith("warning: lr* lies on the edge")
    assert edge_lines([chosen("ema", 4.0, 0.1, 0.99, False, False, (False, False))], "batch") == []


def test_simulated_records_carry_the_choice_and_each_beta_its_own_stable_range(tmp_path):
    """The simulator's default grid reaches each method's stability limit: SGD's largest multiplier is
    2(1 − 1.1·10⁻³) = 1.9978, heavy-ball's at β = 0.9 is 3.8(1 − 1.1·10⁻³) = 3.7958; SGD runs at β = 0 only. The
    analysis marks exactly one (lr, β) per (B, method) as selected (every seed's record there), with lr_on_edge
    and beta_on_edge on those records, as ``--json`` prints them."""
    from otod.noise.options import noise_config
    from otod.noise.runner import run

    config, mode = noise_config(batch="1,16", method="sgd,heavy-ball", mode="simulate", dim=10, seeds=2,
                                target="0.5")
    from otod.core.pipeline import marked_records, present

    records = marked_records(present(results_io.load(run(config, mode, out=str(tmp_path)).path), text=False))
    top = {(r["method"], r["beta"]): 0.0 for r in records}
    for r in records:
        top[(r["method"], r["beta"])] = max(top[(r["method"], r["beta"])], r["lr_multiplier"])
    assert {b for m, b in top if m == "sgd"} == {0.0}
    assert abs(top[("sgd", 0.0)] - 1.9978) < 1e-4 and abs(top[("heavy-ball", 0.9)] - 3.7958) < 1e-4
    chosen = [r for r in records if r["selected"]]
    settings = {(r["method"], r["batch"]): set() for r in records}
    for r in chosen:
        settings[(r["method"], r["batch"])].add((r["lr_multiplier"], r["beta"]))
        assert isinstance(r["lr_on_edge"], bool) and isinstance(r["beta_on_edge"], bool)
    assert all(len(v) == 1 for v in settings.values()) and len(chosen) == 4 * 2
    assert not any(r["lr_on_edge"] or r["beta_on_edge"] for r in records if not r["selected"])


def test_a_precond_sweep_compiles_its_program_once_per_device_however_many_chunks(tmp_path):
    """precond:p is looked up anew for each chunk; the engine's program is keyed by its methods, so a Method built
    anew per lookup traced and compiled the program once per chunk (46 compiles of about 3.6 s on the noise figure's
    four-method sweep, where 2 do). The run's own compile count says whether the compiled program was reused."""
    from otod.noise.options import noise_config
    from otod.noise.runner import run

    config, mode = noise_config(batch="1,2,4,8,16,32", method="sgd,precond:0.5", mode="simulate", dim=10, seeds=2,
                                target="0.5", lr_grid="0.25,0.5,1", chunk_seconds="0.0001")
    import jax

    meta = results_io.load(run(config, mode, out=str(tmp_path)).path).meta
    devices = jax.local_device_count()
    assert len(meta["blocks"]) == 1 and len(meta["chunks"]) > 2 * devices  # one program, more chunks than devices
    assert 1 <= meta["compile_count"] + meta["cache_loads"] <= devices  # compiled or loaded, once per device
