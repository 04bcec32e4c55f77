"""One config on the chosen path: the exact recursions (`otod.noise.exact`) or the simulator (the core's
`run_sweep`). Shared by the commands and the figure makers."""

from __future__ import annotations

import warnings


def run(config, mode: str, out: str = "results", progress=None, yes: bool = False):
    """Run ``config`` on ``mode``'s path into ``out`` (a folder or a results file); ``yes`` lets the simulator run
    past its one-hour estimate.

    A lane whose step is huge (``--lr 1e38``) overflows: NumPy's RuntimeWarnings (overflow in a square, in a
    cast to float32) are silenced here, as the lane is recorded as diverged and that is the whole answer; the
    user sees the record, not NumPy's warning text."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=RuntimeWarning)
        if mode == "exact":
            from otod.noise.exact import run_exact

            return run_exact(config, out)
        from otod.core.api import bracket, run_sweep

        results = run_sweep(config, out_dir=out, progress=progress, yes=yes)
        return bracket(config, results, 0, betas=simulated_betas(config), progress=progress, yes=yes)


def simulated_betas(config) -> tuple[float, ...]:
    """The β the simulator tries beyond the default list's 0.999, where a choice sits on it (`otod.core.bracket`):
    half a decade of 1 − β a step, as the list, down to the run's float precision (`otod.core.bracket.beta_floor`:
    1 − β = 10⁻⁵ in float32, 10⁻¹⁴ in float64, the exact path's floor); none for a --beta list (tried as given)."""
    from otod.core.api import default_beta_ladder
    from otod.noise.search import DEFAULT_BETAS

    return default_beta_ladder(config, DEFAULT_BETAS)
