"""Readers of the claims table (`otod.claims`) for docs/nets-critical-batch.md's numbers that no other reader
gives: the lanes of one learning rate beyond the chosen one, a panel's bill (XLA's FLOPs of a step × the median
steps, `otod.nets.sweep.bill`), the NQM's predicted S(B) against the measured one and the exponent of its
predicted B_crit over the nets, a sweep re-read on its first seeds only, the cells a joint grid leaves out of its
law, and a stream's target ladder (registered in `otod.claim_readers.READERS` beside the others).

Each recomputes its numbers from the committed results through the analysis the report and figures use
(`otod.core.pipeline.analyse`, `otod.nets.sweep.report`, `otod.nets.sweep.grid`)."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from otod.claim_records import analysis_of, batch_series, grid_of, loaded, results_of, stamp

#: Counts as the prose writes them ("the two left out", "four above 256").
WORDS = ("none", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def _panel_frame(path: str, panel: dict):
    """The records of one panel (fields equal to ``panel``, e.g. dim = 2410) as a frame."""
    frame = results_of(path).to_pandas()
    for key, value in panel.items():
        frame = frame[np.isclose(frame[key].to_numpy(float), float(value))]
    return frame


def rate_lanes(path: str, learning_rate: float, batch_min: float = 0, method: str = "sgd",
               **panel) -> dict[str, Any]:
    """Every lane of one panel at one learning rate (chosen or not) and batch ≥ ``batch_min``: how many (n), their
    statuses (status: the distinct ones, "/"-joined), and the least and largest final loss (loss_lo, loss_hi):
    what became of the grid step above the chosen one ("pruned": the engine stopped it once it could no longer
    beat the best rate, `otod.core.engine`)."""
    frame = _panel_frame(path, panel)
    frame = frame[(frame["method"] == method) & np.isclose(frame["learning_rate"].to_numpy(float), learning_rate)
                  & (frame["batch"].to_numpy(float) >= batch_min)]
    if frame.empty:
        raise KeyError(f"no {method} lanes at lr {learning_rate} with {panel}")
    losses = frame["final_loss"].to_numpy(float)
    return {"lr": float(learning_rate), "n": len(frame), "status": "/".join(sorted(set(frame["status"]))),
            "loss_lo": float(losses.min()), "loss_hi": float(losses.max())}


def bill(path: str, batches: list, method: str = "sgd", tol: float | None = None, **panel) -> dict[str, Any]:
    """One panel's bill at ``batches`` as the sweep's report prints it (`otod.nets.sweep.report.bill_lines`):
    XLA's FLOPs of one step × the median steps (flops{i}), examples B × steps (examples{i}), and between the first
    two batches the compute ratio (compute = flops1 / flops0) and the steps ratio (fewer = steps0 / steps1)."""
    from otod.nets.sweep.bill import bill_rows
    from otod.nets.sweep.report import panel_records

    analysis = analysis_of(path, tol)
    s = batch_series(path, method, panel, tol)
    key = next(p for p in analysis.panels if any(x is s for x in analysis.in_panel(p)))
    at = panel_records(analysis, key)
    shape = {k: int(at[k].iloc[0]) for k in ("width", "depth") if k in at and len(at)}
    steps = [float(s.median[np.isclose(s.x, float(b))][0]) for b in batches]
    rows = bill_rows(lambda b: analysis.config.spec_at({**shape, "batch": b}), method, [float(b) for b in batches],
                     steps)
    out = {f"flops{i}": r["flops_to_target"] for i, r in enumerate(rows)}
    out.update({f"examples{i}": r["examples_to_target"] for i, r in enumerate(rows)})
    if len(rows) > 1:
        out.update(compute=rows[1]["flops_to_target"] / rows[0]["flops_to_target"], fewer=steps[0] / steps[1])
    return out


def nqm_exponent(path: str) -> dict[str, Any]:
    """The least-squares slope of log B_crit on log P over the NQM's predictions kept in a net sweep's metadata
    (``nqm_prediction``, one per net): how fast the NQM says the critical batch grows with the parameters."""
    q = results_of(path).meta["nqm_prediction"]
    p = np.log([float(x["parameters"]) for x in q])
    b = np.log([float(x["b_crit"]) for x in q])
    return {"slope": float(np.polyfit(p, b, 1)[0]), "nets": len(q)}


def nqm_curve(path: str, index: int, batches: list, method: str = "sgd") -> dict[str, Any]:
    """The NQM's predicted steps (its ``curve`` in the metadata, `otod.nets.sweep.predict`) against the measured
    median steps of the same net (the panel of its parameter count) at ``batches``: predicted p{i}, measured
    m{i}, faster{i} = p/m (how many times fewer steps the net takes than predicted) and slower{i} = m/p."""
    q = results_of(path).meta["nqm_prediction"][index]
    curve = {float(b): float(s) for b, s in q["curve"]}
    s = batch_series(path, method, {"dim": float(q["parameters"])})
    out: dict[str, Any] = {}
    for i, b in enumerate(batches):
        p, m = curve[float(b)], float(s.median[np.isclose(s.x, float(b))][0])
        out.update({f"p{i}": p, f"m{i}": m, f"faster{i}": p / m, f"slower{i}": m / p})
    return out


def first_seeds(path: str, seeds: int, field: str, method: str = "sgd") -> dict[str, Any]:
    """A batch sweep re-read on its first ``seeds`` seeds only, through the same analysis (`otod.core.pipeline.
    analyse`): each panel's B_crit (b{i}, panels in the analysis's order) and the power law over the panels
    (slope; below `MIN_BOOTSTRAP_SEEDS` there is no CI), and whether those lie inside the full file's 95% CIs
    (inside: "inside" or "not inside"): what the sweep read before its last seeds were added."""
    from otod.core.critical_batch import scaling_rules
    from otod.core.pipeline import analyse
    from otod.core.results import Results
    from otod.obstacles import load_all

    load_all()
    full = results_of(path)
    kept = sorted({r["seed"] for r in full.records})[:seeds]
    part = analyse(Results(full.meta, [r for r in full.records if r["seed"] in kept]), None)
    whole = analysis_of(path)
    out: dict[str, Any] = {}
    inside = True
    for i, (p, q) in enumerate(zip(part.panels, whole.panels)):
        a = next(s for s in part.in_panel(p) if s.method == method).critical
        b = next(s for s in whole.in_panel(q) if s.method == method).critical
        out[f"b{i}"] = a.b_crit
        inside &= b.b_crit_ci[0] <= a.b_crit <= b.b_crit_ci[1]
    slope = next(r for r in scaling_rules(part, field) if r.method == method).slope
    ci = next(r for r in scaling_rules(whole, field) if r.method == method).ci
    inside &= ci[0] <= slope <= ci[1]
    return {**out, "slope": slope, "inside": "inside" if inside else "not inside"}


def grid_left_out(path: str, method: str = "sgd", definition: str = "mccandlish") -> dict[str, Any]:
    """The cells of a joint D × P grid that its law leaves out (`otod.core.joint_law.PlaneLaw.left_out`: the
    estimate only a bound beyond the batches fitted), grouped as the text reads them: "below" (below the grid's
    smallest batch b_min), "above" (above its largest, b_max) and "short" (a cell whose fitted batches start above
    b_min, its estimate below them): per group its count (…_n, …_word) and the least and largest D and P of its
    cells (…_d_lo, …_d_hi, …_p_lo, …_p_hi); for one "short" cell its estimate and fitted batches (short_value,
    short_b_lo, short_b_hi). With cells (fitted) and total (all cells)."""
    grid = grid_of(stamp(path), method)
    b_min = min(c.batches[0] for c in grid.cells)
    b_max = max(c.batches[1] for c in grid.cells)
    groups: dict[str, list] = {"below": [], "above": [], "short": []}
    for c in grid.cells:
        place = c.places[definition]
        if place == "below":
            groups["short" if c.batches[0] > b_min else "below"].append(c)
        elif place == "above":
            groups["above"].append(c)
    out: dict[str, Any] = {"cells": getattr(grid, definition).cells, "total": len(grid.cells), "b_min": b_min,
                           "b_max": b_max}
    for name, cells in groups.items():
        d = [c.data for c in cells] or [math.nan]
        p = [c.params for c in cells] or [math.nan]
        out.update({f"{name}_n": len(cells), f"{name}_word": WORDS[len(cells)], f"{name}_d_lo": min(d),
                    f"{name}_d_hi": max(d), f"{name}_p_lo": min(p), f"{name}_p_hi": max(p)})
    short = groups["short"]
    one = short[0] if len(short) == 1 else None
    out.update(short_value=one.values[definition] if one else math.nan,
               short_b_lo=one.batches[0] if one else math.nan, short_b_hi=one.batches[1] if one else math.nan)
    return out


@functools.lru_cache(maxsize=None)
def _ladder(stamp_: tuple[str, int, int], method: str) -> tuple:
    from otod.core.api import analyse_batches, at_rung, frame_of, read_config

    results = loaded(stamp_)
    config = read_config(results.meta)
    frame = frame_of(results)
    fits = []
    for k in range(len(config.target.ladder)):
        analysis = analyse_batches(at_rung(frame, k), results.meta, axis="batch", point=("dim", "examples", "batch"),
                                   by=("dim", "examples"), config=config)
        series = [s for p in analysis.panels for s in analysis.in_panel(p) if s.method == method]
        if len(series) != 1:
            raise KeyError(f"{len(series)} {method} series at rung {k}")
        fits.append(series[0].critical)
    return tuple(config.target.ladder), tuple(fits)


def ladder(path: str, method: str = "sgd") -> dict[str, Any]:
    """A stream sweep's target ladder (``--stream --target L1,L2,…``) as its report's per-target table prints it
    (`otod.nets.sweep.report.ladder_lines`: the steps to each loss re-read from the same run, the lr re-chosen per
    target): per rung i the target t{i}, B_crit b{i} and its 95% CI (lo{i}, hi{i}), S_min s{i}, and D = 2·S_min·
    B_crit the examples seen at B_crit (seen{i}); with the law B_crit ∝ D^a across the ladder
    (`otod.nets.sweep.report.seen_rule`: slope, slope_lo, slope_hi)."""
    from otod.nets.sweep.report import seen_rule

    targets, fits = _ladder(stamp(path), method)
    out: dict[str, Any] = {}
    for i, (t, c) in enumerate(zip(targets, fits)):
        out.update({f"t{i}": t, f"b{i}": c.b_crit, f"lo{i}": c.b_crit_ci[0], f"hi{i}": c.b_crit_ci[1],
                    f"s{i}": c.s_min, f"seen{i}": 2 * c.s_min * c.b_crit})
    slope, ci = seen_rule(list(fits)) or (math.nan, (math.nan, math.nan))
    return {**out, "slope": slope, "slope_lo": ci[0], "slope_hi": ci[1]}
