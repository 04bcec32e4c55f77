"""Shared helpers of the figure makers' smoke tests (issue 53 item 5): each maker of an ``experiments/*.toml`` table
run the way ``otod figures`` runs it (`otod.core.figures.parsed` then `draw`, through the registry), on a tiny
version of its table, with every file it writes (results and figures) under the test's own folder, and what it
drew kept to be read back: the saved PNG and PDF at their printed width, the caption, the figure's artists."""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

#: The printed styles' page widths (in) by ``figure(columns=...)`` in the paper style (the tests' default style):
#: one column and the full text width of a two-column paper (`otod.core.plotting.COLUMN_WIDTHS`, written out here so
#: that a change of the sizes fails these tests).
PAPER_WIDTHS = {1: 3.4, 2: 7.0}
#: `otod.core.plotting.save` writes the PNG at this resolution.
PNG_DPI = 150


@dataclass
class Drawn:
    """What a maker wrote and drew: its files, its figures (still open, in the order saved), its results folder."""

    files: list[Path]
    figures: list
    results_dir: Path

    def file(self, suffix: str) -> Path:
        (path,) = [f for f in self.files if f.suffix == suffix]
        return path

    def caption(self) -> str:
        return self.file(".png").with_suffix(".caption.txt").read_text()

    def records(self) -> pd.DataFrame:
        """Every record of the results files the maker's sweeps wrote (one frame; a ``file`` column names each)."""
        frames = [pd.read_parquet(p).assign(file=p.name) for p in sorted(self.results_dir.rglob("*.parquet"))]
        assert frames, f"no results file under {self.results_dir}"
        return pd.concat(frames, ignore_index=True)


def draw_tiny(group: str, name: str, tmp_path: Path, monkeypatch, **changes) -> Drawn:
    """Run the table ``[name]`` of ``experiments/<group>.toml`` with ``changes`` (a value None removes the key) as
    ``otod figures <group>/<name>`` runs it, every file under ``tmp_path``: the figures in ``tmp_path/figures``, the
    sweeps' results in ``tmp_path/results`` (a typed sweep figure's ``results_dir``; the makers that write to
    ``results/`` of the working folder find it there, the test running in ``tmp_path``)."""
    from otod.core import plotting
    from otod.core.figures import draw, load_specs, makers, parsed

    table = {**load_specs()[group][name]}
    for key, value in changes.items():
        if value is None:
            table.pop(key, None)
        else:
            table[key] = value
    every = makers()
    spec = parsed(every, group, name, table)
    results_dir = tmp_path / "results"
    if hasattr(spec, "results_dir"):
        import dataclasses

        spec = dataclasses.replace(spec, results_dir=str(results_dir))
    kept: list = []
    close = plotting.plt.close

    def keep(fig=None):  # save closes the figure it wrote: kept open, to read its artists
        if fig is not None and not isinstance(fig, str):
            kept.append(fig)
        else:
            close(fig)

    monkeypatch.setattr(plotting.plt, "close", keep)
    monkeypatch.chdir(tmp_path)
    try:
        files = draw(every, spec, tmp_path / "figures")
    finally:
        monkeypatch.setattr(plotting.plt, "close", close)
    return Drawn(files=list(files), figures=kept, results_dir=results_dir)


def close_all(drawn: Drawn) -> None:
    from otod.core.plotting import plt

    for fig in drawn.figures:
        plt.close(fig)


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) in pixels from the PNG's IHDR chunk."""
    data = Path(path).read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def pdf_page_widths(path: Path) -> list[float]:
    """Each page's width in inches (its MediaBox)."""
    data = Path(path).read_bytes()
    return [(float(b[2]) - float(b[0])) / 72 for b in
            re.findall(rb"/MediaBox\s*\[\s*([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s*\]", data)]


def assert_printed_width(drawn: Drawn, columns: int) -> None:
    """The PDF (one page) and the PNG are the paper style's width for ``columns``: what ``figure(columns=...)``
    asked and `save` keeps (no page grown by what sticks out, none cut)."""
    width = PAPER_WIDTHS[columns]
    (page,) = pdf_page_widths(drawn.file(".pdf"))
    assert abs(page - width) < 0.005, f"PDF page {page:.3f} in wide, not {width} in"
    px, _ = png_size(drawn.file(".png"))
    assert abs(px - width * PNG_DPI) <= 1, f"PNG {px} px wide, not {width} in at {PNG_DPI} dpi"


def lines_xy(ax) -> list[tuple[np.ndarray, np.ndarray]]:
    """The (x, y) data of every line drawn on ``ax`` that holds points."""
    return [(np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)) for line in ax.get_lines()
            if len(line.get_xdata())]


def has_line(ax, x, y, rtol: float = 1e-9) -> bool:
    """Whether some line of ``ax`` draws exactly the points (x, y) (in this order)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    return any(lx.shape == x.shape and np.array_equal(lx, x) and np.allclose(ly, y, rtol=rtol, atol=0)
               for lx, ly in lines_xy(ax))


def lane_medians(records: pd.DataFrame, axis: str, **where) -> tuple[np.ndarray, np.ndarray]:
    """(x, median iterations over seeds) of the records matching ``where`` (column = value), by ``axis``, for
    sweeps with one lr per point (every lane the chosen one) whose lanes all converged (asserted): the median the
    figure should draw, computed from the results file alone."""
    rows = records
    for column, value in where.items():
        rows = rows[rows[column] == value]
    assert len(rows), where
    assert set(rows["status"]) == {"converged"}, rows["status"].value_counts().to_dict()
    assert rows["lr_multiplier"].nunique() == 1
    by = rows.groupby(axis)["iterations"].median()
    return by.index.to_numpy(float), by.to_numpy(float)


def has_points(ax, x, y, rtol: float = 1e-9) -> bool:
    """Whether some line of ``ax`` draws the values ``y`` at (up to a dodge in x shared by all) the positions
    ``x``: the same count, the same y, x in the same order within 10% of ``x``."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    return any(lx.shape == x.shape and np.allclose(ly, y, rtol=rtol, atol=0) and np.allclose(lx, x, rtol=0.1)
               for lx, ly in lines_xy(ax))
