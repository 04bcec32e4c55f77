"""Readers of the claims table (`otod.claims`) for timings a committed file keeps: the seconds each figure took in
the cold `otod figures` run that ``experiments/figure-seconds.json`` records (`otod.core.figures`: the planner's
shipped estimates), summed per obstacle and over the figures that read committed results (``committed = true`` in
their ``experiments/<obstacle>.toml`` table, `otod.core.figure_sources`). Registered in
`otod.claim_readers.READERS` beside the others."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any


def figure_seconds(path: str, figure: str = "") -> dict[str, Any]:
    """The figure seconds file at ``path`` (keys ``obstacle/figure``): every figure's seconds in all (total, and
    total_min in minutes), each obstacle's in minutes (by its name: nets, depth, cost, noise, condition), the
    figures whose table says ``committed = true`` (committed: their seconds; n_committed, of n_all) and the rest
    (others: seconds; n_others), and one ``figure``'s seconds (seconds) where given."""
    seconds = json.loads(Path(path).read_text())
    experiments = Path(path).parent
    tables: dict[str, dict] = {}
    out: dict[str, Any] = {}
    committed = others = 0.0
    n_committed = 0
    for key, value in seconds.items():
        obstacle, name = key.split("/", 1)
        if obstacle not in tables:
            tables[obstacle] = tomllib.loads((experiments / f"{obstacle}.toml").read_text())
        out[obstacle] = out.get(obstacle, 0.0) + value / 60
        if tables[obstacle].get(name, {}).get("committed", False) is True:
            committed, n_committed = committed + value, n_committed + 1
        else:
            others += value
    total = sum(seconds.values())
    out.update({"total": total, "total_min": total / 60, "committed": committed, "others": others,
                "others_min": others / 60, "n_committed": n_committed, "n_all": len(seconds),
                "n_others": len(seconds) - n_committed})
    if figure:
        out["seconds"] = seconds[figure]
    return out
