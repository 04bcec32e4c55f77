"""The `otod` command line: a thin layer that parses options and calls the library.

The commands every obstacle shares live here (`fit`, `plot`, `figures`, and the `sweep` group); each obstacle
adds its own (``otod sweep condition``, ``otod flops``) through `otod.core.registry`. Every command's work is a
library function usable from a notebook; this module only parses, prints and turns `OtodError` into one line on
stderr and exit code 2.
"""

from __future__ import annotations

import sys

import click

from otod.core.cli import user_errors


class OneLineErrors(click.Group):
    """A click group whose usage errors (a bad option type, a missing argument) print as one line, exit code 2; so
    does an `OtodError` raised outside a command's `user_errors` (the group's own callback, `main`, refusing a bad
    environment variable)."""

    def main(self, *args, **kwargs):
        from otod.core.errors import OtodError
        from otod.core.resources import use_system_arrow_pool

        use_system_arrow_pool()

        kwargs["standalone_mode"] = False
        try:
            result = super().main(*args, **kwargs)
        except click.exceptions.Exit as e:
            sys.exit(e.exit_code)
        except click.exceptions.Abort:
            click.echo("otod: interrupted", err=True)
            sys.exit(130)
        except click.ClickException as e:
            click.echo(f"otod: error: {e.format_message()}", err=True)
            sys.exit(2)
        except OtodError as e:
            click.echo(f"otod: error: {e}", err=True)
            sys.exit(2)
        sys.exit(result if isinstance(result, int) else 0)


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(package_name="otod")
def main():
    """otod: measure why training takes so many sequential iterations, and what would take fewer.

    Compiled programs are cached in ~/.cache/otod/xla (JAX's persistent cache, at most 2 GiB, locked against other
    otod processes), so later runs skip compiling;
    OTOD_COMPILATION_CACHE=DIR moves it, OTOD_COMPILATION_CACHE=off turns it off. On a CPU every core is a JAX
    device and sweeps share their blocks among them; OTOD_CPU_DEVICES=N sets how many (1 to 1024; 1 keeps one).
    A device program that uses no CPU for 30 s is stopped by a watchdog, keeping the sweep's journal
    (OTOD_WATCHDOG_SECONDS=N sets the time, N ≥ 1; =off turns it off); a second Ctrl-C stops at once.

    \b
    Examples:
      otod sweep condition --k 1..100
      otod fit results/condition-*.parquet
      otod convert results/condition-0123456789.parquet condition.json
      otod figures condition
    """
    from otod.core import compilation_cache, devices

    devices.use_every_core()  # first: it only checks OTOD_CPU_DEVICES and sets XLA_FLAGS, writing nothing
    compilation_cache.enable()


@main.group()
def sweep():
    """Run a sweep and print its table, fitted scaling laws and the paths of the files written.

    \b
    Example:
      otod sweep condition --k 1..100
    """
    from otod.core.devices import watchdog_seconds

    watchdog_seconds()  # a bad OTOD_WATCHDOG_SECONDS is refused before JAX is imported (run_sweep checks it again)


def _load_sweep(path):
    """A results file read back: (results, its sweep kind), or (results, None) for a measurement file an obstacle
    presents (`otod.core.registry.measurement_presenter`: curvature, noise scale); another kind is refused."""
    from pathlib import Path

    from otod.core import results as results_io
    from otod.core.errors import OtodError
    from otod.core.registry import measurement_presenter, sweep_kind

    if Path(path).is_dir():
        raise OtodError(f"results file {path}: a folder; give the results files in it, e.g. {Path(path) / '*.parquet'}")
    results = results_io.load(path)
    if results.meta.get("kind") != "sweep":
        if measurement_presenter(str(results.meta.get("kind"))) is None:
            raise OtodError(f"results file {path}: holds {results.meta.get('kind')!r} results, which otod cannot "
                            "show")
        return results, None
    return results, sweep_kind(results.meta["sweep"])


def _present(results, **options):
    """The text and figure files of a results file: a sweep's by the pipeline (`otod.core.pipeline.present`), a
    measurement's by its obstacle's presenter (``tol``, ``full`` and ``quantity`` are the sweeps' alone)."""
    from otod.core.registry import measurement_presenter

    if results.meta.get("kind") == "sweep":
        from otod.core.pipeline import present

        report = present(results, **options)
        return report.text, report.files
    return measurement_presenter(results.meta["kind"])(
        results, text=options.get("text", True), figure_base=options.get("figure_base"), pdf=options.get("pdf", False))


def _target_tol(loaded: list, tol: float | None, target: float | None) -> float | None:
    """The threshold ``otod fit`` and ``otod plot`` read at: ``--tol`` (a relative gap) or ``--target`` (a
    training loss, for sweeps stopped at one), each checked against every file; the target of a file re-read
    below its run's own is refused where it is read (`otod.core.retarget.below_target`)."""
    import math

    from otod.core.errors import OtodError

    if target is None:
        return tol
    if tol is not None:
        raise OtodError(f"--tol {tol:g} --target {target:g}: give one threshold, e.g. --target {target:g}")
    if not (math.isfinite(target) and target > 0):
        raise OtodError(f"--target {target:g}: a training-loss target must be a positive number, e.g. --target 0.2")
    from otod.core.config import read_config

    for path, results, _ in loaded:
        if results.meta.get("kind") != "sweep":
            raise OtodError(f"--target {target:g}: {path} holds {results.meta.get('kind')} measurements, not a sweep "
                            "with a target to re-read; drop --target")
        if read_config(results.meta).target.kind != "absolute":
            raise OtodError(f"--target {target:g}: {path} is a {results.meta['sweep']} sweep stopped at a relative "
                            "gap, not a training loss; use --tol, e.g. --tol 1e-4")
    return target


@main.command("fit")
@click.argument("files", nargs=-1, required=True)
@click.option("--full", is_flag=True, help="Print every sweep value in the table. E.g. --full")
@click.option("--tol", default=None, type=float,
              help="Refit at another tolerance (0 < tol < 1) recorded in the run's ladder, without re-running. "
                   "E.g. --tol 1e-4")
@click.option("--target", default=None, type=float,
              help="Refit at another training-loss target (sweeps stopped at a loss: net, noise), re-read from the "
                   "lanes' loss traces (net sweeps) at or above the run's own target, without re-running. "
                   "E.g. --target 0.2")
@user_errors
def fit_command(files, full, tol, target):
    """Fit scaling laws to saved sweep results and print the table and fits; a curvature or noise-scale file is
    printed as its command printed it.

    \b
    Examples:
      otod fit results/condition-0123456789.parquet
      otod fit results/condition-0123456789.parquet --tol 1e-3
      otod fit results/net-0123456789.parquet --target 0.2
    """
    from otod.core.errors import OtodError
    from otod.core.preflight import quiet_numerics

    if tol is not None and not 0 < tol < 1:
        raise OtodError(f"--tol {tol:g}: a tolerance must lie strictly between 0 and 1, e.g. --tol 1e-4")
    loaded = [(path, *_load_sweep(path)) for path in files]
    tol = _target_tol(loaded, tol, target)

    for path, results, kind in loaded:
        if kind is None and tol is not None:
            raise OtodError(f"--tol/--target: {path} holds {results.meta['kind']} measurements, not a sweep with a "
                            "target to re-read; drop it")
        with quiet_numerics():
            text = _present(results, tol=tol, full=full)[0] if kind is not None else _present(results)[0]
        click.echo(f"{path}\n" + text)


@main.command("plot")
@click.argument("files", nargs=-1, required=True)
@click.option("--x-axis", type=click.Choice(["iterations", "flops"]), default="iterations", show_default=True,
              help="Plot iterations or FLOPs to tolerance (flops: condition sweeps, which record FLOPs). "
                   "E.g. --x-axis flops")
@click.option("--out", default=None, type=click.Path(file_okay=False),
              help="Folder for the figure (default: beside the results file). E.g. --out figures/")
@click.option("--pdf", is_flag=True, help="Also write the figure as PDF (PNG always). E.g. --pdf")
@click.option("--style", type=click.Choice(["paper", "neurips", "screen"]), default="screen", show_default=True,
              help="screen: 1.5× the printed size, for a monitor; paper: drawn at the printed size, one column "
                   "(3.4 in) or two (7.0 in), type ≥ 7 pt; neurips: the same for a 5.5 in text block (2.7 in or "
                   "5.5 in). E.g. --style paper")
@click.option("--serif", is_flag=True, help="Serif type, to match a LaTeX body. E.g. --serif")
@click.option("--target", default=None, type=float,
              help="Draw at another training-loss target, re-read from the lanes' loss traces (net sweeps) at or "
                   "above the run's own. E.g. --target 0.2")
@user_errors
def plot_command(files, x_axis, out, pdf, style, serif, target):
    """Draw the figure of saved sweep results, or of a curvature or noise-scale file (PNG, and PDF with --pdf).

    \b
    Example:
      otod plot results/condition-0123456789.parquet --x-axis flops
    """
    from pathlib import Path

    from otod.core.preflight import make_folder, quiet_numerics

    from otod.core.plotting import styled

    loaded = [(path, *_load_sweep(path)) for path in files]  # every file checked before anything is written
    for path, results, _ in loaded:
        _check_axis(path, results, x_axis)
    tol = _target_tol(loaded, None, target)
    folder = make_folder(out) if out is not None else None  # --out '' is refused, not read as "no --out"
    for path, results, _ in loaded:
        base = folder / Path(path).stem if folder else Path(path).with_suffix("")
        with quiet_numerics(), styled(style, serif=serif):
            written = _present(results, tol=tol, text=False, figure_base=base, quantity=x_axis, pdf=pdf)[1]
        for name in written:
            click.echo(f"figure: {name}")


#: The sweeps whose figure can put FLOPs to tolerance on its axis: condition sweeps record (or recount) the XLA-counted
#: FLOPs of one iteration of each method (`otod.condition.bill`); depth, toy and noise files have no such column, and
#: their figures drew iterations under a "flops" name.
FLOPS_SWEEPS = frozenset({"condition"})


def _check_axis(path, results, x_axis: str) -> None:
    """Refuse ``--x-axis flops`` for a file of a sweep that has no FLOPs (`FLOPS_SWEEPS`)."""
    from otod.core.errors import OtodError

    if x_axis == "flops" and results.meta.get("sweep") not in FLOPS_SWEEPS:
        what = f"{results.meta['sweep']} sweep" if results.meta.get("sweep") else f"{results.meta.get('kind')} file"
        raise OtodError(f"--x-axis flops: {path} is a {what}, whose files record no FLOPs; "
                        "use --x-axis iterations, e.g. otod plot FILE --x-axis iterations")


@main.command("figures")
@click.argument("groups", nargs=-1)
@click.option("--out", default=None, type=click.Path(file_okay=False),
              help="Folder for the figures (default: the checkout's figures/). E.g. --out /tmp/figs")
@click.option("--style", type=click.Choice(["paper", "neurips", "screen"]), default="paper", show_default=True,
              help="paper: drawn at the printed size, one column (3.4 in) or two (7.0 in), type ≥ 7 pt; neurips: "
                   "the same for a one-column 5.5 in text block (NeurIPS), half width (2.7 in) or full (5.5 in); "
                   "screen: 1.5× larger, for a monitor. E.g. --style neurips")
@click.option("--serif", is_flag=True, help="Serif type, to match a LaTeX body. E.g. --serif")
@click.option("--remeasure", is_flag=True,
              help="Run every chosen figure's sweeps again from nothing, also those of the figures that read their "
                   "committed results by default (committed = true in experiments/*.toml), in results/remeasure/ "
                   "(an interrupted re-measure resumes there with the same command); each figure's files replace "
                   "those in results/ once it is drawn. E.g. otod figures --remeasure nets/steps_vs_batch")
@user_errors
def figures_command(groups, out, style, serif, remeasure):
    """Regenerate the paper's figures from experiments/*.toml (all groups, the groups named, or one figure as
    GROUP/NAME, NAME a table of GROUP's file). Each sweep reads back its file in results/ where it is there, else
    runs; a figure whose table says committed = true (its sweeps too heavy for this command's budget) reads the
    results committed with the code and never sweeps: a file missing ends the command (exit code 2) naming the
    command that measures it again, otod figures --remeasure GROUP/NAME.

    \b
    Examples:
      otod figures
      otod figures condition
      otod figures depth/depth_width
      otod figures --remeasure nets/steps_vs_batch
    """
    from otod.core.figures import FIGURES_DIR, figure_seconds_file, make_figures
    from otod.core.preflight import make_folder, quiet_numerics

    figure_seconds_file()  # a bad OTOD_FIGURE_SECONDS is refused before the folder is made

    folder = make_folder(out) if out is not None else FIGURES_DIR
    from otod.core.plotting import styled

    with quiet_numerics(), styled(style, serif=serif):
        make_figures(list(groups) or None, out_dir=folder, log=lambda line: click.echo(line), remeasure=remeasure)


@main.command("merge")
@click.argument("parts", nargs=-1, required=True)
@click.option("--out", default=None, type=click.Path(dir_okay=False),
              help="The results file to write (.parquet, .json or .npz). Default: the parts' name less "
                   ".part-I-of-N. E.g. --out merged.parquet")
@user_errors
def merge_command(parts, out):
    """Join the part files of a shared sweep (the shares of --share I/N, or of --distributed copied together from
    several hosts) into its results file, the one a single process would write.

    Parts of different sweep configs are refused by name (by the hash of their config), and so is a set of parts
    that misses a chunk, naming the share that is missing or unfinished: run that share to finish it. The parts
    are left in place.

    \b
    Examples:
      otod merge results/condition-1a2b3c4d5e.parquet.part-*
      otod merge runs/k.parquet.part-*-of-4
      otod merge host0/x.parquet.part-0-of-2 host1/x.parquet.part-1-of-2 --out x.parquet
    """
    from otod.core.finish import merge

    results = merge(list(parts), out)
    click.echo(f"{results.path}: {results.meta['record_count']} records from {len(parts)} part files")


@main.command("convert")
@click.argument("source")
@click.argument("target")
@user_errors
def convert_command(source, target):
    """Rewrite a results file in another format, chosen by TARGET's suffix: .parquet (columns pandas reads; what
    sweeps write), .json (one JSON document) or .npz (NumPy columns). The source is verified first; an existing
    TARGET is refused.

    \b
    Examples:
      otod convert results/condition-0123456789.parquet condition.json
      otod convert results/condition-0123456789.json condition.parquet
      otod convert results/condition-0123456789.npz condition.parquet
    """
    from otod.core.results import convert

    results = convert(source, target)
    click.echo(f"{results.path}: {results.meta['record_count']} records from {source}")


def _register_obstacle_commands() -> None:
    """Attach every registered obstacle's commands: to `sweep` or to the top level; then ``noise-scale``, which
    reads two obstacles (`otod.noise_scale_cli`)."""
    from otod.core.cli import with_distributed_options
    from otod.core.registry import obstacles
    from otod.obstacles import load_all

    load_all()
    groups = {"sweep": sweep, "": main}
    for obstacle in obstacles():
        for group, commands in obstacle.commands().items():
            for command in commands:
                groups[group].add_command(with_distributed_options(command) if group == "sweep" else command)
    from otod.noise_scale_cli import noise_scale  # above both obstacles it measures: a net, or the NQM

    main.add_command(noise_scale)


_register_obstacle_commands()
