"""``otod fit`` and ``otod plot`` on the nets' measurement files (`otod.nets.measurements`): a curvature file and a
noise-scale file read back show the command's numbers, and their figures draw them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import otod
from otod.cli import main

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "models" / "plain_jax.py"


def run(args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.slow
def test_a_curvature_file_reads_back_as_the_command_printed_it_and_draws_its_numbers(tmp_path, saved):
    """The table ``otod fit`` prints of a curvature file is the one the command printed; ``otod plot`` draws
    λ_max and λ_q of each checkpoint (panel a) and one density curve per checkpoint (panel b)."""
    printed = run(["curvature", "--model", f"{FIXTURE}:least_squares", "--steps", "0,5", "--k", "2", "--x64",
                   "--out", tmp_path])
    (file,) = tmp_path.glob("curvature-*.parquet")
    shown = run(["fit", file])
    table = [line for line in printed.splitlines() if line.lstrip().startswith(("step", "0 ", "5 "))]
    assert table and all(line in shown for line in table)
    run(["plot", file, "--style", "paper"])
    records = otod.load(file).records
    fig = saved[-1][0]
    a, b = fig.axes[:2]
    lines = {line.get_label(): line for line in a.get_lines()}
    assert list(lines["λ_max (Lanczos)"].get_ydata()) == [r["lambda_max"] for r in records]
    assert list(lines["λ_q"].get_ydata()) == [r["lambda_q"] for r in records]
    assert sum(1 for line in b.get_lines() if line.get_label().startswith("step ")) == 2


@pytest.mark.slow
def test_a_noise_scale_file_draws_the_exact_scales_and_the_two_batch_estimates(tmp_path, saved):
    """``otod plot`` on a noise-scale file: B_simple and B_noise per checkpoint as the file holds them, each pair's
    two-batch estimate beside them; ``otod fit --tol`` is refused (no ladder), in one line."""
    run(["noise-scale", "--model", f"{FIXTURE}:mlp", "--steps", "0,10", "--pairs", "8:64", "--draws", "8",
         "--out", tmp_path])
    (file,) = tmp_path.glob("noise-scale-*.parquet")
    records = otod.load(file).records
    run(["plot", file])
    (ax,) = saved[-1][0].axes
    lines = {line.get_label(): line for line in ax.get_lines()}
    exact = list({r["step"]: r for r in records}.values())
    np.testing.assert_array_equal(lines["B_simple = tr Σ/|G|² (exact)"].get_ydata(), [r["b_simple"] for r in exact])
    np.testing.assert_array_equal(lines["B_noise = tr(HΣ)/GᵀHG (exact)"].get_ydata(), [r["b_noise"] for r in exact])
    assert any("two-batch estimate of B_simple, B = 8:64" in t.get_text() for t in saved[-1][0].legends[0].texts)
    refused = CliRunner().invoke(main, ["fit", str(file), "--tol", "0.1"])
    assert refused.exit_code == 2 and "not a sweep with a target to re-read" in refused.output


def test_a_written_noise_scale_file_is_drawn_as_it_holds(tmp_path, saved):
    """A noise-scale file written by hand (the command's record fields, numbers chosen): ``otod plot`` draws its
    B_simple and B_noise at its steps, and each pair's estimate with its 16–84% bars; ``otod fit`` prints them."""
    from otod.core import results

    exact = {"loss": 1.0, "g2": 2.0, "trace_sigma": 3.0, "gHg": 4.0, "trace_h_sigma": 5.0, "trace_h_sigma_se": 0.0}
    records = []
    for step, b_simple, b_noise in ((0, 1.5, 1.25), (100, 30.0, 20.0)):
        base = {"step": step, **exact, "b_simple": b_simple, "b_noise": b_noise}
        records += [base, {**base, "b_small": 8, "b_big": 64, "g2_estimate": 2.0, "g2_estimate_se": 0.1,
                           "trace_sigma_estimate": 3.0, "trace_sigma_estimate_se": 0.2,
                           "b_simple_estimate": 2 * b_simple, "b_simple_estimate_lo": b_simple,
                           "b_simple_estimate_hi": 3 * b_simple, "draws": 8}]
    config = {"model": "hand.py:model", "lr": 0.1, "seed": 0, "batch": 32, "precision": "float64"}
    file = results.save(tmp_path / "noise-scale-model-hand.parquet",
                        {"kind": "noise-scale-model", "config": config, "environment": results.environment(),
                         "precision": "float64", "wall_time_s": 1.0, "complete": True}, records)
    shown = run(["fit", file])
    assert "B_simple 1.5   B_noise 1.25" in shown and "B_simple 30   B_noise 20" in shown
    run(["plot", file])
    (ax,) = saved[-1][0].axes
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines["B_simple = tr Σ/|G|² (exact)"].get_xdata()) == [0, 100]
    assert list(lines["B_simple = tr Σ/|G|² (exact)"].get_ydata()) == [1.5, 30.0]
    assert list(lines["B_noise = tr(HΣ)/GᵀHG (exact)"].get_ydata()) == [1.25, 20.0]
    (bars,) = [c for c in ax.containers if c.get_label() == "two-batch estimate of B_simple, B = 8:64"]
    assert list(bars.lines[0].get_ydata()) == [3.0, 60.0]
    segments = bars.lines[2][0].get_segments()
    assert [tuple(seg[:, 1]) for seg in segments] == [(1.5, 4.5), (30.0, 90.0)]


@pytest.mark.slow
def test_the_models_measurements_report_each_checkpoint_as_it_is_done():
    """`otod.nets.api.measure_curvature` and `measure_noise` call progress(done, total) once per checkpoint."""
    import numpy as np

    from otod.nets.api import measure_curvature, measure_noise
    from otod.nets.model.contract import check

    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((32, 3)), rng.standard_normal(32)
    model = check(lambda p, b: 0.5 * ((b[0] @ p - b[1]) ** 2).mean(), np.zeros(3), (x, y))
    calls = []
    measure_curvature(model, (0, 2, 4), k=1, probes=1, lanczos_steps=3, batch=8, progress=lambda *a: calls.append(a))
    measure_noise(model, (0, 2), batch=8, pairs=[(2, 8)], draws=4, progress=lambda *a: calls.append(a))
    assert calls == [(1, 3), (2, 3), (3, 3), (1, 2), (2, 2)]


@pytest.mark.slow  # measure_noise compiles its programs: 13 s on the loaded 2-core machine
def test_the_noise_scale_at_step_0_is_measured_at_the_models_own_float64_start():
    """Without x64 the run trains in float32, but step 0 is the user's start itself: |G|² and the loss there equal
    the float64 values at a start float32 cannot hold (1/3, 1 + 10⁻⁹) to 10⁻¹² (its float32 rounding moves them
    by ~10⁻⁸), as --x64's help says."""
    import numpy as np

    from otod.nets.api import measure_noise
    from otod.nets.model.contract import check

    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((32, 3)), rng.standard_normal(32)
    start = np.array([0.1, 1 / 3, 1 + 1e-9])
    model = check(lambda p, b: 0.5 * ((b[0] @ p - b[1]) ** 2).mean(), start, (x, y))
    [record] = measure_noise(model, (0,), batch=8, pairs=[(2, 8)], draws=4).records
    gradient = x.T @ (x @ start - y) / 32
    assert record["g2"] == pytest.approx(gradient @ gradient, rel=1e-12)
    assert record["loss"] == pytest.approx(0.5 * np.mean((x @ start - y) ** 2), rel=1e-12)
