"""The noise figures draw from results files: a small exact sweep's figure (a) is written, with the McCandlish fit
and the ideal line among its curves."""

from otod.noise.exact import run_exact
from otod.noise.analysis import analyse
from otod.noise.figures import steps_vs_batch, sweep_figure
from otod.noise.options import noise_config


def test_sweep_figure_draws_the_exact_curve_the_fit_and_the_ideal_line(tmp_path):
    config, mode = noise_config(mode="exact", dim="100", batch="1..256:9:log", method="sgd", target="0.05")
    results = run_exact(config, tmp_path)
    files = sweep_figure(results, tmp_path / "fig")
    assert [f.suffix for f in files] == [".png"] and files[0].stat().st_size > 10_000
    from otod.core.plotting import plt

    fig, ax = plt.subplots()
    steps_vs_batch(analyse(results), ax, None)
    labels = [line.get_label() for line in ax.get_lines()]
    assert any(label.startswith("sgd fit: B_crit") for label in labels)
    assert "ideal estimator d/(2·target·B)" in labels
    plt.close(fig)


def test_a_static_dimension_gets_one_panel_per_d(tmp_path, monkeypatch):
    import otod.noise.figures as nf
    from otod.core.plotting import plt

    config, mode = noise_config(mode="exact", dim="100,400", batch="1..64:4:log", method="sgd", target="0.05")
    results = run_exact(config, tmp_path)
    kept = []
    monkeypatch.setattr("otod.core.plotting.save", lambda fig, base, pdf=True, caption=None: kept.append(fig) or [base])
    nf.sweep_figure(results, tmp_path / "fig")
    (fig,) = kept
    assert [ax.get_title() for ax in fig.axes] == ["d = 100", "d = 400"]
    # each panel's ideal line is its own d's: d/(2·target·B) at B = 1
    ideal = [next(line for line in ax.get_lines() if line.get_label().startswith("ideal")) for ax in fig.axes]
    assert [line.get_ydata()[0] for line in ideal] == [100 / (2 * 0.05), 400 / (2 * 0.05)]
    plt.close(fig)


def test_the_estimator_draws_the_runs_quartiles_kept_in_results(tmp_path, monkeypatch):
    """(g) from the run it keeps in results/: the exact line is the mean over seeds of tr Σ/|G|², each estimate's
    line its median over seeds and its band the quartiles where the lower one is > 0, as `run_estimators` gives
    them for the same options (computed here apart); the IQR is named; the caption gives each series' share of steps
    with the band left out; a second drawing reads the kept file back."""
    import otod.noise.estimators as ne
    import otod.noise.figures as nf
    from otod.core.plotting import plt

    monkeypatch.chdir(tmp_path)
    kept = []
    monkeypatch.setattr("otod.core.plotting.save",
                        lambda fig, base, pdf=True, caption=None: kept.append((fig, caption)) or [base])
    table = {"name": "e", "dim": 20, "pairs": "2:8", "decay": "0,0.9", "steps": 10, "seeds": 4}
    nf.MAKERS["noise-estimator"](table, tmp_path)
    out = ne.run_estimators(20, [(2, 8)], [0.0, 0.9], 0.05, 32, 10, 4, seed=0)
    (fig, caption), = kept
    ax = fig.axes[0]
    lines = ax.get_lines()
    assert np.array_equal(lines[0].get_xdata(), np.arange(1, 11))
    assert np.array_equal(lines[0].get_ydata(), out["true"].mean(0))
    shares = []
    for line, e in zip(lines[1:], out["estimates"].values()):
        q25, q50 = np.percentile(e, [25, 50], axis=0)
        assert np.array_equal(line.get_ydata(), q50)
        shares.append(f"{100 * np.mean(q25 <= 0):.0f}%")
    assert any("IQR over 4 seeds" in label for label in ax.get_legend_handles_labels()[1])
    assert f"share of such steps: 2:8, decay 0: {shares[0]}; 2:8, decay 0.9: {shares[1]})" in caption
    assert len(list((tmp_path / "results").glob("noise-estimator-*.parquet"))) == 1
    monkeypatch.setattr(ne, "run_estimators", lambda **options: pytest.fail("run again"))
    nf.MAKERS["noise-estimator"](table, tmp_path)
    assert np.array_equal(kept[1][0].axes[0].get_lines()[1].get_ydata(), lines[1].get_ydata())
    for f, _ in kept:
        plt.close(f)


# -- every maker of `otod.noise.figures.MAKERS`, read off the figure it draws ----------------------------------------

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from tests.conftest import drawn_line, legend_texts  # noqa: E402
from tests.noise import synthetic  # noqa: E402

#: The S(B) the synthetic sweeps follow at their best rate: S_min (1 + B_crit/B) with S_min = 10, B_crit = 64.
SYNTHETIC_BATCHES = (2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0)


def _steps(b: float) -> float:
    return 10 * (1 + 64 / b)


def _best_rate(b: float) -> float:
    return {2.0: 0.5, 4.0: 1.0}.get(b, 2.0)


def _synthetic_records(factor: float = 1.0, censored_at_1: bool = True) -> list[dict]:
    """Seeds 0–2 at S(B)·factor − 2, S(B)·factor, S(B)·factor + 2 at the best rate of each B (0.5 at B = 2, 1 at
    B = 4, 2 above), 1.25 times that at the other rates (0.5, 1, 2); at B = 1 every lane censored at the cap
    (1000): a median that is only a lower bound."""
    out = []
    for b in SYNTHETIC_BATCHES:
        for rate in (0.5, 1.0, 2.0):
            for seed, offset in enumerate((-2, 0, 2)):
                n = _steps(b) * factor + offset
                out.append(synthetic.record(b, rate, seed, n if rate == _best_rate(b) else 1.25 * n))
    if censored_at_1:
        out += [synthetic.record(1.0, rate, seed, 1000, "censored") for rate in (0.5, 1.0, 2.0) for seed in range(3)]
    return out


def test_make_batch_draws_steps_the_chosen_lr_and_the_tradeoff(tmp_path, monkeypatch, saved):
    """(a) the medians at each B's best rate with their IQR bars, the censored B = 1 as an open triangle at the
    cap, the S(B) fit's B_crit = 64; (b) the chosen lr per B (0.05, 0.1, then 0.2) with its slope 1 over the
    perfect-scaling region (up to B = 4) and the ∝ B guide; (c) S against E = B·S with the hyperbola of S_min = 10,
    E_min = 640; log axes, base 2 in B; three files named after the table."""
    import otod.noise.figures as nf

    asked = []
    monkeypatch.setattr(nf, "_run_noise", lambda spec: asked.append(spec) or synthetic.results(_synthetic_records()))
    files = nf.MAKERS["noise-batch"]({"maker": "noise-batch", "name": "toy", "mode": "simulate"}, tmp_path)
    assert asked == [{"mode": "simulate"}]  # the sweep's options: the table less its maker and name
    assert [f.name for f in files] == ["noise_toy_steps.png", "noise_toy_lr.png", "noise_toy_tradeoff.png"]
    (steps_fig, _, _), (lr_fig, _, _), (tradeoff_fig, _, _) = saved
    b = np.asarray(SYNTHETIC_BATCHES)
    s = np.asarray([_steps(x) for x in b])

    (ax,) = steps_fig.axes
    assert ax.get_title().startswith("Steps to target fall as 1/B")  # the claim; the settings in the caption
    assert steps_fig.otod_caption.startswith("Settings: regression d = 16, target 0.05, simulate")
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_xscale(), ax.get_yscale()) == (
        "batch size B", "steps to target", "log", "log")
    assert ax.xaxis.get_transform().base == 2
    (bars,) = ax.containers
    points, _, (segments,) = bars.lines
    assert np.array_equal(points.get_xdata(), b) and np.array_equal(points.get_ydata(), s)
    assert np.array_equal(np.asarray(segments.get_segments())[:, :, 1], np.stack([s - 1, s + 1], 1))  # the IQR
    bound = drawn_line(ax, "sgd: △ median only a lower bound (≥)")
    assert (list(bound.get_xdata()), list(bound.get_ydata()), bound.get_marker()) == ([1.0], [1000.0], "^")
    fit = drawn_line(ax, "sgd fit: B_crit = 64")
    assert np.allclose(fit.get_ydata(), 10 * (1 + 64 / np.asarray(fit.get_xdata())), rtol=1e-6)
    assert legend_texts(ax) == ["sgd: △ median only a lower bound (≥)",
                           "sgd fit: B_crit = 64", "sgd (median, bars: IQR over seeds)"]

    (ax,) = lr_fig.axes
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_xscale(), ax.get_yscale()) == (
        "batch size B", "best learning rate", "log", "log")
    chosen = drawn_line(ax, "sgd: slope 1.00 up to B = 4")
    assert list(chosen.get_xdata()) == [1.0, *b]
    assert np.allclose(chosen.get_ydata()[1:], [0.1 * _best_rate(x) for x in b])
    guide = drawn_line(ax, "∝ B (linear scaling)")
    assert np.allclose(guide.get_ydata(), 1e-3 * np.asarray(guide.get_xdata()))

    (ax,) = tradeoff_fig.axes
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_xscale(), ax.get_yscale()) == (
        "examples processed E = B·S", "steps S", "log", "log")
    measured = drawn_line(ax, "sgd")
    assert np.array_equal(measured.get_xdata(), b * s) and np.array_equal(measured.get_ydata(), s)
    hyperbola = drawn_line(ax, "sgd fit: S_min 10, E_min 640")
    e, steps = np.asarray(hyperbola.get_xdata()), np.asarray(hyperbola.get_ydata())
    assert np.allclose((steps / 10 - 1) * (e / 640 - 1), 1.0, rtol=1e-6)


def test_make_batch_with_figures_a_draws_only_the_steps(tmp_path, monkeypatch, saved):
    import otod.noise.figures as nf

    monkeypatch.setattr(nf, "_run_noise", lambda spec: synthetic.results(_synthetic_records()))
    files = nf.MAKERS["noise-batch"]({"name": "toy", "figures": "a"}, tmp_path)
    assert [f.name for f in files] == ["noise_toy_steps.png"] and len(saved) == 1


def test_make_schedules_draws_one_series_per_schedule_each_run_with_its_own_schedule(tmp_path, monkeypatch, saved):
    """One sweep per schedule, each asked with its own ``schedule`` (and not the table's list): constant at S(B),
    cosine at twice that, one colour each, the censored B = 1 as open triangles at the cap."""
    import otod.noise.figures as nf

    asked = []

    def run(spec):
        asked.append(spec)
        return synthetic.results(_synthetic_records(factor={"constant": 1.0, "cosine": 2.0}[spec["schedule"]]))

    monkeypatch.setattr(nf, "_run_noise", run)
    files = nf.MAKERS["noise-schedules"]({"maker": "noise-schedules", "name": "sched", "schedules": ["constant", "cosine"],
                               "mode": "simulate", "seeds": 3}, tmp_path)
    assert [spec["schedule"] for spec in asked] == ["constant", "cosine"]
    assert all("schedules" not in spec and spec["seeds"] == 3 for spec in asked)
    assert [f.name for f in files] == ["noise_sched.png"]
    ((fig, _, _),) = saved
    (ax,) = fig.axes
    assert ax.get_title().startswith("Steps against batch size under three learning-rate schedules")
    assert fig.otod_caption.startswith("Settings: regression d = 16") and "horizon is the run's cap" in fig.otod_caption
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_xscale(), ax.get_yscale()) == (
        "batch size B", "steps to target (median over seeds)", "log", "log")
    assert ax.xaxis.get_transform().base == 2
    b = np.asarray(SYNTHETIC_BATCHES)
    for i, (name, factor) in enumerate((("constant", 1.0), ("cosine", 2.0))):
        line = drawn_line(ax, f"{name} (sgd)")
        assert np.array_equal(line.get_xdata(), b) and np.array_equal(line.get_ydata(), [factor * _steps(x) for x in b])
        bound = drawn_line(ax, f"{name}: ≥ cap (censored)")
        assert (list(bound.get_xdata()), list(bound.get_ydata()), bound.get_marker()) == ([1.0], [1000.0], "^")
        assert line.get_color() == bound.get_color() == __import__("otod.core.plotting", fromlist=["x"]).series_style(i)["color"]  # Okabe–Ito, one a series
    assert legend_texts(ax) == ["constant (sgd)", "constant: ≥ cap (censored)", "cosine (sgd)", "cosine: ≥ cap (censored)",
                                "IQR over seeds"]


def test_make_schedules_shades_each_schedules_iqr_over_seeds(tmp_path, monkeypatch, saved):
    """Each schedule's band spans its seeds' quartiles: seeds at S − 2, S, S + 2 (×2 for cosine) give, by linear
    interpolation over 3 lanes, q25 = S − 1 and q75 = S + 1 at every reached B; at B = 1 every lane is censored at
    the cap 1000, so the band there is [1000, 1000] (censored lanes at their cap). The caption says so."""
    import otod.noise.figures as nf
    from otod.core.plotting import series_style

    factors = {"constant": 1.0, "cosine": 2.0}
    monkeypatch.setattr(nf, "_run_noise", lambda spec: synthetic.results(
        _synthetic_records(factor=factors[spec["schedule"]])))
    nf.MAKERS["noise-schedules"]({"maker": "noise-schedules", "name": "sched", "schedules": list(factors), "mode": "simulate",
                       "seeds": 3}, tmp_path)
    ((fig, _, _),) = saved
    (ax,) = fig.axes
    bands = [c for c in ax.collections if len(c.get_paths()) and len(c.get_paths()[0].vertices)]
    assert len(bands) == 2
    b = np.asarray((1.0,) + SYNTHETIC_BATCHES)
    for i, (band, factor) in enumerate(zip(bands, factors.values())):
        v = band.get_paths()[0].vertices
        med = np.asarray([1000.0] + [factor * _steps(x) for x in SYNTHETIC_BATCHES])
        lo, hi = np.where(b == 1, 1000.0, med - 1), np.where(b == 1, 1000.0, med + 1)
        for x, q25, q75 in zip(b, lo, hi):
            at = np.isclose(v[:, 0], x)
            assert at.any() and np.allclose(v[at, 1].min(), q25) and np.allclose(v[at, 1].max(), q75), (x, v[at])
        assert np.allclose(band.get_facecolor()[0][:3], __import__("matplotlib").colors.to_rgb(series_style(i)["color"]))
    assert "Shaded: the interquartile range over the same seeds as the median" in fig.otod_caption
    assert "no spread" not in fig.otod_caption


def test_make_params_draws_steps_against_d_for_each_batch_rule(tmp_path, monkeypatch, saved):
    """The exact isotropic quadratic at d = 10…1000: at a fixed B = 32 the steps grow like d (exponent near 1),
    with B = d/10 they stay flat (near 0); each label's exponent is the slope of its own drawn points."""
    import otod.noise.figures as nf

    monkeypatch.chdir(tmp_path)  # the maker's sweeps write to results/ in the working folder
    files = nf.MAKERS["noise-params"]({"maker": "noise-params", "name": "params", "mode": "exact", "problem": "isotropic",
                            "dim": "10..1000:4:log", "batch_rule": "fixed:32,proportional:0.1", "method": "sgd",
                            "target": 0.05}, tmp_path / "figs")
    assert [f.name for f in files] == ["noise_params.png"] and saved[0][2] is True  # with its PDF
    (ax,) = saved[0][0].axes
    assert ax.get_title() == "Steps against d: a fixed batch and B ∝ d"
    assert saved[0][0].otod_caption.startswith("Settings: isotropic, target 0.05, exact, lr tuned per d")
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_xscale(), ax.get_yscale()) == (
        "dimension d (parameters)", "steps to target", "log", "log")
    lines = ax.get_lines()
    assert len(lines) == 2
    for line, rule, (low, high) in zip(lines, ("fixed:32", "proportional:0.1"), ((0.9, 1.1), (-0.1, 0.1))):
        label = line.get_label()
        assert label.startswith(f"{rule} sgd: exponent ")
        exponent = float(label.rsplit(" ", 1)[1])
        assert low < exponent < high, label
        assert list(line.get_xdata()) == [10, 46, 215, 1000]  # d = 10..1000:4:log, whole numbers
        slope = np.polyfit(np.log(line.get_xdata()), np.log(line.get_ydata()), 1)[0]
        assert f"{slope:.2f}" == f"{exponent:.2f}"
    assert legend_texts(ax) == [line.get_label() for line in lines]


def test_make_noise_rms_draws_sqrt_d_and_one_over_sqrt_n(tmp_path, saved, monkeypatch):
    """(e): the measured RMS norm of N(0, I_d) at 13 dimensions 1…10⁴ beside √d, and the RMS error of a mean of n
    draws at n = 1…4096 beside 1/√n, each label carrying the fitted slope of its measured points (near ½ and
    −½), the caption both slopes with their least-squares standard errors (NumPy's polyfit covariance); the draws
    are kept in results/ and a second drawing reads them back."""
    import otod.noise.figures as nf
    import otod.noise.rms as rms

    monkeypatch.chdir(tmp_path)
    files = nf.MAKERS["noise-rms"]({"maker": "noise-rms", "name": "rms", "draws": 40}, tmp_path)
    assert [f.name for f in files] == ["noise_rms.png"]
    assert len(list((tmp_path / "results").glob("noise-rms-*.json"))) == 1
    monkeypatch.setattr(rms, "rms_records", lambda draws, seed: pytest.fail("measured again"))
    nf.MAKERS["noise-rms"]({"maker": "noise-rms", "name": "rms", "draws": 40}, tmp_path)
    assert [line.get_ydata().tolist() for line in saved[1][0].axes[0].get_lines()] == [
        line.get_ydata().tolist() for line in saved[0][0].axes[0].get_lines()]
    fig = saved[0][0]
    left, right = fig.axes
    dims = np.unique(np.geomspace(1, 1e4, 13).round())
    ns = 2.0 ** np.arange(13)
    slopes = []
    for ax, x, title, xlabel, ylabel, guide, label, sign in (
            (left, dims, "noise grows like √d", "dimension d", "RMS norm of N(0, I_d) noise", np.sqrt(dims),
             "√d", 1), (right, ns, "averaging shrinks it as 1/√n", "samples averaged n", "RMS error", 1 / np.sqrt(ns),
                        "1/√n", -1)):
        assert (ax.get_title(), ax.get_xlabel(), ax.get_ylabel(), ax.get_xscale(), ax.get_yscale()) == (
            title, xlabel, ylabel, "log", "log")
        measured, drawn_guide = ax.get_lines()
        assert np.array_equal(measured.get_xdata(), x) and np.all(np.asarray(measured.get_ydata()) > 0)
        assert np.array_equal(drawn_guide.get_xdata(), x) and np.allclose(drawn_guide.get_ydata(), guide)
        (slope, _), cov = np.polyfit(np.log(x), np.log(measured.get_ydata()), 1, cov=True)
        assert drawn_guide.get_label() == f"{label} (fitted exponent {slope:.3f})"
        assert abs(slope - sign * 0.5) < 0.1
        assert legend_texts(ax) == [measured.get_label(), drawn_guide.get_label()]
        slopes.append(f"{slope:.3f} ± {np.sqrt(cov[0, 0]):.3f}".replace("-", "−"))
    assert left.get_lines()[0].get_label() == "measured RMS ‖ξ‖"
    assert (f"fitted exponents {slopes[0]} and {slopes[1]} (least squares on log–log, ± its standard error"
            in fig.otod_caption)


def test_make_rosenbrock_draws_each_noise_levels_path_from_the_start(tmp_path, saved):
    """(f): one SGD path per σ, each from (−1.2, 1) over ``steps`` steps; σ = 0 is plain gradient descent (written
    out here), σ > 0 leaves it; each label's loss is Rosenbrock's at the path's end; the minimum and the start
    marked; linear axes x, y over the loss's contours."""
    import otod.noise.figures as nf

    files = nf.MAKERS["noise-rosenbrock"]({"maker": "noise-rosenbrock", "name": "rosen", "lr": 1e-3, "steps": 50,
                                "noise": [0.0, 3.0]}, tmp_path)
    assert [f.name for f in files] == ["noise_rosen.png"]
    ((fig, _, _),) = saved
    (ax,) = fig.axes
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_xscale(), ax.get_yscale()) == ("x", "y", "linear", "linear")
    assert ax.get_title() == "Gradient noise throws SGD off the valley floor"
    assert "lr 0.001" in fig.otod_caption and "noise of standard deviation σ per coordinate" in fig.otod_caption
    assert ax.collections  # the contours
    z, plain = np.array([-1.2, 1.0]), [np.array([-1.2, 1.0])]
    for _ in range(50):
        x, y = z
        z = z - 1e-3 * np.array([-2 * (1 - x) - 400 * x * (y - x * x), 200 * (y - x * x)])
        plain.append(z)
    plain = np.asarray(plain)
    quiet, noisy = ax.get_lines()[:2]
    for line, sigma in ((quiet, 0), (noisy, 3)):
        xy = np.column_stack([line.get_xdata(), line.get_ydata()])
        assert xy.shape == (51, 2) and np.array_equal(xy[0], [-1.2, 1.0])
        loss = (1 - xy[-1, 0]) ** 2 + 100 * (xy[-1, 1] - xy[-1, 0] ** 2) ** 2
        assert line.get_label() == f"σ = {sigma}: loss {loss:.2g} after 50"
    assert np.allclose(np.column_stack([quiet.get_xdata(), quiet.get_ydata()]), plain)
    assert not np.allclose(noisy.get_xdata(), quiet.get_xdata())
    assert (list(drawn_line(ax, "minimum (1, 1)").get_xdata()), list(drawn_line(ax, "start (−1.2, 1)").get_xdata())) == (
        [1], [-1.2])
    assert legend_texts(ax) == [quiet.get_label(), noisy.get_label(), "minimum (1, 1)", "start (−1.2, 1)"]


def test_every_noise_maker_is_run_by_a_test():
    """The makers this file runs (noise-estimator by `test_the_estimator_draws_the_runs_quartiles_kept_in_results`):
    all of MAKERS."""
    from otod.noise.figures import MAKERS

    assert set(MAKERS) == {"noise-batch", "noise-params", "noise-rms", "noise-rosenbrock", "noise-estimator",
                           "noise-schedules", "noise-schedule-nqm"}


def test_make_schedule_nqm_draws_each_familys_best_schedule_to_its_target(tmp_path, saved, monkeypatch):
    """(k): per family one loss curve that ends at its schedule's steps to target, at or under the target there
    and above it one step earlier (the exact loss of `otod.noise.schedule.losses`), and one batch curve ending at
    its last phase's batch; labels name the steps. The comparison is made here (three schedules on d = 30, each
    run by `run_to_target`) in place of the search's (`tests/noise/test_schedule_search.py` checks that)."""
    import otod.noise.figures as nf
    from otod.noise import schedule_search as ss
    from otod.noise.schedule import BatchSchedule, Phase, constant, losses, run_to_target

    problem = ss.Problem(30, "hessian", 0.05)
    q = problem.quadratic()
    schedules = {"constant": constant(64.0, 1.0),
                 "lr-decay": BatchSchedule((Phase(64.0, 1.9, 10), Phase(64.0, 0.5))),
                 "batch": BatchSchedule((Phase(16.0, 1.9, 10), Phase(512.0, 1.5)))}
    optima = {}
    for kind, schedule in schedules.items():
        run = run_to_target(q, schedule, 0.05)
        optima[kind] = ss.Optimum(ss.Family(kind), (), schedule, run.steps, run.examples, {"b0": "interior"}, 1)
    fewest = optima["constant"]._replace(examples=optima["constant"].examples / 3)
    comparison = ss.Comparison(problem, 3 * fewest.examples, fewest, optima)
    monkeypatch.setattr(ss, "best", lambda *args, **kwargs: comparison)
    spec = {"maker": "noise-schedule-nqm", "name": "nqm_schedule", "dim": 30, "target": 0.05}
    files = nf.MAKERS["noise-schedule-nqm"](spec, tmp_path)
    assert [f.name for f in files] == ["noise_nqm_schedule.png"]
    ((fig, _, _),) = saved
    left, right = fig.axes
    curves = [line for line in left.get_lines() if len(line.get_xdata()) > 2]
    assert len(curves) == 3
    for line, kind in zip(curves, ss.FAMILIES):
        o = optima[kind]
        assert o.steps > 10 and line.get_xdata()[-1] == o.steps and f"{o.steps} steps" in line.get_label()
        assert line.get_ydata()[-1] <= 0.05 < losses(q, o.schedule, [o.steps - 1])[0]
    batches = [line for line in right.get_lines() if len(line.get_xdata()) > 1]
    assert [line.get_ydata()[-1] for line in batches] == [64.0, 64.0, 512.0]
    assert "3 × E_min" in fig.otod_caption and "every coordinate of each optimum interior" in fig.otod_caption


@pytest.mark.parametrize("seeds", [5, 4])
def test_the_steps_caption_names_the_fit_band_where_one_is_drawn(tmp_path, monkeypatch, saved, seeds):
    """Issue 50: the simulated figure's shaded band is the fit's 95% band over the seed bootstrap, and its caption
    left it out. Five seeds (S(B)·(1 + 0.1·(k − 2)), k = 0…4) give a CI, so the figure draws one shaded band and its
    caption names it; four give no CI (fewer than 5 seeds), so no band and no word of one (as on the exact path,
    whose fits are deterministic)."""
    from matplotlib.collections import PolyCollection

    import otod.noise.figures as nf

    records = [synthetic.record(b, rate, seed, _steps(b) * (1 + 0.1 * (seed - 2)) * (1 if rate == 1.0 else 1.25))
               for b in SYNTHETIC_BATCHES for rate in (0.5, 1.0, 2.0) for seed in range(seeds)]
    monkeypatch.setattr(nf, "_run_noise", lambda spec: synthetic.results(records, seeds=seeds))
    nf.MAKERS["noise-batch"]({"maker": "noise-batch", "name": "toy", "mode": "simulate", "figures": "a"}, tmp_path)
    ((fig, _, _),) = saved
    (ax,) = fig.axes
    bands = [c for c in ax.collections if isinstance(c, PolyCollection) and c.get_paths()]
    named = "shaded: each fit's pointwise 95% band over the seed bootstrap" in fig.otod_caption
    assert (len(bands), named) == ((1, True) if seeds == 5 else (0, False))
