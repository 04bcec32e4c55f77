"""One config on the chosen path: the exact recursions (`otod.noise.exact`) or the simulator (the core's
`run_sweep` and the kind's bracket stage, `otod.core.pipeline.made`). Shared by the commands and the figure
makers."""

from __future__ import annotations

import warnings


def made(config, mode: str, out: str = "results", progress=None, yes: bool = False):
    """(results, their one analysis) of ``config`` on ``mode``'s path into ``out`` (a folder or a results file):
    the pipeline's `otod.core.pipeline.made`, the exact path replacing the core's run (its mode is no field of the
    config, and it searches its own lattice, so it is not bracketed); ``yes`` lets the simulator run past its
    one-hour estimate.

    A lane whose step is huge (``--lr 1e38``) overflows: NumPy's RuntimeWarnings (overflow in a square, in a
    cast to float32) are silenced here, as the lane is recorded as diverged and that is the whole answer; the
    user sees the record, not NumPy's warning text."""
    from otod.core.api import made as pipeline_made

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=RuntimeWarning)
        return pipeline_made(config, out_dir=out, progress=progress, yes=yes,
                             run=exact_run if mode == "exact" else None)


def exact_run(config, out_dir, progress=None, yes: bool = False, extra_meta=None):
    """The pipeline's ``run`` of the exact path (`otod.noise.exact.run_exact`): no lanes, no progress."""
    from otod.noise.exact import run_exact

    return run_exact(config, out_dir)


def run(config, mode: str, out: str = "results", progress=None, yes: bool = False):
    """The results of `made` alone (a figure maker's or a notebook's)."""
    return made(config, mode, out, progress, yes)[0]
