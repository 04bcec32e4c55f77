"""One config on the chosen path: the exact recursions (`otod.noise.exact`) or the simulator (the core's
`run_sweep`). Shared by the commands and the figure makers."""

from __future__ import annotations


def run(config, mode: str, out: str = "results", progress=None):
    if mode == "exact":
        from otod.noise.exact import run_exact

        return run_exact(config, out)
    from otod.core.sweep import run_sweep

    return run_sweep(config, out_dir=out, progress=progress)
