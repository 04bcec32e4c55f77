"""Cost figure makers: registered with otod.figures, write PNG (≥ 150 dpi) and PDF named cost_*."""

import struct

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
