"""The noise figures draw from results files: a small exact sweep's figure (a) is written, with the McCandlish fit
and the ideal line among its curves."""

from otod.noise.exact import run_exact
from otod.noise.figures import steps_vs_batch, sweep_figure
from otod.noise.options import noise_config


def test_sweep_figure_draws_the_exact_curve_the_fit_and_the_ideal_line(tmp_path):
    config, mode = noise_config(mode="exact", dim="100", batch="1..256:9:log", method="sgd", target="0.05")
    results = run_exact(config, tmp_path)
    files = sweep_figure(results, tmp_path / "fig")
    assert [f.suffix for f in files] == [".png"] and files[0].stat().st_size > 10_000
    from otod.core.plotting import plt

    fig, ax = plt.subplots()
    steps_vs_batch(results, ax, None)
    labels = [line.get_label() for line in ax.get_lines()]
    assert any(label.startswith("sgd fit: B_crit") for label in labels)
    assert "ideal estimator d/(2·target·B)" in labels
    plt.close(fig)
