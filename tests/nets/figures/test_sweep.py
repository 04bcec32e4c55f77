"""Every figure maker of the nets obstacle (`otod.nets.figures.sweep.ALL_MAKERS`: the sweeps' and the curvature
figures'), run on records whose numbers the test chooses, through the maker's own spec → config path with the
engine (`run_sweep`), the NQM prediction and the curvature measurement stood in for, and read off the figure it
draws: the series' data, labels, axes and legend. One slow test per kind runs a real tiny sweep and measurement."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.conftest import drawn_line, legend_texts

import otod.depth.figures  # noqa: F401  (imported before `saved` stands in for save, which it binds at import)
import otod.nets  # noqa: F401  (registers the net sweep)
from otod.core.results import Results


# -- the sweeps' figures ---------------------------------------------------------------------------------------------


def _record(config, point: dict, rate: float, seed: int, iterations: float, status: str = "converged") -> dict:
    """One net sweep record at ``point`` (its axes' values, coded axes by name), as the sweep writes it."""
    spec = config.spec_at({k: v for k, v in point.items() if k in ("width", "depth")})
    p = float(spec.parameter_count)
    return {"sweep": "net", "batch": float(spec.batch), "beta": 0.0, "method": "sgd", "seed": seed,
            "lr_multiplier": rate, "learning_rate": rate, "iterations": iterations, "status": status,
            "hits": [iterations if status == "converged" else None], "width": float(spec.width),
            "depth": float(spec.depth), "dim": p, "parameters": p, "schedule": "constant", "mode": "simulate",
            **point}


def _steps_vs_batch(config, b_crit_of) -> list[dict]:
    """Over every batch (and width) of ``config``: its seeds at S(B) spaced by 2 around S(B) (3 seeds: S − 2, S,
    S + 2) at rate 1 and 1.25 times that at the grid's other rates, S(B) = 10 (1 + B_crit/B) with
    ``b_crit_of(P)``."""
    axes = dict(config.axes)
    offsets = [2 * seed - (config.seeds - 1) for seed in range(config.seeds)]
    out = []
    for width in axes.get("width", (None,)):
        at = {} if width is None else {"width": width}
        b_crit = b_crit_of(config.spec_at(at).parameter_count)
        for b in axes["batch"]:
            for rate in config.lr_grid:
                for seed, offset in enumerate(offsets):
                    n = 10 * (1 + b_crit / b) + offset
                    out.append(_record(config, {"batch": b, **at}, rate, seed, n if rate == 1.0 else 1.25 * n))
    return out


@pytest.fixture
def sweeps(monkeypatch):
    """The engine stood in for: `otod.nets.figures.sweep`' ``run_sweep`` returns the records ``sweeps.records(config)``
    makes (with the meta the sweep writes: its config and any extra meta, the NQM prediction), and records each
    config and folder it was asked for; the NQM prediction returns ``sweeps.predictions(config)``."""
    import otod.nets.figures.sweep as nf
    import otod.nets.sweep.predict as predict

    class Sweeps:
        asked: list = []
        records = staticmethod(lambda config: [])
        predictions = staticmethod(lambda config: [])

    def run_sweep(config, out_dir=None, extra_meta=None):
        Sweeps.asked.append((config, out_dir))
        meta = {"kind": "sweep", "sweep": "net", "config": config.to_dict(), **(extra_meta() if extra_meta else {})}
        return Results(meta=meta, records=Sweeps.records(config))

    Sweeps.asked = []
    monkeypatch.setattr(nf, "run_sweep", run_sweep)
    monkeypatch.setattr(predict, "sweep_predictions", lambda config: Sweeps.predictions(config))
    return Sweeps


def test_make_batch_draws_measured_steps_the_fit_and_the_nqm_prediction(tmp_path, saved, sweeps):
    """One net (width 8, P = 610) over B = 2…128: the medians at rate 1 with their IQR bars, the S(B) fit's
    B_crit = 64, the NQM's predicted curve and B_crit = 40 over it in the same colour, and its B_noise at the
    target as a dashed vertical line; log axes, base 2 in B; the title names the net and P; saved with its PDF."""
    sweeps.records = lambda config: _steps_vs_batch(config, lambda p: 64.0)
    curve = [[2.0, 252.0], [8.0, 72.0], [32.0, 27.0], [128.0, 15.75]]
    sweeps.predictions = lambda config: [{"parameters": float(config.problem.parameter_count), "method": "sgd",
                                          "b_crit": 40.0, "b_noise_target": 12.5, "curve": curve}]
    from otod.nets.figures.sweep import MAKERS

    files = MAKERS["nets-batch"]({"maker": "nets-batch", "name": "toy", "batch": "2..128:7:log", "width": 8,
                                  "method": "sgd", "target": 0.1, "seeds": 3, "lr_grid": "0.3,1,3"}, tmp_path)
    ((config, folder),) = sweeps.asked
    assert folder == "results" and dict(config.axes)["batch"] == (2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0)
    assert config.problem.width == 8 and config.seeds == 3 and config.lr_grid == (0.3, 1.0, 3.0)
    assert [f.name for f in files] == ["nets_toy.png"] and saved[0][2] is True
    (ax,) = saved[0][0].axes
    assert ax.get_title() == "Measured steps against batch size and the NQM's prediction, P = 610"
    assert saved[0][0].otod_caption.startswith(  # the settings left the title for the caption
        "Settings: mlp on digits (cross-entropy), target loss 0.1, 3 seeds, lr tuned per point.")
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_xscale(), ax.get_yscale()) == (
        "batch size B", "steps to target", "log", "log")
    assert ax.xaxis.get_transform().base == 2
    b = np.asarray(dict(config.axes)["batch"])
    s = 10 * (1 + 64 / b)
    (bars,) = ax.containers
    points, _, (segments,) = bars.lines
    assert np.array_equal(points.get_xdata(), b) and np.allclose(points.get_ydata(), s)
    assert np.allclose(np.asarray(segments.get_segments())[:, :, 1], np.stack([s - 1, s + 1], 1))
    fit = drawn_line(ax, "sgd fit: B_crit = 64")
    assert np.allclose(fit.get_ydata(), 10 * (1 + 64 / np.asarray(fit.get_xdata())), rtol=1e-6)
    predicted = drawn_line(ax, "sgd: NQM prediction (B_crit = 40)")
    assert np.array_equal(np.column_stack([predicted.get_xdata(), predicted.get_ydata()]), curve)
    assert predicted.get_color() == points.get_color()
    noise = drawn_line(ax, "B_noise at the target (NQM) 12.5")
    assert list(noise.get_xdata()) == [12.5, 12.5] and noise.get_linestyle() == "--"
    assert legend_texts(ax) == ["sgd fit: B_crit = 64", "sgd: NQM prediction (B_crit = 40)",
                           "B_noise at the target (NQM) 12.5", "sgd (median, bars: IQR over seeds)"]


def test_a_batch_sweep_over_widths_gets_one_panel_per_net_with_its_own_prediction(tmp_path, saved, sweeps):
    """Widths 4 and 8 (P = 310, 610): one panel each, titled by P under the sweep's title, each with its own net's
    measured B_crit and NQM prediction (the other net's is not drawn there)."""
    sweeps.records = lambda config: _steps_vs_batch(config, lambda p: p / 10)
    sweeps.predictions = lambda config: [
        {"parameters": p, "method": "sgd", "b_crit": p / 5, "b_noise_target": p / 20,
         "curve": [[2.0, p], [128.0, p / 2]]} for p in (310.0, 610.0)]
    from otod.nets.figures.sweep import MAKERS

    MAKERS["nets-batch"]({"name": "two", "batch": "2..128:7:log", "width": "4,8", "method": "sgd", "target": 0.1,
                          "seeds": 3, "lr_grid": "0.3,1,3"}, tmp_path)
    fig = saved[0][0]
    assert fig._suptitle.get_text() == "Measured steps against batch size and the NQM's prediction, one panel per net"
    assert fig.otod_caption.startswith("Settings: mlp on digits (cross-entropy), target loss 0.1, 3 seeds")
    assert [ax.get_title() for ax in fig.axes] == ["P = 310 parameters", "P = 610 parameters"]
    for ax, p in zip(fig.axes, (310.0, 610.0)):
        labels = [line.get_label() for line in ax.get_lines()]
        assert f"sgd fit: B_crit = {p / 10:.3g}" in labels
        predicted = [label for label in labels if "NQM prediction" in label]
        assert predicted == [f"sgd: NQM prediction (B_crit = {p / 5:.4g})"]
        assert list(drawn_line(ax, f"B_noise at the target (NQM) {p / 20:.3g}").get_xdata()) == [p / 20, p / 20]


def test_make_width_draws_measured_and_predicted_b_crit_against_p_with_the_rule(tmp_path, saved, sweeps):
    """Widths 4, 8, 16 (P = 310, 610, 1210), each with S(B) of B_crit = 2√P over 5 seeds: the measured B_crit at
    each P (its bootstrap CI as bars), the NQM's predicted B_crit (3√P) and B_noise at the target per net, and the
    fitted rule B_crit ∝ P^0.50 with its CI in the legend; log-log axes labelled P and B_crit."""
    sweeps.records = lambda config: _steps_vs_batch(config, lambda p: 2 * math.sqrt(p))
    sweeps.predictions = lambda config: [
        {"parameters": float(config.spec_at({"width": w}).parameter_count), "method": "sgd",
         "b_crit": 3 * math.sqrt(config.spec_at({"width": w}).parameter_count), "b_noise_target": 10.0 * i,
         "curve": []} for i, w in enumerate(dict(config.axes)["width"], 1)]
    from otod.nets.figures.sweep import MAKERS

    files = MAKERS["nets-width"]({"maker": "nets-width", "name": "width", "batch": "2..256:8:log", "width": "4,8,16",
                                  "method": "sgd", "target": 0.1, "seeds": 5, "lr_grid": "0.3,1,3"}, tmp_path)
    ((config, _),) = sweeps.asked
    assert dict(config.axes)["width"] == (4.0, 8.0, 16.0)
    assert [f.name for f in files] == ["nets_width.png"]
    (ax,) = saved[0][0].axes
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_xscale(), ax.get_yscale()) == (
        "parameters P (width varied)", "critical batch B_crit", "log", "log")
    p = np.array([310.0, 610.0, 1210.0])
    (bars,) = ax.containers
    assert np.array_equal(bars.lines[0].get_xdata(), p)
    assert np.allclose(bars.lines[0].get_ydata(), 2 * np.sqrt(p), rtol=1e-6)
    predicted = drawn_line(ax, "NQM predicted B_crit")
    assert np.array_equal(predicted.get_xdata(), p) and np.allclose(predicted.get_ydata(), 3 * np.sqrt(p))
    fitted = drawn_line(ax, "sgd: fitted B_crit ∝ P^0.50 [0.50, 0.50]")  # the quoted fit, drawn over its P
    assert np.allclose(fitted.get_ydata(), 2 * np.sqrt(fitted.get_xdata()), rtol=1e-6)
    noise = drawn_line(ax, "B_noise at the target")
    assert np.array_equal(noise.get_xdata(), p) and list(noise.get_ydata()) == [10.0, 20.0, 30.0]
    assert legend_texts(ax) == ["sgd: fitted B_crit ∝ P^0.50 [0.50, 0.50]", "shaded: each fit's 95% band (seeds)",
                                "NQM predicted B_crit", "B_noise at the target", "sgd: measured B_crit (95% CI, seeds)"]
    # the rule's band, shaded over the P it was fitted to, around the line: the seeds' ±2 steps shift every panel's
    # medians together (common seeds), so the replicate lines move up and down far more than they tilt
    (band,) = [c for c in ax.collections if c.get_paths() and len(c.get_paths()[0].vertices) > 3]
    x, y = band.get_paths()[0].vertices.T
    assert x.min() == pytest.approx(310.0) and x.max() == pytest.approx(1210.0)
    ratio = y[1:51] / (2 * np.sqrt(x[1:51])), y[52:-1] / (2 * np.sqrt(x[52:-1]))  # one edge, then the other
    assert np.all(ratio[0] < 1) and np.all(ratio[1] > 1) and np.all(ratio[1] < 2) and np.all(ratio[0] > 0.5)


def _data_size_records(config, b_crit_of) -> list[dict]:
    """`_steps_vs_batch` over every width and training size D of ``config``, S(B) = 10 (1 + B_crit/B) with
    B_crit = ``b_crit_of(P, D)``; each record carries its D, as the sweep's do."""
    axes = dict(config.axes)
    offsets = [2 * seed - (config.seeds - 1) for seed in range(config.seeds)]
    out = []
    for width in axes.get("width", (None,)):
        for examples in axes.get("examples", (None,)):
            at = {k: v for k, v in (("width", width), ("examples", examples)) if v is not None}
            spec = config.spec_at(at)
            b_crit = b_crit_of(spec.parameter_count, spec.dataset().examples)
            for b in axes["batch"]:
                for rate in config.lr_grid:
                    for seed, offset in enumerate(offsets):
                        n = 10 * (1 + b_crit / b) + offset
                        out.append(_record(config, {"batch": b, **at, "examples": float(spec.dataset().examples)},
                                           rate, seed, n if rate == 1.0 else 1.25 * n))
    return out


def test_data_size_specs_give_the_fixed_d_sweep_its_own_batches_lr_grid_and_cap_and_leave_the_fixed_p_one_alone():
    """``fixed_lr_grid``, ``fixed_max_iters``, ``fixed_batch`` replace the shared setting in the fixed-D sweep only
    (the widths at ``fixed_examples``); the fixed-P sweep's spec is the one without them (so its results file, named
    by its config digest, is read back, not rerun); without them both sweeps share every setting."""
    from otod.core.figures import parse_figure
    from otod.nets.figures.sweep import MAKERS, data_size_specs

    spec = {"maker": "nets-data-size", "name": "d", "batch": "4..512:8:log", "width": 32, "widths": "8,32,128",
            "examples": "512,1024,2048", "fixed_examples": 1024, "lr_grid": "0.03..3:9:log", "max_iters": 5000}
    maker = MAKERS["nets-data-size"]
    plain_p, plain_d = data_size_specs(parse_figure(maker, spec, "[d]"))
    own = {"fixed_lr_grid": "0.0168702..3:10:log", "fixed_max_iters": 10000, "fixed_batch": "2..512:9:log"}
    own_p, own_d = data_size_specs(parse_figure(maker, {**spec, **own}, "[d]"))
    assert own_p == plain_p == {k: v for k, v in spec.items() if k not in ("maker", "name", "widths", "fixed_examples")}
    assert plain_d == {**plain_p, "width": "8,32,128", "examples": "1024"}
    assert own_d == {**plain_d, "lr_grid": "0.0168702..3:10:log", "max_iters": 10000, "batch": "2..512:9:log"}


def test_make_data_size_draws_b_crit_against_d_at_fixed_p_and_against_p_at_fixed_d(tmp_path, monkeypatch, sweeps):
    """Two sweeps of S(B) with B_crit = 2√D·(P/310)^0.3: D = 256, 512, 1024 at width 4 (P = 310), and widths 4, 8,
    16 (P = 310, 610, 1210) at D = 1024. Left: B_crit against D with bars and the fitted D^0.50; right: against P
    with the fitted P^0.30; log-log axes labelled D and P; no NQM prediction asked for. The table is
    experiments/nets.toml's ``critical_batch_vs_data_digits`` cut down, run through the registry as ``otod figures``
    runs it (`tests.smoke.draw_tiny`; the smoke test of this maker, issue 53): the page two columns wide, the caption
    naming both sweeps. 2.7 CPU s: two sweeps' validation and six panels' bootstraps."""
    from tests.smoke import assert_printed_width, close_all, draw_tiny

    sweeps.records = lambda config: _data_size_records(config, lambda p, d: 2 * math.sqrt(d) * (p / 310) ** 0.3)
    drawn = draw_tiny("nets", "critical_batch_vs_data_digits", tmp_path, monkeypatch, batch="2..256:8:log",
                      width=4, examples="256,512,1024", widths="4,8,16", fixed_examples=1024, seeds=5,
                      lr_grid="0.3,1,3", max_iters=None)
    (by_data, _), (by_width, _) = sweeps.asked
    assert dict(by_data.axes)["examples"] == (256.0, 512.0, 1024.0) and "width" not in dict(by_data.axes)
    assert dict(by_width.axes)["width"] == (4.0, 8.0, 16.0) and by_width.problem.examples == 1024
    assert [f.name for f in drawn.files] == ["nets_critical_batch_vs_data_digits.png",
                                             "nets_critical_batch_vs_data_digits.pdf"]
    assert_printed_width(drawn, columns=2)
    assert "Left: width 4, training sets of D = 256,512,1024 nested examples; right: widths 4,8,16 at D = 1024" in (
        drawn.caption())
    left, right = drawn.figures[0].axes[:2]
    assert (left.get_xlabel(), right.get_xlabel(), left.get_xscale(), right.get_yscale()) == (
        "training examples D (nested subsets)", "parameters P (width varied)", "log", "log")
    for ax, x, expected, symbol, at in ((left, [256.0, 512.0, 1024.0], 2 * np.sqrt([256.0, 512.0, 1024.0]), "D",
                                         "P = 310"),
                                        (right, [310.0, 610.0, 1210.0], 64 * (np.array([310, 610, 1210]) / 310) ** 0.3,
                                         "P", "D = 1024")):
        (bars,) = ax.containers
        assert np.array_equal(bars.lines[0].get_xdata(), x)
        assert np.allclose(bars.lines[0].get_ydata(), expected, rtol=1e-6)
        exponent = "0.50" if symbol == "D" else "0.30"
        (fitted,) = [line for line in ax.get_lines()
                     if line.get_label().startswith(f"sgd ({at}): fitted B_crit ∝ {symbol}^{exponent} [")]
        assert np.allclose(np.interp(x, fitted.get_xdata(), fitted.get_ydata()), expected, rtol=1e-3)
        # the rule's band shaded over the same span, around the line
        (band,) = [c for c in ax.collections if c.get_paths() and len(c.get_paths()[0].vertices) > 3]
        bx, by = band.get_paths()[0].vertices.T
        assert bx.min() == pytest.approx(x[0]) and bx.max() == pytest.approx(x[-1])
        line = np.interp(bx[1:51], fitted.get_xdata(), fitted.get_ydata())
        assert np.all(by[1:51] <= line * (1 + 1e-9))
    assert "shaded: each fit's 95% band (seeds)" in legend_texts(left)
    close_all(drawn)


def test_make_depth_draws_steps_against_depth_per_architecture_with_its_law(tmp_path, saved, sweeps):
    """Depths 2–5, plain (10·2^L steps: exponential; at L = 5 every lane censored at the cap, so an open
    triangle there and no point) and residual (10·L²: a power law, dashed); each label names the law AIC chose;
    steps on a log axis against depth on a linear one; no prediction asked for."""

    def records(config):
        out = []
        for depth in dict(config.axes)["depth"]:
            for arch in ("plain", "residual"):
                for rate in config.lr_grid:
                    for seed, offset in enumerate((-1, 0, 1)):
                        n, status = (10 * 2 ** depth if arch == "plain" else 10 * depth ** 2) + offset, "converged"
                        if arch == "plain" and depth == 5:
                            n, status = config.resolved_max_iters, "censored"
                        out.append(_record(config, {"depth": depth, "architecture": arch}, rate, seed,
                                           n if rate == 1.0 else 1.25 * n, status))
        return out

    sweeps.records = records
    sweeps.predictions = lambda config: pytest.fail("a depth sweep asks for no NQM prediction")
    from otod.core.figures import SweepFigureSpec, TypedMaker
    from otod.nets.figures.sweep import make_depth
    from otod.nets.sweep.options import net_config

    maker = TypedMaker(SweepFigureSpec, make_depth, net_config)  # the nets' own, without the deep-linear law
    files = maker({"maker": "nets-depth", "name": "depth", "batch": 64, "depth": "2..5:4",
                   "architecture": "plain,residual", "method": "sgd", "target": 0.1, "seeds": 3,
                   "max_iters": 500, "lr_grid": "0.3,1,3"}, tmp_path)
    ((config, _),) = sweeps.asked
    assert dict(config.axes)["depth"] == (2.0, 3.0, 4.0, 5.0) and config.problem.batch == 64
    assert [f.name for f in files] == ["nets_depth.png"] and saved[0][2] is True
    fig = saved[0][0]
    left, right = fig.axes  # plain nets left, residual nets right, on one y axis
    assert (fig.get_suptitle(), left.get_title(), right.get_title()) == (
        "Steps to target against depth", "plain nets", "residual nets (dashed, open markers)")
    assert fig.otod_caption.startswith("Settings: mlp on digits (cross-entropy), target loss 0.1, 3 seeds")
    assert (left.get_xlabel(), left.get_ylabel(), left.get_xscale(), left.get_yscale()) == (
        "depth L (weight layers)", "steps to target (median over seeds)", "linear", "log")
    assert right.get_shared_y_axes().joined(left, right) and right.get_ylabel() == ""
    plain = next(ln for ln in left.get_lines() if ln.get_label().startswith("sgd·plain: exponential, c = 0.69 "))
    residual = next(ln for ln in right.get_lines() if ln.get_label().startswith("sgd·residual: power, b = 2.00 "))
    assert not any(line.get_label().startswith("sgd·residual") for line in left.get_lines())
    # one series a panel: no dodge; the median at L = 5 (censored) is only a bound
    assert list(plain.get_xdata()) == [2, 3, 4] and list(plain.get_ydata()) == [40, 80, 160]
    assert list(residual.get_xdata()) == [2, 3, 4, 5] and list(residual.get_ydata()) == [40, 90, 160, 250]
    assert residual.get_color() == plain.get_color()  # one init (sgd's default), one colour in both panels
    (bound,) = [line for line in left.get_lines() if line.get_marker() == "^" and len(line.get_xdata())]
    assert (list(bound.get_xdata()), list(bound.get_ydata()), bound.get_color()) == ([5], [500], plain.get_color())
    assert not [line for line in right.get_lines() if line.get_marker() == "^" and len(line.get_xdata())]

    def medians_style(ax):
        (style,) = {line.get_linestyle() for line in ax.get_lines() if line.get_marker() in ("None", None, "")
                    and line.get_linestyle() in ("-", "--")}
        return style

    assert (medians_style(left), medians_style(right)) == ("-", "--")
    # each chosen law drawn dotted over its fitted depths: 10·2^L and 10·L²
    (law,) = [line for line in left.get_lines() if line.get_linestyle() == ":" and len(line.get_xdata())]
    np.testing.assert_allclose(law.get_ydata(), 10 * 2 ** np.asarray(law.get_xdata()), rtol=1e-6)
    (law,) = [line for line in right.get_lines() if line.get_linestyle() == ":" and len(line.get_xdata())]
    np.testing.assert_allclose(law.get_ydata(), 10 * np.asarray(law.get_xdata()) ** 2, rtol=1e-6)
    texts = legend_texts(left)
    assert texts[:2] == [plain.get_label(), residual.get_label()]
    assert "△ median only a lower bound (≥)" in texts and "IQR over seeds" in texts
    # no law's band hatched (the laws' CIs are the legend's), none named; 3 seeds give no CI, none quoted
    assert not [c for ax in (left, right) for c in ax.collections if c.get_hatch() and c.get_paths()]
    assert not any("hatched" in t for t in texts) and "[" not in plain.get_label()


# -- the curvature figures -------------------------------------------------------------------------------------------


def _curvature_record(spec, config: dict, step: int) -> dict:
    """A curvature record at ``step`` whose numbers follow from the net: λ_max = 5 at init and 10 at the end,
    λ_q = 6/P (so κ_q ∝ P), except at width 16, where λ_q ≤ 0 at the end (κ_q none); a six-node SLQ measure."""
    p = spec.parameter_count
    end = step > 0
    lambda_max, lambda_q = (10.0 if end else 5.0), (-1e-4 if end and spec.width == 16 else 6.0 / p)
    return {"step": step, "train_loss": 0.5 if end else 2.25, "lambda_max": lambda_max, "lambda_q": lambda_q,
            "kappa_q": None if lambda_q <= 0 else lambda_max / lambda_q, "negative_mass": 0.07,
            "quantile": config["quantile"], "top_eigenvalues": [lambda_max, lambda_max / 2],
            "slq_nodes": [-0.01, 0.0005, 0.005, 0.05, 0.5, lambda_max],
            "slq_weights": [0.05, 0.3, 0.3, 0.2, 0.1, 0.05], "lr": config["lr"], "probes": config["probes"],
            "lanczos_steps": config["lanczos_steps"], "precision": config["precision"]}


@pytest.fixture
def measured(monkeypatch):
    """The curvature measurement stood in for (`otod.nets.curvature_cli.measured`): `_curvature_record` at each of
    the config's checkpoints; each (net, config, folder) asked for is kept."""
    import otod.nets.curvature_cli as cli

    asked = []

    def measure(spec, config, folder="results"):
        config = config.stored_for_net(spec)  # the settings as the results file stores them
        asked.append((spec, config, folder))
        return [_curvature_record(spec, config, step) for step in config["checkpoints"]]

    monkeypatch.setattr(cli, "measured", measure)
    return asked


TINY_NET = {"model": "mlp", "depth": 2, "data": "digits", "examples": 64, "batch": 16, "lr": 0.1, "k": 2, "probes": 2,
            "lanczos_steps": 12}


def test_make_spectral_density_draws_each_checkpoints_density_its_quantile_and_top_eigenvalues(tmp_path, saved,
                                                                                              measured):
    """Checkpoints 0 and 20 of a width-8 net: each one's SLQ measure broadened on the asinh axis (its area, in u,
    the measure's mass: 1), floored at 10⁻⁵, in its own colour, its λ_q as a dotted vertical line, its top
    eigenvalues as ticks at the bottom; a symlog λ axis linear within ±λ₀ = 10⁻³, a log density axis from 10⁻⁴;
    each legend entry says the checkpoint's loss, λ_max, λ_q, κ_q and negative mass (its threshold in the
    caption)."""
    from otod.nets.figures.curvature import MAKERS, density_on_asinh_axis

    files = MAKERS["nets-spectral-density"]({"maker": "nets-spectral-density", "name": "sd", "width": 8, **TINY_NET,
                                             "checkpoints": [0, 20], "results": str(tmp_path / "measured")}, tmp_path)
    ((net, config, folder),) = measured
    assert (net.width, net.depth, net.examples, config["checkpoints"], config["k"], config["probes"]) == (
        8, 2, 64, [0, 20], 2, 2)
    assert folder == str(tmp_path / "measured")
    assert [f.name for f in files] == ["nets_sd.png"]
    (ax,) = saved[0][0].axes
    assert ax.get_xscale() == "symlog" and ax.xaxis.get_transform().linthresh == 1e-3
    assert ax.get_yscale() == "log" and ax.get_ylim()[0] == 1e-4
    assert ax.get_xlabel() == "Hessian eigenvalue λ (linear within ±0.001, logarithmic in |λ| beyond)"
    assert ax.get_ylabel().startswith("spectral density per unit of asinh(λ/0.001)")
    assert ax.get_title().startswith(f"The Hessian spectrum along training, P = {net.parameter_count:,}:")
    assert "SLQ spectral density per unit of u, Gaussian-broadened by σ = 0.2" in saved[0][0].otod_caption
    colors = []
    for step, loss, lambda_max in ((0, "2.25", 5.0), (20, "0.5", 10.0)):
        record = _curvature_record(net, config, step)
        lambda_q = 6.0 / net.parameter_count
        label = (f"step {step}: loss {loss}, λ_max {lambda_max:.3g}, λ_q {lambda_q:.2g}, "
                 f"κ_q {lambda_max / lambda_q:.3g}, 7.0% negative")
        curve = drawn_line(ax, label)
        grid, density = density_on_asinh_axis(record["slq_nodes"], record["slq_weights"], 1e-3, 0.2)
        assert np.array_equal(curve.get_xdata(), grid) and np.array_equal(curve.get_ydata(), np.maximum(density, 1e-5))
        u = np.arcsinh(np.asarray(curve.get_xdata()) / 1e-3)
        assert np.trapezoid(density, u) == pytest.approx(1.0, abs=1e-3)
        color = curve.get_color()
        quantile = [line for line in ax.get_lines() if list(line.get_xdata()) == [lambda_q, lambda_q]
                    and line.get_color() is color]
        assert len(quantile) == 1 and quantile[0].get_linestyle() == ":"
        ticks = [line for line in ax.get_lines() if line.get_marker() == "|" and line.get_color() is color]
        assert len(ticks) == 1 and list(ticks[0].get_xdata()) == [lambda_max, lambda_max / 2]
        assert np.allclose(ticks[0].get_ydata(), 1.6e-4)
        colors.append(tuple(color))
    assert colors[0] != colors[1]
    (legend,) = saved[0][0].legends
    assert legend.get_title().get_text() == "κ_q = λ_max / λ_q"
    assert legend_texts(ax)[2:] == [
        "dotted: λ_q, the 0.9 quantile of the spectrum", "ticks: top 2 eigenvalues (Lanczos)"]
    assert "\"negative\": the share of the spectrum below −10⁻³ λ_max" in saved[0][0].otod_caption


def test_the_kappa_width_caption_names_the_switch_from_exact_to_slq():
    """Issue 50: the figure's P^0.73 at init rested on the change from the exact spectrum (widths 8–64) to SLQ (128,
    256); the caption names where the method changes, and says nothing where it does not."""
    from otod.nets.figures.curvature import _switch_note

    exact, slq = "exact spectrum (dense Hessian)", "SLQ 4 probes × 100 steps"
    widths = [8, 16, 32, 64, 128, 256]
    assert _switch_note(widths, [exact] * 4 + [slq] * 2) == (
        "; the fit spans the change of method between widths 64 and 128 (exact spectrum to SLQ 4 probes × 100 "
        "steps; marked in both panels by the grey dash-dotted vertical line, labelled exact and SLQ either side), "
        "so its exponent rests partly on that switch")
    assert _switch_note(widths, [exact] * 6) == ""


def test_make_kappa_width_draws_kappa_and_its_parts_against_width(tmp_path, saved, measured):
    """Widths 4, 8, 16 at init and after 30 steps: κ_q = λ_max/λ_q against width on the left (∝ P at init, the fit
    says P^1.00; at the end width 16's λ_q ≤ 0, so no κ there and the fit over the other two), λ_max and λ_q on the
    right, the parameter count on the top axes; log axes, base 2 in width, ticks at the widths."""
    from otod.nets.figures.curvature import MAKERS

    files = MAKERS["nets-kappa-width"]({"maker": "nets-kappa-width", "name": "kw", "widths": [4, 8, 16], **TINY_NET,
                                        "steps": 30}, tmp_path)
    assert [(net.width, config["checkpoints"]) for net, config, _ in measured] == [(4, [0, 30]), (8, [0, 30]),
                                                                                   (16, [0, 30])]
    assert [f.name for f in files] == ["nets_kw.png"]
    left, right = saved[0][0].axes[:2]
    p = np.array([net.parameter_count for net, _, _ in measured], float)
    assert list(p) == [310.0, 610.0, 1210.0]
    assert left.get_ylabel() == "κ_q = λ_max / λ_q, q = 0.9" and right.get_ylabel() == "Hessian eigenvalue"
    for ax in (left, right):
        assert (ax.get_xlabel(), ax.get_xscale(), ax.get_yscale()) == ("width (hidden units)", "log", "log")
        assert ax.xaxis.get_transform().base == 2 and list(ax.get_xticks()) == [4, 8, 16]
    init, end, *fits = left.get_lines()
    assert [line.get_gid() for line in fits] == ["fit", "fit"]  # the quoted fits, drawn
    assert np.allclose(fits[0].get_ydata(), 5.0 * p / 6.0)
    end_slope = np.polyfit(np.log(p[:2]), np.log(10.0 * p[:2] / 6.0), 1)[0]
    assert init.get_label() == "init (step 0): κ_q ∝ P^1.00 (no CI)"  # one net per width: no seeds, no band
    assert end.get_label() == f"end (step 30): κ_q ∝ P^{end_slope:.2f} (no CI)"
    assert [c for c in left.collections if c.get_paths()] == []
    caption = saved[0][0].otod_caption
    assert "change of method" not in caption  # one method at every width: no switch to warn of, none marked
    assert [t for ax in (left, right) for t in ax.texts if t.get_gid() == "method switch"] == []
    assert "init (step 0): training loss 2.25 (width 4) to 2.25 (width 16)" in caption
    assert "end (step 30): training loss 0.5 (width 4) to 0.5 (width 16)" in caption
    assert list(init.get_xdata()) == [4, 8, 16] and np.allclose(init.get_ydata(), 5.0 * p / 6.0)
    assert np.allclose(end.get_ydata()[:2], 10.0 * p[:2] / 6.0) and math.isnan(end.get_ydata()[2])
    assert [line.get_label() for line in right.get_lines()] == [
        "λ_max, init (step 0)", "λ_q, init (step 0)", "λ_max, end (step 30)", "λ_q, end (step 30)"]
    lambda_max_init, lambda_q_init, lambda_max_end, lambda_q_end = right.get_lines()
    assert list(lambda_max_init.get_ydata()) == [5.0] * 3 and list(lambda_max_end.get_ydata()) == [10.0] * 3
    assert np.allclose(lambda_q_init.get_ydata(), 6.0 / p) and lambda_q_end.get_ydata()[2] == -1e-4
    assert legend_texts(left) == [init.get_label(), end.get_label()]


def test_make_kappa_width_marks_the_switch_from_exact_to_slq_where_the_records_change_method(tmp_path, saved,
                                                                                             monkeypatch):
    """Issue 50: records exact (dense) at widths 4 and 8 and SLQ at 16 and 32: each panel draws one dash-dotted
    vertical line at √(8·16) (the midpoint of 8 and 16 on the log₂ axis), broken where it would cross the legend,
    "exact" to its left and "SLQ" to its right; nothing else is marked, the legends stay as they were."""
    import otod.nets.curvature_cli as cli
    from otod.nets.figures.curvature import MAKERS

    def measure(spec, config, folder="results"):
        config = config.stored_for_net(spec)  # the settings as the results file stores them
        return [{**_curvature_record(spec, config, step), "spectrum": "dense" if spec.width <= 8 else "slq"}
                for step in config["checkpoints"]]

    monkeypatch.setattr(cli, "measured", measure)
    MAKERS["nets-kappa-width"]({"maker": "nets-kappa-width", "name": "kw", "widths": [4, 8, 16, 32], **TINY_NET,
                                "steps": 30}, tmp_path)
    fig = saved[0][0]
    for ax in fig.axes[:2]:
        lines = [line for line in ax.get_lines() if line.get_gid() == "method switch"]
        assert lines and lines[0].get_ydata()[0] == 0.0  # it reaches the bottom, where its labels are
        legend = ax.get_legend().get_window_extent().transformed(ax.transAxes.inverted())
        for line in lines:
            assert list(line.get_xdata()) == [pytest.approx(math.sqrt(8 * 16))] * 2 and line.get_linestyle() == "-."
            x = ax.transAxes.inverted().transform(ax.transData.transform((line.get_xdata()[0], 1.0)))[0]
            bottom, top = line.get_ydata()
            assert not (legend.x0 <= x <= legend.x1 and bottom < legend.y1 and top > legend.y0)  # no text struck
        texts = {t.get_text().strip(): t for t in ax.texts if t.get_gid() == "method switch"}
        assert sorted(texts) == ["SLQ", "exact"]
        assert texts["exact"].get_position()[0] == pytest.approx(math.sqrt(8 * 16))
        assert (texts["exact"].get_ha(), texts["SLQ"].get_ha()) == ("right", "left")  # exact left, SLQ right
        assert min(t.get_fontsize() for t in texts.values()) >= 7
        assert all("switch" not in text for text in legend_texts(ax))
    assert "between widths 8 and 16 (exact spectrum to SLQ 2 probes × 12 steps; marked" in fig.otod_caption


def test_every_nets_maker_is_run_by_a_test():
    from otod.nets.figures.sweep import ALL_MAKERS

    assert set(ALL_MAKERS) == {"nets-batch", "nets-width", "nets-spectral-density", "nets-kappa-width",
                               "nets-workloads", "nets-data-size", "nets-along", "nets-schedule",
                               "nets-predictor-ratios"}  # the last: tests/nets/figures/test_predictors.py


# -- the real runners, once each ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_make_batch_on_a_real_tiny_sweep_draws_its_chosen_medians_and_its_prediction(tmp_path, saved, monkeypatch):
    """A real sweep (width 4, 128 examples, B = 8, 32, 128, 2 seeds, rates 0.3, 1, 3) and the real NQM prediction:
    the points drawn are, per B, the median over seeds at the rate whose median is lowest (a lane that did not
    converge counting +∞), read here from the results file the maker wrote, and the prediction drawn is the one
    that file carries."""
    from otod.core import results as results_io
    from otod.nets.figures.sweep import MAKERS

    monkeypatch.chdir(tmp_path)
    MAKERS["nets-batch"]({"name": "real", "batch": "8,32,128", "width": 4, "examples": "128", "seeds": 2,
                          "lr_grid": "0.3,1,3", "target": "0.5", "max_iters": "400"}, tmp_path / "figs")
    (path,) = (tmp_path / "results").glob("net-*")
    loaded = results_io.load(path)
    expected = {}
    for b in (8.0, 32.0, 128.0):
        rows = [r for r in loaded.records if r["batch"] == b]
        by_rate = {}
        for r in rows:
            count = r["iterations"] if r["status"] == "converged" else math.inf
            by_rate.setdefault(r["lr_multiplier"], []).append(count)
        expected[b] = min(float(np.median(v)) for v in by_rate.values())
    (ax,) = saved[0][0].axes
    (bars,) = ax.containers
    drawn = dict(zip(bars.lines[0].get_xdata(), bars.lines[0].get_ydata()))
    assert drawn and all(drawn[b] == expected[b] for b in drawn)
    assert set(drawn) == {b for b, m in expected.items() if math.isfinite(m)}
    (prediction,) = loaded.meta["nqm_prediction"]
    curve = np.asarray(prediction["curve"], float)
    curve = curve[np.isfinite(curve[:, 1])]
    (line,) = [line for line in ax.get_lines() if "NQM prediction" in line.get_label()]
    assert np.array_equal(np.column_stack([line.get_xdata(), line.get_ydata()]), curve)


@pytest.mark.slow
def test_make_spectral_density_on_a_real_tiny_measurement_draws_its_records(tmp_path, saved):
    """A real measurement (width 4, 64 examples, checkpoints 0 and 20, 2 probes × 12 Lanczos steps): each
    checkpoint's curve is its records' SLQ measure on the asinh axis, its area the measure's mass, and its dotted
    line at its λ_q; the records read back from the results folder the maker wrote."""
    from otod.core.figures import parse_figure
    from otod.nets.figures.curvature import MAKERS, _records, density_on_asinh_axis

    maker = MAKERS["nets-spectral-density"]
    spec = parse_figure(maker, {"name": "real", "width": 4, **TINY_NET, "checkpoints": [0, 20],
                                "results": str(tmp_path / "results")}, "[real]")
    maker.draw(spec, tmp_path / "figs")
    records = _records(spec.net(), spec, [0, 20])  # read back: the file the maker wrote
    assert [r["step"] for r in records] == [0, 20]
    (ax,) = saved[0][0].axes
    curves = [line for line in ax.get_lines() if line.get_label().startswith("step ")]
    assert len(curves) == 2
    for curve, record in zip(curves, records):
        grid, density = density_on_asinh_axis(record["slq_nodes"], record["slq_weights"], 1e-3, 0.2)
        assert np.array_equal(curve.get_xdata(), grid) and np.array_equal(curve.get_ydata(), np.maximum(density, 1e-5))
        u = np.arcsinh(grid / 1e-3)
        assert np.trapezoid(density, u) == pytest.approx(sum(record["slq_weights"]), rel=1e-3)
        assert any(list(line.get_xdata()) == [record["lambda_q"]] * 2 and line.get_linestyle() == ":"
                   for line in ax.get_lines())


def _deep_linear(monkeypatch, seeds: int = 8):
    """The depth obstacle's figure sweep stood in for (`otod.depth.figures.deep_linear_series`): one series
    gd·xavier at depths 1–5 with counts 10·4^L times 1 ± 5% over ``seeds`` seeds (a different order at each depth),
    its laws fitted by AIC (exponential, c = ln 4)."""
    import pandas as pd

    import otod.depth.figures as df
    from otod.core.analysis import analyse
    from otod.depth.options import depth_config_from_options
    from otod.core.laws import LAWS, law_fit

    rng = np.random.default_rng(0)
    rows = [{"method": "gd·xavier", "depth": float(d), "seed": s, "status": "converged", "learning_rate": 0.1,
             "iterations": 10 * 4.0 ** d * (1 + 0.05 * o)}
            for d in range(1, 6) for s, o in enumerate(rng.permutation(np.linspace(-1, 1, seeds)))]
    series = analyse(pd.DataFrame(rows), point=("depth",), axis="depth", statistic=lambda x: LAWS, n_boot=200,
                     fit=lambda name, boot, stat, summary=None: law_fit(name, boot, "depth")).series
    asked = []
    monkeypatch.setattr(df, "deep_linear_series", lambda name: asked.append(name) or (
        Results(meta={"kind": "sweep", "sweep": "depth", "config": depth_config_from_options(
            depth="1..5", init="xavier", seeds=seeds).to_dict()}, records=[]), series))
    return series[0], asked


def _depth_records(config):
    """Depths 2–5, plain 10·2^(L/2) steps (an exponential, c = 0.35), residual 10·L², 3 seeds at ±1 step."""
    out = []
    for depth in dict(config.axes)["depth"]:
        for arch in ("plain", "residual"):
            for rate in config.lr_grid:
                for seed, offset in enumerate((-1, 0, 1)):
                    n = (10 * 2 ** (depth / 2) if arch == "plain" else 10 * depth ** 2) + offset
                    out.append(_record(config, {"depth": depth, "architecture": arch}, rate, seed,
                                       n if rate == 1.0 else 1.25 * n))
    return out


DEPTH_SPEC = {"maker": "nets-depth", "name": "depth", "batch": 64, "depth": "2..5:4", "architecture": "plain,residual",
              "method": "sgd", "target": 0.1, "seeds": 3, "max_iters": 500, "lr_grid": "0.3,1,3"}


def test_make_depth_draws_the_deep_linear_law_beside_the_nets_from_the_named_net_series(tmp_path, saved, sweeps,
                                                                                        monkeypatch):
    """The deep-linear gd·xavier law (c = ln 4 = 1.39 per layer, 8 seeds: a CI) drawn black dash-dot through the
    plain net's median at L = 2 (10·2 = 20 steps): 20·e^(c(L − 2)) over the nets' depths, with its band hatched
    around it (the replicate laws through the same point), named with c and its CI in the legend, the source in the
    caption; the axes keep the nets' range (the law leaves them upwards). A series the depth figure lacks is one
    OtodError naming those it has."""
    from otod.core.errors import OtodError
    from otod.paper.figures import MAKERS as PAPER_MAKERS  # the paper's: above the nets and depth

    make_depth = PAPER_MAKERS["nets-depth"]

    deep, asked = _deep_linear(monkeypatch)
    sweeps.records = _depth_records
    spec = {**DEPTH_SPEC, "deep_linear": {"figure": "depth_iterations", "series": "gd·xavier", "from": "sgd·plain"}}
    make_depth(spec, tmp_path)
    assert asked == ["depth_iterations"] and "deep_linear" not in str(sweeps.asked[0][0].to_dict())
    ax, right = saved[0][0].axes  # the law in the panel of the series it is drawn from: the plain nets'
    assert not [ln for ln in right.get_lines() if ln.get_linestyle() == "-." and len(ln.get_xdata())]
    (line,) = [ln for ln in ax.get_lines() if ln.get_linestyle() == "-." and len(ln.get_xdata())]
    x = np.asarray(line.get_xdata())
    assert (x.min(), x.max(), line.get_color()) == (2.0, 5.0, "k")
    np.testing.assert_allclose(line.get_ydata(), 20 * np.exp(deep.fit.exp_c * (x - 2)), rtol=1e-9)
    assert deep.fit.exp_c == pytest.approx(np.log(4), abs=0.02)
    low, high = deep.fit.exp_ci
    assert line.get_label() == (f"deep linear gd·xavier: exponential, c = {deep.fit.exp_c:.2f} [{low:.2f}, "
                                f"{high:.2f}] (ΔAIC {deep.fit.delta_aic:.1f}), drawn from sgd·plain at L = 2")
    (band,) = [c for c in ax.collections if c.get_hatch() and c.get_paths()]  # 3 net seeds: theirs have no CI
    ys = band.get_paths()[0].vertices[:, 1]
    assert ys.min() == pytest.approx(20, rel=1e-9) and ys.max() > 20 * np.exp(deep.fit.exp_c * 3)
    assert ax.get_ylim()[1] < line.get_ydata().max()  # the nets' range kept
    assert "deep-linear obstacle's law in depth for gd·xavier (experiments/depth.toml [depth_iterations], 8 seeds)" \
        in saved[0][0].otod_caption
    with pytest.raises(OtodError, match="deep_linear series 'gd·small' is not one of depth/depth_iterations's: "
                                        "gd·xavier"):
        make_depth({**spec, "deep_linear": {**spec["deep_linear"], "series": "gd·small"}}, tmp_path)
