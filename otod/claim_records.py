"""Readers of the claims table (`otod.claims`) for results a command writes as it prints them (``otod flops``'
rows, ``otod nqm-schedule``'s tables, one record's fields), and the per-process cache of loaded results files that
every reader shares (`otod.claim_readers` holds the readers that go through a sweep's analysis)."""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path
from typing import Any

import numpy as np


def stamp(path: str) -> tuple[str, int, int]:
    s = os.stat(path)
    return str(Path(path).resolve()), s.st_size, s.st_mtime_ns


@functools.lru_cache(maxsize=None)
def loaded(stamp: tuple[str, int, int]):
    import otod

    return otod.load(stamp[0])


def results_of(path: str):
    """The results file at ``path`` (`otod.load`, verified against its checksums), read once per process."""
    return loaded(stamp(path))


def first_words(lines, first: str, contains: str, words: int) -> str:
    """The first line of ``lines`` whose first word is ``first`` and which holds ``contains``, as its first
    ``words`` words (all where 0), one space apart."""
    for line in lines:
        split = line.split()
        if split and split[0] == first and contains in line:
            return " ".join(split[:words] if words else split)
    raise KeyError(f"no report line starting {first!r} with {contains!r}")


def flops_row(path: str, batch: int, model: str = "mlp", optimizer: str = "sgd", words: int = 0) -> dict[str, Any]:
    """One row of ``otod flops``' table re-made from its results file's record (`otod.cost.cli.flops_row_text`, the
    command's own row format), as its first ``words`` words, with the record's ratios (ratio_xla, ratio_formula)."""
    from otod.cost.cli import flops_row_text

    rows = [r for r in results_of(path).records
            if r["batch"] == batch and r["model"] == model and r["optimizer"] == optimizer]
    if not rows:
        raise KeyError(f"no flops record for {model} at batch {batch} with {optimizer}")
    line = first_words([flops_row_text(rows[0])], model, "", words)
    return {"line": line, "ratio_xla": rows[0]["ratio_xla"], "ratio_formula": rows[0]["ratio_formula"]}


def _schedule_values(record: dict) -> dict[str, Any]:
    """An ``otod nqm-schedule`` record's numbers by name: a search's families (const_, lr_, batch_: steps,
    examples, the schedule as printed, its phases' batches b0, b1, lrs lr0, lr1 and first length k0, the last
    phase's steps last) with budget and e_min; one schedule's steps and examples."""
    from otod.noise.schedule_cli import describe

    if "phase_ends" in record:
        return {"steps": record["steps"], "examples": record["examples"], "schedule": describe(record["schedule"])}
    out = {"budget": record["budget"], "e_min": record["e_min"]}
    for kind, name in (("constant", "const"), ("lr-decay", "lr"), ("batch", "batch")):
        o = record[kind]
        out.update({f"{name}_steps": o["steps"], f"{name}_examples": o["examples"],
                    f"{name}_schedule": describe(o["schedule"])})
        for i, ph in enumerate(o["schedule"]):
            out.update({f"{name}_b{i}": ph["batch"], f"{name}_lr{i}": ph["lr"]})
        first = o["schedule"][0]["steps"]
        out.update({f"{name}_k0": first, f"{name}_last": o["steps"] - first} if first is not None else {})
    out.update({"lr_saving": 100 * (1 - out["lr_steps"] / out["const_steps"]),
                "batch_saving": 100 * (1 - out["batch_steps"] / out["const_steps"]),
                "batch_vs_lr": 100 * (1 - out["batch_steps"] / out["lr_steps"])})
    return out


def nqm_schedule(*paths: str, first: str = "", contains: str = "", words: int = 0) -> dict[str, Any]:
    """``otod nqm-schedule``'s results (one record a file, `otod.noise.schedule_cli`): with ``first``, the line of
    its table (re-made from the record by the command's own `table_of`) that starts so and holds ``contains``, as
    its first ``words`` words; the first file's whole table (table); each file's numbers (`_schedule_values`),
    suffixed 1, 2, … after the first; and ``fewer``, the % fewer steps of the first (one schedule) than the best
    constant batch of a search among them."""
    from otod.noise.schedule_cli import table_of

    records = [results_of(p).records[0] for p in paths]
    out: dict[str, Any] = {"table": " ".join(table_of(records[0]).split())}
    values = [_schedule_values(r) for r in records]
    for i, v in enumerate(values):
        out.update({(k if i == 0 else f"{k}{i}"): x for k, x in v.items()})
    search = next((v for v in values if "const_steps" in v), None)
    if search and "steps" in values[0]:  # a schedule against the search's best constant batch
        out["fewer"] = 100 * (1 - values[0]["steps"] / search["const_steps"])
    if first:
        out["line"] = first_words(table_of(records[0]).splitlines(), first, contains, words)
    return out


def record(path: str, **where) -> dict[str, Any]:
    """The first record of a results file whose fields equal ``where`` (e.g. step = 200, b_small = 8), its fields
    by name and each list field's entries as name0, name1, …: a number a command prints straight from one record
    (a checkpoint's noise scales, a curvature file's top eigenvalues)."""
    for r in results_of(path).records:
        if all(r.get(k) == v for k, v in where.items()):
            out = dict(r)
            for k, v in r.items():
                if isinstance(v, (list, tuple, np.ndarray)):
                    out.update({f"{k}{i}": x for i, x in enumerate(v)})
            return out
    raise KeyError(f"no record with {where}")


def record_series(path: str, key: str, values: list, **where) -> dict[str, Any]:
    """`record` at each of ``values`` of ``key`` (e.g. step = 0, 100, 1000), its scalar fields suffixed by the
    value's index (b_simple0, b_simple1, …): one quantity along a run's checkpoints."""
    out: dict[str, Any] = {}
    for i, v in enumerate(values):
        r = record(path, **{key: v}, **where)
        out.update({f"{k}{i}": x for k, x in r.items() if not isinstance(x, (list, tuple, np.ndarray, dict))})
    return out


def rms_exponents(path: str) -> dict[str, Any]:
    """The noise_rms figure's fitted exponents (`otod.noise.rms.exponents`, what its legend and caption print) from
    its kept draws: norm (of N(0, I_d) noise against d) and mean_error (of a mean of n draws against n), with their
    standard errors norm_se and mean_error_se (`otod.noise.rms.exponent_errors`)."""
    from otod.noise.rms import exponent_errors, exponents

    records = results_of(path).records
    return {**exponents(records), **{f"{k}_se": v for k, v in exponent_errors(records).items()}}


def estimator_summary(path: str) -> dict[str, Any]:
    """The noise_estimator figure's run (`otod.noise.estimators.estimate_summary`, what its caption prints), per
    pair and decay in the file's order, suffixed 0, 1, …: pair, decay, cut and below (shares of the steps, in %),
    lag_lo, lag_hi and lag_step (the exact value over the median estimate)."""
    from otod.noise.estimators import estimate_summary

    out: dict[str, Any] = {}
    for i, s in enumerate(estimate_summary(results_of(path).records)):
        out.update({f"{k}{i}": (100 * v if k in ("cut", "below") else v) for k, v in s.items()})
    return out


def workloads(path: str, *along: str, net: str = "mlp") -> dict[str, Any]:
    """One net's checkpoints in the nets_workloads figure's kept measurement (`otod.nets.figures.workloads.measured`,
    what it draws): per checkpoint i, step{i}, loss{i}, b_simple{i}, b_noise{i} (tr(HΣ) from the drawn examples) and
    se{i}, B_noise's standard error (tr(HΣ)'s over GᵀHG, the figure's bar), with the net's parameters and examples.
    With ``along`` (an ``otod noise-scale --model mlp`` file: the same net and start along the sweep's minibatch
    order), its exact values at the same steps (along_b_simple{i}, along_b_noise{i}, along_loss{i}) and the ratios
    along / figure (ratio_simple{i}, ratio_noise{i})."""
    from otod.nets.figures.workloads import by_net

    rows = by_net(results_of(path).records)[net]
    out: dict[str, Any] = {"parameters": rows[0]["parameters"], "examples": rows[0]["examples"]}
    for i, r in enumerate(rows):
        out.update({f"step{i}": r["step"], f"loss{i}": r["loss"], f"b_simple{i}": r["b_simple"],
                    f"b_noise{i}": r["b_noise"], f"se{i}": r["trace_h_sigma_se"] / r["gHg"]})
        if along:
            a = next(x for x in results_of(along[0]).records if x["step"] == r["step"])
            out.update({f"along_b_simple{i}": a["b_simple"], f"along_b_noise{i}": a["b_noise"],
                        f"along_loss{i}": a["loss"], f"ratio_simple{i}": a["b_simple"] / r["b_simple"],
                        f"ratio_noise{i}": a["b_noise"] / r["b_noise"]})
    return out


def layer_row(path: str, step: int, layer: str) -> dict[str, Any]:
    """A row of ``otod curvature --per-layer``'s per-layer table re-made from its results file by the command's own
    `otod.nets.curvature_text.layer_lines` (line): the checkpoint ``step``'s row of ``layer`` (its printed name,
    e.g. "['w2']")."""
    from otod.nets.curvature_text import layer_lines

    rows = [line for line in layer_lines(results_of(path).records) if line.split()[:2] == [str(step), layer]]
    if not rows:
        raise KeyError(f"no per-layer row of {layer} at step {step}")
    return {"line": " ".join(rows[0].split())}


def curvature_and_noise(curvature_path: str, noise_path: str, step: int = 0) -> dict[str, Any]:
    """One checkpoint of a model measured by ``otod curvature`` and ``otod noise-scale`` (two results files): the
    curvature record's fields (lambda_max, kappa_q, …) and the noise-scale record's (b_simple, b_noise, …) at
    ``step``, as a table row of a model beside others prints them."""
    noise = next(r for r in results_of(noise_path).records if r["step"] == step)
    return {**noise, **record(curvature_path, step=step)}


def lanes(path: str, axis: str, xs: list, status: str = "stalled", **where) -> dict[str, Any]:
    """Every lane (each lr and seed, chosen or not) of a sweep whose fields equal ``where``, at each of ``xs`` of
    ``axis``: how many there are per x (lanes: the most at any x), how many have ``status`` (count: the fewest at
    any x; share: "all" where that is every lane at every x, else "{count} of"), and their final losses over all
    those lanes (loss_min, loss_median, loss_max)."""
    frame = results_of(path).to_pandas()
    for key, value in where.items():
        frame = frame[frame[key] == value]
    at = [frame[np.isclose(frame[axis].to_numpy(float), float(x))] for x in xs]
    total, hit = max(len(f) for f in at), min(int((f["status"] == status).sum()) for f in at)
    losses = np.concatenate([f["final_loss"].to_numpy(float) for f in at])
    every = hit == total and all(len(f) == total for f in at)
    return {"lanes": total, "count": hit, "share": "all" if every else f"{hit} of", "loss_min": float(losses.min()),
            "loss_median": float(np.median(losses)), "loss_max": float(losses.max())}


def lane_range(path: str, field: str = "iterations", **where) -> dict[str, Any]:
    """The least and largest ``field`` (lo, hi) over the records whose fields equal ``where`` (e.g. method =
    "gd-opt"), and how many they are (n): a spread of lanes the text quotes whole."""
    values = [r[field] for r in results_of(path).records if all(r.get(k) == v for k, v in where.items())]
    if not values:
        raise KeyError(f"no record with {where}")
    return {"lo": min(values), "hi": max(values), "n": len(values)}


def trace_cost(path: str, **where) -> dict[str, Any]:
    """What a sweep's loss traces cost in room: the file's records whose fields equal ``where`` (one panel, e.g.
    dim = 2410: the default `otod sweep net`'s lanes in a width sweep) written with their ``loss_trace`` and without
    it (`otod.core.results.save`, the same writer and metadata both times, in a scratch folder), in KB (with_kb,
    without_kb), the losses the traces hold (losses) and the bytes each adds, (with − without) / losses (each)."""
    import tempfile

    from otod.core.results import save

    results = results_of(path)
    meta = {k: v for k, v in results.meta.items() if k not in ("chunks", "meta_sha256", "record_count")}
    records = [dict(r) for r in results.records if all(r.get(k) == v for k, v in where.items())]
    losses = sum(len(r["loss_trace"]) for r in records if r.get("loss_trace") is not None)
    with tempfile.TemporaryDirectory() as scratch:
        save(Path(scratch) / "with.parquet", meta, records)
        save(Path(scratch) / "without.parquet", meta,
             [{k: v for k, v in r.items() if k != "loss_trace"} for r in records])
        with_bytes = os.path.getsize(Path(scratch) / "with.parquet")
        without_bytes = os.path.getsize(Path(scratch) / "without.parquet")
    return {"with_kb": with_bytes / 1000, "without_kb": without_bytes / 1000, "losses": losses,
            "each": (with_bytes - without_bytes) / losses}


def meta_value(path: str, key: str) -> dict[str, Any]:
    """One value of a results file's metadata, ``key`` dotted through its tables (lane_iterations.ratio: the
    lane-iterations the engine's loops ran per one the lanes needed, as the report's first line prints it), as
    value."""
    value: Any = results_of(path).meta
    for part in key.split("."):
        value = value[part]
    return {"value": value}


# --- the analysis the readers share (`otod.claim_readers`, `otod.claim_depth`) ---------------------------------


@functools.lru_cache(maxsize=None)
def _analysed(stamp: tuple[str, int, int], tol: float | None):
    from otod.core.pipeline import analyse
    from otod.obstacles import load_all

    load_all()
    return analyse(loaded(stamp), tol)


def analysis_of(path: str, tol: float | None = None):
    """The sweep's one analysis (`otod.core.pipeline.analyse`: what its report, ``otod fit`` and its figure read),
    made once per file and tolerance."""
    return _analysed(stamp(path), tol)


def _series(analysis, name: str):
    """The series called ``name`` (a method, or method·init for depth) in any group of the analysis."""
    found = [s for g in analysis.groups for s in g.series if s.name == name]
    if not found:
        known = sorted({s.name for g in analysis.groups for s in g.series})
        raise KeyError(f"no series {name!r}; the file has {known}")
    return found[0]


def batch_series(path: str, method: str, panel: dict, tol: float | None = None):
    """The one ``method`` series of a batch sweep's analysis whose panel's fields equal ``panel`` (``dim`` (P),
    ``examples`` (D)); KeyError where none or several match."""
    analysis = analysis_of(path, tol)
    found = []
    for p in analysis.panels:
        values = dict(p)
        if all(math.isclose(float(values.get(k, math.nan)), float(v)) for k, v in panel.items()):
            found += [s for s in analysis.in_panel(p) if s.method == method]
    if len(found) != 1:
        raise KeyError(f"{len(found)} {method} series in panels {analysis.panels} match {panel}")
    return found[0]


@functools.lru_cache(maxsize=None)
def grid_of(stamp: tuple[str, int, int], method: str):
    """A joint D × P grid's reading for ``method`` (`otod.nets.sweep.grid.grid_analyses`: its cells and both
    definitions' joint laws, as its report prints them), made once per file."""
    from otod.nets.sweep.grid import grid_analyses

    return grid_analyses(loaded(stamp))[method]


def point_summary(path: str, series: str, x: float, tol: float | None = None) -> dict[str, Any]:
    """One point of a series at its chosen setting (the analysis's summary row at axis value ``x``): the median
    over seeds, its quartiles, and how many lanes converged, were censored, stalled or diverged (of N seeds)."""
    summary = _series(analysis_of(path, tol), series).summary
    row = summary[np.isclose(summary["value"].to_numpy(float), float(x))]
    if row.empty:
        raise KeyError(f"series {series!r} has no point at {x}")
    r = row.iloc[0]
    lanes = int(r["converged"] + r["censored"] + r["stalled"] + r["diverged"])
    return {"median": float(r["median"]), "q25": float(r["q25"]), "q75": float(r["q75"]),
            "converged": int(r["converged"]), "censored": int(r["censored"]), "stalled": int(r["stalled"]),
            "diverged": int(r["diverged"]), "lanes": lanes, "lr": float(r["learning_rate"])}


def medians(path: str, series: str, xs: list, tol: float | None = None) -> dict[str, Any]:
    """The medians of a series at several axis values, as m0, m1, … (for lists such as "112, 244, 400")."""
    return {f"m{i}": point_summary(path, series, x, tol)["median"] for i, x in enumerate(xs)}


def span(values) -> str:
    """"a–b" for the least and largest of ``values`` (as %g), or "a" where they are one value."""
    lo, hi = min(values), max(values)
    return f"{lo:g}" if lo == hi else f"{lo:g}–{hi:g}"
