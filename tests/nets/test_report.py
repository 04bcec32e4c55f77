"""What the net report reads off a fit: CIs only where the seeds allow one, and said why where not."""


FIVE_SEEDS = __import__("pathlib").Path(__file__).parents[1] / "fixtures" / "net-batch-5seeds.parquet"


def test_a_bootstrap_over_fewer_than_5_seeds_prints_no_ci_and_says_why():
    """The fixture: ``otod sweep net --batch 16,32,64 --width 8 --examples 256 --seeds 5 --lr 0.5 --target 0.5
    --max-iters 400``. Its printed report gives the critical batch's 95% CIs; the same file cut to its first 2 or
    4 seeds prints none, and says why in the heading and on the fit's line: n seeds have C(2n − 1, n) distinct
    resamples, 3 and 35 (`otod.core.analysis.no_ci_reason`, the one rule every report's CI goes through)."""
    import copy

    from otod.core import results as results_io
    from otod.nets.report import text_report

    full = results_io.load(FIVE_SEEDS)
    assert sorted({r["seed"] for r in full.records}) == [0, 1, 2, 3, 4]
    text = text_report(full)
    assert "95% CI: seed bootstrap" in text and "(S_min [" in text and "no CI" not in text
    for seeds, distinct in ((2, 3), (4, 35)):
        meta = copy.deepcopy(full.meta)
        meta["config"]["seeds"] = seeds
        cut = results_io.Results(meta=meta, records=[r for r in full.records if r["seed"] < seeds])
        text = text_report(cut)
        why = f"no CI: {seeds} seeds give {distinct} distinct bootstrap resamples; a CI needs ≥ 5 seeds"
        heading = next(line for line in text.splitlines() if "critical batch, S(B)" in line)
        sgd = next(line for line in text.splitlines() if line.startswith("  sgd            S_min"))
        assert why in heading and why in sgd, text
        assert "95% CI" not in text and "S_min [" not in text and "measured B_crit" in text
        assert "(no CI)" in next(line for line in text.splitlines() if "measured B_crit" in line)
