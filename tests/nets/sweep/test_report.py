"""What the net report reads off a fit: CIs only where the seeds allow one, and said why where not."""


FIVE_SEEDS = __import__("pathlib").Path(__file__).parents[2] / "fixtures" / "net-batch-5seeds.parquet"


def test_a_bootstrap_over_fewer_than_5_seeds_prints_no_ci_and_says_why():
    """The fixture: ``otod sweep net --batch 16,32,64 --width 8 --examples 256 --seeds 5 --lr 0.5 --target 0.5
    --max-iters 400``. Its printed report gives the critical batch's 95% CIs; the same file cut to its first 2 or
    4 seeds prints none, and says why in the heading and on the fit's line: n seeds have C(2n − 1, n) distinct
    resamples, 3 and 35 (`otod.core.analysis.no_ci_reason`, the one rule every report's CI goes through)."""
    import copy

    from otod.core import results as results_io
    from otod.nets.sweep.report import text_report

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


def test_the_stream_rule_recovers_b_crit_against_the_examples_seen_at_it():
    """Three targets whose fits put B_crit = 2·D^0.25 with D = 2·S_min·B_crit the examples seen at B_crit: the
    slope is 0.25 to 1e-9; bootstrap rows that each keep the law (their S_min scaled, B_crit on the line) give a
    CI of exactly [0.25, 0.25]; rows that break it move the CI off 0.25; fewer than 3 targets give no rule."""
    import numpy as np

    from otod.core.critical_batch import CriticalBatch
    from otod.nets.sweep.report import seen_rule

    def fit(d, rows):
        b = 2 * d ** 0.25
        return CriticalBatch(d / (2 * b), b, 0.0, (0, 0), (0, 0), 7, 0, 0, False, rows(d, b))

    def on_law(d, b):
        scale = np.linspace(0.5, 2.0, 40)[:, None]
        dd = d * scale
        bb = 2 * dd ** 0.25
        return np.hstack([dd / (2 * bb), bb, np.zeros_like(bb)])

    slope, ci = seen_rule([fit(d, on_law) for d in (600.0, 2000.0, 6000.0)])
    assert abs(slope - 0.25) < 1e-9 and np.allclose(ci, (0.25, 0.25), atol=1e-9)
    off = lambda d, b: np.hstack([np.full((40, 1), d / (2 * b)), np.full((40, 1), b * (d / 600) ** 0.5),  # noqa
                                  np.zeros((40, 1))])
    _, moved = seen_rule([fit(d, off) for d in (600.0, 2000.0, 6000.0)])
    assert moved[0] > 0.3
    assert seen_rule([fit(d, on_law) for d in (600.0, 2000.0)]) is None
