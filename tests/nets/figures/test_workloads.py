"""The workloads figure (`otod.nets.figures.workloads`): B_simple and B_noise of the MLP, the CNN and the
transformer along training, drawn from the records `otod.nets.api.measure_noise` returns."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import legend_texts


def _records(parameters: int, examples: int, scale: float) -> list[dict]:
    return [{"step": s, "loss": 2.0 / (1 + s), "b_simple": scale * (1 + s), "b_noise": 0.5 * scale * (1 + s),
             "trace_h_sigma_se": 0.1 * scale, "gHg": 2.0, "parameters": parameters, "examples": examples}
            for s in (0, 10, 100)]


def test_make_workloads_draws_each_nets_noise_scales_against_the_step(tmp_path, saved, monkeypatch):
    """Left: B_simple per net at each checkpoint; right: B_noise with bars tr(HΣ)'s se / GᵀHG (0.1·scale/2);
    the legend names each net with P, n and its first and last loss; log y, symlog x (step 0 drawn)."""
    import otod.nets.figures.workloads as wf

    given = {"mlp": _records(2410, 1438, 1.0), "cnn": _records(2730, 1438, 2.0),
             "transformer": _records(6048, 529, 3.0)}
    monkeypatch.setattr(wf, "measured", lambda spec: given)
    files = wf.MAKERS["nets-workloads"]({"maker": "nets-workloads", "name": "workloads"}, tmp_path)
    assert [f.name for f in files] == ["nets_workloads.png"]
    left, right = saved[0][0].axes[:2]
    for line, (name, rs) in zip(left.get_lines(), given.items()):
        assert list(line.get_xdata()) == [0, 10, 100]
        assert np.allclose(line.get_ydata(), [r["b_simple"] for r in rs])
    for container, rs in zip(right.containers, given.values()):
        data, _, (bars,) = container
        assert np.allclose(data.get_ydata(), [r["b_noise"] for r in rs])
        segments = bars.get_segments()
        assert np.allclose([seg[1][1] - seg[0][1] for seg in segments], 2 * 0.1 * rs[0]["b_simple"] / 2.0)
    assert (left.get_yscale(), left.get_xscale(), right.get_yscale()) == ("log", "symlog", "log")
    assert legend_texts(left) == [
        "MLP on digits: P = 2,410, n = 1,438; loss 2 → 0.0198", "CNN on digits: P = 2,730, n = 1,438; loss 2 → 0.0198",
        "transformer, (a+b) mod 23: P = 6,048, n = 529; loss 2 → 0.0198"]
    assert "mean over 64 drawn examples" in saved[0][0].otod_caption


@pytest.mark.slow
def test_make_workloads_on_real_measurements(tmp_path, saved):
    """The real nets at checkpoints 0 and 5 with tr(HΣ) over 8 examples: every noise scale finite and positive,
    the parameter counts those the docstrings state, and the loss at step 0 near log(classes or vocabulary)."""
    from otod.nets.figures.workloads import WorkloadsSpec, by_net, measure_all

    records = by_net(measure_all(WorkloadsSpec(name="workloads", checkpoints=(0, 5), trace_examples=8)))
    assert {k: rs[0]["parameters"] for k, rs in records.items()} == {"mlp": 2410, "cnn": 2730, "transformer": 6048}
    for rs in records.values():
        assert [r["step"] for r in rs] == [0, 5]
        assert all(np.isfinite(r["b_simple"]) and r["b_simple"] > 0 and np.isfinite(r["b_noise"]) for r in rs)
    assert abs(records["transformer"][0]["loss"] - np.log(24)) < 0.02


def test_the_measurement_is_kept_by_its_settings_and_read_back(tmp_path, monkeypatch):
    """`measured` writes the nets' records once to <folder>/nets-workloads-<digest of the settings>.parquet and
    reads them back by net (a second call measures nothing); other settings are another file."""
    import otod.nets.figures.workloads as wf

    calls = []
    rows = [{"net": name, **r} for name in wf.NETS for r in _records(10, 20, 1.0)]
    monkeypatch.setattr(wf, "measure_all", lambda spec: calls.append(spec) or rows)
    spec = wf.WorkloadsSpec(name="workloads")
    first = wf.measured(spec, folder=str(tmp_path))
    assert wf.measured(spec, folder=str(tmp_path)) == first and len(calls) == 1
    assert list(first) == list(wf.NETS) and first["cnn"] == [r for r in rows if r["net"] == "cnn"]
    wf.measured(wf.WorkloadsSpec(name="workloads", lr=0.05), folder=str(tmp_path))
    assert len(calls) == 2 and len(list(tmp_path.glob("nets-workloads-*.parquet"))) == 2
