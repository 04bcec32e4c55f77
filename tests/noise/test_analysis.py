"""The noise analysis (`otod.noise.analysis`): the critical-batch bootstrap re-chooses every point's setting in each
resample (checked against a brute-force loop written here), one analysis per command (the fits counted), and the
per-d and params series."""

import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from otod.core import critical_batch
from otod.core import results as results_io
from otod.core.critical_batch import critical_batch_fit
from otod.noise.analysis import analyse
from tests.noise import synthetic

DATA = Path(__file__).parent / "data"
BATCHES = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
RATES = (0.5, 1.0, 2.0)
CAP = 1000


def noisy_records(seeds: int = 5, seed: int = 3) -> list[dict]:
    """S(B) = 60 (1 + 8/B) at rate 1, ×1.25 at rate 0.5, ×0.9 at rate 2 from B = 8 (it diverges below), with
    lognormal noise per lane (so the choice differs between resamples), counts over the cap censored, one lane
    stalled and one diverged."""
    rng = np.random.default_rng(seed)
    out = []
    for b in BATCHES:
        for r in RATES:
            for s in range(seeds):
                if r == 2.0 and b < 8:
                    out.append(synthetic.record(b, r, s, 17, "diverged"))
                    continue
                n = 60 * (1 + 8 / b) * {0.5: 1.25, 1.0: 1.0, 2.0: 0.9}[r] * math.exp(0.25 * rng.standard_normal())
                n = int(round(n * (3.0 if b == 1 else 1.0)))  # B = 1 mostly past the cap: censored
                out.append(synthetic.record(b, r, s, min(n, CAP), "converged" if n < CAP else "censored"))
    out[7] = {**out[7], "status": "stalled"}
    out[-1] = {**out[-1], "status": "diverged"}
    return out


def brute_force(records: list[dict], n_boot: int, seed: int) -> tuple[np.ndarray, int]:
    """(S_min, B_crit) per resample, by the rule written out: draw the seed columns (as the core draws them, one
    block of ≤ 100 resamples), per B take each rate's median over the drawn seeds (a lane that did not converge
    counts +∞), choose the lowest (ties: the smaller rate; all +∞: rate 1), take the median there (censored and
    stalled lanes +∞, diverged ones left out), leave out a median that is +∞ or whose all-seed median is (a bound
    stays out of every resample), fit; and how many resamples chose some B's rate differently from the all-seed
    choice."""
    seeds = sorted({r["seed"] for r in records})
    lane = {(r["batch"], r["lr_multiplier"], r["seed"]): r for r in records}

    def choice(cols):
        chosen, medians = [], []
        for b in BATCHES:
            score = [np.median([lane[b, r, s]["iterations"] if lane[b, r, s]["status"] == "converged" else math.inf
                                for s in cols]) for r in RATES]
            best = min(range(len(RATES)), key=lambda i: (score[i], RATES[i]))
            best = RATES.index(1.0) if math.isinf(score[best]) else best
            values = [lane[b, RATES[best], s] for s in cols]
            values = [r["iterations"] if r["status"] == "converged" else math.inf for r in values
                      if r["status"] != "diverged"]
            m = float(np.median(values)) if values else math.nan
            chosen.append(best)
            medians.append(m if math.isfinite(m) and m > 0 else math.nan)
        return chosen, medians

    everyone, at_every_seed = choice(seeds)
    rng = np.random.default_rng(seed)
    fits, moved = [], 0
    for cols in rng.integers(0, len(seeds), (n_boot, len(seeds))):
        chosen, medians = choice([seeds[c] for c in cols])
        moved += chosen != everyone
        medians = np.where(np.isnan(at_every_seed), np.nan, medians)
        fits.append(critical_batch.mccandlish_fit(np.asarray(BATCHES), np.asarray(medians)))
    return np.asarray(fits), moved


def test_the_critical_batch_bootstrap_is_the_brute_force_loop_that_re_chooses_the_setting():
    records = noisy_records()
    (series,) = analyse(synthetic.results(records, seeds=5), n_boot=60, seed=7).series
    expected, moved = brute_force(records, 60, 7)
    assert moved > 0  # the resamples do choose other rates: the test exercises the re-selection
    assert series.critical.replicates.shape == (60, 3)
    np.testing.assert_allclose(series.critical.replicates[:, :2], expected, rtol=1e-12, atol=0)
    assert series.critical.b_crit_ci == tuple(np.percentile(expected[:, 1], [2.5, 97.5]))
    # the estimate: the same rule on every seed
    everyone = brute_force_estimate(records)
    assert (series.critical.s_min, series.critical.b_crit) == pytest.approx(everyone, rel=1e-12)


def brute_force_estimate(records):
    seeds = sorted({r["seed"] for r in records})
    meds = []
    for b in BATCHES:
        rows = [r for r in records if r["batch"] == b]
        score = {rate: np.median([r["iterations"] if r["status"] == "converged" else math.inf
                                  for r in rows if r["lr_multiplier"] == rate]) for rate in RATES}
        best = min(RATES, key=lambda rate: (score[rate], rate))
        values = [r["iterations"] if r["status"] == "converged" else math.inf for r in rows
                  if r["lr_multiplier"] == best and r["status"] != "diverged"]
        m = float(np.median(values))
        meds.append(m if math.isfinite(m) else math.nan)
    assert len(seeds) == 5
    return critical_batch.mccandlish_fit(np.asarray(BATCHES), np.asarray(meds))


def test_the_statistic_reports_the_fit_and_its_relative_misfit():
    b = np.array([1.0, 2.0, 4.0, 8.0])
    exact = 50 * (1 + 4 / b)
    out = critical_batch_fit(b, np.stack([exact, exact * np.array([1.1, 1.0, 1.0, 0.9]), np.full(4, np.nan)]))
    assert out[0, :2] == pytest.approx([50, 4]) and out[0, 2] < 1e-12
    s_min, b_crit = critical_batch.mccandlish_fit(b, exact * np.array([1.1, 1.0, 1.0, 0.9]))
    fitted = s_min * (1 + b_crit / b)
    misfit = np.sqrt(np.mean((fitted / (exact * np.array([1.1, 1.0, 1.0, 0.9])) - 1) ** 2))
    assert out[1] == pytest.approx([s_min, b_crit, misfit], rel=1e-12)
    assert np.isnan(out[2]).all()


def test_one_analysis_per_command_fits_each_method_once_plus_once_per_resample(tmp_path, monkeypatch):
    """``otod sweep noise`` (report and figure) on the old simulated file: the core's McCandlish fit (stacked,
    `mccandlish_fits`) runs on 1 + n_boot rows per method, not once per reader (it ran 4 × 501 times in one
    command before the port)."""
    from otod.cli import main
    from otod.noise import analysis

    path = tmp_path / "noise.npz"
    shutil.copy(DATA / "noise-simulate-945cbd5.npz", path)
    from otod.core import pipeline

    def made(config, **kwargs):  # the old file in place of the run (and of the bracket stage, which reads it)
        results = results_io.load(path)  # its one analysis by the noise obstacle's own (patched below; the kind's
        return results, analysis.analyse(results, tol=None)  # presentation is cached once another test used it)

    monkeypatch.setattr(pipeline, "made", made)
    from otod.core import critical_batch

    calls = []  # the rows fitted: the bootstrap fits its replicates stacked (`mccandlish_fits`)
    fit = critical_batch.mccandlish_fits
    monkeypatch.setattr(critical_batch, "mccandlish_fits", lambda b, rows: calls.extend([1] * len(rows))
                        or fit(b, rows))
    import otod.noise.figures

    made = []
    analyse_once = analysis.analyse
    for module in (analysis, otod.noise.figures):
        monkeypatch.setattr(module, "analyse", lambda *a, **k: made.append(k) or analyse_once(*a, **k))
    result = CliRunner().invoke(main, ["sweep", "noise", "--mode", "simulate", "--dim", "100", "--seeds", "4",
                                       "--method", "sgd,heavy-ball", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "figure:" in result.output and "critical batch" in result.output
    assert len(calls) == 2 * (1 + analysis.N_BOOT)
    assert made == [{"tol": None}, {"fit": False}]  # the command's analysis, and the figure's exact curve (no fits)


def test_a_batch_sweep_over_several_d_has_one_series_per_d_and_method():
    records = [synthetic.record(b, 1.0, s, int(100 * d / b), dim=d) for d in (16.0, 64.0) for b in (1, 4, 16)
               for s in range(3)]
    analysis = analyse(synthetic.results(records, seeds=3))
    assert [(s.dim, s.method) for s in analysis.series] == [(16.0, "sgd"), (64.0, "sgd")]
    assert [list(s.median) for s in analysis.series] == [[1600, 400, 100], [6400, 1600, 400]]
    assert all(s.critical.deterministic for s in analysis.series)


def test_a_params_sweep_fits_the_exponent_in_d_over_counted_medians():
    analysis = analyse(results_io.load(DATA / "params-ratio-a5ad0d8.json"))
    (series,) = analysis.series
    assert series.critical is None and list(series.x) == [10, 20, 40]
    expected = np.polyfit(np.log(series.x), np.log(series.median), 1)[0]
    assert series.exponent == pytest.approx(expected, rel=1e-12) and series.exponent_points == 3


def test_an_interval_reaching_an_infinite_critical_batch_ends_at_infinity():
    """S_min = 0 in a resample (steps ∝ 1/B on its seeds) fits B_crit = inf: the upper percentile is inf, not the
    NaN of interpolating inf − inf."""
    from otod.core.analysis import Bootstrap

    replicates = np.array([[10.0], [20.0], [30.0]] + [[math.inf]] * 3)
    low, high = Bootstrap(None, np.array([20.0]), replicates, np.empty((6, 0)), False).ci(0)
    assert low == pytest.approx(np.percentile([10, 20, 30, 40, 50, 60], 2.5)) and high == math.inf
