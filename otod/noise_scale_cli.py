"""``otod noise-scale``: the gradient noise scale, measured.

With ``--model``, a net's exact B_simple = tr Σ/|G|² and B_noise = tr(HΣ)/GᵀHG over its whole training set at
checkpoints of one SGD run, beside the two-batch estimates (`otod.nets.measure.noise_scale`; McCandlish et al. 2018,
appendix A). Without it, the same two-batch estimators along an SGD run on the noisy quadratic model, against the
NQM's exact values (`otod.noise.estimators`). The command reads two obstacles, the nets and the noise, so it lives
above both, beside the command line (`otod.cli` adds it), and neither obstacle imports the other for it.
"""

from __future__ import annotations

import click

from otod.core.cli import user_errors
from otod.core.errors import OtodError
from otod.nets.measure.settings import NoiseScaleConfig


@click.command("noise-scale")
@click.option("--model", default=None,
              help="Measure a net instead of the NQM: mlp or cnn, or your own JAX model as FILE.py:NAME or "
                   "package.module:NAME (a function of no arguments returning (loss, params, data[, init]), "
                   "docs/models.md); the exact B_simple and B_noise over the whole training set at checkpoints of "
                   "one SGD run, beside the two-batch estimates. E.g. --model mlp, --model my_model.py:problem")
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
@click.option("--trace-examples", default=None,
              help="--model only: estimate tr(HΣ) (one Hessian-vector product over the data per example) from this "
                   "many examples drawn without replacement, its standard error printed beside it (default: all, "
                   "exact). E.g. --trace-examples 256")
@click.option("--x64", is_flag=True, help="--model FILE.py:NAME only: train in float64. Without it the training run "
                                          "is float32, so the checkpoints after step 0 are a float32 run's; the "
                                          "start (step 0) is your model's own, unrounded, and every measurement is "
                                          "float64. E.g. --x64")
@click.option("--chunk", default=None,
              help="--model FILE.py:NAME only: examples per chunk of the data over which the loss, gradient and "
                   "Hessian-vector products accumulate (default: sized from the model). E.g. --chunk 256")
@click.option("--yes", is_flag=True, help="Run even when the estimate says it takes more than an hour. E.g. --yes")
@user_errors
def noise_scale(model, width, depth, activation, architecture, init, data, examples, loss, draws, out, dim, pairs,
                decay, lr, batch, steps, seeds, seed, trace_examples, x64, chunk, yes):
    """Two-batch estimators of |G|² and tr Σ along an SGD run on the NQM, against the exact values; with --model,
    the exact B_simple and B_noise of a net over its whole training set, against the same estimators.

    \b
    Examples:
      otod noise-scale
      otod noise-scale --pairs 1:8,8:64 --decay 0,0.99 --steps 1000
      otod noise-scale --model mlp --width 32 --depth 2 --data digits --steps 0,100,1000
      otod noise-scale --model tests/fixtures/models/plain_jax.py:mlp --steps 0,100
    """
    from otod.core.options import refuse_ignored
    from otod.core.preflight import given_options, quiet_numerics
    from otod.nets.model.contract import is_reference

    given = given_options()
    if is_reference(model):
        with quiet_numerics():
            click.echo(_contract(given, model, draws=draws, out=out, pairs=pairs, lr=lr, batch=batch, steps=steps,
                                 seed=seed, x64=x64, chunk=chunk, yes=yes, trace_examples=trace_examples))
        return
    for name in ("x64", "chunk"):
        refuse_ignored(given, name, "only with --model FILE.py:NAME (a model of your own), e.g. --model "
                                    "my_model.py:problem")
    with quiet_numerics():
        _run(given, model=model, width=width, depth=depth, activation=activation, architecture=architecture,
             init=init, data=data, examples=examples, loss=loss, draws=draws, out=out, dim=dim, pairs=pairs,
             decay=decay, lr=lr, batch=batch, steps=steps, seeds=seeds, seed=seed, yes=yes,
             trace_examples=trace_examples)


def _run(given, *, model, width, depth, activation, architecture, init, data, examples, loss, draws, out, dim, pairs,
         decay, lr, batch, steps, seeds, seed, yes, trace_examples) -> None:
    """The command's body: the net's measurement with --model, else the NQM estimator run, each refusing the
    other's options."""
    if model is not None:
        click.echo(_net_noise_scale(given, model=model, width=width, depth=depth, activation=activation,
                                    architecture=architecture, init=init, data=data, examples=examples, loss=loss,
                                    draws=draws, out=out, pairs=pairs, lr=lr, batch=batch, steps=steps, seed=seed,
                                    yes=yes, trace_examples=trace_examples))
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


def _contract(given, reference, *, draws, out, pairs, lr, batch, steps, seed, x64, chunk, yes,
              trace_examples) -> str:
    """``noise-scale --model FILE.py:NAME``: every option checked, the NQM's refused, then the model loaded and
    checked, then measured (`otod.nets.contract_cli.run_noise`)."""
    from otod.core.options import finite_float, positive_int, refuse_ignored, representable_lr, seed_value
    from otod.nets import contract_cli
    from otod.nets.measure import noise_scale as net
    from otod.noise.estimators import parse_scale_options

    for name in NQM_ONLY:
        refuse_ignored(given, name, "the NQM estimator run's option; not with --model (a net's two-batch "
                                    "estimates are drawn at each checkpoint: see --draws)")
    checkpoints = net.parse_checkpoints(_given(steps, net.NET_STEPS))
    pair_list = parse_scale_options(dim=1, pairs=_given(pairs, net.NET_PAIRS), decay=0, lr=1, batch=1, steps=1,
                                    seeds=1, seed=0)["pairs"]
    rate = finite_float(_given(lr, net.NET_LR), "--lr", "0.1")
    if not rate > 0:
        raise OtodError(f"--lr {lr}: a learning rate must be positive, e.g. --lr 0.1")
    representable_lr(rate, lr, "0.1")
    batch = positive_int(batch, "--batch", "32")
    seed = seed_value(seed)
    chunk = contract_cli.chunk_option(chunk)
    count = positive_int(draws, "--draws", "64", minimum=2, maximum=10 ** 6)
    model = contract_cli.load_model(reference, given)
    config = NoiseScaleConfig(checkpoints=tuple(checkpoints), lr=rate, seed=seed,
                              pairs=tuple(tuple(p) for p in pair_list), draws=count,
                              trace_examples=net.trace_examples_option(trace_examples, model.examples), x64=bool(x64))
    return contract_cli.run_noise(model, config, batch=batch, chunk=chunk, out=out, yes=yes,
                                  pairs_given="pairs" in given)


#: Options of ``noise-scale`` that only a net reads, and those only the NQM's estimator run reads.
NET_ONLY = ("width", "depth", "activation", "architecture", "init", "data", "examples", "loss", "draws", "out",
            "trace_examples")
NQM_ONLY = ("dim", "decay", "seeds")


def _net_noise_scale(given, *, model, width, depth, activation, architecture, init, data, examples, loss, draws,
                     out, pairs, lr, batch, steps, seed, yes, trace_examples) -> str:
    """``noise-scale --model``: check every option in one line each (before JAX is imported), estimate the time,
    then measure (`otod.nets.measure.noise_scale.run_command`, imported here) and return the text with the file's path."""
    from pathlib import Path

    from otod.core.options import finite_float, positive_int, refuse_ignored, representable_lr, seed_value
    from otod.core.preflight import make_folder, refuse_time, results_out
    from otod.noise.estimators import parse_scale_options

    for name in NQM_ONLY:
        refuse_ignored(given, name, "the NQM estimator run's option; not with --model (a net's two-batch "
                                    "estimates are drawn at each checkpoint: see --draws)")
    from otod.nets.measure import noise_scale as net

    spec = net.net_spec(model=model, width=width, depth=depth, activation=activation, architecture=architecture,
                        init=init, data=data, examples=examples, loss=loss, batch=batch)
    checkpoints = net.parse_checkpoints(_given(steps, net.NET_STEPS))
    pair_list = parse_scale_options(dim=1, pairs=_given(pairs, net.NET_PAIRS), decay=0, lr=1, batch=1, steps=1,
                                    seeds=1, seed=0)["pairs"]
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
    representable_lr(rate, lr, "0.1")
    count = positive_int(draws, "--draws", "64", minimum=2, maximum=10 ** 6)
    out = results_out(out)
    make_folder(Path(out).parent if Path(out).suffix else out)
    traced = net.trace_examples_option(trace_examples, n)
    seconds = net.plan_seconds(spec, checkpoints, pair_list, count, traced)
    refuse_time(seconds, yes, f"noise-scale --model {model} ({net.describe(spec)})",
                "use fewer --steps checkpoints, fewer --examples or a smaller net")
    config = NoiseScaleConfig(checkpoints=tuple(checkpoints), lr=rate, seed=seed_value(seed),
                              pairs=tuple(tuple(p) for p in pair_list), draws=count, trace_examples=traced)
    text, path = net.run_command(spec, config, out)
    return f"{text}\nresults: {path}"
