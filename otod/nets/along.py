"""The critical batch along training, by branching (Merrill et al. 2025): ``otod sweep net --branch-at 0,100,1000``
(or ``--branch-at loss:0.5,0.25,0.1``: checkpoints where the mean training loss falls to each level,
`otod.nets.branch_levels`) and ``otod.critical_batch_along_training(steps=…)`` (or ``losses=…``), for otod's nets and
a user's model (``--model FILE.py:NAME``) alike.

For each checkpoint step t: every seed's start becomes its checkpoint after t steps of its reference run (plain
SGD at (B_ref, η_ref) from the seed's own start, `otod.nets.branch`), and an ordinary net S(B) sweep runs from
there through the core engine, with (lr, β) chosen per batch by the core's rule (the median over seeds), to the
milestone

    target(t) = r · L̄(t),   L̄(t) = the mean over the sweep's seeds of the full training loss at the checkpoint,

a fixed fractional decrease (r = 0.5 by default: halve the training loss). S(B) = S_min(1 + B_crit/B) is fitted per
checkpoint with the seed bootstrap that re-chooses (lr, β) in every resample (`otod.core.critical_batch`), giving
B_crit(t) and S_min(t) with their 95% CIs. One results file per checkpoint (its config holds the branch and the
milestone; its records a ``checkpoint`` column), so each reads back with ``otod fit`` and ``otod plot``.

Beside each measurement, the cheap predictors at the same checkpoint (McCandlish et al. 2018): the exact
B_simple = tr Σ/|G|² and B_noise = tr(HΣ)/GᵀHG over the whole training set (`otod.nets.noise_scale`), at every
seed's checkpoint (median over seeds), and their ratio to the measured B_crit(t), whose CI is the measurement's
(predictor median / B_crit's CI ends).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from otod.core.errors import OtodError

#: The reference run's batch and step (those of ``otod noise-scale --model mlp``), and the milestone's fraction r.
BRANCH_BATCH, BRANCH_LR, BRANCH_TO = 32, 0.1, 0.5
#: The most checkpoints one command branches from (each is a whole S(B) sweep).
MAX_CHECKPOINTS = 32


@dataclass(frozen=True)
class Branching:
    """Where to branch and to what: ``steps`` (checkpoint steps of the reference run, sorted), the reference run's
    ``batch`` B_ref and ``lr`` η_ref, and the milestone's ``fraction`` r (target = r · L̄(t)); or ``losses``, loss
    levels (sorted from the highest) whose steps `otod.nets.branch_levels.resolve_levels` finds, then holding them
    in ``steps`` and the (level, step) pairs in ``reached``."""

    steps: tuple[int, ...]
    batch: int = BRANCH_BATCH
    lr: float = BRANCH_LR
    fraction: float = BRANCH_TO
    losses: tuple[float, ...] = ()
    reached: tuple[tuple[float, int], ...] = ()


def parse_branching(at, batch=None, lr=None, to=None) -> Branching:
    """``--branch-at`` (a comma list of whole steps ≥ 0, or ``loss:`` and a comma list of loss levels > 0),
    ``--branch-batch``, ``--branch-lr`` and ``--branch-to`` as typed (None: the default), each refused in one
    line."""
    from otod.core.options import finite_float, positive_int

    text = str(at).strip()
    if text.startswith("loss:"):
        steps, losses = (), parse_levels(text[5:])
    else:
        steps, losses = parse_steps(text), ()
    rate = BRANCH_LR if lr is None else finite_float(lr, "--branch-lr", "0.1")
    if not rate > 0:
        raise OtodError(f"--branch-lr {lr}: the reference run's step must be positive, e.g. --branch-lr 0.1")
    fraction = BRANCH_TO if to is None else finite_float(to, "--branch-to", "0.5")
    if not 0 < fraction < 1:
        raise OtodError(f"--branch-to {to}: the milestone is a fraction r of the loss at the checkpoint, 0 < r < 1, "
                        "e.g. --branch-to 0.5")
    size = BRANCH_BATCH if batch is None else positive_int(batch, "--branch-batch", "32")
    return Branching(steps, size, float(rate), float(fraction), losses)


def parse_levels(text: str) -> tuple[float, ...]:
    """``--branch-at loss:…``'s levels: finite numbers > 0, distinct, at most `MAX_CHECKPOINTS`, sorted from the
    highest (the order training reaches them)."""
    items = [p.strip() for p in text.split(",")]
    if not any(items) or not all(items):
        raise OtodError(f"--branch-at loss:{text}: a comma list of training-loss levels > 0 after loss:, e.g. "
                        "--branch-at loss:0.5,0.25,0.1")
    levels = []
    for item in items:
        try:
            value = float(item)
        except ValueError:
            raise OtodError(f"--branch-at loss:{item}: not a loss level; give numbers > 0, e.g. --branch-at "
                            "loss:0.5,0.25,0.1") from None
        if not (math.isfinite(value) and value > 0):
            raise OtodError(f"--branch-at loss:{item}: a loss level must be a finite number > 0, e.g. --branch-at "
                            "loss:0.5,0.25,0.1")
        levels.append(value)
    levels = sorted(set(levels), reverse=True)
    if len(levels) > MAX_CHECKPOINTS:
        raise OtodError(f"--branch-at: {len(levels)} loss levels, each a whole S(B) sweep; give at most "
                        f"{MAX_CHECKPOINTS}, e.g. --branch-at loss:0.5,0.25,0.1")
    return tuple(levels)


def parse_steps(at: str) -> tuple[int, ...]:
    """``--branch-at``'s steps: whole numbers from 0 to 10⁹, sorted and distinct, at most `MAX_CHECKPOINTS`."""
    items = [p.strip() for p in str(at).split(",")]
    if not any(items) or not all(items):
        raise OtodError(f"--branch-at {at}: a comma list of step counts ≥ 0 (or loss: and loss levels), e.g. "
                        "--branch-at 0,100,1000 or --branch-at loss:0.5,0.25,0.1")
    steps = []
    for item in items:
        try:
            value = float(item)
        except ValueError:
            raise OtodError(f"--branch-at {item}: not a step count; give whole steps ≥ 0, e.g. --branch-at "
                            "0,100,1000") from None
        if not (math.isfinite(value) and value >= 0 and value.is_integer() and value <= 1e9):
            raise OtodError(f"--branch-at {item}: need whole steps from 0 to 10⁹, e.g. --branch-at 0,100,1000")
        steps.append(int(value))
    steps = sorted(set(steps))
    if len(steps) > MAX_CHECKPOINTS:
        raise OtodError(f"--branch-at: {len(steps)} checkpoints, each a whole S(B) sweep; give at most "
                        f"{MAX_CHECKPOINTS}, e.g. --branch-at 0,100,1000")
    return tuple(steps)


def check_branchable(config) -> None:
    """Refuse a sweep a branch cannot run from: a net or a user's model on a finite training set, with batch as
    its only axis besides β (a checkpoint is one net's weights), at least 3 batches for the fit."""
    spec = config.problem
    if spec.stream:
        raise OtodError("--branch-at: branches from checkpoints of a finite training set; drop --stream")
    others = [name for name, _ in config.axes if name not in ("batch", "beta")]
    if others:
        name = others[0]
        axis = config.kind.axis(name)
        first = config.values(name)[0]
        example = axis.labels[int(first)] if axis.labels else f"{first:g}"
        raise OtodError(f"--branch-at: a checkpoint is one net's weights; give one value of --{name} (it has "
                        f"{len(config.values(name))}), e.g. --{name} {example}")
    if len(dict(config.axes).get("batch", ())) < 3:
        raise OtodError("--branch-at: fits S(B) at each checkpoint; give at least 3 batch sizes, e.g. --batch "
                        "8..1024:8:log")


def refuse_beside_branch(given) -> None:
    """Refuse, with ``--branch-at``, what it replaces or cannot branch from: ``--target`` (the milestone is the
    target), ``--stream`` and ``--predict`` (the NQM's prediction is built at the start, not at a checkpoint)."""
    from otod.core.options import refuse_ignored

    refuse_ignored(given, "target", "with --branch-at each branch runs to its milestone, --branch-to × the "
                                    "training loss at the checkpoint; drop --target or use --branch-to, e.g. "
                                    "--branch-to 0.5")
    refuse_ignored(given, "stream", "--branch-at branches from checkpoints of a finite training set; drop --stream")
    refuse_ignored(given, "predict", "the NQM's prediction is built at the start, not at a checkpoint; with "
                                     "--branch-at the table gives B_simple and B_noise at each checkpoint instead")


def echo_along(config, branching: Branching, *, out, plot: bool, yes: bool, pdf: bool, as_json: bool) -> None:
    """``otod sweep net --branch-at``: run `run_along`, print a line per checkpoint as it finishes (its results
    file and figure) and then the table; with ``as_json`` the table's rows as JSON on stdout (NaN as null) and
    the text on stderr."""
    import json

    import click

    from otod.core.cli import terminal_progress

    result = run_along(config, branching, out=out, plot=plot, progress=terminal_progress(), yes=yes, pdf=pdf,
                       echo=lambda text: click.echo(text, err=as_json))
    if not as_json:
        click.echo("\n" + result.report)
        return
    click.echo(result.report, err=True)
    rows = [{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.items()}
            for r in result.rows()]
    click.echo(json.dumps(rows))


def refuse_long_reference(config, branching: Branching, yes: bool) -> None:
    """Refuse, before any step is taken, reference runs estimated above an hour (`otod.core.preflight.refuse_time`:
    every seed's run to the last checkpoint, `otod.nets.branch.reference_seconds`), unless ``yes``; a reference
    batch larger than the training set is refused here too (`otod.nets.branch.check_branch`)."""
    from otod.core.preflight import refuse_time
    from otod.nets.branch import reference_seconds

    last = max(branching.steps)
    spec = dataclasses.replace(config.problem, branch_step=last, branch_batch=int(branching.batch),
                               branch_lr=float(branching.lr))
    refuse_time(config.seeds * reference_seconds(spec, last), yes, f"--branch-at {last}: training the "
                f"{config.seeds} seeds' reference runs", "use earlier checkpoints or fewer --seeds")


def branch_config(config, branching: Branching, step: int):
    """(The sweep at checkpoint ``step``: ``config`` with every seed starting from its checkpoint and the target
    the milestone r · L̄(t), the checkpoint's losses per seed)."""
    from otod.core.stopping import Target

    spec = dataclasses.replace(config.problem, branch_step=int(step), branch_batch=int(branching.batch),
                               branch_lr=float(branching.lr))
    from otod.nets.branch import checkpoint_losses

    losses = checkpoint_losses(spec, config.seed, config.seeds)
    if not all(math.isfinite(v) for v in losses):
        raise OtodError(f"--branch-at {step}: the reference run (SGD at B = {branching.batch}, lr "
                        f"{branching.lr:g}) diverged before step {step} (training loss {max(losses)}); use a "
                        "smaller --branch-lr")
    target = milestone(losses, branching.fraction)
    tuned = dataclasses.replace(config, problem=spec, target=Target(tol=target, kind="absolute", check_every=1))
    return tuned, losses


def milestone(losses, fraction: float) -> float:
    """The branch's target: r · the mean over seeds of the training loss at the checkpoint."""
    return float(fraction * np.mean(np.asarray(losses, float)))


@dataclass(frozen=True)
class Checkpoint:
    """One checkpoint's measurement: its ``step``, the training ``loss`` there (mean over seeds; ``losses`` per
    seed), the ``milestone``, a `otod.nets.batch_api.CriticalBatchPoint` per method, the results file, and the
    predictors at the checkpoint per seed (``b_simple_seeds``, ``b_noise_seeds``; empty where not measured) and
    their medians over seeds (``b_simple``, ``b_noise``; NaN where not measured)."""

    step: int
    loss: float
    losses: tuple[float, ...]
    milestone: float
    points: tuple
    path: str | None
    b_simple_seeds: tuple[float, ...] = ()
    b_noise_seeds: tuple[float, ...] = ()

    @property
    def b_simple(self) -> float:
        return float(np.median(self.b_simple_seeds)) if self.b_simple_seeds else math.nan

    @property
    def b_noise(self) -> float:
        return float(np.median(self.b_noise_seeds)) if self.b_noise_seeds else math.nan


@dataclass(frozen=True)
class AlongTrainingResult:
    """`otod.critical_batch_along_training`'s result: ``checkpoints`` (a `Checkpoint` per step), the
    ``branching``, the sweep's ``config`` (the first checkpoint's, as stored), ``report`` (the printed table),
    ``to_pandas()`` (one row per checkpoint and method)."""

    checkpoints: tuple[Checkpoint, ...]
    branching: Branching
    config: dict
    report: str

    def rows(self) -> list[dict]:
        out = []
        for c in self.checkpoints:
            for p in c.points:
                out.append({"step": c.step, "loss": c.loss, "milestone": c.milestone, "method": p.method,
                            "b_crit": p.b_crit, "b_crit_lo": p.b_crit_ci[0], "b_crit_hi": p.b_crit_ci[1],
                            "s_min": p.s_min, "s_min_lo": p.s_min_ci[0], "s_min_hi": p.s_min_ci[1],
                            "misfit": p.misfit, "b_simple": c.b_simple, "b_noise": c.b_noise,
                            **spread("b_simple", c.b_simple_seeds), **spread("b_noise", c.b_noise_seeds),
                            "b_simple_ratio": c.b_simple / p.b_crit if p.b_crit > 0 else math.nan,
                            "b_noise_ratio": c.b_noise / p.b_crit if p.b_crit > 0 else math.nan, "path": c.path})
        return out

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame(self.rows())


def spread(name: str, values) -> dict:
    """A predictor's least and largest value over seeds (NaN where not measured)."""
    values = np.asarray(values, float)
    return {f"{name}_min": float(values.min()) if values.size else math.nan,
            f"{name}_max": float(values.max()) if values.size else math.nan}


def predictors(spec, seed: int, seeds: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(B_simple per seed, B_noise per seed): the exact noise scales at each seed's start (a branched spec's: its
    checkpoint), over the whole training set in float64 (`otod.nets.noise_scale.gradient_moments`)."""
    import jax

    from otod.nets.noise_scale import gradient_moments

    simple, noise, problem = [], [], None
    for s in range(seeds):
        params = start_of_seed(spec, seed, s)
        with jax.enable_x64(True):
            problem = noise_problem(spec, params) if problem is None else problem.at(params)
            moments = gradient_moments(problem)
        simple.append(moments["b_simple"])
        noise.append(moments["b_noise"])
    return tuple(float(v) for v in simple), tuple(float(v) for v in noise)


def noise_problem(spec, params):
    """`otod.nets.noise_scale.Problem` of a net, or of a user's model (`Problem.of_model`), at ``params``."""
    from otod.nets.noise_scale import Problem

    return Problem.of_model(spec.loaded()).at(params) if spec.kind == "model" else Problem(spec, params)


def start_of_seed(spec, seed: int, s: int):
    """Seed s's start as the engine draws it (a branched spec's: its checkpoint)."""
    from otod.nets.branch import start_params
    from otod.nets.branch_levels import seed_start

    rng = np.random.default_rng([seed, s])
    return start_params(spec, rng) if spec.branched else seed_start(spec, rng)[0]


def run_along(config, branching: Branching, *, out="results", plot: bool = False, progress=None, yes: bool = False,
              pdf: bool = False, measure_predictors: bool = True, echo=None) -> AlongTrainingResult:
    """One S(B) sweep per checkpoint of ``branching`` (module docstring), each through the core pipeline
    (`otod.core.pipeline.sweep`: resumed or read back like any sweep); ``echo(text)``, where given, after each
    checkpoint's sweep (its results line)."""
    from otod.core.config import read_config
    from otod.core.pipeline import sweep
    from otod.nets.batch_api import reading

    check_branchable(config)
    if branching.losses:  # loss levels to steps, refused in one line where one is not reached
        from otod.nets.branch_levels import resolve_levels

        branching = resolve_levels(config, branching, yes)
    refuse_long_reference(config, branching, yes)
    checkpoints, stored = [], None
    branches = [(step, *branch_config(config, branching, step)) for step in branching.steps]  # refused before a sweep
    for step, tuned, losses in branches:
        levels = [level for level, t in branching.reached if t == step]
        meta = {"branch": {"step": int(step), "losses": list(losses), "loss": float(np.mean(losses)),
                           "fraction": branching.fraction, "milestone": tuned.target.tol,
                           "reference_batch": branching.batch, "reference_lr": branching.lr,
                           **({"levels": levels} if levels else {})}}
        report = sweep(tuned, out_dir=out, plot=plot, progress=progress, yes=yes, pdf=pdf, extra_meta=lambda: meta)
        stored = stored or read_config(report.results.meta).to_dict()
        b_simple, b_noise = predictors(tuned.problem, config.seed, config.seeds) if measure_predictors else ((), ())
        path = None if report.results.path is None else str(report.results.path)
        figures = "".join(f"; figure: {f}" for f in report.files[1:])
        checkpoints.append(Checkpoint(int(step), float(np.mean(losses)), tuple(losses), tuned.target.tol,
                                      tuple(reading(s) for s in report.analysis.series), path, b_simple, b_noise))
        if echo is not None:
            from otod.nets.branch_levels import describe_level

            echo(f"checkpoint {step}{describe_level(branching, step)}: training loss {np.mean(losses):.4g} → "
                 f"milestone {tuned.target.tol:.4g}; results: {path}{figures}")
    result = AlongTrainingResult(tuple(checkpoints), branching, stored, "")
    return dataclasses.replace(result, report=table(result, config))


def table(result: AlongTrainingResult, config) -> str:
    """The printed table: per checkpoint and method, step, loss at the checkpoint, milestone, B_crit [CI], S_min
    [CI], the fit's misfit, the predictors (median [least, largest] over seeds) and their medians' ratios to
    B_crit [B_crit's CI]."""
    from otod.core.critical_batch import describe_critical_batch

    b = result.branching
    spec = config.problem
    lines = [f"B_crit along training: {subject(spec)}, {config.seeds} seeds; each seed's reference run: SGD at B = {b.batch}, "
             f"lr {b.lr:g}, from its own start; milestone: {b.fraction:g} × the mean training loss at the checkpoint",
             f"{'step':>7} {'loss':>8} {'milestone':>9}  {'method':<10} {'B_crit [95% CI]':<24} "
             f"{'S_min [95% CI]':<24} {'misfit':>6} {'B_simple [seeds]':<20} {'B_noise [seeds]':<20} "
             f"{'B_simple/B_crit':<20} B_noise/B_crit"]
    for c in result.checkpoints:
        for p in c.points:
            crit = f"{describe_critical_batch(p.b_crit, p.batches)} {interval(p.b_crit_ci)}"
            lines.append(f"{c.step:>7} {c.loss:>8.4g} {c.milestone:>9.4g}  {p.method:<10} {crit:<24} "
                         f"{p.s_min:.4g} {interval(p.s_min_ci):<16} {p.misfit:>6.2f} "
                         f"{predicted(c.b_simple, c.b_simple_seeds):<20} {predicted(c.b_noise, c.b_noise_seeds):<20} "
                         f"{ratio(c.b_simple, p):<20} {ratio(c.b_noise, p)}")
    return "\n".join(lines)


def subject(spec) -> str:
    """What the table measures: a net by its model, width, depth and data, a user's model by its reference."""
    if spec.kind == "model":
        return spec.describe()
    return f"{spec.model} width {spec.width} depth {spec.depth} on {spec.data} (P = {spec.parameter_count:,})"


def predicted(median: float, values) -> str:
    """A predictor's median over seeds and [least, largest] of the seeds' values."""
    if not values:
        return "—"
    return f"{median:.4g} [{min(values):.3g}, {max(values):.3g}]"


def interval(ci) -> str:
    lo, hi = ci
    return "[no CI]" if not (math.isfinite(lo) and math.isfinite(hi)) else f"[{lo:.4g}, {hi:.4g}]"


def ratio(predicted: float, point) -> str:
    """predictor / B_crit with the interval from B_crit's CI (the measurement's uncertainty only); none where
    B_crit lies off the batches measured (an extrapolation, not a measurement)."""
    if not (math.isfinite(predicted) and math.isfinite(point.b_crit) and point.b_crit > 0):
        return "—"
    if not min(point.batches) <= point.b_crit <= max(point.batches):
        return "— (B_crit off the grid)"
    lo, hi = point.b_crit_ci
    ci = f" [{predicted / hi:.3g}, {predicted / lo:.3g}]" if math.isfinite(lo) and lo > 0 and math.isfinite(hi) \
        else ""
    return f"{predicted / point.b_crit:.3g}{ci}"


def critical_batch_along_training(steps=None, *, losses=None, branch_batch: int = BRANCH_BATCH,
                                  branch_lr: float = BRANCH_LR, fraction: float = BRANCH_TO,
                                  predictors: bool = True, out: str | None = "results", progress=None,
                                  **net_options) -> AlongTrainingResult:
    """B_crit(t) and S_min(t) with CIs of one of otod's nets or a user's model (``model="FILE.py:NAME"`` or a
    checked `otod.nets.contract.Model`) at the checkpoints ``steps`` (default 0, 100, 1000) of each seed's reference
    run (SGD at ``branch_batch``, ``branch_lr``), or, with ``losses``, at the first step where the mean over seeds
    of the training loss falls to each level (`otod.nets.branch_levels`), each S(B) sweep to ``fraction`` × the
    training loss there (module docstring); ``net_options``: those of `otod.nets.options.net_config` (batch, width,
    depth, data, model, method, seeds, seed, lr_grid, max_iters, …; no target: the milestone is the target).
    ``out``: the results files' folder (None: a temporary one). Bad input raises `otod.core.errors.OtodError` in
    one line.

    >>> r = otod.critical_batch_along_training((0, 100, 300, 1000), batch="8..256:6:log", seeds=5)
    >>> r.to_pandas()[["step", "b_crit", "b_crit_lo", "b_crit_hi", "b_simple"]]
    >>> otod.critical_batch_along_training(losses=(1.0, 0.5, 0.25), model="otod.nets.zoo:transformer")
    """
    import tempfile

    from otod.nets.options import net_config

    if "target" in net_options:
        raise OtodError("target: the branches' target is the milestone fraction × the loss at the checkpoint; "
                        "use fraction=, e.g. fraction=0.5")
    if steps is not None and losses is not None:
        raise OtodError("steps and losses: give the checkpoints as steps or as loss levels, not both, e.g. "
                        "losses=(0.5, 0.25, 0.1)")
    at = ("loss:" + ",".join(str(v) for v in np.atleast_1d(losses)) if losses is not None else
          ",".join(str(s) for s in np.atleast_1d((0, 100, 1000) if steps is None else steps)))
    branching = parse_branching(at, branch_batch, branch_lr, fraction)
    config = net_config(**{k: _text(k, v) for k, v in net_options.items()})
    with tempfile.TemporaryDirectory() as scratch:
        return run_along(config, branching, out=scratch if out is None else out, progress=progress,
                         measure_predictors=predictors)


#: The net options the Python function takes as numbers or lists and the command as text.
TEXT_OPTIONS = ("batch", "width", "depth", "examples", "method", "beta", "lr_grid", "max_iters", "lr")


def _text(name: str, value):
    """A net option as the command line types it: numbers and lists of ``TEXT_OPTIONS`` become comma text."""
    if name not in TEXT_OPTIONS or value is None or isinstance(value, str):
        return value
    if np.ndim(value) == 0:
        return str(int(value)) if float(value).is_integer() and name != "lr" else repr(float(value))
    return ",".join(str(int(v)) if float(v).is_integer() else repr(float(v)) for v in value)
