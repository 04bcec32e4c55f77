"""``otod sweep condition``: parse options, build the config (`otod.condition.options`), run, print."""

from __future__ import annotations

import click

from otod.core.api import common_sweep_options, echo_report, terminal_progress


@click.command("condition")
@click.option("--k", "k", default="1..100", show_default=True,
              help="Condition numbers κ ≥ 1 to sweep: A..B, A..B:N[:log] or a comma list. E.g. --k 1..1e4:25:log")
@click.option("--method", default="gd,heavy-ball,nesterov,newton", show_default=True,
              help="Comma list of gd, gd-opt, heavy-ball, nesterov, adam, newton, jacobi, kfac. "
                   "E.g. --method gd,nesterov")
@click.option("--problem", type=click.Choice(["quadratic", "kronecker"]), default="quadratic", show_default=True,
              help="quadratic: ½(x−x*)ᵀH(x−x*); kronecker: matrix W with H = A⊗B (+ perturbation). "
                   "E.g. --problem kronecker")
@click.option("--dim", default="100", show_default=True,
              help="Dimension d of the quadratic (≥ 2; not with --problem kronecker); several values sweep d as a "
                   "static axis (one program each). E.g. --dim 64 or --dim 16,64,256")
@click.option("--spectrum", type=click.Choice(["two-point", "uniform", "log-uniform", "power"]),
              default="log-uniform", show_default=True, help="Eigenvalues in [1, κ]. E.g. --spectrum two-point")
@click.option("--basis", type=click.Choice(["eigen", "rotated"]), default="eigen", show_default=True,
              help="eigen: diagonal H (fast); rotated: dense H = QΛQᵀ (not with --problem kronecker). "
                   "E.g. --basis rotated")
@click.option("--start", type=click.Choice(["random", "equal-mass", "equal-loss"]), default="random",
              show_default=True, help="Start x₀ in the eigenbasis. E.g. --start equal-loss")
@click.option("--shape", default="10x10", show_default=True,
              help="W's shape (only with --problem kronecker). E.g. --shape 8x12")
@click.option("--perturbation", default="0", show_default=True,
              help="Relative size ε of the non-Kronecker part (only with --problem kronecker). "
                   "E.g. --perturbation 0.1")
@click.option("--damping", default="1e-4", show_default=True,
              help="KFAC damping λ ≥ 0 (only with kfac in --method). E.g. --damping 1e-3")
@click.option("--tol", default="1e-6", show_default=True,
              help="Stop at (f(x)−f*)/(f(x₀)−f*) ≤ tol, 0 < tol < 1 and no smaller than the precision's "
                   "smallest normal number (2.2e-308 in float64, 1.2e-38 with --x32). E.g. --tol 1e-8")
@click.option("--ladder", default=None,
              help="Further tolerances whose first-hit iterations are recorded in the same run (every decade "
                   "from 0.1 to --tol always is); `otod fit --tol X` re-reads any of them. Every lane runs to the "
                   "lowest rung, so rungs at most 10⁶ below --tol are accepted (lower --tol to go deeper). "
                   "E.g. --ladder 1e-8,1e-10")
@click.option("--check-every", default="1", show_default=True,
              help="Check the target every N iterations, 1 or below the iteration cap (counts are then "
                   "multiples of N). "
                   "E.g. --check-every 10")
@click.option("--max-iters", default=None, help="Iteration cap; lanes reaching it are censored. Default "
                                                 "2·κ_max·ln(1/tol), from 1000 to 10⁶. E.g. --max-iters 20000")
@click.option("--lr", default="theory", show_default=True,
              help="theory (each method's textbook step), tuned (one multiplier of it per κ from --lr-grid, the "
                   "best by the median over seeds) or a number. E.g. --lr tuned")
@click.option("--lr-grid", default=None,
              help="Multipliers of the reference step tried by --lr tuned (and, under --lr theory, for adam; "
                   "refused where no method is tuned). Default: 0.1..3:12:log and 1. "
                   "E.g. --lr-grid 0.01..4:20:log")
@click.option("--lr-extend", default=None,
              help="Steps beyond each end of --lr-grid (at its end's log spacing) tried where the best rate sits "
                   "on that end, until it is inside the rates tried or the next one diverges. Default: 12 for the "
                   "default grid, 0 (tried as given) for a given --lr-grid. E.g. --lr-extend 4")
@click.option("--full", is_flag=True, help="Print every κ in the table, not a log-spaced selection. E.g. --full")
@common_sweep_options
def sweep_condition(k, method, problem, dim, spectrum, basis, start, shape, perturbation, damping, tol, ladder,
                    check_every, max_iters, seeds, seed, lr, lr_grid, lr_extend, x64, out, no_plot, pdf, as_json,
                    full, chunk_seconds, yes):
    """Iterations to tolerance vs condition number κ (the conditioning obstacle).

    \b
    Examples:
      otod sweep condition --k 1..100
      otod sweep condition --k 10..1000:20:log --spectrum two-point --start equal-loss --method gd,heavy-ball
      otod sweep condition --problem kronecker --method gd,kfac --perturbation 0.1
    """
    from otod.condition.options import sweep_config_from_options
    from otod.core.api import check_resources, given_options, quiet_numerics

    given = given_options()
    config = sweep_config_from_options(
        k=k, method=method, problem=problem, dim=dim, spectrum=spectrum, basis=basis, start=start, shape=shape,
        perturbation=perturbation, damping=damping, tol=tol, ladder=ladder, check_every=check_every,
        max_iters=max_iters, seeds=8 if seeds is None else seeds, seed=0 if seed is None else seed, lr=lr,
        lr_grid=lr_grid, x64=x64, chunk_seconds=5.0 if chunk_seconds is None else chunk_seconds, given=given)
    from otod.core.api import lr_extend_option

    steps = lr_extend_option(given, lr_extend, config)
    check_resources(config, yes, "fewer --k values or --seeds, or a smaller problem (--dim, --shape, --basis eigen)")
    from otod.condition.report import sweep_and_report  # after the options are checked: it imports JAX

    with quiet_numerics():
        report = sweep_and_report(config, out_dir=out, plot=not no_plot, full=full, progress=terminal_progress(),
                                  yes=yes, pdf=pdf, lr_extend=steps)
    echo_report(report, as_json)


def commands() -> dict[str, list]:
    """This obstacle's commands, by the group they join ('sweep' for sweeps, '' for top-level commands)."""
    return {"sweep": [sweep_condition]}
