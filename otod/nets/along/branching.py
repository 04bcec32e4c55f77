"""The critical batch along training, by branching (Merrill et al. 2025): ``otod sweep net --branch-at 0,100,1000``
(or ``--branch-at loss:0.5,0.25,0.1``: checkpoints where the mean training loss falls to each level,
`otod.nets.along.levels`) and ``otod.critical_batch_along_training(steps=…)`` (or ``losses=…``), for otod's nets and
a user's model (``--model FILE.py:NAME``) alike.

For each checkpoint step t: every seed's start becomes its checkpoint after t steps of its reference run (plain
SGD at (B_ref, η_ref) from the seed's own start, `otod.nets.model.branch`), and an ordinary net S(B) sweep runs from
there through the core engine, with (lr, β) chosen per batch by the core's rule (the median over seeds), to the
milestone

    target(t) = r · L̄(t),   L̄(t) = the mean over the sweep's seeds of the full training loss at the checkpoint,

a fixed fractional decrease (r = 0.5 by default: halve the training loss). S(B) = S_min(1 + B_crit/B) is fitted per
checkpoint with the seed bootstrap that re-chooses (lr, β) in every resample (`otod.core.critical_batch`), giving
B_crit(t) and S_min(t) with their 95% CIs. One results file per checkpoint (its config holds the branch and the
milestone; its records a ``checkpoint`` column), so each reads back with ``otod fit`` and ``otod plot``.

Beside each measurement, the predictors at the same checkpoint, per seed (`otod.nets.along.predictors`): the exact
B_simple = tr Σ/|G|² and B_noise = tr(HΣ)/GᵀHG over the whole training set (McCandlish et al. 2018,
`otod.nets.measure.noise_scale`), the two-batch estimates of B_simple, and, where asked (``nqm``, ``--predict``), the B_crit
of the NQM built at the checkpoint and its ablation (`otod.nets.along.ablation`); each one's median over seeds divided by
the measured B_crit(t), with a CI from the joint seed bootstrap of both, and the best predictor named.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from otod.core.api import OtodError

#: The reference run's batch and step (those of ``otod noise-scale --model mlp``), and the milestone's fraction r.
BRANCH_BATCH, BRANCH_LR, BRANCH_TO = 32, 0.1, 0.5
#: The most checkpoints one command branches from (each is a whole S(B) sweep).
MAX_CHECKPOINTS = 32


@dataclass(frozen=True)
class Branching:
    """Where to branch and to what: ``steps`` (checkpoint steps of the reference run, sorted), the reference run's
    ``batch`` B_ref and ``lr`` η_ref, and the milestone's ``fraction`` r (target = r · L̄(t)); or ``losses``, loss
    levels (sorted from the highest) whose steps `otod.nets.along.levels.resolve_levels` finds, then holding them
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
    from otod.core.api import finite_float, positive_int

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
    example = "e.g. --branch-at loss:0.5,0.25,0.1"
    values = comma_numbers(
        text, f"--branch-at loss:{text}: a comma list of training-loss levels > 0 after loss:, {example}",
        lambda item: f"--branch-at loss:{item}: not a loss level; give numbers > 0, {example}",
        lambda item: f"--branch-at loss:{item}: a loss level must be a finite number > 0, {example}",
        lambda v: math.isfinite(v) and v > 0)
    return at_most(sorted(set(values), reverse=True), "loss levels", example)


def parse_steps(at: str) -> tuple[int, ...]:
    """``--branch-at``'s steps: whole numbers from 0 to 10⁹, increasing as typed (``100,30`` was re-sorted without a
    word: refused), at most `MAX_CHECKPOINTS`."""
    example = "e.g. --branch-at 0,100,1000"
    values = comma_numbers(
        str(at), f"--branch-at {at}: a comma list of step counts ≥ 0 (or loss: and loss levels), {example} or "
                 "--branch-at loss:0.5,0.25,0.1",
        lambda item: f"--branch-at {item}: not a step count; give whole steps ≥ 0, {example}",
        lambda item: f"--branch-at {item}: need whole steps from 0 to 10⁹, {example}",
        lambda v: math.isfinite(v) and v >= 0 and v.is_integer() and v <= 1e9)
    steps = [int(v) for v in values]
    if any(b <= a for a, b in zip(steps, steps[1:])):
        raise OtodError(f"--branch-at {at}: give the checkpoints in increasing order, each once (the table's rows "
                        f"follow them), e.g. --branch-at {','.join(str(v) for v in sorted(set(steps)))}")
    return at_most(steps, "checkpoints", example)


def comma_numbers(text: str, malformed: str, not_a_number, out_of_range, valid) -> list[float]:
    """The comma list ``text`` as numbers, refused in one line: ``malformed`` where it or an item is empty,
    ``not_a_number(item)`` where an item is not a number, ``out_of_range(item)`` where ``valid(value)`` is false."""
    items = [p.strip() for p in text.split(",")]
    if not any(items) or not all(items):
        raise OtodError(malformed)
    values = []
    for item in items:
        try:
            value = float(item)
        except ValueError:
            raise OtodError(not_a_number(item)) from None
        if not valid(value):
            raise OtodError(out_of_range(item))
        values.append(value)
    return values


def at_most(values: list, what: str, example: str) -> tuple:
    """``values`` as a tuple, refused in one line beyond `MAX_CHECKPOINTS` (each is a whole S(B) sweep)."""
    if len(values) > MAX_CHECKPOINTS:
        raise OtodError(f"--branch-at: {len(values)} {what}, each a whole S(B) sweep; give at most "
                        f"{MAX_CHECKPOINTS}, {example}")
    return tuple(values)


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


def trace_examples_of(value, config) -> int | None:
    """``--trace-examples`` with ``--branch-at``: from 2 to the training examples of ``config``'s net or model
    (`otod.nets.measure.noise_scale.trace_examples_option`; None: all, exact)."""
    from otod.nets.measure.noise_scale import trace_examples_option
    from otod.nets.sweep.predict import examples_of

    return trace_examples_option(value, examples_of(config.problem))


def refuse_beside_branch(given) -> None:
    """Refuse, with ``--branch-at``, what it replaces or cannot branch from: ``--target`` (the milestone is the
    target) and ``--stream`` (``--predict`` builds the NQM at every checkpoint: `check_nqm`)."""
    from otod.core.api import refuse_ignored

    refuse_ignored(given, "target", "with --branch-at each branch runs to its milestone, --branch-to × the "
                                    "training loss at the checkpoint; drop --target or use --branch-to, e.g. "
                                    "--branch-to 0.5")
    refuse_ignored(given, "stream", "--branch-at branches from checkpoints of a finite training set; drop --stream")


def echo_along(config, branching: Branching, *, out, plot: bool, yes: bool, pdf: bool, as_json: bool,
               nqm: bool = False, trace_examples: int | None = None) -> None:
    """``otod sweep net --branch-at``: run `run_along` (``nqm``: ``--predict`` given, the NQM at every checkpoint),
    print a line per checkpoint as it finishes (its results file and figure) and then the tables; with ``as_json``
    the table's rows as JSON on stdout (NaN as null) and the text on stderr."""
    import json

    import click

    from otod.core.api import terminal_progress

    result = run_along(config, branching, out=out, plot=plot, progress=terminal_progress(), yes=yes, pdf=pdf,
                       nqm=nqm, trace_examples=trace_examples, echo=lambda text: click.echo(text, err=as_json))
    if not as_json:
        click.echo("\n" + result.report)
        return
    click.echo(result.report, err=True)
    rows = [{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.items()}
            for r in result.rows()]
    click.echo(json.dumps(rows))


def refuse_long_reference(config, branching: Branching, yes: bool) -> None:
    """Refuse, before any step is taken, a checkpoint past the iteration cap (``--max-iters``) and reference runs
    estimated above an hour (`otod.core.preflight.refuse_time`: every seed's run to the last checkpoint,
    `otod.nets.model.branch.reference_seconds`), unless ``yes``; a reference batch larger than the training set is
    refused here too (`otod.nets.model.branch.check_branch`)."""
    from otod.core.api import refuse_time
    from otod.nets.model.branch import reference_seconds

    last = max(branching.steps)
    cap = config.resolved_max_iters
    if last > cap:
        raise OtodError(f"--branch-at {last}: past the iteration cap {cap} (--max-iters), so the reference run would "
                        f"train beyond any sweep's cap; give checkpoints ≤ {cap}, e.g. --branch-at 0,{cap}, or "
                        "raise --max-iters")
    spec = dataclasses.replace(config.problem, branch_step=last, branch_batch=int(branching.batch),
                               branch_lr=float(branching.lr))
    refuse_time(config.seeds * reference_seconds(spec, last), yes, f"--branch-at {last}: training the "
                f"{config.seeds} seeds' reference runs", "use earlier checkpoints or fewer --seeds")


def branch_config(config, branching: Branching, step: int):
    """(The sweep at checkpoint ``step``: ``config`` with every seed starting from its checkpoint and the target
    the milestone r · L̄(t), the checkpoint's losses per seed)."""
    from otod.core.api import Target

    spec = dataclasses.replace(config.problem, branch_step=int(step), branch_batch=int(branching.batch),
                               branch_lr=float(branching.lr))
    from otod.nets.model.branch import checkpoint_losses

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
    seed), the ``milestone``, a `otod.nets.sweep.reading.CriticalBatchPoint` per method, the results file, and the
    predictors at the checkpoint per seed (``b_simple_seeds``, ``b_noise_seeds``; ``extra``: the two-batch
    estimates, the NQM's and its ablation's, name → per-seed values; empty where not measured) and their medians
    over seeds (``b_simple``, ``b_noise``; NaN where not measured); ``ratio_cis``: per method, per predictor, the
    95% CI of its ratio to B_crit by the joint seed bootstrap (`otod.nets.along.predictors`)."""

    step: int
    loss: float
    losses: tuple[float, ...]
    milestone: float
    points: tuple
    path: str | None
    b_simple_seeds: tuple[float, ...] = ()
    b_noise_seeds: tuple[float, ...] = ()
    extra: dict = field(default_factory=dict)
    ratio_cis: dict = field(default_factory=dict)

    @property
    def b_simple(self) -> float:
        return median_of(self.b_simple_seeds)

    @property
    def b_noise(self) -> float:
        return median_of(self.b_noise_seeds)

    def values(self) -> dict[str, tuple[float, ...]]:
        """Every predictor measured here, name → per-seed values (`otod.nets.along.predictors.LABELS` order)."""
        from otod.nets.along.predictors import names

        found = {"b_simple": self.b_simple_seeds, "b_noise": self.b_noise_seeds, **self.extra}
        found = {k: tuple(v) for k, v in found.items() if len(v)}
        return {k: found[k] for k in names(found)}


def median_of(values) -> float:
    """The median of the finite values (NaN where none)."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    return float(np.median(v)) if v.size else math.nan


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
        """One row per checkpoint and method: the measurement, and per predictor its median over seeds, least and
        largest seed (``_min``, ``_max``), ratio to B_crit (``_ratio``, NaN where B_crit lies off the batches
        measured) and that ratio's joint 95% CI (``_ratio_lo``, ``_ratio_hi``; NaN with the ratio);
        ``best_predictor`` and ``best_factor`` (its typical miss, `otod.nets.along.predictors.ranking`) of the method over
        the checkpoints."""
        out = []
        best = self.best()
        for c in self.checkpoints:
            for p in c.points:
                row = {"step": c.step, "loss": c.loss, "milestone": c.milestone, "method": p.method,
                       "b_crit": p.b_crit, "b_crit_lo": p.b_crit_ci[0], "b_crit_hi": p.b_crit_ci[1],
                       "s_min": p.s_min, "s_min_lo": p.s_min_ci[0], "s_min_hi": p.s_min_ci[1], "misfit": p.misfit}
                cis = c.ratio_cis.get(p.method, {})
                for name in ("b_simple", "b_noise", *c.values()):
                    values = c.values().get(name, ())
                    median = median_of(values)
                    r = ratio_value(median, p)
                    lo, hi = cis.get(name, (math.nan, math.nan)) if math.isfinite(r) else (math.nan, math.nan)
                    row.update({name: median, **spread(name, values), f"{name}_ratio": r,
                                f"{name}_ratio_lo": lo, f"{name}_ratio_hi": hi})
                top = best.get(p.method, [])
                row.update(best_predictor=top[0]["predictor"] if top else None,
                           best_factor=top[0]["factor"] if top else math.nan, path=c.path)
                out.append(row)
        return out

    def best(self) -> dict[str, list[dict]]:
        """Per method, the predictors ranked best first over the checkpoints (`otod.nets.along.predictors.ranking`); the
        NQM ablation's variants (``ablation_*``) and standard errors (``se_*``) are diagnostics, not predictors,
        and are left out (`otod.nets.along.predictors.is_predictor`)."""
        from otod.nets.along.predictors import is_predictor, ranking

        ratios: dict[str, dict[str, list[float]]] = {}
        for c in self.checkpoints:
            for p in c.points:
                for name, values in c.values().items():
                    if not is_predictor(name):
                        continue
                    ratios.setdefault(p.method, {}).setdefault(name, []).append(ratio_value(median_of(values), p))
        return {method: ranking(r) for method, r in ratios.items()}

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame(self.rows())


def ratio_value(predicted: float, point) -> float:
    """predictor / B_crit, NaN where B_crit lies off the batches measured (an extrapolation) or is not positive."""
    if not (math.isfinite(predicted) and math.isfinite(point.b_crit) and point.b_crit > 0):
        return math.nan
    return predicted / point.b_crit if min(point.batches) <= point.b_crit <= max(point.batches) else math.nan


def spread(name: str, values) -> dict:
    """A predictor's least and largest finite value over seeds (NaN where none)."""
    values = np.asarray(values, float)
    values = values[np.isfinite(values)]
    return {f"{name}_min": float(values.min()) if values.size else math.nan,
            f"{name}_max": float(values.max()) if values.size else math.nan}


def check_nqm(config) -> None:
    """Refuse, before any sweep, the NQM at checkpoints of a user's model (its ablation draws otod's nets' starts)
    or of a net whose full Hessian is too large to form (`otod.nets.measure.bridge.EIGH_LIMIT` parameters)."""
    from otod.nets.measure.bridge import EIGH_LIMIT

    if config.problem.kind == "model":
        raise OtodError("--predict with --branch-at: the NQM at a checkpoint is built for otod's own nets (mlp, "
                        "cnn); with --model the table gives B_simple, B_noise and the two-batch estimates; drop "
                        "--predict")
    size = config.problem.parameter_count
    if size > EIGH_LIMIT:
        raise OtodError(f"--predict with --branch-at: the NQM at a checkpoint forms the full Hessian, and this net "
                        f"has {size:,} parameters ({EIGH_LIMIT:,} at most); drop --predict or use a smaller "
                        "--width, e.g. --width 32")


def run_along(config, branching: Branching, *, out="results", plot: bool = False, progress=None, yes: bool = False,
              pdf: bool = False, measure_predictors: bool = True, nqm: bool = False, trace_examples: int | None = None,
              echo=None) -> AlongTrainingResult:
    """One S(B) sweep per checkpoint of ``branching`` (module docstring), each through the core pipeline
    (`otod.core.pipeline.sweep`: resumed or read back like any sweep), then the predictors at the checkpoint
    (``measure_predictors``; ``nqm``: the NQM's and its ablation's too, `otod.nets.along.predictors`; ``trace_examples``:
    tr(HΣ) from that many examples per seed, None: all) and their ratios' joint CIs; ``echo(text)``, where given,
    after each checkpoint (its results line)."""
    from otod.core.api import part_out, read_config, sweep
    from otod.nets.sweep.reading import reading

    check_branchable(config)
    if branching.losses:  # loss levels to steps, refused in one line where one is not reached
        from otod.nets.along.levels import resolve_levels

        branching = resolve_levels(config, branching, yes)
    if nqm:
        check_nqm(config)
    refuse_long_reference(config, branching, yes)
    checkpoints, stored, init_spectra = [], None, {}
    branches = [(step, *branch_config(config, branching, step)) for step in branching.steps]  # refused before a sweep
    for step, tuned, losses in branches:
        levels = [level for level, t in branching.reached if t == step]
        meta = {"branch": {"step": int(step), "losses": list(losses), "loss": float(np.mean(losses)),
                           "fraction": branching.fraction, "milestone": tuned.target.tol,
                           "reference_batch": branching.batch, "reference_lr": branching.lr,
                           **({"levels": levels} if levels else {})}}
        report = sweep(tuned, out_dir=part_out(out, f"step{step}"), plot=plot, progress=progress, yes=yes, pdf=pdf,
                       extra_meta=lambda: meta, lr_extend=0)  # the grid as given (`otod.nets.sweep.kind.BRACKET`)
        stored = stored or read_config(report.results.meta).to_dict()
        path = None if report.results.path is None else str(report.results.path)
        values, cis = measured_predictors(tuned, branching, report.analysis.series, nqm, init_spectra,
                                          path, trace_examples) if measure_predictors else ({}, {})
        figures = "".join(f"; figure: {f}" for f in report.files[1:])
        extra = {k: v for k, v in values.items() if k not in ("b_simple", "b_noise")}
        checkpoints.append(Checkpoint(int(step), float(np.mean(losses)), tuple(losses), tuned.target.tol,
                                      tuple(reading(s) for s in report.analysis.series), path,
                                      values.get("b_simple", ()), values.get("b_noise", ()), extra, cis))
        if echo is not None:
            from otod.nets.along.levels import describe_level

            echo(f"checkpoint {step}{describe_level(branching, step)}: training loss {np.mean(losses):.4g} → "
                 f"milestone {tuned.target.tol:.4g}; results: {path}{figures}")
    result = AlongTrainingResult(tuple(checkpoints), branching, stored, "")
    return dataclasses.replace(result, report=table(result, config))


def measured_predictors(tuned, branching: Branching, series, nqm: bool, init_spectra: dict,
                        path: str | None = None, trace_examples: int | None = None) -> tuple[dict, dict]:
    """(name → per-seed values of every predictor at the checkpoint of the sweep ``tuned``, method → name → the
    joint CI of its ratio to B_crit) (`otod.nets.along.predictors`; ``trace_examples``: tr(HΣ) from that many examples
    per seed, None: all). The values are kept beside the sweep's results file ``path`` (`cached_predictors`), so a
    rerun that reads the sweep back reads them back too."""
    from otod.nets.along import predictors as pr
    from otod.nets.along.ablation import setting_of

    def measure():
        setting = setting_of(tuned.problem, tuned.target.tol, branching.fraction) if nqm else None
        return pr.checkpoint_predictors(tuned.problem, tuned.seed, tuned.seeds, setting, init_spectra,
                                        trace_examples=trace_examples)

    traced = "" if trace_examples is None else f";trace_examples={int(trace_examples)}"
    values = cached_predictors(path, f"seed={tuned.seed};seeds={tuned.seeds};nqm={bool(nqm)};pairs={pr.PAIRS};"
                                     f"draws={pr.DRAWS}{traced}", measure)
    cis = {s.method: pr.joint_ratio_intervals(s, values) for s in series if s.critical is not None}
    return values, cis


def cached_predictors(path: str | None, key: str, measure) -> dict:
    """``measure()``'s predictor values, read from ``<path>.predictors.json`` where it holds ``key`` (what they were
    measured with), else measured and added to it (NaN kept as JSON's NaN); no file where ``path`` is None."""
    import json
    from pathlib import Path

    if path is None:
        return measure()
    file = Path(f"{path}.predictors.json")
    stored = json.loads(file.read_text()) if file.exists() else {}
    if key not in stored:
        from otod.core.api import refuse_to_measure

        refuse_to_measure(file)  # a figure that reads committed results never measures (`otod.core.figure_sources`)
        stored[key] = {k: list(v) for k, v in measure().items()}
        file.write_text(json.dumps(stored))
    return {k: tuple(float(x) for x in v) for k, v in stored[key].items()}


def table(result: AlongTrainingResult, config) -> str:
    """The printed tables: per checkpoint and method, step, loss at the checkpoint, milestone, B_crit [CI], S_min
    [CI], the fit's misfit, B_simple and B_noise (median [least, largest] over seeds); then every predictor's
    ratio to B_crit with its joint CI (`predictor_table`), the best predictor, and the NQM's ablation."""
    from otod.core.api import describe_critical_batch
    from otod.nets.along.ablation import ablation_text

    b = result.branching
    spec = config.problem
    lines = [f"B_crit along training: {subject(spec)}, {config.seeds} seeds; each seed's reference run: SGD at B = {b.batch}, "
             f"lr {b.lr:g}, from its own start; milestone: {b.fraction:g} × the mean training loss at the checkpoint",
             f"{'step':>7} {'loss':>8} {'milestone':>9}  {'method':<10} {'B_crit [95% CI]':<24} "
             f"{'S_min [95% CI]':<24} {'misfit':>6} {'B_simple [seeds]':<20} B_noise [seeds]"]
    for c in result.checkpoints:
        for p in c.points:
            crit = f"{describe_critical_batch(p.b_crit, p.batches)} {interval(p.b_crit_ci)}"
            lines.append(f"{c.step:>7} {c.loss:>8.4g} {c.milestone:>9.4g}  {p.method:<10} {crit:<24} "
                         f"{p.s_min:.4g} {interval(p.s_min_ci):<16} {p.misfit:>6.2f} "
                         f"{predicted(c.b_simple, c.b_simple_seeds):<20} {predicted(c.b_noise, c.b_noise_seeds)}")
    more = [predictor_table(result), ablation_text(result.checkpoints)]
    return "\n\n".join(["\n".join(lines)] + [m for m in more if m])


def predictor_table(result: AlongTrainingResult) -> str:
    """Per checkpoint and method, every predictor's median over seeds / B_crit with its joint 95% CI (seeds
    resampled together for both; "—" where B_crit lies off the batches measured), then the ranking."""
    from otod.nets.along.predictors import DRAWS, LABELS, is_predictor, ratio_text

    present = list(dict.fromkeys(n for c in result.checkpoints for n in c.values()))
    shown = [n for n in present if is_predictor(n)]
    if not shown:
        return ""
    lines = ["predictor / measured B_crit [95% CI of the joint seed bootstrap: each resample re-selects and refits "
             f"B_crit and takes the predictor's median over the same seeds]; two-batch: {DRAWS} nested draws per pair",
             *traced_note(result),
             f"{'step':>7}  {'method':<10} " + " ".join(f"{LABELS.get(n, n):<22}" for n in shown)]
    for c in result.checkpoints:
        values = c.values()
        for p in c.points:
            cis = c.ratio_cis.get(p.method, {})
            cells = [ratio_text(ratio_value(median_of(values.get(n, ())), p), cis.get(n, (math.nan, math.nan)))
                     for n in shown]
            lines.append(f"{c.step:>7}  {p.method:<10} " + " ".join(f"{cell:<22}" for cell in cells))
    for method, ranked in result.best().items():
        ranked = [r for r in ranked if r["predictor"] in shown]
        if ranked:
            top = ranked[0]
            order = ", ".join(f"{LABELS.get(r['predictor'], r['predictor'])} ×{r['factor']:.3g}" for r in ranked)
            lines.append(f"best predictor ({method}): {LABELS.get(top['predictor'], top['predictor'])}, typical miss "
                         f"×{top['factor']:.3g} (median |log ratio| over {top['checkpoints']} checkpoints; ratios "
                         f"{top['ratio_min']:.3g} to {top['ratio_max']:.3g}); all: {order}")
    return "\n".join(lines)


def traced_note(result: AlongTrainingResult) -> list[str]:
    """The line saying B_noise was estimated from a subsample of examples, with its seeds' median relative standard
    error (none where tr(HΣ) was exact)."""
    relative = [se / b for c in result.checkpoints for se, b in zip(c.values().get("se_b_noise", ()),
                                                                    c.b_noise_seeds) if b > 0]
    if not relative:
        return []
    return [f"B_noise: tr(HΣ) from a draw of the training examples per seed (--trace-examples), its standard error "
            f"a median {100 * float(np.median(relative)):.2g}% (largest {100 * max(relative):.2g}%) of B_noise; "
            "the CIs cover the seeds' scatter, not this error"]


def subject(spec) -> str:
    """What the table measures: a net by its model, width, depth and data, a user's model by its reference."""
    if spec.kind == "model":
        return spec.describe()
    return f"{spec.model} width {spec.width} depth {spec.depth} on {spec.data} (P = {spec.parameter_count:,})"


def predicted(median: float, values) -> str:
    """A predictor's median over seeds and [least, largest] of the seeds' values."""
    if not len(values):
        return "—"
    return f"{median:.4g} [{min(values):.3g}, {max(values):.3g}]"


def interval(ci) -> str:
    lo, hi = ci
    return "[no CI]" if not (math.isfinite(lo) and math.isfinite(hi)) else f"[{lo:.4g}, {hi:.4g}]"


def critical_batch_along_training(steps=None, *, losses=None, branch_batch: int = BRANCH_BATCH,
                                  branch_lr: float = BRANCH_LR, fraction: float = BRANCH_TO,
                                  predictors: bool = True, nqm: bool = False, trace_examples: int | None = None,
                                  out: str | None = "results", progress=None, **net_options) -> AlongTrainingResult:
    """B_crit(t) and S_min(t) with CIs of one of otod's nets or a user's model (``model="FILE.py:NAME"`` or a
    checked `otod.nets.model.contract.Model`) at the checkpoints ``steps`` (default 0, 100, 1000) of each seed's reference
    run (SGD at ``branch_batch``, ``branch_lr``), or, with ``losses``, at the first step where the mean over seeds
    of the training loss falls to each level (`otod.nets.along.levels`), each S(B) sweep to ``fraction`` × the
    training loss there (module docstring); ``net_options``: those of `otod.nets.sweep.options.net_config` (batch, width,
    depth, data, model, method, seeds, seed, lr_grid, max_iters, …; no target: the milestone is the target).
    ``predictors``: the cheap predictors at each checkpoint (B_simple, B_noise, two-batch; seconds per seed);
    ``nqm``: the NQM built at each checkpoint and its ablation too (the full Hessian per seed: 40–65 s per seed
    and checkpoint at P = 2,410). ``trace_examples``: B_noise's tr(HΣ) from that many examples drawn per seed
    (None: all n, exact, n full-data HVPs per seed and checkpoint: about 2.5 min per seed on the width-32 CNN).
    ``out``: the results files' folder (None: a temporary one). Bad input raises `otod.core.errors.OtodError` in
    one line.

    >>> r = otod.critical_batch_along_training((0, 100, 300, 1000), batch="8..256:6:log", seeds=5)
    >>> r.to_pandas()[["step", "b_crit", "b_crit_lo", "b_crit_hi", "b_simple_ratio", "best_predictor"]]
    >>> otod.critical_batch_along_training(losses=(1.0, 0.5, 0.25), model="otod.nets.model.zoo:transformer")
    """
    import tempfile

    from otod.nets.sweep.options import net_config, option_text

    if "target" in net_options:
        raise OtodError("target: the branches' target is the milestone fraction × the loss at the checkpoint; "
                        "use fraction=, e.g. fraction=0.5")
    if steps is not None and losses is not None:
        raise OtodError("steps and losses: give the checkpoints as steps or as loss levels, not both, e.g. "
                        "losses=(0.5, 0.25, 0.1)")
    at = ("loss:" + ",".join(str(v) for v in np.atleast_1d(losses)) if losses is not None else
          ",".join(str(s) for s in np.atleast_1d((0, 100, 1000) if steps is None else steps)))
    branching = parse_branching(at, branch_batch, branch_lr, fraction)
    config = net_config(**{k: option_text(k, v) for k, v in net_options.items()})
    traced = (None if trace_examples is None else
              trace_examples_of(option_text("trace_examples", trace_examples), config))
    with tempfile.TemporaryDirectory() as scratch:
        return run_along(config, branching, out=scratch if out is None else out, progress=progress,
                         measure_predictors=predictors, nqm=nqm, trace_examples=traced)
