"""Cost figure makers: registered with otod.figures, write PNG (≥ 150 dpi) and PDF named cost_*."""

import struct

import numpy as np

import pytest

from otod.cost import plots
from otod.core.figures import makers


def _png_dpi(path):
    # pHYs chunk: pixels per metre, x and y; 150 dpi = 5905.5 px/m.
    data = path.read_bytes()
    i = data.index(b"pHYs")
    ppm_x, _ = struct.unpack(">II", data[i + 4:i + 12])
    return ppm_x * 0.0254


def test_makers_registered():
    assert set(plots.MAKERS) <= set(makers())


@pytest.mark.slow
def test_ratio_vs_batch_and_depth_write_files(tmp_path):
    files = plots.MAKERS["cost-ratio-batch"]({"name": "t_batch", "models": "onenet,mlp", "widths": [20, 10],
                                  "batches": [1, 4]}, tmp_path)
    files += plots.MAKERS["cost-ratio-depth"]({"name": "t_depth", "depths": [0, 1], "batches": [2], "image": 32}, tmp_path)
    assert sorted(f.name for f in files) == ["cost_t_batch.pdf", "cost_t_batch.png", "cost_t_depth.pdf",
                                             "cost_t_depth.png"]
    for f in files:
        assert f.stat().st_size > 1000
        if f.suffix == ".png":
            assert _png_dpi(f) >= 149.9
        else:  # TrueType (Type 42) fonts, no Type 3 bitmaps
            assert b"/Type3" not in f.read_bytes()


@pytest.mark.slow  # 6.4 s; otod figures draws the time split
def test_time_split_writes_files(tmp_path):
    files = plots.MAKERS["cost-time-split"]({"name": "t_time", "models": "mlp", "widths": [16, 8, 10], "batch": 4,
                              "precisions": "float32", "repeats": 2}, tmp_path)
    assert [f.name for f in files] == ["cost_t_time.png", "cost_t_time.pdf"]


def test_time_split_smoke_draws_the_xla_flop_shares_and_one_timed_bar(tmp_path, monkeypatch):
    """The table ``time_split`` of experiments/cost.toml cut to one small MLP (16-8-10, batch 4), float32 timed
    with 2 repeats, run as ``otod figures cost/time_split`` runs it: the page two columns wide, the caption naming
    the run, the FLOPs bar's forward, backward and update segments XLA's shares of the FLOPs counted here, with
    its ratio printed beside it, and the timed bar's shares summing to 1 with its time per iteration."""
    from tests.smoke import assert_printed_width, close_all, draw_tiny

    from otod.cost import flops as F
    from otod.cost import models as M

    drawn = draw_tiny("cost", "time_split", tmp_path, monkeypatch, models="mlp", widths=[16, 8, 10], batch=4,
                      precisions="float32", repeats=2)
    assert [f.name for f in drawn.files] == ["cost_time_split.png", "cost_time_split.pdf"]
    assert_printed_width(drawn, columns=2)
    assert "Batch 4, optimizer sgd" in drawn.caption() and "the median of 2 repeats" in drawn.caption()
    (row,) = F.flops_table([M.network("mlp", widths=(16, 8, 10))], [4], ["sgd"])
    total = row.forward_xla + row.backward_xla + row.update_xla
    (fig,) = drawn.figures
    ax = fig.axes[0]
    parts = [[patch.get_width() for patch in container.patches] for container in ax.containers]
    assert len(parts) == 3 and all(len(p) == 2 for p in parts)  # forward, backward, update × (FLOPs, fp32 time)
    flop_bar = [p[0] for p in parts]
    assert np.allclose(flop_bar, [row.forward_xla / total, row.backward_xla / total, row.update_xla / total],
                       rtol=1e-9)
    assert sum(p[1] for p in parts) == pytest.approx(1.0)
    texts = [t.get_text() for t in ax.texts]
    assert f"{row.ratio_xla:.2f}" in texts and any(t.endswith(" ms") or t.endswith(" s") for t in texts)
    close_all(drawn)
