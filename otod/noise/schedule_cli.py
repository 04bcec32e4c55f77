"""``otod nqm-schedule``: batch-and-lr schedules on the exact NQM (`otod.noise.schedule`), either one schedule
evaluated exactly (``--schedule``) or the best batch schedule within an examples budget against the best constant
batch and the best lr schedule at constant batch (`otod.noise.schedule_search`), as a table."""

from __future__ import annotations

from pathlib import Path

import click

from otod.core.api import OtodError, finite_float, positive_int, user_errors

#: The largest --dim: a schedule's evaluation holds a few arrays of d floats, the search some 10⁴ evaluations of
#: about 30 exponentials of d each (d = 10⁴: about a minute on one core).
MAX_DIM = 1_000_000
FAMILY_LABELS = {"constant": "best constant batch", "lr-decay": "best lr schedule, constant batch",
                 "batch": "best batch schedule"}


def parse_method(text: str) -> float:
    """sgd (p = 0) or precond:P (P in [0, 1]): the preconditioner power."""
    if text == "sgd":
        return 0.0
    if text.startswith("precond:"):
        p = finite_float(text.split(":", 1)[1], "--method precond:P", "0.5")
        if 0.0 <= p <= 1.0:
            return p
    raise OtodError(f"--method {text}: need sgd or precond:P with P in [0, 1] (the schedules' recursion is SGD's), "
                    "e.g. --method precond:0.5")


def parse_schedule(text: str, reference: float = 1.0):
    """A `BatchSchedule` from ``B:LR:STEPS,...,B:LR`` (the last phase runs to the target) or
    ``doubling:B0:BMAX:STEPS:LR`` (`schedule.doubling_warmup`); LR is a multiplier of the reference step
    1/max h^{1−p} (1 on the NQM)."""
    from otod.noise.schedule import BatchSchedule, Phase, doubling_warmup

    example = "e.g. --schedule 64:1.5:5000,1024:1.5 or --schedule doubling:16:1024:1000:1.5"
    try:
        if text.startswith("doubling:"):
            parts = text.split(":")[1:]
            if len(parts) != 4:
                raise ValueError
            b0, bmax, steps, lr = (float(v) for v in parts)
            if steps != int(steps) or steps < 1:
                raise ValueError
            return doubling_warmup(b0, bmax, int(steps), lr * reference)
        phases = []
        items = text.split(",")
        for k, item in enumerate(items):
            fields = item.split(":")
            if len(fields) != (2 if k == len(items) - 1 else 3):
                raise ValueError
            steps = None
            if len(fields) == 3:
                steps = float(fields[2])
                if steps != int(steps) or steps < 0:
                    raise ValueError
                steps = int(steps)
            phases.append(Phase(float(fields[0]), float(fields[1]) * reference, steps))
        return BatchSchedule(tuple(phases))
    except OtodError as e:
        raise OtodError(f"--schedule {text}: {e}") from None
    except (ValueError, OverflowError):
        raise OtodError(f"--schedule {text}: need phases B:LR:STEPS separated by commas, the last B:LR (it runs to "
                        f"the target), with whole STEPS ≥ 0; or doubling:B0:BMAX:STEPS:LR; {example}") from None


def check_problem(dim, target, noise_spectrum, max_iters, budget):
    """The options as numbers, each refused in one line where out of range."""
    from otod.noise import theory

    d = positive_int(dim, "--dim", "1000", maximum=MAX_DIM)
    if noise_spectrum not in theory.NOISE_SPECTRA:
        raise OtodError(f"--noise-spectrum {noise_spectrum}: need one of {', '.join(theory.NOISE_SPECTRA)}, "
                        "e.g. --noise-spectrum identity")
    tol = finite_float(target, "--target", "0.01")
    initial = theory.initial_loss(theory.nqm(d, noise_spectrum))
    if not 0 < tol < initial:
        raise OtodError(f"--target {target}: need 0 < target < the initial loss {initial:.4g}, e.g. --target 0.01")
    cap = positive_int(max_iters, "--max-iters", "100000000", maximum=2 ** 62)
    factor = finite_float(budget, "--budget", "2")
    if not 1.0 <= factor <= 1e6:
        raise OtodError(f"--budget {budget}: need a factor of E_min from 1 to 10⁶ (E_min is the fewest examples of "
                        "any constant batch, which no budget below 1 allows), e.g. --budget 2")
    return d, tol, cap, factor


def search_record(comparison) -> dict:
    """The search's result as one record (what the results file holds and `search_table` prints)."""
    p, fewest = comparison.problem, comparison.fewest
    return {"dim": p.dim, "noise": p.noise, "target": p.target, "power": p.power, "budget": comparison.budget,
            "e_min": fewest.examples, "e_min_batch": fewest.schedule.phases[0].batch, "e_min_steps": fewest.steps,
            **{kind: {"steps": o.steps, "examples": o.examples, "places": dict(o.places), "evaluated": o.evaluated,
                      "schedule": [dict(p.__dict__) for p in o.schedule.phases]}
               for kind, o in comparison.optima.items()}}


def describe(phases: list[dict]) -> str:
    """A record's schedule as `BatchSchedule.describe` prints it."""
    from otod.noise.schedule import BatchSchedule, Phase

    return BatchSchedule(tuple(Phase(**ph) for ph in phases)).describe()


def search_table(record: dict) -> str:
    """The three families' optima: schedule, serial steps, examples, and steps against the constant batch (from
    `search_record`'s record, so that a results file reads back as the command printed it)."""
    from otod.noise.schedule_search import FAMILIES

    r = record
    base = r["constant"]["steps"]
    method = "sgd" if r["power"] == 0 else f"precond:{r['power']:g}"
    lines = [f"NQM d = {r['dim']} (C = {r['noise']}), target {r['target']:g}, {method}; budget {r['budget']:.4g} "
             f"examples = {r['budget'] / r['e_min']:g} × E_min (E_min {r['e_min']:.4g}: constant "
             f"B {r['e_min_batch']:.4g}, {r['e_min_steps']} steps)",
             f"{'family':<34}{'serial steps':>13}{'examples':>13}{'vs constant':>13}  "
             "schedule (lr: multiple of 1/max h)"]
    for kind in FAMILIES:
        o = r[kind]
        saving = (f"{100 * (o['steps'] - base) / base:+.1f}%" if o["steps"] > 0 and base > 0 and kind != "constant"
                  else "—")
        lines.append(f"{FAMILY_LABELS[kind]:<34}{o['steps']:>13}{o['examples']:>13.4g}{saving:>13}  "
                     f"{describe(o['schedule'])}")
    lines.append("where each optimum lies (per coordinate: b batch, i lr, k length; interior, at a true limit, or "
                 "unused: its phase never reached):")
    for kind in FAMILIES:
        o = r[kind]
        lines.append(f"  {kind}: " + ", ".join(f"{name} {place}" for name, place in o["places"].items())
                     + f" ({o['evaluated']} schedules evaluated)")
    return "\n".join(lines)


def run_record(run, schedule, q, power: float) -> dict:
    """One schedule's evaluation as a record: its phases, the run, and the expected loss at each phase's end."""
    from otod.noise.schedule import losses

    ends, t = [], 0
    for ph in schedule.phases[:-1]:
        t += ph.steps
        ends.append(t)
    curve = losses(q, schedule, ends, power) if ends else []
    return {"schedule": [dict(p.__dict__) for p in schedule.phases], **run._asdict(),
            "phase_ends": [[int(e), float(v)] for e, v in zip(ends, curve)]}


def run_table(record: dict) -> str:
    """`run_record`'s record as the command prints it."""
    r = record
    steps = str(r["steps"]) if r["steps"] >= 0 else "not reached (diverged)" if r["diverged"] else "not reached (cap)"
    lines = [f"schedule {describe(r['schedule'])}", f"serial steps to target: {steps}",
             f"examples to target: {r['examples']:.6g}" if r["steps"] >= 0 else f"examples run: {r['examples']:.6g}"]
    lines += [f"expected loss after step {e}: {v:.6g}" for e, v in r["phase_ends"]]
    return "\n".join(lines)


def table_of(record: dict) -> str:
    """The printed table of a results file's record: a search's or one schedule's."""
    return run_table(record) if "phase_ends" in record else search_table(record)


@click.command("nqm-schedule")
@click.option("--dim", default="10000", show_default=True, help="Dimension d of the NQM (hᵢ = 1/i). "
              "E.g. --dim 1000")
@click.option("--target", default="0.01", show_default=True,
              help="Target expected loss (0 < target < initial loss). E.g. --target 0.05")
@click.option("--noise-spectrum", default="hessian", show_default=True,
              help="Noise covariance C: hessian (C = H), identity, square (H²). E.g. --noise-spectrum identity")
@click.option("--method", default="sgd", show_default=True,
              help="sgd or precond:P (the update scaled by H^−P, P in [0, 1]). E.g. --method precond:0.5")
@click.option("--budget", default=None,
              help="Examples budget as a factor of E_min, the fewest examples of any constant batch (lr tuned); "
                   "every family minimises serial steps within it. Default 2 (search only). E.g. --budget 1.5")
@click.option("--max-iters", default="100000000", show_default=True,
              help="Step cap: a schedule not at the target by then is not reached. E.g. --max-iters 1000000")
@click.option("--schedule", "given", default=None,
              help="Evaluate this schedule instead of searching: B:LR:STEPS,...,B:LR (LR a multiple of 1/max h; "
                   "the last phase runs to the target) or doubling:B0:BMAX:STEPS:LR. "
                   "E.g. --schedule 64:1.5:5000,1024:1.5")
@click.option("--phases", default=2, show_default=True, type=click.IntRange(min=2, max=4),
              help="Phases K of the searched lr and batch schedules (each its own batch or lr and length; the last "
                   "runs to the target). Three cost far more than two (111 s against 4 s on d = 100). "
                   "E.g. --phases 3")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (the table on stderr). E.g. --json")
@click.option("--out", default="results", show_default=True,
              help="Folder for the results file (nqm-schedule-<digest>.json), or the .json file itself. "
                   "E.g. --out runs/")
@user_errors
def nqm_schedule(dim, target, noise_spectrum, method, budget, max_iters, given, phases, as_json, out):
    """Batch and lr schedules on the exact NQM: serial steps and examples to the target.

    \b
    Without --schedule: the best batch schedule (--phases K phases of their own batch and lr, two by default)
    within an examples budget, against the best constant batch and the best K-phase lr schedule at constant batch,
    each found by a compass search on a lattice whose optimum is checked interior (otod.noise.schedule_search; three
    phases cost far more: 111 s on d = 100).

    \b
    Examples:
      otod nqm-schedule --dim 1000
      otod nqm-schedule --dim 1000 --schedule doubling:16:1024:200:1.9
      otod nqm-schedule --dim 100 --target 0.05 --phases 3
    """
    import json

    power = parse_method(method)
    if Path(out).suffix not in ("", ".json"):
        raise OtodError(f"--out {out}: this command writes a .json results file; name a folder (no extension) or "
                        "a .json file, e.g. --out runs/ or --out runs/schedule.json")
    if given is not None:
        if phases != 2:
            raise OtodError(f"--phases {phases}: sets the search's schedules, not one --schedule evaluated (whose "
                            f"phases it lists); drop one of them, e.g. otod nqm-schedule --schedule {given}")
        if budget is not None:
            raise OtodError(f"--budget {budget}: applies to the search, not to one --schedule evaluated; drop one "
                            f"of them, e.g. otod nqm-schedule --schedule {given}")
    d, tol, cap, factor = check_problem(dim, target, noise_spectrum, max_iters, "2" if budget is None else budget)
    from otod.noise.schedule_search import Problem

    problem = Problem(d, noise_spectrum, tol, cap, power)
    if given is not None:
        from otod.noise.schedule import run_to_target

        q = problem.quadratic()
        schedule = parse_schedule(given, problem.reference(q))
        run = run_to_target(q, schedule, tol, cap, power)
        record = run_record(run, schedule, q, power)
    else:
        from otod.noise.schedule_search import best

        record = search_record(best(problem, factor, phases))
    text = table_of(record)
    path = save_record(record, {"dim": d, "noise": noise_spectrum, "target": tol, "method": method, "max_iters": cap,
                                "budget": None if given is not None else factor, "schedule": given,
                                **({"phases": phases} if phases != 2 else {})}, out)  # two: the digest of before
    if as_json:
        click.echo(text, err=True)
        click.echo(json.dumps(record))
    else:
        click.echo(text)
        click.echo(f"results: {path}")


def save_record(record: dict, config: dict, out: str):
    """Write the command's one record to ``<out>/nqm-schedule-<digest of config>.json`` (or ``out``, a .json
    file): the claims table re-reads the printed numbers from it (`table_of`)."""
    from otod.core.api import digest, environment, save_results

    meta = {"kind": "nqm-schedule", "config": config, "environment": environment(), "precision": "float64"}
    path = Path(out) if Path(out).suffix == ".json" else Path(out) / f"nqm-schedule-{digest(config)}.json"
    return save_results(path, meta, [record])
