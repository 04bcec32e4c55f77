"""A batch schedule on the nets against the best constant batch (issue 37 item 3): ``otod sweep net
--batch-schedule 16@0.26,32@0.04`` and ``otod.batch_schedule("16@0.26,32@0.04", …)``.

A schedule is a list of phases (B_k, r_k): phase k trains at batch B_k until the full training loss reaches the
milestone L_k = r_k · L̄(0) (L̄(0): the mean over the sweep's seeds of the training loss at their starts; r_k
strictly falling; the last milestone is the final target). Each phase is an ordinary net sweep through the core
engine at its one batch, every (lr, β) of the grid, (lr, β) chosen by the core's rule (the median over seeds),
starting where the earlier phases left every seed (`otod.nets.model.schedule_start`: a start, not a new kind of sweep;
phase 1 starts from the seeds' own weights). A phase whose batch is one of ``--batch`` runs in the program the constant-batch sweep
compiled for all of them (`otod.core.variants.sharing`: its records are its own program's), so a schedule compiles
one program where it compiled one per phase besides. ``doubling:B₀..B₁@r`` is the doubling warmup: B₀, 2B₀, …, B₁, the
K phases' milestones spaced evenly in log loss, r_k = r^(k/K).

Against it, the constant-batch sweep: the same net at every batch of ``--batch`` from the same starts to the final
target, (lr, β) chosen per batch by the same rule. Steps add over phases (S_sched = Σ_k S_k, S_k the median over
seeds of phase k's steps at its chosen setting), examples are E = Σ_k B_k S_k, and the schedule is compared with the
constant batch of fewest steps and with the one of fewest steps that uses no more examples than the schedule
(`otod.nets.schedule.stats`, whose seed bootstrap re-makes every selection).

One results file per phase (its spec's ``schedule_start`` names the phases before it) and one for the constant
sweep; each reads back with ``otod fit`` and ``otod plot``, and the same command reads them all back.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from otod.core.api import OtodError

#: The most phases one schedule runs (each is a sweep over the lr grid).
MAX_PHASES = 8
EXAMPLE = "16@0.3,32@0.1,64@0.04"


@dataclass(frozen=True)
class Phase:
    """One phase: its ``batch`` B_k and its milestone's ``fraction`` r_k of the mean loss at the start."""

    batch: int
    fraction: float


@dataclass(frozen=True)
class BatchSchedule:
    """The ``phases`` in order, and the ``text`` they were given as."""

    phases: tuple[Phase, ...]
    text: str

    @property
    def batches(self) -> tuple[int, ...]:
        return tuple(p.batch for p in self.phases)


def _refuse(text, why: str) -> OtodError:
    return OtodError(f"--batch-schedule {text}: {why}, e.g. --batch-schedule {EXAMPLE} or --batch-schedule "
                     "doubling:16..64@0.04")


def _whole(item: str, text) -> int:
    try:
        value = float(item)
    except ValueError:
        raise _refuse(text, f"{item!r} is not a batch size") from None
    if not (math.isfinite(value) and value.is_integer() and 1 <= value <= 1e9):
        raise _refuse(text, f"batch {item} is not a whole number ≥ 1")
    return int(value)


def _fraction(item: str, text) -> float:
    try:
        value = float(item)
    except ValueError:
        raise _refuse(text, f"milestone {item!r} is not a number") from None
    if not (math.isfinite(value) and 0 < value < 1):
        raise _refuse(text, f"milestone {item} is not a fraction of the start's loss strictly between 0 and 1")
    return value


def parse_schedule(text) -> BatchSchedule:
    """``B@r,B@r,…`` (phases; r strictly falling) or ``doubling:B₀..B₁@r`` (module docstring), refused in one line."""
    raw = str(text).strip()
    if raw.startswith("doubling:"):
        return doubling(raw)
    items = [p.strip() for p in raw.split(",")]
    if not raw or not all(items):
        raise _refuse(text, "a comma list of batch@milestone phases")
    phases = []
    for item in items:
        if item.count("@") != 1:
            raise _refuse(text, f"phase {item!r} is not batch@milestone")
        batch, fraction = item.split("@")
        phases.append(Phase(_whole(batch.strip(), text), _fraction(fraction.strip(), text)))
    return checked(BatchSchedule(tuple(phases), raw))


def doubling(text: str) -> BatchSchedule:
    """The doubling warmup ``doubling:B₀..B₁@r``: B₀·2^j up to B₁ (B₁/B₀ a power of 2), the K phases to
    r^(k/K) × the start's loss, k = 1..K."""
    body = text[len("doubling:"):]
    if body.count("@") != 1 or body.split("@")[0].count("..") != 1:
        raise _refuse(text, "a doubling warmup reads doubling:B0..B1@r")
    span, final = body.split("@")
    low, high = (_whole(p.strip(), text) for p in span.split(".."))
    r = _fraction(final.strip(), text)
    ratio = high / low
    k = round(math.log2(ratio)) if ratio >= 1 else -1
    if k < 0 or low * 2 ** k != high:
        raise _refuse(text, f"the last batch {high} is not the first {low} doubled a whole number of times")
    count = k + 1
    return checked(BatchSchedule(tuple(Phase(low * 2 ** j, r ** ((j + 1) / count)) for j in range(count)), text))


def checked(schedule: BatchSchedule) -> BatchSchedule:
    """Refuse too many phases, or milestones that do not fall strictly."""
    fractions = [p.fraction for p in schedule.phases]
    if len(fractions) > MAX_PHASES:
        raise _refuse(schedule.text, f"{len(fractions)} phases, each a sweep of the lr grid; give at most "
                                     f"{MAX_PHASES}")
    if any(b >= a for a, b in zip(fractions, fractions[1:])):
        raise _refuse(schedule.text, "each phase's milestone must lie below the one before")
    return schedule


def check_schedulable(config, schedule: BatchSchedule) -> None:
    """Refuse a sweep a schedule cannot run as phases: one of otod's nets on a finite training set, batch (and
    heavy-ball's β) its only axes, one method, a constant lr within each phase, every phase's batch in the set."""
    spec = config.problem
    if spec.kind != "net":
        raise OtodError("--batch-schedule: runs otod's own nets (mlp, cnn); a model of your own is not supported "
                        "yet, drop --batch-schedule")
    if spec.stream or spec.branched:
        raise OtodError("--batch-schedule: phases start from the seeds' own weights on a finite training set; drop "
                        "--stream and --branch-at")
    others = [name for name, _ in config.axes if name not in ("batch", "beta")]
    if others:
        raise OtodError(f"--batch-schedule: compares against constant batches of one net; give one value of "
                        f"--{others[0]} (it has {len(config.values(others[0]))})")
    if len(config.methods) != 1:
        raise OtodError(f"--batch-schedule: one method per schedule (--method has {len(config.methods)}), e.g. "
                        f"--method {config.methods[0]}")
    if config.options.schedule != "constant":
        raise OtodError(f"--schedule {config.options.schedule}: a batch schedule's phases each run at a constant lr; "
                        "drop --schedule")
    examples = spec.dataset().examples
    for b in schedule.batches:
        if b > examples:
            raise OtodError(f"--batch-schedule {schedule.text}: batch {b} is larger than the training set "
                            f"({examples} examples)")


def refuse_beside_schedule(given, model) -> None:
    """Refuse, with ``--batch-schedule``, what it replaces or cannot run from: ``--target`` (the last milestone is
    the target), ``--branch-at``, ``--stream``, ``--predict`` and a model of the user's own."""
    from otod.core.api import refuse_ignored
    from otod.nets.model.contract import is_reference

    refuse_ignored(given, "target", "with --batch-schedule the final target is the last phase's milestone × the "
                                    f"start's loss; drop --target, e.g. --batch-schedule {EXAMPLE}")
    for name in ("branch_at", "branch_batch", "branch_lr", "branch_to"):
        refuse_ignored(given, name, "--batch-schedule starts every seed from its own weights, not from a "
                                    "checkpoint; drop the --branch options")
    refuse_ignored(given, "stream", "--batch-schedule runs on a finite training set; drop --stream")
    refuse_ignored(given, "predict", "the NQM's prediction is of a constant batch; --batch-schedule gives no "
                                     "prediction, drop --predict")
    if is_reference(model):
        raise OtodError(f"--batch-schedule: runs otod's own nets (mlp, cnn); --model {model} is not supported yet, "
                        "drop --batch-schedule")


def target_of(loss: float):
    from otod.core.api import Target

    return Target(tol=float(loss), kind="absolute", check_every=1)


def phase_config(config, run_start, batch: int, milestone: float):
    """Phase k's sweep: ``config`` at the one batch B_k (β as given), the spec's start ``run_start`` (the earlier
    phases' text, None for phase 1), stopping at the milestone."""
    spec = dataclasses.replace(config.problem, batch=int(batch), schedule_start=run_start)
    axes = (("batch", (float(batch),)),) + tuple((n, v) for n, v in config.axes if n == "beta")
    return dataclasses.replace(config, problem=spec, axes=axes, target=target_of(milestone))


def choice_of(report):
    """The one method's `otod.core.analysis.Choice` [batch, setting, seed] of a sweep's report: the choice its
    analysis made (the pipeline's one selection), not made again."""
    series = report.analysis.series
    if len(series) != 1:
        raise OtodError(f"a batch-schedule sweep holds {len(series)} series, not one method at one panel")
    return series[0].choice


def phase_run(report, seeds: int):
    """What the next phase starts from (`otod.nets.model.schedule_start.PhaseRun`): the chosen (lr, β) of the
    phase's analysis and every seed's steps there (its chosen records, `otod.core.analysis.Analysis.chosen`)."""
    from otod.nets.model.schedule_start import PhaseRun

    choice = choice_of(report)
    cube = choice.cube
    if list(cube.seeds) != list(range(seeds)):
        raise OtodError(f"a phase holds seeds {list(cube.seeds)}, not 0..{seeds - 1}")
    records = report.analysis.chosen.sort_values("seed", kind="stable")
    if len(records) != seeds or (choice.at_choice(cube.row) < 0).any():
        raise OtodError("a phase's chosen setting has no record for every seed")
    lr = float(records["learning_rate"].iloc[0])
    steps = tuple(int(n) for n in records["iterations"])
    return PhaseRun(int(cube.x("batch")[0]), str(cube.series), lr, float(cube.betas[choice.index[0]]), steps)


@dataclass(frozen=True)
class ScheduleResult:
    """`otod.batch_schedule`'s result: the ``schedule``, the start's mean loss ``initial_loss`` L̄(0), the
    ``milestones``, the phases as run (``runs``: `PhaseRun`, chosen (lr, β) and per-seed steps), the batches of
    the constant sweep, the `otod.nets.schedule.stats.Comparison`, the results files (``paths``: the constant
    sweep's, then each phase's) and the printed ``report``; ``rows()`` / ``to_pandas()``: one row per phase, the
    schedule, each constant batch, and the two best constant batches."""

    schedule: BatchSchedule
    initial_loss: float
    milestones: tuple[float, ...]
    runs: tuple
    batches: tuple[float, ...]
    comparison: object
    paths: tuple
    report: str

    def rows(self) -> list[dict]:
        c = self.comparison
        out = []

        def row(what, batch, steps, rep, milestone):
            lo, hi = interval_of(c, rep, steps)
            out.append({"run": what, "batch": batch, "milestone": milestone, "steps": steps, "steps_lo": lo,
                        "steps_hi": hi, "examples": steps * batch, "examples_lo": lo * batch,
                        "examples_hi": hi * batch})

        for k, (run, m) in enumerate(zip(self.runs, self.milestones)):
            row(f"phase {k + 1}", float(run.batch), float(c.phase_steps[k]), c.phase_replicates[:, k], m)
            out[-1].update(lr=run.lr, beta=run.beta)
        final = self.milestones[-1]
        out.append({"run": "schedule", "batch": math.nan, "milestone": final, **named(c, "schedule", "steps"),
                    **named(c, "schedule", "examples")})
        for i, b in enumerate(self.batches):
            row("constant", float(b), float(c.constant_steps[i]), c.constant_replicates[:, i], final)
        for which, label in (("best", "best constant"), ("budget", "best constant within the schedule's examples")):
            ratio = "ratio" if which == "best" else "budget_ratio"
            out.append({"run": label, "batch": c.estimate[f"{which}_batch"], "milestone": final,
                        **named(c, which, "steps"), **named(c, which, "examples"),
                        "ratio": c.estimate[ratio], "ratio_lo": c.ci(ratio)[0], "ratio_hi": c.ci(ratio)[1]})
        lo, hi = c.ci("frontier_ratio")
        out.append({"run": "constant frontier at the schedule's examples", "batch": math.nan, "milestone": final,
                    **named(c, "frontier", "steps"), "examples": c.estimate["schedule_examples"],
                    "examples_lo": math.nan, "examples_hi": math.nan, "ratio": c.estimate["frontier_ratio"],
                    "ratio_lo": lo, "ratio_hi": hi})
        return out

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame(self.rows())


def interval_of(comparison, replicates, estimate) -> tuple[float, float]:
    from otod.nets.schedule.stats import interval

    return interval(replicates, estimate, comparison.no_ci)


def named(comparison, which: str, what: str) -> dict:
    """{what, what_lo, what_hi} of the comparison's ``which_what``."""
    key = f"{which}_{what}"
    lo, hi = comparison.ci(key)
    return {what: comparison.estimate[key], f"{what}_lo": lo, f"{what}_hi": hi}


def start_losses(spec, seed: int, seeds: int) -> tuple[float, ...]:
    """The full training loss (float64) at each seed's start as the engine draws it (`NetSpec.initial_loss`, which
    before the batch schedule drew ``initial_params`` from the seed's generator directly, another start: the digits
    MLP's seed 0 at 2.318 against 2.466 at the engine's)."""
    return tuple(float(spec.initial_loss(seed, s)) for s in range(seeds))


def run_schedule(config, schedule: BatchSchedule, *, out="results", plot: bool = False, progress=None,
                 yes: bool = False, pdf: bool = False, echo=None, n_boot: int = 1000) -> ScheduleResult:
    """The constant-batch sweep to the final target, then each phase from where the one before left every seed
    (module docstring), all through the core pipeline (`otod.core.pipeline.sweep`: resumed or read back like any
    sweep); ``echo(text)`` after each sweep."""
    from otod.core.api import part_out, sharing, sweep
    from otod.nets.model.schedule_start import encode
    from otod.nets.schedule.stats import compare

    check_schedulable(config, schedule)
    spec = config.problem
    start = float(np.mean(start_losses(spec, config.seed, config.seeds)))
    milestones = tuple(p.fraction * start for p in schedule.phases)
    meta = {"batch_schedule": {"schedule": schedule.text, "initial_loss": start, "milestones": list(milestones)}}
    say = echo or (lambda text: None)
    constant = sweep(dataclasses.replace(config, target=target_of(milestones[-1])), out_dir=part_out(out, "constant"),
                     plot=plot, progress=progress, yes=yes, pdf=pdf, extra_meta=lambda: meta, lr_extend=0)
    say(f"constant batch to the final target {milestones[-1]:.4g}: results: {constant.results.path}")
    constant_choice = choice_of(constant)
    runs, choices, paths = [], [], [constant.results.path]
    for k, (phase, milestone) in enumerate(zip(schedule.phases, milestones)):
        history = encode(config.seed, runs) if runs else None
        with sharing(config.specs()):  # a phase at one of --batch runs in the constant sweep's compiled program
            report = sweep(phase_config(config, history, phase.batch, milestone),
                           out_dir=part_out(out, f"phase{k + 1}"), plot=False, progress=progress, yes=yes, pdf=pdf,
                           extra_meta=lambda: meta, lr_extend=0)
        runs.append(phase_run(report, config.seeds))
        choices.append(choice_of(report))
        paths.append(report.results.path)
        say(f"phase {k + 1}: B = {phase.batch} to {milestone:.4g} (lr {runs[-1].lr:.3g}, β {runs[-1].beta:g}): "
            f"results: {report.results.path}")
    comparison = compare(choices, schedule.batches, constant_choice, n_boot=n_boot, seed=config.seed)
    result = ScheduleResult(schedule, start, milestones, tuple(runs), tuple(float(b) for b in
                            constant_choice.cube.x("batch")), comparison, tuple(paths), "")
    return dataclasses.replace(result, report=table(result, config))


def cell(value: float, lo: float, hi: float, digits: str = ".4g") -> str:
    """A value and its interval ([no CI] where none)."""
    if not math.isfinite(value):
        return "not reached" if value == math.inf else "—"
    if math.isnan(lo) or math.isnan(hi):
        return f"{value:{digits}} [no CI]"
    return f"{value:{digits}} [{lo:{digits}}, {hi:{digits}}]"  # an end at +∞: too many resamples not reached


def table(result: ScheduleResult, config) -> str:
    """The printed table: each phase, the schedule's sum, each constant batch, the best constant batch and the
    best one within the schedule's examples, with the ratios."""
    spec = config.problem
    rows = result.rows()
    lines = [f"Batch schedule {result.schedule.text} against constant batches: {spec.model} width {spec.width} "
             f"depth {spec.depth} on {spec.data} (P = {spec.parameter_count:,}), {config.methods[0]}, "
             f"{config.seeds} seeds; mean start loss L̄(0) = {result.initial_loss:.4g}, final target "
             f"{result.milestones[-1]:.4g}; (lr, β) chosen per phase and per batch by the median over seeds; "
             "95% CIs from the seed bootstrap that re-makes every choice",
             f"{'run':<46} {'B':>6} {'milestone':>9}  {'steps [95% CI]':<26} {'examples [95% CI]':<30} ratio"]
    for r in rows:
        batch = "" if not math.isfinite(r["batch"]) else f"{r['batch']:g}"
        examples = cell(r["examples"], r["examples_lo"], r["examples_hi"], ".5g") if "frontier" not in r["run"] \
            else "the schedule's"
        ratio = cell(r["ratio"], r["ratio_lo"], r["ratio_hi"], ".3g") if "ratio" in r else ""
        what = r["run"] + (f" (lr {r['lr']:.3g}, β {r['beta']:g})" if "lr" in r else "")
        lines.append(f"{what:<46} {batch:>6} {r['milestone']:>9.4g}  "
                     f"{cell(r['steps'], r['steps_lo'], r['steps_hi']):<26} {examples:<30} {ratio}")
    lines.append("ratio: the schedule's steps over that constant batch's (< 1: the schedule takes fewer serial steps); "
                 "the frontier: the constant batches' fewest steps at the schedule's examples, interpolated in logs")
    return "\n".join(lines)


def echo_schedule(config, schedule: BatchSchedule, *, out, plot: bool, yes: bool, pdf: bool, as_json: bool) -> None:
    """``otod sweep net --batch-schedule``: run `run_schedule`, a line per sweep, then the table; with ``as_json``
    the rows as JSON on stdout (NaN as null, +∞ as "inf") and the text on stderr."""
    import json

    import click

    from otod.core.api import terminal_progress

    result = run_schedule(config, schedule, out=out, plot=plot, progress=terminal_progress(), yes=yes, pdf=pdf,
                          echo=lambda text: click.echo(text, err=as_json))
    if not as_json:
        click.echo("\n" + result.report)
        return
    click.echo(result.report, err=True)
    click.echo(json.dumps([{k: jsonable(v) for k, v in r.items()} for r in result.rows()]))


def jsonable(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def batch_schedule(schedule, *, out: str | None = "results", progress=None, n_boot: int = 1000,
                   **net_options) -> ScheduleResult:
    """A batch schedule (``"B@r,…"`` or ``"doubling:B₀..B₁@r"``, module docstring) of one of otod's nets against
    every constant batch of ``batch`` (default 8..1024:8:log), each with (lr, β) chosen by the core's rule, to the
    same final target; ``net_options``: those of `otod.nets.sweep.options.net_config` (batch, width, depth, data, method,
    seeds, seed, lr_grid, max_iters, …; no target: the schedule's last milestone is the target). ``out``: the
    results files' folder (None: a temporary one). Bad input raises `otod.core.errors.OtodError` in one line.

    >>> r = otod.batch_schedule("16@0.26,32@0.0392")   # the digits MLP, B = 8..1024, 5 seeds
    >>> r.to_pandas()[["run", "batch", "steps", "steps_lo", "steps_hi", "examples", "ratio"]]
    """
    import tempfile

    from otod.nets.sweep.options import net_config, option_text

    if "target" in net_options:
        raise OtodError("target: a batch schedule's target is its last phase's milestone; give it there, e.g. "
                        f"\"{EXAMPLE}\"")
    parsed = parse_schedule(schedule)
    config = net_config(**{k: option_text(k, v) for k, v in net_options.items()})
    with tempfile.TemporaryDirectory() as scratch:
        return run_schedule(config, parsed, out=scratch if out is None else out, progress=progress, n_boot=n_boot)
