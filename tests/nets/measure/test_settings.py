"""A measurement's stored config keeps the name of the files written before NetSpec gained fields
(`otod.nets.measure.settings.LATER_NET_FIELDS`): the committed curvature file of ``experiments/nets.toml``'s
``spectral_density`` is the one its settings name now."""

from __future__ import annotations

from pathlib import Path

from otod.nets.curvature_cli import results_file
from otod.nets.measure.settings import CurvatureConfig, NoiseScaleConfig, stored_net
from otod.nets.model.problem import NetSpec

ROOT = Path(__file__).resolve().parents[3]


def test_spectral_density_s_settings_name_its_committed_curvature_file():
    net = NetSpec(model="mlp", width=64, depth=2, data="digits", batch=32)
    config = CurvatureConfig((0, 100, 1000, 4000), 0.1, 0, 10, 16, 100, 0.9, 1e-3)
    path = results_file("results", config.stored_for_net(net))
    assert path.name == "curvature-0466b93ffb.parquet"  # written 2026-12-02 12:42 UTC, before held_out_targets
    assert (ROOT / path).is_file()


def test_a_later_field_is_stored_where_set():
    net = NetSpec(model="mlp", width=32, depth=2, data="digits", batch=32, reference_batch=64)
    assert stored_net(net)["reference_batch"] == 64 and "held_out_targets" not in stored_net(net)
    assert "reference_batch" not in NoiseScaleConfig((0,), 0.1, 0, ((8, 64),), 4).stored_for_net(
        NetSpec(model="mlp", width=32, depth=2, data="digits", batch=32))["spec"]
