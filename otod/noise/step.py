"""What a noise family's sampled gradient receives each step (shared by the problems and the dynamics)."""

from __future__ import annotations

from typing import NamedTuple


class Step(NamedTuple):
    """The lane's per-step key and the iteration t (0-based): sampling without replacement needs to know where in
    its epoch a step falls."""

    key: object
    t: object
