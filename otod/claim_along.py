"""Readers of the claims table (`otod.claims`) for the critical batch along training and the nets' batch schedules
(docs/nets-along-training.md, docs/nets-schedules.md): one checkpoint's sweep and its predictors (`along_checkpoint`,
`along_predictor`, used by the along readers of `otod.claim_readers` too), where a B_crit lies against the batches
swept, how many predictor CIs hold 1, the ends of a path through training, the NQM ablation's typical misses, the
NQM's prediction against the measurement, and a batch schedule's phases, its constant sweep re-read at a milestone
and the NQM's predicted saving for the same net (registered in `otod.claim_readers.READERS` beside the others).

A schedule is read back through `otod.nets.schedule.batch_schedule.batch_schedule` (every phase's sweep from its
committed results) and the NQM's saving is searched again on the NQM built from the constant sweep's stored config
(`otod.nets.schedule.nqm.predicted_saving`: an SLQ spectrum and an exact search, about a minute): their claims are
``slow``.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any

from otod.claim_records import analysis_of, batch_series, results_of
from otod.claim_records import stamp as _stamp

# --- one checkpoint's sweep and its predictors (otod.nets.along) ------------------------------------------------


def _along_series(path: str, method: str):
    found = [s for s in analysis_of(path).series if s.method == method]
    if len(found) != 1:
        raise KeyError(f"{len(found)} {method} series in {path}")
    return found[0]


def along_checkpoint(path: str, method: str = "sgd") -> dict[str, Any]:
    """One checkpoint's sweep (`otod.nets.along.branching.run_along`'s results file): the step, the mean training loss at
    the checkpoint, the milestone, and its S(B) fit (`otod.nets.sweep.reading.reading`: B_crit, S_min with their 95%
    CIs, misfit), as the along-training table prints them."""
    from otod.nets.sweep.reading import reading

    point = reading(_along_series(path, method))
    branch = results_of(path).meta["branch"]
    return {"step": branch["step"], "loss": branch["loss"], "milestone": branch["milestone"],
            "b_crit": point.b_crit, "lo": point.b_crit_ci[0], "hi": point.b_crit_ci[1], "s_min": point.s_min,
            "s_lo": point.s_min_ci[0], "s_hi": point.s_min_ci[1], "misfit": point.misfit}


def predictor_values(path: str, nqm: bool | None = None) -> dict[str, tuple[float, ...]]:
    """The per-seed predictor values kept beside a checkpoint's results (``<file>.predictors.json``,
    `otod.nets.along.branching.cached_predictors`): the entry measured with the NQM (``nqm`` True), without it (False), or
    the only one (None)."""
    stored = json.loads(Path(f"{path}.predictors.json").read_text())
    keys = [k for k in stored if nqm is None or f"nqm={bool(nqm)}" in k]
    if len(keys) != 1:
        raise KeyError(f"{len(keys)} predictor entries with nqm={nqm} beside {path}: {sorted(stored)}")
    return {k: tuple(float(x) for x in v) for k, v in stored[keys[0]].items()}


@functools.lru_cache(maxsize=None)
def _ratio_intervals(stamp: tuple[str, int, int], method: str, nqm: bool | None):
    from otod.nets.along.predictors import joint_ratio_intervals

    return joint_ratio_intervals(_along_series(stamp[0], method), predictor_values(stamp[0], nqm))


def along_predictor(path: str, name: str, method: str = "sgd", nqm: bool | None = None) -> dict[str, Any]:
    """One predictor at one checkpoint: its median over seeds, least and largest seed, ratio to the measured
    B_crit (`otod.nets.along.branching.ratio_value`: NaN off the batch grid) and that ratio's 95% CI by the joint seed
    bootstrap (`otod.nets.along.predictors.joint_ratio_intervals`), as the along-training and predictor tables print."""
    from otod.nets.along.branching import median_of, ratio_value
    from otod.nets.sweep.reading import reading

    values = predictor_values(path, nqm)[name]
    median = median_of(values)
    finite = [v for v in values if math.isfinite(v)]
    ratio = ratio_value(median, reading(_along_series(path, method)))
    lo, hi = _ratio_intervals(_stamp(path), method, nqm).get(name, (math.nan, math.nan))
    return {"median": median, "min": min(finite), "max": max(finite), "ratio": ratio, "ratio_lo": lo,
            "ratio_hi": hi, "b_crit": along_checkpoint(path, method)["b_crit"]}


def along_below(path: str, method: str = "sgd") -> dict[str, Any]:
    """Where a checkpoint's B_crit lies against the batches it swept: ``relation`` "<" below the least (least), ">"
    above the largest (most), "in" within; with `along_checkpoint`'s values (a "B_crit < 8, below the grid")."""
    batches = _along_series(path, method).summary["value"].to_numpy(float)
    row = along_checkpoint(path, method)
    least, most = float(batches.min()), float(batches.max())
    relation = "<" if row["b_crit"] < least else ">" if row["b_crit"] > most else "in"
    return {**row, "relation": relation, "least": least, "most": most}


def along_seed(path: str, name: str, seed: int, nqm: bool | None = None) -> dict[str, Any]:
    """One seed's value of a predictor (or of the NQM ablation's variant ``name``) at one checkpoint, as kept beside
    its results (`predictor_values`, in seed order): value."""
    return {"value": predictor_values(path, nqm)[name][int(seed)]}


def along_holds(*paths: str, names: list, method: str = "sgd", nqm: bool | None = None) -> dict[str, Any]:
    """Per predictor in ``names``, over the checkpoints of ``paths`` where its ratio to B_crit exists: how many of
    its joint-bootstrap 95% CIs hold 1 ({name}_holds, of {name}_n), the steps where they do ({name}_step0, …), how
    many of those reach below 0 ({name}_below: the two-batch |G|² estimate gone negative), and the total over
    ``names`` (held)."""
    out: dict[str, Any] = {"held": 0}
    for name in names:
        n, steps, below = 0, [], 0
        for p in paths:
            got = along_predictor(p, name, method, nqm)
            if not math.isfinite(got["ratio"]):
                continue
            n += 1
            if got["ratio_lo"] <= 1 <= got["ratio_hi"]:
                steps.append(along_checkpoint(p, method)["step"])
                below += got["ratio_lo"] < 0
        out.update({f"{name}_holds": len(steps), f"{name}_n": n, f"{name}_below": below})
        out.update({f"{name}_step{j}": s for j, s in enumerate(steps)})
        out["held"] += len(steps)
    return out


def along_ends(*paths: str, names: list = (), method: str = "sgd", nqm: bool | None = None) -> dict[str, Any]:
    """B_crit at the first and last checkpoint of ``paths`` (b_first, b_last) and each predictor's median over seeds
    there ({name}_first, {name}_last): how far each rises along training."""
    first, last = along_checkpoint(paths[0], method), along_checkpoint(paths[-1], method)
    out: dict[str, Any] = {"b_first": first["b_crit"], "b_last": last["b_crit"]}
    for name in names:
        out[f"{name}_first"] = along_predictor(paths[0], name, method, nqm)["median"]
        out[f"{name}_last"] = along_predictor(paths[-1], name, method, nqm)["median"]
    return out


def along_ablation(*paths: str, names: list, method: str = "sgd", nqm: bool | None = None,
                   over: list = ()) -> dict[str, Any]:
    """The typical miss exp(median |log ratio|) over the checkpoints of ``paths`` (`otod.nets.along.predictors.
    ranking`, as `along_best` ranks the predictors) of each of ``names``, the NQM ablation's variants included
    (factor_{name}, with its least and largest ratio lo_{name}, hi_{name}); with ``over`` = [a, b], quotient =
    factor_a / factor_b (how much variant a changes b's typical miss)."""
    from otod.nets.along.predictors import ranking

    ratios = {name: [along_predictor(p, name, method, nqm)["ratio"] for p in paths] for name in names}
    out: dict[str, Any] = {}
    for r in ranking(ratios):
        name = r["predictor"]
        out.update({f"factor_{name}": r["factor"], f"lo_{name}": r["ratio_min"], f"hi_{name}": r["ratio_max"]})
    if over:
        out["quotient"] = out[f"factor_{over[0]}"] / out[f"factor_{over[1]}"]
    return out


def nqm_against(path: str, along: str, index: int, method: str = "sgd", **panel) -> dict[str, Any]:
    """A net sweep's NQM prediction (``path``'s ``nqm_prediction`` [``index``], built at init from seed 0's SLQ
    spectrum) against the B_crit the sweep measured in the panel ``panel`` (predicted, measured), the seed-0
    B_simple that NQM was built from (b_simple), the sweep's target loss (target) and how many times the start's
    mean loss (``along``: the step-0 checkpoint of the same net) is the target (fold = L̄(0) / target)."""
    from otod.core.config import read_config

    q = results_of(path).meta["nqm_prediction"][int(index)]
    measured = batch_series(path, method, panel, None).critical.b_crit
    target = float(read_config(results_of(path).meta).target.tol)
    start = float(results_of(along).meta["branch"]["loss"])
    return {"predicted": q["b_crit"], "measured": measured, "b_simple": q["measured_b_simple"], "target": target,
            "fold": start / target}


# --- batch schedules (otod.nets.schedule: a constant sweep and one sweep per phase, read back) ------------------


@functools.lru_cache(maxsize=None)
def _schedule(folder: str, schedule: str, options: tuple):
    from otod.nets.schedule.batch_schedule import batch_schedule
    from otod.obstacles import load_all

    load_all()
    return batch_schedule(schedule, out=folder, **dict(options))


def schedule_rows(*paths: str, schedule: str, options: dict | tuple = ()) -> dict[str, Any]:
    """A batch schedule against the constant batches (`otod.nets.schedule.batch_schedule.batch_schedule`, what
    ``otod sweep net --batch-schedule`` prints and the batch_schedule figure draws), read back from the folder of
    ``paths`` (its sweeps' results files, which must all be there: a missing one would be run): the schedule's
    steps, examples and CI (steps, lo, hi, examples), the fewest-steps constant batch (best_batch, best_steps,
    best_lo, best_hi), the frontier at the schedule's examples (front, front_lo, front_hi) and the ratio to it
    (ratio, ratio_lo, ratio_hi), the saving 1 − ratio and the most its CI allows (saving, saving_most), and the
    constant batch of fewest steps within the schedule's examples (within_batch, within_steps, within_examples)."""
    options = tuple(sorted(dict(options).items()))
    rows = {r["run"]: r for r in _schedule(str(Path(paths[0]).parent), schedule, options).rows()}
    own, best = rows["schedule"], rows["best constant"]
    front = rows["constant frontier at the schedule's examples"]
    within = rows["best constant within the schedule's examples"]
    return {"steps": own["steps"], "lo": own["steps_lo"], "hi": own["steps_hi"], "examples": own["examples"],
            "best_batch": best["batch"], "best_steps": best["steps"], "best_lo": best["steps_lo"],
            "best_hi": best["steps_hi"], "front": front["steps"], "front_lo": front["steps_lo"],
            "front_hi": front["steps_hi"], "ratio": front["ratio"], "ratio_lo": front["ratio_lo"],
            "ratio_hi": front["ratio_hi"], "saving": 1 - front["ratio"], "saving_most": 1 - front["ratio_lo"],
            "within_batch": within["batch"], "within_steps": within["steps"], "within_examples": within["examples"]}


def schedules_rows(*paths: str, schedules: list, options: dict | tuple = ()) -> dict[str, Any]:
    """`schedule_rows` of several schedules of one net (their values suffixed 0, 1, …), with, per schedule, the
    fewest-steps constant batch's examples over the schedule's (fewer{i}: how many times fewer examples the
    schedule uses) and the schedule's steps over that batch's (times{i}); best_examples = B × its median steps."""
    out: dict[str, Any] = {}
    for i, schedule in enumerate(schedules):
        row = schedule_rows(*paths, schedule=schedule, options=options)
        best_examples = row["best_batch"] * row["best_steps"]
        out.update({f"{k}{i}": v for k, v in row.items()})
        out.update({"best_examples": best_examples, f"fewer{i}": best_examples / row["examples"],
                    f"times{i}": row["steps"] / row["best_steps"]})
    return out


def schedule_phases(*paths: str, schedule: str, options: dict | tuple = (), batches: list = ()) -> dict[str, Any]:
    """A batch schedule's phases as run (read back as `schedule_rows` reads it): per phase k = 1, 2, … its batch,
    milestone, median steps at its chosen setting and their 95% CI (phase{k}_batch, phase{k}_milestone,
    phase{k}_steps, phase{k}_lo, phase{k}_hi); the start's mean loss L̄(0) (initial_loss); and the constant
    sweep's batches ``batches`` to the final target (c{i}_steps, c{i}_lo, c{i}_hi, c{i}_examples)."""
    options = tuple(sorted(dict(options).items()))
    result = _schedule(str(Path(paths[0]).parent), schedule, options)
    rows = result.rows()
    out: dict[str, Any] = {"initial_loss": result.initial_loss}
    for r in rows:
        if r["run"].startswith("phase "):
            k = r["run"].split()[1]
            out.update({f"phase{k}_batch": r["batch"], f"phase{k}_milestone": r["milestone"],
                        f"phase{k}_steps": r["steps"], f"phase{k}_lo": r["steps_lo"], f"phase{k}_hi": r["steps_hi"]})
    constant = [r for r in rows if r["run"] == "constant"]
    for i, b in enumerate(batches):
        r = next(r for r in constant if math.isclose(r["batch"], float(b)))
        out.update({f"c{i}_steps": r["steps"], f"c{i}_lo": r["steps_lo"], f"c{i}_hi": r["steps_hi"],
                    f"c{i}_examples": r["examples"]})
    return out


def constant_medians(path: str, tol: float, batch: float | None = None, method: str = "sgd") -> dict[str, Any]:
    """A schedule's constant-batch sweep re-read at the training loss ``tol`` (its traces, as ``otod fit …
    --target`` reads them): the least and largest median steps over its batches (lo, hi), the median at ``batch``
    (at), the start's mean loss L̄(0) its schedule stored (initial_loss) and the loss read at (target)."""
    summary = batch_series(path, method, {}, tol).summary
    values, steps = summary["value"].to_numpy(float), summary["median"].to_numpy(float)
    at = float(steps[[math.isclose(v, float(batch)) for v in values]][0]) if batch is not None else math.nan
    return {"lo": float(steps.min()), "hi": float(steps.max()), "at": at, "target": float(tol),
            "initial_loss": float(results_of(path).meta["batch_schedule"]["initial_loss"])}


@functools.lru_cache(maxsize=None)
def _saving(stamp: tuple[str, int, int], budget_factor: float) -> dict:
    from otod.core.config import read_config
    from otod.nets.schedule.nqm import predicted_saving
    from otod.obstacles import load_all

    load_all()
    config = read_config(results_of(stamp[0]).meta)
    return predicted_saving(config.problem, float(config.target.tol), config.seed, budget_factor)


def nqm_savings(*paths: str, workloads: list, budget_factor: float = 2.0) -> dict[str, Any]:
    """What the NQM built for each net predicts a batch schedule saves (`otod.nets.schedule.nqm.predicted_saving`,
    seed 0's start, the constant sweep's final target, within ``budget_factor`` × E_min), per workload i (a table
    {schedule, options} of `schedule_rows`; its constant sweep's stored config builds the NQM): the steps of the
    best constant batch, lr schedule and batch schedule (constant{i}, lr{i}, batch{i}) and their savings
    (lr_saving{i}, batch_saving{i}), the budget and E_min (budget{i}, e_min{i}), the budget over the net
    schedule's examples (over{i}), and the examples of the net's least constant batch (cheapest{i}, at cheapest_batch{i})."""
    out: dict[str, Any] = {}
    for i, w in enumerate(workloads):
        w = dict(w)
        options = tuple(sorted(dict(w.get("options", ())).items()))
        result = _schedule(str(Path(paths[0]).parent), w["schedule"], options)
        s = _saving(_stamp(str(result.paths[0])), float(budget_factor))
        rows = result.rows()
        own = next(r for r in rows if r["run"] == "schedule")
        least = min((r for r in rows if r["run"] == "constant"), key=lambda r: r["batch"])
        out.update({f"constant{i}": s["constant_steps"], f"lr{i}": s["lr_schedule_steps"],
                    f"batch{i}": s["batch_schedule_steps"], f"lr_saving{i}": s["lr_schedule_saving"],
                    f"batch_saving{i}": s["batch_schedule_saving"], f"budget{i}": s["budget"], f"e_min{i}": s["e_min"],
                    f"over{i}": s["budget"] / own["examples"], f"cheapest{i}": least["examples"],
                    f"cheapest_batch{i}": least["batch"]})
    return out
