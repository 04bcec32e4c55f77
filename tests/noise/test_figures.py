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
    monkeypatch.setattr("otod.core.plotting.save", lambda fig, base, pdf=True: kept.append(fig) or [base])
    nf.sweep_figure(results, tmp_path / "fig")
    (fig,) = kept
    assert [ax.get_title() for ax in fig.axes] == ["d = 100", "d = 400"]
    # each panel's ideal line is its own d's: d/(2·target·B) at B = 1
    ideal = [next(line for line in ax.get_lines() if line.get_label().startswith("ideal")) for ax in fig.axes]
    assert [line.get_ydata()[0] for line in ideal] == [100 / (2 * 0.05), 400 / (2 * 0.05)]
    plt.close(fig)


def test_the_estimator_band_is_named(tmp_path, monkeypatch):
    import otod.noise.figures as nf
    from otod.core.plotting import plt

    kept = []
    monkeypatch.setattr("otod.core.plotting.save", lambda fig, base, pdf=True: kept.append(fig) or [base])
    nf.make_estimator({"name": "e", "dim": 20, "pairs": "2:8", "decay": "0.9", "steps": 10, "seeds": 4}, tmp_path)
    labels = kept[0].axes[0].get_legend_handles_labels()[1]
    assert any("IQR over 4 seeds" in label for label in labels)
    plt.close(kept[0])
