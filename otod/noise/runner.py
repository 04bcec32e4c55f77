"""One config on the chosen path: the exact recursions (`otod.noise.exact`) or the simulator (the core's
`run_sweep`). Shared by the commands and the figure makers."""

from __future__ import annotations

import warnings


def run(config, mode: str, out: str = "results", progress=None, yes: bool = False):
    """Run ``config`` on ``mode``'s path into ``out`` (a folder or a results file); ``yes`` lets the simulator run
    past its one-hour estimate.

    A lane whose step is huge (``--lr 1e300``) overflows: NumPy's RuntimeWarnings (overflow in a square, in a
    cast to float32) are silenced here, as the lane is recorded as diverged and that is the whole answer; the
    user sees the record, not NumPy's warning text."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=RuntimeWarning)
        if mode == "exact":
            from otod.noise.exact import run_exact

            return run_exact(config, out)
        from otod.core.sweep import run_sweep

        return run_sweep(config, out_dir=out, progress=progress, yes=yes)
