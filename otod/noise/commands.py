"""``otod sweep noise``, ``otod sweep params`` and ``otod noise-scale``: parse options, build the configs
(`otod.noise.options`), run (exact recursions or the simulator), print."""

from __future__ import annotations

import click

from otod.core.cli import terminal_progress, user_errors

PROBLEM = click.Choice(["nqm", "isotropic", "regression", "rosenbrock"])


def run(config, mode: str, out: str):
    """Results of one config on the chosen path, with a progress line on a terminal."""
    from otod.noise.runner import run as run_on_path

    return run_on_path(config, mode, out, terminal_progress())


@click.command("noise")
@click.option("--batch", default="1..1024:11:log", show_default=True,
              help="Batch sizes B ≥ 1 (whole numbers; log ranges are rounded). E.g. --batch 1..65536:17:log")
@click.option("--method", default=None,
              help="Comma list of sgd, heavy-ball, precond:P (update scaled by H^−P, P in [0, 1]), ema, adam. "
                   "Default: sgd,heavy-ball,precond:0.5,ema (no precond on regression, rosenbrock). "
                   "E.g. --method sgd,precond:1")
@click.option("--mode", default=None, help="exact (the NQM's moment recursions; default on nqm) or simulate "
                                           "(the Monte-Carlo simulator; default elsewhere). E.g. --mode simulate")
@click.option("--problem", type=PROBLEM, default="nqm", show_default=True, help="E.g. --problem regression")
@click.option("--dim", default=None, help="Dimension d (nqm: 10⁴ exact, 100 simulated). E.g. --dim 1000")
@click.option("--target", default="0.01", show_default=True,
              help="Stop when the exact loss ≤ target (0 < target < initial loss). E.g. --target 0.05")
@click.option("--beta", default="0.9", show_default=True,
              help="β values tuned with the lr: heavy-ball's momentum, ema's decay. E.g. --beta 0.5,0.9,0.99")
@click.option("--schedule", default="constant", show_default=True,
              help="constant, step, cosine or one-cycle; the horizon is the run's cap. E.g. --schedule cosine")
@click.option("--noise-spectrum", default="hessian", show_default=True,
              help="NQM noise covariance C: hessian (C = H), identity, square (H²). E.g. --noise-spectrum identity")
@click.option("--noise", default=None, help="Noise scale σ ≥ 0 (isotropic: per coordinate, default 1; rosenbrock: "
                                            "additive, default 0). E.g. --noise 0.5")
@click.option("--examples", default="1024", show_default=True, help="regression: data set size n. E.g. --examples 512")
@click.option("--max-iters", default=None, help="Step cap; lanes reaching it are censored. E.g. --max-iters 100000")
@click.option("--seeds", default="8", show_default=True, help="Seeds per point (simulate). E.g. --seeds 16")
@click.option("--seed", default="0", show_default=True, help="Base random seed. E.g. --seed 1")
@click.option("--lr", default="tuned", show_default=True,
              help="tuned (the best multiplier of the reference step per B, by the median over seeds), theory, or "
                   "a number. E.g. --lr 0.1")
@click.option("--lr-grid", default=None, help="Multipliers tried by --lr tuned (default 2^(k/2), 1e-6..1.41). "
                                              "E.g. --lr-grid 1e-3..1:31:log")
@click.option("--x64/--x32", default=None, help="Simulator precision (default float32). E.g. --x64")
@click.option("--out", default="results", show_default=True, type=click.Path(),
              help="Folder for the results file, or the file itself (.json, or .npz: NumPy columns; the default "
                   "from 10⁵ lanes). E.g. --out runs/ or --out runs/big.npz")
@click.option("--no-plot", is_flag=True, help="Skip the figure. E.g. --no-plot")
@click.option("--json", "as_json", is_flag=True, help="Records as JSON on stdout (table on stderr). E.g. --json")
@click.option("--yes", is_flag=True, help="Run even when estimated to take over an hour. E.g. --yes")
@user_errors
def sweep_noise(batch, method, mode, problem, dim, target, beta, schedule, noise_spectrum, noise, examples,
                max_iters, seeds, seed, lr, lr_grid, x64, out, no_plot, as_json, yes):
    """Steps to target vs batch size B (the gradient-noise obstacle).

    \b
    Examples:
      otod sweep noise --batch 1..65536:17:log --method sgd,heavy-ball,precond:0.5,ema --mode exact
      otod sweep noise --mode simulate --dim 100 --batch 1..256:9:log --target 0.05
      otod sweep noise --problem regression --batch 1..256:9:log --schedule cosine
    """
    from otod.noise.options import noise_config

    config, mode = noise_config(batch=batch, method=method, mode=mode, problem=problem, dim=dim, target=target,
                                beta=beta, schedule=schedule, noise_spectrum=noise_spectrum, noise=noise,
                                examples=examples, max_iters=max_iters, seeds=seeds, seed=seed, lr=lr,
                                lr_grid=lr_grid, x64=x64)
    results = run(config, mode, out)
    _print(results, as_json, no_plot)


def _print(results, as_json: bool, no_plot: bool) -> None:
    from otod.noise.report import text_report

    text = text_report(results)
    if not no_plot and results.path is not None:
        from otod.noise.figures import sweep_figure

        for f in sweep_figure(results, results.path.with_suffix("")):
            text += f"\nfigure:  {f}"
    if as_json:
        import json

        click.echo(text, err=True)
        click.echo(json.dumps(results.records))
    else:
        click.echo(text)


@click.command("params")
@click.option("--dim", default="10..10000:13:log", show_default=True, help="Dimensions d. E.g. --dim 10..1000:7:log")
@click.option("--batch-rule", default="fixed:32,proportional:0.1", show_default=True,
              help="Comma list of fixed:B (the same B at every d) and proportional:R (B = R·d, at least 1). "
                   "E.g. --batch-rule fixed:8,proportional:0.05")
@click.option("--method", default="sgd", show_default=True, help="E.g. --method sgd,heavy-ball")
@click.option("--mode", default=None, help="exact or simulate (default on isotropic). E.g. --mode exact")
@click.option("--problem", type=PROBLEM, default="isotropic", show_default=True, help="E.g. --problem nqm")
@click.option("--target", default="0.05", show_default=True, help="Absolute loss target. E.g. --target 0.02")
@click.option("--beta", default="0", show_default=True, help="β values tuned with the lr. E.g. --beta 0,0.9")
@click.option("--noise", default=None, help="isotropic: per-coordinate noise σ (default 1). E.g. --noise 2")
@click.option("--max-iters", default=None, help="Step cap. E.g. --max-iters 100000")
@click.option("--seeds", default="8", show_default=True, help="Seeds per point. E.g. --seeds 4")
@click.option("--seed", default="0", show_default=True, help="Base random seed. E.g. --seed 1")
@click.option("--lr", default="tuned", show_default=True, help="tuned, theory or a number. E.g. --lr tuned")
@click.option("--lr-grid", default=None, help="Multipliers tried by --lr tuned. E.g. --lr-grid 1e-4..1:17:log")
@click.option("--out", default="results", show_default=True, type=click.Path(file_okay=False),
              help="Folder for the results files. E.g. --out runs/")
@click.option("--no-plot", is_flag=True, help="Skip the figure. E.g. --no-plot")
@user_errors
def sweep_params(dim, batch_rule, method, mode, problem, target, beta, noise, max_iters, seeds, seed, lr, lr_grid,
                 out, no_plot):
    """Steps to target vs dimension d at a fixed batch and with B ∝ d (the batch-vs-parameters rule).

    \b
    Examples:
      otod sweep params --dim 10..10000:13:log --batch-rule fixed:32,proportional:0.1 --mode exact
      otod sweep params --dim 10..1000:7:log --seeds 4
    """
    from otod.noise.options import params_configs

    configs, mode = params_configs(dim=dim, batch_rule=batch_rule, method=method, mode=mode, problem=problem,
                                   target=target, beta=beta, noise=noise, max_iters=max_iters, seeds=seeds,
                                   seed=seed, lr=lr, lr_grid=lr_grid)
    for label, config in configs:
        click.echo(f"batch rule {label}")
        _print(run(config, mode, out), False, True)
        click.echo("")


@click.command("noise-scale")
@click.option("--dim", default="1000", show_default=True, help="NQM dimension d. E.g. --dim 100")
@click.option("--pairs", default="1:8,4:32,16:128", show_default=True,
              help="Comma list of B_small:B_big batch pairs. E.g. --pairs 2:16,8:64")
@click.option("--decay", default="0,0.9,0.99", show_default=True, help="EMA decays of the estimates. E.g. --decay 0.95")
@click.option("--lr", default="0.05", show_default=True, help="SGD step of the training run. E.g. --lr 0.1")
@click.option("--batch", default="32", show_default=True, help="Batch of the training run. E.g. --batch 64")
@click.option("--steps", default="400", show_default=True, help="Steps of the training run. E.g. --steps 1000")
@click.option("--seeds", default="64", show_default=True, help="Independent runs. E.g. --seeds 32")
@click.option("--seed", default="0", show_default=True, help="Base random seed. E.g. --seed 1")
@user_errors
def noise_scale(dim, pairs, decay, lr, batch, steps, seeds, seed):
    """Two-batch estimators of |G|² and tr Σ along an SGD run on the NQM, against the exact values.

    \b
    Examples:
      otod noise-scale
      otod noise-scale --pairs 1:8,8:64 --decay 0,0.99 --steps 1000
    """
    from otod.noise.estimators import noise_scale_report, parse_scale_options

    click.echo(noise_scale_report(**parse_scale_options(dim=dim, pairs=pairs, decay=decay, lr=lr, batch=batch,
                                                        steps=steps, seeds=seeds, seed=seed)))


def commands() -> dict[str, list]:
    return {"sweep": [sweep_noise, sweep_params], "": [noise_scale]}
