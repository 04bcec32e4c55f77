"""``otod sweep noise``, ``otod sweep params`` and ``otod noise-scale``: parse options, build the configs
(`otod.noise.options`), run (exact recursions or the simulator), print."""

from __future__ import annotations

import click

from otod.core.cli import common_sweep_options, terminal_progress, user_errors
from otod.core.errors import OtodError

PROBLEM = click.Choice(["nqm", "isotropic", "regression", "rosenbrock"])


def quiet_numerics(command_fn):
    """Run a command body with NumPy's RuntimeWarnings (overflow, invalid value, all-NaN slice) silenced: they
    come from lanes that diverge (``--lr 1e300``), which the records and the table already report as diverged,
    so their raw text on stderr would only hide the one line that matters."""
    import functools

    @functools.wraps(command_fn)
    def wrapper(*args, **kwargs):
        import warnings

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=RuntimeWarning)
            return command_fn(*args, **kwargs)

    return wrapper


def run(config, mode: str, out: str, yes: bool = False):
    """Results of one config on the chosen path, with a progress line on a terminal."""
    from otod.noise.runner import run as run_on_path

    return run_on_path(config, mode, out, terminal_progress(), yes=yes)


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
                   "[0, 0.999]. Default: 0 and 1 − β = 10^(−j/2), j = 1..6 (0.684, 0.9, ..., 0.999), refined by the "
                   "exact path; a list is tried as given. E.g. --beta 0.5,0.9,0.99")
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
    from otod.noise.analysis import analyse

    results = run(config, mode, out, yes)
    analysis = analyse(results)  # once: the report and the figure read it
    text = _report(results, analysis)
    if not no_plot and results.path is not None:
        from otod.noise.figures import sweep_figure

        text += "".join(f"\nfigure:  {f}" for f in sweep_figure(results, results.path.with_suffix(""), pdf=pdf,
                                                                 analysis=analysis))
    _echo(text, results.records, as_json)


def _report(results, analysis) -> str:
    from otod.noise.report import text_report

    return text_report(results, analysis=analysis)


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
                                           "with those methods), in [0, 0.999]. Default as for sweep noise: 0 and "
                                           "1 − β = 10^(−j/2), j = 1..6. E.g. --beta 0,0.9")
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
    from otod.noise.analysis import analyse

    runs = [(label, run(config, mode, out, yes)) for label, config in configs]
    labelled = [(label, results, analyse(results)) for label, results in runs]  # once each
    text = "\n\n".join(f"batch rule {label}\n{_report(results, analysis)}" for label, results, analysis in labelled)
    if not no_plot:
        from otod.noise.figures import params_figure

        analyses = [(label, analysis) for label, _, analysis in labelled]
        written = params_figure(analyses, params_figure_base(out, analyses, mode), mode, pdf=pdf)
        text += "".join(f"\nfigure:  {f}" for f in written)
    _echo(text, [r for _, results, _ in labelled for r in results.records], as_json)


@click.command("noise-scale")
@click.option("--model", default=None,
              help="Measure a net instead of the NQM: mlp or cnn; the exact B_simple and B_noise over the whole "
                   "training set at checkpoints of one SGD run, beside the two-batch estimates. E.g. --model mlp")
@click.option("--width", default="32", show_default=True, help="--model only: hidden units (mlp) or channels (cnn), "
                                                               "≥ 1. E.g. --width 64")
@click.option("--depth", default="2", show_default=True, help="--model only: weight layers, ≥ 1 (1: a linear "
                                                              "model). E.g. --depth 3")
@click.option("--activation", default="relu", show_default=True,
              help="--model only: relu, tanh or linear. E.g. --activation tanh")
@click.option("--architecture", default="plain", show_default=True,
              help="--model only: plain or residual. E.g. --architecture residual")
@click.option("--init", default="kaiming", show_default=True,
              help="--model only: kaiming, xavier, orthogonal or small. E.g. --init orthogonal")
@click.option("--data", default="digits", show_default=True,
              help="--model only: digits (shipped 8×8 images), teacher (a random tanh teacher) or gaussian (a "
                   "linear teacher on Gaussian inputs). E.g. --data teacher")
@click.option("--examples", default=None, help="--model only: training examples (digits: at most 1438; the "
                                               "synthetic sets: default 1024). E.g. --examples 512")
@click.option("--loss", default=None, help="--model only: cross-entropy or squared. Default: cross-entropy on "
                                           "digits, squared on teacher and gaussian. E.g. --loss squared")
@click.option("--draws", default="64", show_default=True,
              help="--model only: nested batch draws per pair of the two-batch estimator. E.g. --draws 128")
@click.option("--out", default="results", show_default=True,
              help="--model only: the results file (.parquet, .json or .npz) or a folder for "
                   "noise-scale-net-<digest>.parquet. E.g. --out runs/")
@click.option("--dim", default=None, help="NQM dimension d (not with --model). Default 1000. E.g. --dim 100")
@click.option("--pairs", default=None,
              help="Comma list of B_small:B_big batch pairs. Default: 1:8,4:32,16:128 on the NQM, 8:64,32:256 with "
                   "--model. E.g. --pairs 2:16,8:64")
@click.option("--decay", default=None, help="EMA decays of the estimates (not with --model). Default 0,0.9,0.99. "
                                            "E.g. --decay 0.95")
@click.option("--lr", default=None, help="SGD step of the training run. Default 0.05 on the NQM, 0.1 with --model. "
                                         "E.g. --lr 0.1")
@click.option("--batch", default="32", show_default=True, help="Batch of the training run. E.g. --batch 64")
@click.option("--steps", default=None,
              help="Steps of the training run (default 400); with --model, the checkpoints measured, a comma list "
                   "of steps (default 0,100,1000: init, during, end). E.g. --steps 1000, --model mlp --steps 0,500")
@click.option("--seeds", default=None, help="Independent runs (not with --model). Default 64. E.g. --seeds 32")
@click.option("--seed", default="0", show_default=True, help="Base random seed, 0 to 2^31 − 1. E.g. --seed 1")
@click.option("--yes", is_flag=True, help="Run even when the estimate says it takes more than an hour. E.g. --yes")
@user_errors
@quiet_numerics
def noise_scale(model, width, depth, activation, architecture, init, data, examples, loss, draws, out, dim, pairs,
                decay, lr, batch, steps, seeds, seed, yes):
    """Two-batch estimators of |G|² and tr Σ along an SGD run on the NQM, against the exact values; with --model,
    the exact B_simple and B_noise of a net over its whole training set, against the same estimators.

    \b
    Examples:
      otod noise-scale
      otod noise-scale --pairs 1:8,8:64 --decay 0,0.99 --steps 1000
      otod noise-scale --model mlp --width 32 --depth 2 --data digits --steps 0,100,1000
    """
    from otod.core.preflight import given_options

    given = given_options()
    if model is not None:
        click.echo(_net_noise_scale(given, model=model, width=width, depth=depth, activation=activation,
                                    architecture=architecture, init=init, data=data, examples=examples, loss=loss,
                                    draws=draws, out=out, pairs=pairs, lr=lr, batch=batch, steps=steps, seed=seed,
                                    yes=yes))
        return
    from otod.core.options import refuse_ignored
    from otod.noise.estimators import check_plan, noise_scale_report, parse_scale_options

    for name in NET_ONLY:
        refuse_ignored(given, name, "measures a net: only with --model, e.g. --model mlp")
    options = parse_scale_options(dim=_given(dim, "1000"), pairs=_given(pairs, "1:8,4:32,16:128"),
                                  decay=_given(decay, "0,0.9,0.99"), lr=_given(lr, "0.05"), batch=batch,
                                  steps=_given(steps, "400"), seeds=_given(seeds, "64"), seed=seed)
    check_plan(options, yes)
    click.echo(noise_scale_report(**options))


def _given(value, default):
    """An option's value as given, or its default where it was not given (None): an empty value stays empty, so
    that its parser refuses it instead of running the default."""
    return default if value is None else value


#: Options of ``noise-scale`` that only a net reads, and those only the NQM's estimator run reads.
NET_ONLY = ("width", "depth", "activation", "architecture", "init", "data", "examples", "loss", "draws", "out")
NQM_ONLY = ("dim", "decay", "seeds")


def _net_noise_scale(given, *, model, width, depth, activation, architecture, init, data, examples, loss, draws,
                     out, pairs, lr, batch, steps, seed, yes) -> str:
    """``noise-scale --model``: check every option in one line each (before JAX is imported), estimate the time,
    then measure (`otod.nets.noise_scale.run_command`, imported here) and return the text with the file's path."""
    from otod.core.options import finite_float, positive_int, refuse_ignored, seed_value
    from pathlib import Path

    from otod.core.preflight import make_folder, refuse_time, results_out
    from otod.noise.estimators import parse_scale_options

    for name in NQM_ONLY:
        refuse_ignored(given, name, "the NQM estimator run's option; not with --model (a net's two-batch "
                                    "estimates are drawn at each checkpoint: see --draws)")
    from otod.nets import noise_scale as net

    spec = net.net_spec(model=model, width=width, depth=depth, activation=activation, architecture=architecture,
                        init=init, data=data, examples=examples, loss=loss, batch=batch)
    checkpoints = net.parse_checkpoints(_given(steps, net.NET_STEPS))
    pair_list = parse_scale_options(dim=1, pairs=_given(pairs, net.NET_PAIRS), decay=0, lr=1, batch=1, steps=1, seeds=1,
                                    seed=0)["pairs"]
    n = spec.dataset().examples
    if "pairs" not in given:  # the default pairs that fit the data set, else one of B_big = n
        pair_list = [p for p in pair_list if p[1] <= n] or [(max(1, n // 8), n)]
    if n < 2:
        raise OtodError(f"--examples {examples}: the two-batch estimator needs at least 2 training examples, "
                        "e.g. --examples 512")
    for small, big in pair_list:
        if big > n:
            raise OtodError(f"--pairs {small}:{big}: B_big larger than the data set ({n} training examples); "
                            f"use B_big ≤ {n}")
    rate = finite_float(_given(lr, net.NET_LR), "--lr", "0.1")
    if not rate > 0:
        raise OtodError(f"--lr {lr}: a learning rate must be positive, e.g. --lr 0.1")
    count = positive_int(draws, "--draws", "64", minimum=2, maximum=10 ** 6)
    out = results_out(out)
    make_folder(Path(out).parent if Path(out).suffix else out)
    seconds = net.plan_seconds(spec, checkpoints, pair_list, count)
    refuse_time(seconds, yes, f"noise-scale --model {model} ({net.describe(spec)})",
                "use fewer --steps checkpoints, fewer --examples or a smaller net")
    text, path = net.run_command(spec, checkpoints, rate, pair_list, count, seed_value(seed), out)
    return f"{text}\nresults: {path}"


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
    return {"sweep": [sweep_noise, sweep_params], "": [noise_scale]}
