"""``otod sweep noise`` and ``otod sweep params``: parse options, build the configs (`otod.noise.options`), run
(exact recursions or the simulator), print. (``otod noise-scale``, a net's or the NQM's, lives above both
obstacles: `otod.noise_scale_cli`.)"""

from __future__ import annotations

import click

from otod.core.api import OtodError, common_sweep_options, terminal_progress, user_errors

PROBLEM = click.Choice(["nqm", "isotropic", "regression", "rosenbrock"])


def quiet_numerics(command_fn):
    """Run a command body with NumPy's RuntimeWarnings (overflow, invalid value, all-NaN slice) silenced: they
    come from lanes that diverge (``--lr 1e38``), which the records and the table already report as diverged,
    so their raw text on stderr would only hide the one line that matters."""
    import functools

    @functools.wraps(command_fn)
    def wrapper(*args, **kwargs):
        import warnings

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=RuntimeWarning)
            return command_fn(*args, **kwargs)

    return wrapper


def made(config, mode: str, out: str, yes: bool = False):
    """(results, their one analysis) of one config on the chosen path (`otod.noise.runner.made`), with a progress
    line on a terminal."""
    from otod.noise.runner import made as made_on_path

    return made_on_path(config, mode, out, terminal_progress(), yes=yes)


@click.command("noise")
@click.option("--batch", default="1..1024:11:log", show_default=True,
              help="Batch sizes B ≥ 1: whole numbers (a log range is rounded to them). E.g. --batch 1..65536:17:log")
@click.option("--method", default=None,
              help="Comma list of sgd, heavy-ball, precond:P (update scaled by H^−P, P in [0, 1]), ema, adam. "
                   "Default: sgd,heavy-ball,precond:0.5,ema (no precond on regression, rosenbrock). "
                   "E.g. --method sgd,precond:1")
@click.option("--mode", default=None, help="exact (the NQM's moment recursions; default on nqm) or simulate "
                                           "(the Monte-Carlo simulator; default elsewhere). E.g. --mode simulate")
@click.option("--problem", type=PROBLEM, default="nqm", show_default=True,
              help="nqm: the noisy quadratic model (h_i = 1/i); isotropic: ½‖x‖² with noise σ per coordinate; "
                   "regression: least squares on --examples points; rosenbrock: the 2-d valley. "
                   "E.g. --problem regression")
@click.option("--dim", default=None, help="Dimension d. Default: nqm 10⁴ exact, 100 simulated; isotropic 100; "
                                          "regression 16; refused on rosenbrock (2-d). E.g. --dim 1000")
@click.option("--target", default="0.01", show_default=True,
              help="Stop when the exact loss ≤ target (0 < target < initial loss). E.g. --target 0.05")
@click.option("--beta", default=None,
              help="β values tuned with the lr: heavy-ball's momentum, ema's decay (only with those methods), in "
                   "[0, 1). Default: 0 and 1 − β = 10^(−j/2), j = 1..6 (0.684, 0.9, ..., 0.999), which the exact "
                   "path refines and searches on towards 1 (to 1 − β = 1e-14); a list is tried as given. E.g. "
                   "--beta 0.5,0.9,0.99")
@click.option("--schedule", default="constant", show_default=True,
              help="constant, step, cosine or one-cycle; the horizon is the run's cap. E.g. --schedule cosine")
@click.option("--noise-spectrum", default=None,
              help="nqm only: noise covariance C: hessian (C = H; the default), identity, square (H²). "
                   "E.g. --noise-spectrum identity")
@click.option("--noise", default=None,
              help="Noise scale σ ≥ 0, isotropic (per coordinate, default 1) and rosenbrock (additive, default 0) "
                   "only. E.g. --noise 0.5")
@click.option("--examples", default=None, help="regression only: data set size n. Default 1024. E.g. --examples 512")
@click.option("--max-iters", default=None,
              help="Step cap; lanes reaching it are censored. Default: 10⁸ exact, 20× the ideal steps (2000 to 10⁶) "
                   "simulated. E.g. --max-iters 100000")
@click.option("--lr", default="tuned", show_default=True,
              help="tuned (the best multiplier of the reference step per B, by the median over seeds), theory, or "
                   "a number. E.g. --lr 0.1")
@click.option("--lr-grid", default=None,
              help="Multipliers of the reference step tried by --lr tuned (only there), as given. Default: 57 "
                   "fractions of each method's stability limit (2, 2(1+β) for heavy-ball), log-spaced from 4e-7 of "
                   "it to 1.1e-3 below it, refined by the exact path. E.g. --lr-grid 1e-3..1:31:log")
@common_sweep_options
@user_errors
@quiet_numerics
def sweep_noise(batch, method, mode, problem, dim, target, beta, schedule, noise_spectrum, noise, examples,
                max_iters, lr, lr_grid, seeds, seed, x64, out, as_json, no_plot, pdf, yes, chunk_seconds):
    """Steps to target vs batch size B (the gradient-noise obstacle).

    \b
    The exact path takes no --seeds, --seed, --x64/--x32 or --chunk-seconds (it samples nothing); the simulator
    defaults to float32, 8 seeds, seed 0.

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
                                lr_grid=lr_grid, x64=x64, chunk_seconds=chunk_seconds, yes=yes)
    from otod.core.api import echo_report, sweep
    from otod.noise.runner import exact_run

    echo_report(sweep(config, out_dir=out, plot=not no_plot, progress=terminal_progress(), yes=yes, pdf=pdf,
                      run=exact_run if mode == "exact" else None), as_json)


def _echo(text: str, records: list, as_json: bool) -> None:
    """The text on stdout, or with --json the records as JSON on stdout and the text on stderr."""
    if as_json:
        import json

        click.echo(text, err=True)
        click.echo(json.dumps(records))
    else:
        click.echo(text)


def params_figure_base(out: str, labelled, mode: str):
    """Where the params figure goes: beside a named results file (``f.json`` → ``f.png``), else in the folder as
    ``params-<mode>-<digest of the rules' configs>`` (one name per distinct command); ``labelled``: [(label, an
    object with the results' ``meta``)]."""
    import hashlib
    from pathlib import Path

    if Path(out).suffix:
        return Path(out).with_suffix("")
    digest = hashlib.sha256("".join(r.meta["digest"] for _, r in labelled).encode()).hexdigest()[:10]
    return Path(out) / f"params-{mode}-{digest}"


@click.command("params")
@click.option("--dim", default="10..10000:13:log", show_default=True,
              help="Dimensions d: whole numbers (a log range is rounded to them). E.g. --dim 10..1000:7:log")
@click.option("--batch-rule", default="fixed:32,proportional:0.1", show_default=True,
              help="Comma list of fixed:B (the same B at every d) and proportional:R (B = R·d, at least 1); one "
                   "results file each. E.g. --batch-rule fixed:8,proportional:0.05")
@click.option("--method", default="sgd", show_default=True,
              help="Comma list of sgd, heavy-ball, precond:P, ema (adam: simulate only). E.g. --method sgd,heavy-ball")
@click.option("--mode", default=None, help="exact (default on nqm) or simulate (default on isotropic, regression). "
                                           "E.g. --mode exact")
@click.option("--problem", type=click.Choice(["nqm", "isotropic", "regression"]), default="isotropic",
              show_default=True, help="nqm, isotropic or regression (a problem with a dimension d). "
                                      "E.g. --problem nqm")
@click.option("--target", default="0.05", show_default=True, help="Absolute loss target. E.g. --target 0.02")
@click.option("--beta", default=None, help="β values tuned with the lr: heavy-ball's momentum, ema's decay (only "
                                           "with those methods), in [0, 1). Default as for sweep noise: 0 and "
                                           "1 − β = 10^(−j/2), j = 1..6, searched on towards 1 by the exact path. "
                                           "E.g. --beta 0,0.9")
@click.option("--noise", default=None, help="isotropic only: per-coordinate noise σ. Default 1. E.g. --noise 2")
@click.option("--max-iters", default=None, help="Step cap. Default: 10⁸ exact, automatic simulated. "
                                                 "E.g. --max-iters 100000")
@click.option("--lr", default="tuned", show_default=True, help="tuned, theory or a number. E.g. --lr tuned")
@click.option("--lr-grid", default=None, help="Multipliers of the reference step tried by --lr tuned (only "
                                              "there). Default as for sweep noise: fractions of each method's "
                                              "stability limit. E.g. --lr-grid 1e-4..1:17:log")
@common_sweep_options
@user_errors
@quiet_numerics
def sweep_params(dim, batch_rule, method, mode, problem, target, beta, noise, max_iters, lr, lr_grid, seeds, seed,
                 x64, out, as_json, no_plot, pdf, yes, chunk_seconds):
    """Steps to target vs dimension d at a fixed batch and with B ∝ d (the batch-vs-parameters rule).

    \b
    One results file per batch rule (--out FILE.json takes a single --batch-rule) and one figure of all rules.
    The exact path takes no --seeds, --seed, --x64/--x32 or --chunk-seconds.

    \b
    Examples:
      otod sweep params --dim 10..10000:13:log --batch-rule fixed:32,proportional:0.1 --mode exact
      otod sweep params --dim 10..1000:7:log --seeds 4
      otod sweep params --batch-rule fixed:8 --out runs/params.json
    """
    from pathlib import Path

    from otod.noise.options import params_configs

    configs, mode = params_configs(dim=dim, batch_rule=batch_rule, method=method, mode=mode, problem=problem,
                                   target=target, beta=beta, noise=noise, max_iters=max_iters, seeds=seeds,
                                   seed=seed, lr=lr, lr_grid=lr_grid, x64=x64, chunk_seconds=chunk_seconds, yes=yes)
    if Path(out).suffix and len(configs) > 1:
        raise OtodError(f"--out {out}: names one results file but --batch-rule {batch_rule} gives {len(configs)} "
                        "sweeps (one file each); give a folder, e.g. --out runs/, or one rule")
    from otod.core.api import present

    shown = []
    for label, config in configs:  # one analysis each: the one the bracket stage read
        results, analysis = made(config, mode, out, yes)
        shown.append((label, present(results, analysis=analysis)))
    text = "\n\n".join(f"batch rule {label}\n{r.text}\n\nresults: {r.results.path}" for label, r in shown)
    if not no_plot:  # the rules side by side: one figure of every rule's analysis
        from otod.noise.figures import params_figure

        analyses = [(label, r.analysis) for label, r in shown]
        written = params_figure(analyses, params_figure_base(out, analyses, mode), mode, pdf=pdf)
        text += "".join(f"\nfigure:  {f}" for f in written)
    from otod.core.api import marked_records

    _echo(text, [rec for _, r in shown for rec in marked_records(r)], as_json)


def _exact_reason(options: dict) -> str | None:
    """Why --distributed or --share cannot serve these options: the exact path is one NumPy computation, not
    shared among processes (each would compute it all and write the same file). None on the simulator."""
    default = "exact" if options.get("problem") == "nqm" else "simulate"
    if (options.get("mode") or default) == "exact":
        return ("the exact path (--mode exact) is one NumPy computation and is not shared among processes; run it "
                "in one process, or use --mode simulate")
    return None


sweep_noise.callback.refuse_distributed = _exact_reason
sweep_params.callback.refuse_distributed = _exact_reason


def commands() -> dict[str, list]:
    from otod.noise.schedule_cli import nqm_schedule

    return {"sweep": [sweep_noise, sweep_params], "": [nqm_schedule]}
