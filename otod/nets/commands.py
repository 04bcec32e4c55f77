"""``otod sweep net``: parse options, build the config (`otod.nets.sweep.options`), run it through the core engine, add
the NQM's prediction from the net's own spectrum and noise, print the report and draw the figure."""

from __future__ import annotations

import contextlib

import click

from otod.core.api import common_sweep_options, terminal_progress, user_errors

#: The net sweep's seeds where --seeds is not given: `otod.nets.sweep.options.DEFAULTS` (which imports NumPy, so ``otod
#: --help`` does not import it; tests/nets/sweep/test_sweep.py checks the two agree).
NET_SEEDS = 5


@click.command("net")
@click.option("--batch", default=None,
              help="Batch sizes B (static; one compiled program runs them all), whole numbers ≤ the training set. Default "
                   "8..1024:8:log. E.g. --batch 4..1024:9:log")
@click.option("--width", default="32", show_default=True,
              help="Hidden width (MLP units, CNN channels, the transformer's d_model); several values make a width "
                   "axis (parameter count). "
                   "E.g. --width 8..128:5:log")
@click.option("--depth", default="2", show_default=True,
              help="Weight layers (1: a linear model; the transformer's blocks); several values make a depth axis. "
                   "E.g. --depth 2..10:5")
@click.option("--model", default="mlp", show_default=True,
              help="mlp, cnn (3×3 convolutions on the 8×8 digits), transformer (a decoder-only transformer on "
                   "--data sequence, 4·width MLP), or your own JAX model: FILE.py:NAME or "
                   "package.module:NAME, a function of no arguments returning (loss, params, data[, init]) "
                   "(docs/models.md). E.g. --model cnn, --model my_model.py:problem")
@click.option("--heads", default=None,
              help="--model transformer only: attention heads, a divisor of every --width. Default 2. E.g. --heads 4")
@click.option("--activation", type=click.Choice(["relu", "tanh", "linear"]), default="relu", show_default=True,
              help="The nonlinearity. E.g. --activation tanh")
@click.option("--architecture", default="plain", show_default=True,
              help="plain, residual (skip connections around each width→width layer), or both. "
                   "E.g. --architecture plain,residual")
@click.option("--init", default="kaiming", show_default=True,
              help="kaiming, xavier, orthogonal, small (10⁻² of kaiming's scale), or a list. E.g. --init kaiming,small")
@click.option("--data", type=click.Choice(["digits", "teacher", "gaussian", "sequence"]), default="digits",
              show_default=True,
              help="digits (shipped, 1438 training images), teacher (a random tanh-MLP teacher, regression), "
                   "gaussian (a linear teacher) or sequence (16-token sequences of a random order-2 Markov source "
                   "over 32 tokens, for --model transformer; its entropy rate is the loss floor). "
                   "E.g. --data teacher")
@click.option("--examples", default=None,
              help="Training examples D (teacher, gaussian: drawn, default 1024; digits: the first N, at most 1438; "
                   "--model FILE.py:NAME: its first N); several values make a D axis of nested subsets of one set, "
                   "each ≥ every batch. "
                   "E.g. --examples 256,512,1024")
@click.option("--stream", is_flag=True, default=False,
              help="Fresh examples every step from the teacher (teacher, gaussian; no repetition), stopped on the "
                   "loss on a fixed held-out set of 4096; --target may list several losses. "
                   "E.g. --data teacher --stream --target 0.05,0.03,0.02")
@click.option("--regime", default=None,
              help="Data as the batch-size papers mean it, with --examples D1,…: stream (fresh teacher examples every "
                   "step, never repeated) or finite (a set of D examples repeated over epochs); each cell (D, "
                   "width) stops at the held-out loss its reference run (the smallest --batch at its best lr) reaches "
                   "after D examples (Zhang et al. 2024). With --width W1,… the report fits the joint law "
                   "B_crit ∝ D^a·P^b. E.g. --data teacher --regime stream --examples 256,1024,4096 --width 8,32")
@click.option("--loss", type=click.Choice(["cross-entropy", "squared"]), default=None,
              help="Default cross-entropy on digits, squared on the regressions. E.g. --loss squared")
@click.option("--method", default=None, help="Comma list of sgd, heavy-ball, adam. Default sgd. E.g. --method sgd,adam")
@click.option("--target", default=None,
              help="Stop at this full training loss (--stream: held-out loss; a list). Default 0.1. E.g. --target 0.05")
@click.option("--beta", default=None,
              help="heavy-ball's β values, tuned with the lr. Default 0 and 1 − β = 10^(−j/2), j = 1..6. "
                   "E.g. --beta 0,0.9")
@click.option("--schedule", default="constant", show_default=True,
              help="constant, step, cosine or one-cycle. E.g. --schedule cosine")
@click.option("--max-iters", default=None, help="Step cap (censored beyond). Default 20000. E.g. --max-iters 5000")
@click.option("--lr", default="tuned", show_default=True,
              help="tuned (the best of --lr-grid per point by the median over seeds) or one step. E.g. --lr 0.1")
@click.option("--lr-grid", default=None,
              help="Absolute steps tried (adam: multipliers of 1e-2). Default 1e-3..10, 4 per decade. "
                   "E.g. --lr-grid 0.01..3:11:log")
@click.option("--lr-extend", default=None,
              help="Steps beyond each end of --lr-grid (at its end's log spacing) tried where a point's best lr sits "
                   "on that end, until it is inside the rates tried or the next larger one diverges. Default 0 (the "
                   "grid as given); not with --branch-at or --batch-schedule. E.g. --lr-extend 4")
@click.option("--predict/--no-predict", default=True, show_default=True,
              help="Also predict S(B) from an NQM built from the net's measured Hessian spectrum and gradient noise "
                   "(batch sweeps). With --branch-at: off unless given; --predict builds the NQM at every "
                   "checkpoint and its ablation (the full Hessian per seed). E.g. --no-predict")
@click.option("--branch-at", default=None,
              help="B_crit along training: a comma list of checkpoint steps of each seed's reference SGD run "
                   "(--branch-batch, --branch-lr), or loss: and training-loss levels, each checkpoint then the "
                   "first step (one for all seeds) where the mean over seeds of the full training loss, read every "
                   "step, is ≤ the level (below 10,000 steps, else refused); from each, one S(B) sweep to "
                   "--branch-to × the training loss there, and a table of B_crit(t), S_min(t) and B_simple(t), "
                   "B_noise(t). Also with --model FILE.py:NAME. A sweep per checkpoint: --out FILE.parquet writes "
                   "FILE-step100.parquet, … (a folder: one file per sweep in it). E.g. --branch-at 0,100,1000 or "
                   "--branch-at loss:1.5,1,0.5")
@click.option("--branch-batch", default=None, help="With --branch-at: the reference run's batch. Default 32. "
                                                   "E.g. --branch-batch 64")
@click.option("--branch-lr", default=None, help="With --branch-at: the reference run's SGD step. Default 0.1. "
                                                "E.g. --branch-lr 0.3")
@click.option("--branch-to", default=None,
              help="With --branch-at: the milestone, a fraction r of the mean training loss at the checkpoint "
                   "(0 < r < 1). Default 0.5. E.g. --branch-to 0.7")
@click.option("--trace-examples", default=None,
              help="With --branch-at: B_noise's tr(HΣ) at each checkpoint from this many training examples drawn "
                   "per seed (one full-data HVP each) instead of all of them, with its standard error; for nets "
                   "whose exact trace is slow (the width-32 CNN: about 2.5 min per seed and checkpoint). E.g. "
                   "--trace-examples 256")
@click.option("--batch-schedule", default=None,
              help="A batch schedule against the constant batches of --batch: phases B@r (train at B until the "
                   "training loss is r × the mean loss at the start; r falling; the last r is the final target), "
                   "each phase from where the one before left every seed, (lr, β) chosen per phase and per batch; "
                   "or doubling:B0..B1@r (B0, 2·B0, …, B1, milestones evenly spaced in log loss down to r). A "
                   "table of steps and examples to the final target with CIs. A sweep per run: --out FILE.parquet "
                   "writes FILE-constant.parquet, FILE-phase1.parquet, … (a folder: one file per sweep in it). "
                   "E.g. --batch-schedule "
                   "16@0.26,32@0.04 or --batch-schedule doubling:16..64@0.04")
@common_sweep_options(default_seeds=NET_SEEDS)
def sweep_net(batch, width, depth, model, heads, activation, architecture, init, data, examples, stream, regime, loss, method,
              target,
              beta, schedule, max_iters, lr, lr_grid, lr_extend, predict, branch_at, branch_batch, branch_lr, branch_to,
              trace_examples, batch_schedule, seeds, seed, x64, out, as_json, no_plot, pdf, yes, chunk_seconds):
    """Steps to a training-loss target of a small real net against batch size, width or depth.

    \b
    With no options: digits, an MLP of width 32 (one hidden relu layer, 2,410 parameters), SGD with its lr tuned
    per B over 1e-3..10, B = 8..1024, 5 seeds, target loss 0.1, and the NQM's predicted critical batch.

    \b
    Examples:
      otod sweep net
      otod sweep net --width 8..128:5:log --batch 8..1024:8:log
      otod sweep net --depth 2..10:5 --architecture plain,residual --init kaiming,orthogonal,small --batch 64
      otod sweep net --data teacher --method sgd,adam --target 0.02
      otod sweep net --model my_model.py:problem --batch 8..256:6:log --target 0.05
      otod sweep net --data teacher --examples 256,512,1024 --batch 8..256:6:log --no-predict
      otod sweep net --data teacher --stream --target 0.05,0.03,0.02 --batch 8..256:6:log
      otod sweep net --data teacher --regime stream --examples 256..16384:4:log --width 4..64:4:log
      otod sweep net --model transformer --data sequence --depth 1 --regime stream --examples 256,1024,4096 --width 8,16,32
      otod sweep net --branch-at 0,30,100,300,1000,3000
      otod sweep net --batch-schedule 16@0.26,32@0.0392
      otod sweep net --data teacher --batch-schedule 8@0.066,16@0.038
      otod sweep net --branch-at loss:1,0.5,0.25 --batch 8..256:6:log
      otod sweep net --model otod.nets.model.zoo:transformer --branch-at 0,100,300,1000 --batch 8..256:5:log
    """
    from otod.core.api import given_options, refuse_ignored
    from otod.nets.sweep.options import net_config

    from otod.nets.model.contract import is_reference

    given = given_options()
    if branch_at is None:
        for name in ("branch_batch", "branch_lr", "branch_to"):
            refuse_ignored(given, name, "sets the reference run of --branch-at; give --branch-at too, e.g. "
                                        "--branch-at 0,100,1000")
        refuse_ignored(given, "trace_examples", "sets how B_noise is measured at the checkpoints of --branch-at; "
                                                "give --branch-at too, e.g. --branch-at 0,100,1000")
    else:
        from otod.nets.along.branching import parse_branching, refuse_beside_branch

        refuse_beside_branch(given)
        branching = parse_branching(branch_at, branch_batch, branch_lr, branch_to)
        if trace_examples is not None:  # its form before the net is built; its bound (the examples) after
            from otod.nets.measure.noise_scale import trace_examples_option

            trace_examples_option(trace_examples, 2 ** 62)
    if batch_schedule is not None:
        from otod.nets.schedule.batch_schedule import parse_schedule, refuse_beside_schedule

        refuse_beside_schedule(given, model)
        parsed_schedule = parse_schedule(batch_schedule)
    if is_reference(model):
        from otod.nets.contract_cli import NET_OPTIONS

        for name in NET_OPTIONS:
            if name != "examples":  # the first N of the model's own examples
                refuse_ignored(given, name, f"describes otod's own nets; --model {model} defines its own network "
                                            "and data, drop it")
    if model == "transformer":
        refuse_ignored(given, "activation", "the MLP's nonlinearity; the transformer's MLP has its GELU, drop it")
    if branch_at is not None or batch_schedule is not None:
        refuse_ignored(given, "lr_extend", "brackets the lr of one net sweep; --branch-at and --batch-schedule run "
                                           "sweeps of their own over --lr-grid as given; drop --lr-extend or widen "
                                           "--lr-grid")
    if lr != "tuned":
        refuse_ignored(given, "lr_grid", f"the steps --lr tuned tries; --lr {lr} runs one step; drop --lr-grid or use "
                                         "--lr tuned")
    config = net_config(batch=batch, width=width, depth=depth, init=init, architecture=architecture, model=model,
                        activation=activation, data=data, examples=examples, loss=loss, method=method, target=target,
                        beta=beta, schedule=schedule, max_iters=max_iters, seeds=seeds, seed=seed, lr=lr,
                        lr_grid=lr_grid, x64=x64, chunk_seconds=chunk_seconds, stream=stream, regime=regime,
                        heads=heads)
    if batch_schedule is not None:
        from otod.nets.schedule.batch_schedule import echo_schedule

        echo_schedule(config, parsed_schedule, out=out, plot=not no_plot, yes=yes, pdf=pdf, as_json=as_json)
        return
    if branch_at is not None:
        from otod.nets.along.branching import echo_along

        from otod.nets.along.branching import trace_examples_of

        echo_along(config, branching, out=out, plot=not no_plot, yes=yes, pdf=pdf, as_json=as_json,
                   nqm=bool(predict and "predict" in given), trace_examples=trace_examples_of(trace_examples, config))
        return
    if regime is not None and predict:  # --no-predict asks for what these sweeps do anyway: accepted
        refuse_ignored(given, "predict", "the NQM predicts steps to a training-loss target; --regime stops at a "
                                         "held-out one; drop --predict")
        predict = False
    if stream and predict:
        refuse_ignored(given, "predict", "the NQM predicts S(B) on a finite training set; --stream has none; drop "
                                         "--predict")
        predict = False
    if "batch" not in dict(config.axes) and predict:
        refuse_ignored(given, "predict", "the NQM predicts S(B), the steps against batch size; this sweep has no "
                                         "batch axis (give several --batch values, e.g. --batch 8..1024:8:log)")
    _echo_sweep(config, given, lr_extend, predict, out=out, plot=not no_plot, yes=yes, pdf=pdf, as_json=as_json)


def _echo_sweep(config, given, lr_extend, predict: bool, *, out, plot: bool, yes: bool, pdf: bool,
                as_json: bool) -> None:
    """Run one net sweep through the core pipeline and print its report; ``--lr-extend`` (``lr_extend``, as typed)
    steps its rate's bracket (`otod.core.bracket`), 0 where not given: the grid as given."""
    from otod.core.api import echo_report, lr_extend_option, sweep
    from otod.nets.sweep.predict import run_meta

    steps = lr_extend_option(given, lr_extend, config)
    with rounds_in_the_sweeps_programs(config) if steps else contextlib.nullcontext():
        report = sweep(config, out_dir=out, plot=plot, progress=terminal_progress(), yes=yes, pdf=pdf,
                       extra_meta=run_meta(config, predict), lr_extend=0 if steps is None else steps)
    echo_report(report, as_json)


@contextlib.contextmanager
def rounds_in_the_sweeps_programs(config):
    """Inside, a bracket's rounds (`otod.core.bracket`: small sweeps of one rate each, over some of the sweep's
    batches) run each static point in the one program of its group of the sweep (`otod.core.variants.sharing`),
    so the rounds of one method and rate compile one program between them where each compiled its own
    (tests/nets/sweep/test_bracket.py's two rounds: two programs became one, ~3 CPU-s, the records bit for bit the
    same). Only otod's MLP and CNN, whose `otod.core.variants.Variants` programs give one program per batch's
    records bit for bit (tests/nets/sweep/test_programs.py); the transformer's keep its losses to a few ulps, and a
    round's records stay those it had."""
    from otod.core.api import program_groups, sharing

    specs = config.specs()
    with contextlib.ExitStack() as stack:
        if config.problem.kind == "net" and config.problem.model in ("mlp", "cnn"):
            for group in dict.fromkeys(program_groups(config.static_points(), specs)):
                if len(group) >= 2:
                    stack.enter_context(sharing([specs[i] for i in group]))
        yield


def commands() -> dict[str, list]:
    """This obstacle's commands by group ('' for top-level ones)."""
    from otod.nets.curvature_cli import curvature_command

    return {"sweep": [sweep_net], "": [curvature_command]}


__all__ = ["commands", "sweep_net", "user_errors"]
