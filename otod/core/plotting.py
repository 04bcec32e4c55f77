"""Plotting helpers every obstacle's figures share: one way to save, one palette, one way to mark censoring.

Conventions: log axes for scaling laws, one colour per method, the median over seeds as a line with markers, the
seed spread as a band, theory dashed in the same colour, censored lanes as open markers at the iteration cap.
Figures are PNG (150 dpi) and PDF; the PDF carries no creation date, so the same numbers give the same bytes.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"gd": "C0", "gd-opt": "C9", "heavy-ball": "C1", "nesterov": "C2", "newton": "C3", "adam": "C4",
          "jacobi": "C5", "kfac": "C6"}


def save(fig, base: Path, pdf: bool = True) -> list[Path]:
    """Write ``base.png`` (150 dpi) and, with ``pdf``, ``base.pdf``; return the paths. The PDF carries no creation
    date, so the same numbers give the same bytes and regenerated figures show up in git only when they changed.
    (A sweep writes the PNG alone unless asked: the PDF doubles the time spent saving.)"""
    base = Path(base)
    base.parent.mkdir(parents=True, exist_ok=True)
    paths = [base.with_name(base.name + ".png")] + ([base.with_name(base.name + ".pdf")] if pdf else [])
    fig.savefig(paths[0], dpi=150, bbox_inches="tight")
    if pdf:
        fig.savefig(paths[1], bbox_inches="tight", metadata={"CreationDate": None})
    plt.close(fig)
    return paths
