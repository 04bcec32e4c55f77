"""The `otod` command line: a thin layer that parses options and calls the library.

Every command's work is a library function (``otod.sweep``, ``otod.fit``, ``otod.plots``, ``otod.cost``) usable
from a notebook; this module only parses, prints and turns `OtodError` into one line on stderr and exit code 2.
"""

from __future__ import annotations

import functools
import sys

import click

from otod.errors import OtodError


def user_errors(fn):
    """Run a command body; bad input (`OtodError`, `click.BadParameter`) ends as one line and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except OtodError as e:
            click.echo(f"otod: error: {e}", err=True)
            sys.exit(2)

    return wrapper


class OneLineErrors(click.Group):
    """A click group whose usage errors (a bad option type, a missing argument) print as one line, exit code 2."""

    def main(self, *args, **kwargs):
        kwargs["standalone_mode"] = False
        try:
            result = super().main(*args, **kwargs)
        except click.exceptions.Exit as e:
            sys.exit(e.exit_code)
        except click.exceptions.Abort:
            click.echo("otod: interrupted; finished chunks are saved, the same command resumes the sweep", err=True)
            sys.exit(130)
        except click.ClickException as e:
            click.echo(f"otod: error: {e.format_message()}", err=True)
            sys.exit(2)
        sys.exit(result if isinstance(result, int) else 0)


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(package_name="otod")
def main():
    """otod: measure why training takes so many sequential iterations, and what would take fewer.

    Compiled programs are cached in ~/.cache/otod/xla (JAX's persistent cache), so later runs skip compiling;
    OTOD_COMPILATION_CACHE=DIR moves it, OTOD_COMPILATION_CACHE=off turns it off.

    \b
    Examples:
      otod sweep condition --k 1..100
      otod fit results/condition-*.json
      otod figures condition
    """
    from otod import compilation_cache

    compilation_cache.enable()


@main.group()
def sweep():
    """Run a sweep and print its table, fitted scaling laws and the paths of the files written.

    \b
    Example:
      otod sweep condition --k 1..100
    """


@sweep.command("condition")
@click.option("--k", "k", default="1..100", show_default=True,
              help="Condition numbers κ ≥ 1 to sweep: A..B, A..B:N[:log] or a comma list. E.g. --k 1..1e4:25:log")
@click.option("--method", default="gd,heavy-ball,nesterov,newton", show_default=True,
              help="Comma list of gd, gd-opt, heavy-ball, nesterov, adam, newton, jacobi, kfac. "
                   "E.g. --method gd,nesterov")
@click.option("--problem", type=click.Choice(["quadratic", "kronecker"]), default="quadratic", show_default=True,
              help="quadratic: ½(x−x*)ᵀH(x−x*); kronecker: matrix W with H = A⊗B (+ perturbation). "
                   "E.g. --problem kronecker")
@click.option("--dim", default="100", show_default=True, help="Dimension d of the quadratic (≥ 2). E.g. --dim 64")
@click.option("--spectrum", type=click.Choice(["two-point", "uniform", "log-uniform", "power"]),
              default="log-uniform", show_default=True, help="Eigenvalues in [1, κ]. E.g. --spectrum two-point")
@click.option("--basis", type=click.Choice(["eigen", "rotated"]), default="eigen", show_default=True,
              help="eigen: diagonal H (fast); rotated: dense H = QΛQᵀ. E.g. --basis rotated")
@click.option("--start", type=click.Choice(["random", "equal-mass", "equal-loss"]), default="random",
              show_default=True, help="Start x₀ in the eigenbasis. E.g. --start equal-loss")
@click.option("--shape", default="10x10", show_default=True, help="W's shape for --problem kronecker. E.g. --shape 8x12")
@click.option("--perturbation", default="0", show_default=True,
              help="Relative size ε of the non-Kronecker part (--problem kronecker). E.g. --perturbation 0.1")
@click.option("--damping", default="1e-4", show_default=True, help="KFAC damping λ. E.g. --damping 1e-3")
@click.option("--tol", default="1e-6", show_default=True,
              help="Stop at (f(x)−f*)/(f(x₀)−f*) ≤ tol, 0 < tol < 1. E.g. --tol 1e-8")
@click.option("--max-iters", default=None, help="Iteration cap; lanes reaching it are censored. Default "
                                                 "2·κ_max·ln(1/tol), from 1000 to 10⁶. E.g. --max-iters 20000")
@click.option("--seeds", default="8", show_default=True, help="Problem instances per κ. E.g. --seeds 16")
@click.option("--seed", default="0", show_default=True, help="Base random seed. E.g. --seed 1")
@click.option("--lr", default="theory", show_default=True,
              help="theory (each method's textbook step), tuned (best of --lr-grid × that step) or a number. "
                   "E.g. --lr tuned")
@click.option("--lr-grid", default="0.1..3:12:log", show_default=True,
              help="Multipliers of the reference step tried by --lr tuned. E.g. --lr-grid 0.01..4:20:log")
@click.option("--x64/--x32", default=None, help="Force float64 / float32. Default: float64 only where float32 "
                                                 "rounding would meet --tol. E.g. --x64")
@click.option("--out", default="results", show_default=True, type=click.Path(file_okay=False),
              help="Folder for the results file and figure. E.g. --out runs/")
@click.option("--no-plot", is_flag=True, help="Skip the figure. E.g. --no-plot")
@click.option("--json", "as_json", is_flag=True, help="Print the records as JSON to stdout (tables go to stderr). "
                                                       "E.g. --json | jq")
@click.option("--full", is_flag=True, help="Print every κ in the table, not a log-spaced selection. E.g. --full")
@click.option("--chunk-lanes", default="16384", show_default=True,
              help="Lanes per compiled chunk (memory vs progress granularity). E.g. --chunk-lanes 4096")
@user_errors
def sweep_condition(k, method, problem, dim, spectrum, basis, start, shape, perturbation, damping, tol, max_iters,
                    seeds, seed, lr, lr_grid, x64, out, no_plot, as_json, full, chunk_lanes):
    """Iterations to tolerance vs condition number κ (the conditioning obstacle).

    \b
    Examples:
      otod sweep condition --k 1..100
      otod sweep condition --k 10..1000:20:log --spectrum two-point --start equal-loss --method gd,heavy-ball
      otod sweep condition --problem kronecker --method gd,kfac --perturbation 0.1
    """
    from otod import api

    config = api.condition_config(k=k, method=method, problem=problem, dim=dim, spectrum=spectrum, basis=basis,
                                  start=start, shape=shape, perturbation=perturbation, damping=damping, tol=tol,
                                  max_iters=max_iters, seeds=seeds, seed=seed, lr=lr, lr_grid=lr_grid, x64=x64,
                                  chunk_lanes=chunk_lanes)
    report = api.sweep_and_report(config, out_dir=out, plot=not no_plot, full=full,
                                  progress=lambda line: click.echo(line, err=True))
    if as_json:
        import json

        click.echo(report.text, err=True)
        click.echo(json.dumps(report.results.records))
    else:
        click.echo(report.text)


@main.command("fit")
@click.argument("files", nargs=-1, required=True)
@click.option("--full", is_flag=True, help="Print every sweep value in the table. E.g. --full")
@user_errors
def fit_command(files, full):
    """Fit scaling laws to saved sweep results and print the table and fits.

    \b
    Example:
      otod fit results/condition-0123456789.json
    """
    from otod import api

    for path in files:
        click.echo(api.report_file(path, full=full))


@main.command("plot")
@click.argument("files", nargs=-1, required=True)
@click.option("--x-axis", type=click.Choice(["iterations", "flops"]), default="iterations", show_default=True,
              help="Plot iterations or FLOPs to tolerance. E.g. --x-axis flops")
@click.option("--out", default=None, type=click.Path(file_okay=False),
              help="Folder for the figure (default: beside the results file). E.g. --out figures/")
@user_errors
def plot_command(files, x_axis, out):
    """Draw the figure of saved sweep results (PNG and PDF).

    \b
    Example:
      otod plot results/condition-0123456789.json --x-axis flops
    """
    from otod import api

    for path in files:
        for written in api.plot_file(path, out_dir=out, quantity=x_axis):
            click.echo(f"figure: {written}")


@main.command("figures")
@click.argument("groups", nargs=-1)
@click.option("--out", default=None, type=click.Path(file_okay=False),
              help="Folder for the figures (default: the checkout's figures/). E.g. --out /tmp/figs")
@user_errors
def figures_command(groups, out):
    """Regenerate the paper's figures from experiments/*.toml (all groups, or the ones named).

    \b
    Examples:
      otod figures
      otod figures condition
    """
    from pathlib import Path

    from otod.figures import FIGURES_DIR, make_figures

    make_figures(list(groups) or None, out_dir=Path(out) if out else FIGURES_DIR,
                 log=lambda line: click.echo(line))


def _register_package_commands() -> None:
    """Attach the commands that live beside their package (the cost package's `flops` and `profile`)."""
    from otod.cost.cli import COMMANDS

    for command in COMMANDS:
        main.add_command(command)


_register_package_commands()
