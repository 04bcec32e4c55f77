"""When a lane stops, and what its outcome is: the target, its ladder of thresholds, and the status codes.

A *relative* target stops at metric/metric₀ ≤ tol (metric = f − f*, so this is the relative loss gap); an
*absolute* one at metric ≤ tol (metric = the loss, for targets such as the noisy quadratic model's loss 0.01).
The *ladder* is a set of thresholds whose first-hit iterations are all recorded in one run: the lane runs until
the lowest one, and `otod fit --tol X` re-reads any rung without re-running. A lane is checked every
``check_every`` iterations (1: exact counts).

The outcome comes back as data, as optimistix returns a result in its solution, so a sweep never stops for one
bad lane: converged, censored (hit the cap), diverged (non-finite, or metric > DIVERGENCE_BOUND·metric₀),
stalled (stuck, by the family's rule, `otod.core.family.Family.stall`: at a fixed point of the iteration, which no
cap would change, for the depth and toy families; no 0.1% decrease for a window of iterations, a floor of the
precision or of the gradient noise, for the others), or pruned (``--lr tuned`` stopped it: its learning rate
could no longer be chosen).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import IntEnum

from otod.core.errors import OtodError

#: A lane whose metric exceeds this multiple of its starting metric is diverged.
DIVERGENCE_BOUND = 1e10

#: The ``"window"`` stall rule (`otod.core.family.Family.stall`): a lane whose metric has not fallen by this
#: fraction below its last mark for ``stall_window`` iterations is stalled, taken to sit at a floor (of the
#: precision, of the gradient noise). The rule cannot tell a floor from a long plateau: on Shamir's Gaussian chain
#: (depths 2..20, 64 seeds, float32) 117 lanes make no 0.1% progress in 10⁵ iterations, and 97 of them converge
#: when run on (at 1.1·10⁵ to 9.8·10⁶ iterations), so the depth and toy families use the ``"fixed-point"`` rule
#: instead (`otod.core.engine.unchanged`).
STALL_DECREASE = 1e-3


def stall_window_of(max_iters: int) -> int:
    """The ``"window"`` stall rule's default window: a tenth of the cap, at least 500 iterations."""
    return max(500, int(max_iters) // 10)

RUNNING = -1


class Status(IntEnum):
    """Outcome of one lane."""

    CONVERGED = 0
    CENSORED = 1
    DIVERGED = 2
    PRUNED = 3
    STALLED = 4
    #: A lane that only fills a block or a chunk to its compiled shape: stopped from the start, never recorded.
    PADDING = 5


STATUS_NAMES = {int(s): s.name.lower() for s in Status}


def decades(high: float, low: float) -> tuple[float, ...]:
    """Powers of ten from ``high`` down to ``low`` inclusive, with ``low`` itself: the default ladder."""
    out = [10.0 ** e for e in range(math.floor(math.log10(high)), math.ceil(math.log10(low)) - 1, -1)
           if low < 10.0 ** e <= high]
    return tuple(sorted(set(out) | {low}, reverse=True))


@dataclass(frozen=True)
class Target:
    """What a lane must reach: ``tol`` (the reported threshold), ``kind`` relative or absolute, further ``ladder``
    rungs recorded on the way (all of them ≥ or ≤ tol; the lane runs to the lowest), and ``check_every``."""

    tol: float = 1e-6
    kind: str = "relative"
    ladder: tuple[float, ...] = field(default=())
    check_every: int = 1

    def __post_init__(self):
        object.__setattr__(self, "ladder", tuple(sorted({float(t) for t in self.ladder} | {float(self.tol)},
                                                        reverse=True)))
        if self.kind not in ("relative", "absolute"):
            raise OtodError(f"target kind {self.kind!r}: use relative or absolute")
        if self.kind == "relative" and not all(0.0 < t < 1.0 for t in self.ladder):
            raise OtodError(f"--tol {self.tol:g}: the relative loss gap must lie strictly between 0 and 1, "
                            "e.g. --tol 1e-6")
        if self.kind == "absolute" and not all(t > 0.0 and math.isfinite(t) for t in self.ladder):
            raise OtodError(f"--target {self.tol:g}: a target loss must be a positive number, e.g. --target 0.01")
        if not isinstance(self.check_every, int) or self.check_every < 1:
            raise OtodError(f"--check-every {self.check_every}: need an integer ≥ 1, e.g. --check-every 1")

    @property
    def lowest(self) -> float:
        return self.ladder[-1]

    def index(self, tol: float) -> int:
        """The ladder rung of ``tol``; an absent rung raises `OtodError` listing the recorded ones."""
        for i, t in enumerate(self.ladder):
            if math.isclose(t, tol, rel_tol=1e-9):
                return i
        raise OtodError(f"--tol {tol:g}: not recorded in this run; recorded: "
                        f"{', '.join(f'{t:g}' for t in self.ladder)} (rerun with --ladder to record it)")
