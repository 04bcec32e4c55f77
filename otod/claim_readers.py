"""How each claim of the claims table (`otod.claims`) is read from its committed results: one function per kind
of number, each recomputing it from the records through the analysis the figures and reports use, so that a
claim re-read here is the number the figure draws.

A reader takes the claim's source paths and its arguments and returns named values (what the claim's ``format``
prints). Results and their analyses are kept per file (by path, size and modification time) for the life of the
process, since many claims read one file. Obstacle code is imported inside the readers, at the few places that
need it, so that the table's checker imports nothing it does not use.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from otod.claim_along import (along_ablation, along_below, along_checkpoint,
                              along_ends, along_holds, along_predictor, along_seed, constant_medians,
                              nqm_against, nqm_savings, predictor_values, schedule_phases, schedule_rows,
                              schedules_rows)
from otod.claim_depth import depth_law_over, depth_marks, lane_totals, median_ratio, meta_values, mode_error
from otod.claim_pages import committed_figures, doubling_ratios, schedule_path
from otod.claim_nets import bill, first_seeds, grid_left_out, ladder, nqm_curve, nqm_exponent, rate_lanes
from otod.claim_records import first_words as _first_words
from otod.claim_timings import figure_seconds
from otod.claim_theory import (batch_points, flow_error, late_lanes, lattice_counts, lattice_neighbourhood,
                                toy_minima, toy_stops)
from otod.claim_records import (curvature_and_noise, estimator_summary, flops_row, lane_range, lanes, layer_row,
                                meta_value, nqm_schedule, record, record_series, rms_exponents, trace_cost,
                                workloads)
from otod.claim_records import loaded as _loaded
from otod.claim_records import results_of
from otod.claim_records import _analysed, _series, analysis_of, medians, point_summary, span  # noqa: F401
from otod.claim_records import batch_series as _batch_series
from otod.claim_records import grid_of as _grid
from otod.claim_records import stamp as _stamp


@functools.lru_cache(maxsize=None)
def _report(stamp: tuple[str, int, int], tol: float | None) -> str:
    from otod.core.pipeline import present

    return present(_loaded(stamp), tol=tol, analysis=_analysed(stamp, tol)).text


def report_line(path: str, first: str, contains: str = "", tol: float | None = None,
                words: int = 0) -> dict[str, Any]:
    """A line of the sweep's printed report (`otod.core.pipeline.present`: what the command prints and
    ``otod fit`` reprints) whose first word is ``first`` and which holds ``contains``, its whitespace runs as one
    space: a table row or a fit line quoted in the text, re-read as printed. ``words``: only its first so many
    words (a row the text trims, its other columns left out as "...")."""
    return {"line": _first_words(_report(_stamp(path), tol).splitlines(), first, contains, words)}


def report_numbers(path: str, first: str, contains: str = "", tol: float | None = None) -> dict[str, Any]:
    """The numbers of one report line (`report_line`'s choice of line) in order, as n0, n1, …: a value the prose
    quotes from a line it does not print whole."""
    import re

    line = report_line(path, first, contains, tol)["line"]
    return {f"n{i}": float(x) for i, x in enumerate(re.findall(r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?", line))}


def condition_bill(path: str) -> dict[str, Any]:
    """A condition sweep's bill as `otod.condition.figures.bill_figure` captions it: FLOPs of one iteration per
    method (`otod.condition.bill.iteration_flops`: the file's metadata, or XLA's count of the file's config now) and
    the set-up FLOPs with what each counts (per_iter, setup)."""
    from otod.condition.bill import iteration_flops, setup_costs
    from otod.condition.figures import setup_label

    results = results_of(path)
    return {"per_iter": ", ".join(f"{m} {f:.3g}" for m, f in iteration_flops(results).items()),
            "setup": "; ".join(setup_label(results.meta, m, f) for m, f in setup_costs(results).items())}


# --- power laws in κ (condition), laws in depth (depth, toy, nets' depth sweep) -----------------------------


def power_law(path: str, method: str, tol: float | None = None) -> dict[str, Any]:
    """A condition sweep's fitted exponent b of iterations ∝ κ^b, with its seed-bootstrap 95% CI
    (`otod.condition.records`' power-law fit: the figure's legend, the report's table)."""
    fit = _series(analysis_of(path, tol), method).fit
    return {"b": fit.exponent, "lo": fit.ci_low, "hi": fit.ci_high, "grid": fit.theory_grid}


def depth_law(path: str, series: str, tol: float | None = None) -> dict[str, Any]:
    """A depth series' law chosen by AIC (`otod.depth`'s LawFit): the law, both laws' slopes with their 95% CIs,
    ΔAIC and the points fitted."""
    fit = _series(analysis_of(path, tol), series).fit
    return {"law": fit.law, "c": fit.exp_c, "c_lo": fit.exp_ci[0], "c_hi": fit.exp_ci[1], "a_exp": fit.exp_a,
            "b": fit.power_b, "b_lo": fit.power_ci[0], "b_hi": fit.power_ci[1], "a_pow": fit.power_a,
            "daic": fit.delta_aic, "points": fit.points, "left_out": fit.left_out,
            "ci": "deterministic" if fit.deterministic else "bootstrap"}


def law_row(path: str, series: str, xs: list, tol: float | None = None) -> dict[str, Any]:
    """A table row of a depth series: its medians at ``xs`` (m0, m1, …) and its law (`depth_law`'s values)."""
    return {**medians(path, series, xs, tol), **depth_law(path, series, tol)}


def two_laws(path: str, other: str, series: str, other_series: str, reference_series: str | None = None,
             tol: float | None = None) -> dict[str, Any]:
    """Two series' laws (the first from ``path``, the second from ``other``, which may be the same file) as c0,
    c1, b0, b1, daic0, daic1; with ``reference_series`` (read from ``other``, the last source) also its c_ref and
    the ratios r{i} = c_ref / c{i}, how many times slower each grows per layer."""
    first, second = depth_law(path, series, tol), depth_law(path if reference_series else other, other_series, tol)
    out = {f"{k}{i}": law[k] for i, law in enumerate((first, second)) for k in ("c", "b", "daic", "law")}
    if reference_series:
        ref = depth_law(other, reference_series, tol)["c"]
        out.update({"c_ref": ref, "r0": ref / first["c"], "r1": ref / second["c"]})
    return out


def median_range(path: str, series: str, xs: list, tol: float | None = None) -> dict[str, Any]:
    """The least and largest median of a series over axis values ``xs`` (lo, hi, and span: "lo–hi", or one
    value where they agree)."""
    m = [point_summary(path, series, x, tol)["median"] for x in xs]
    return {"lo": min(m), "hi": max(m), "span": span(m)}


def count_range(path: str, series: str, xs: list, field: str = "censored",
                tol: float | None = None) -> dict[str, Any]:
    """The least and largest lane count (``field``) of a series over axis values ``xs``, with N, a point's lanes."""
    rows = [point_summary(path, series, x, tol) for x in xs]
    n = [r[field] for r in rows]
    return {"lo": min(n), "hi": max(n), "span": span(n), "N": rows[0]["lanes"]}


def two_points(path: str, other: str, series: str, x: float, tol: float | None = None) -> dict[str, Any]:
    """One point of the same series in two sweeps (``path``, ``other``): median, q25, q75 of each, suffixed 0, 1."""
    a, b = point_summary(path, series, x, tol), point_summary(other, series, x, tol)
    return {**{f"{k}0": a[k] for k in ("median", "q25", "q75")}, **{f"{k}_0": a[k] for k in ("q25", "q75")},
            **{f"{k}1": b[k] for k in ("median", "q25", "q75")}, **{f"{k}_1": b[k] for k in ("q25", "q75")}}


def two_series(path: str, other: str, series: str, xs: list, tol: float | None = None) -> dict[str, Any]:
    """The medians of one series in two sweeps at axis values ``xs`` (a{i} from ``path``, b{i} from ``other``) and
    the least and largest ratio a/b (ratio_lo, ratio_hi)."""
    a = [point_summary(path, series, x, tol)["median"] for x in xs]
    b = [point_summary(other, series, x, tol)["median"] for x in xs]
    r = [u / v for u, v in zip(a, b)]
    return {**{f"a{i}": v for i, v in enumerate(a)}, **{f"b{i}": v for i, v in enumerate(b)}, "ratio_lo": min(r),
            "ratio_hi": max(r)}


def counts(path: str, series: str, xs: list, field: str = "diverged", tol: float | None = None) -> dict[str, Any]:
    """One lane count (``field``: diverged, censored, stalled or converged) of a series at several axis values, as
    n0, n1, … with N the lanes of a point."""
    rows = [point_summary(path, series, x, tol) for x in xs]
    return {**{f"n{i}": r[field] for i, r in enumerate(rows)}, "N": rows[0]["lanes"]}


def chosen_counts(path: str, series: str | None, xs: list, column: str, value: str,
                  tol: float | None = None) -> dict[str, Any]:
    """How many lanes at the chosen settings (the analysis's ``chosen`` records: what the figure marks) have
    ``column`` == ``value`` at each axis value of ``xs`` (n0, n1, …), of N lanes a point, and in all (total; every
    x of the series when ``xs`` is empty). The toy's ◇ marks: ``column = "minimum"``, ``value = "local"``."""
    analysis = analysis_of(path, tol)
    frames = [g.chosen for g in analysis.groups]
    import pandas as pd

    chosen = pd.concat(frames)
    if series is not None:
        chosen = chosen[chosen["series"] == series]
    at = chosen[analysis.axis].to_numpy(float)
    hit = chosen[column].eq(value).to_numpy() if column in chosen else np.zeros(len(chosen), bool)
    out = {f"n{i}": int(hit[np.isclose(at, float(x))].sum()) for i, x in enumerate(xs)}
    return {**out, "N": int(np.isclose(at, at[0]).sum()), "total": int(hit.sum())}


def width_needed(path: str, series: str, depths: list, needed: float) -> dict[str, Any]:
    """The smallest swept width whose median count is ≤ ``needed`` at each of ``depths`` (`otod.depth.figures.
    width_needed`, what the depth_width figure draws) as w0, w1, … ("none" where no width reaches it)."""
    from otod.depth.figures import width_needed as needed_widths

    table = needed_widths(analysis_of(path), float(needed))  # the sweep kind's analysis: depth_analysis
    return {f"w{i}": ("none" if table.get((series, float(d))) is None else f"{table[(series, float(d))]:g}")
            for i, d in enumerate(depths)}


# --- critical batch (nets, simulated noise sweeps) ------------------------------------------------------------


def critical_batch(path: str, method: str = "sgd", tol: float | None = None, **panel) -> dict[str, Any]:
    """S(B) = S_min(1 + B_crit/B) of one panel (`otod.core.critical_batch`: the fit the figures draw), with the
    re-selecting seed-bootstrap 95% CIs and the rms relative misfit; ``panel`` picks it by its fields (``dim``
    (P), ``examples`` (D), ``width`` as P through the records)."""
    s = _batch_series(path, method, panel, tol)
    c = s.critical
    return {"b_crit": c.b_crit, "lo": c.b_crit_ci[0], "hi": c.b_crit_ci[1], "s_min": c.s_min,
            "s_lo": c.s_min_ci[0], "s_hi": c.s_min_ci[1], "misfit": c.residual, "points": c.points,
            "censored": c.censored, "perfect_scaling": s.perfect_scaling, "lr_slope": s.lr_slope,
            "lr_points": s.lr_points}


def critical_batches(path: str, panels: list, method: str = "sgd", tol: float | None = None) -> dict[str, Any]:
    """Several panels' B_crit (b0, lo0, hi0, …) and S_min (s0, …), in the order of ``panels`` (tables of them); a
    panel's own ``tol`` re-reads it at that target (a traced net sweep read at several targets)."""
    out: dict[str, Any] = {}
    for i, panel in enumerate(panels):
        panel = dict(panel)
        c = critical_batch(path, method, panel.pop("tol", tol), **panel)
        out.update({f"b{i}": c["b_crit"], f"lo{i}": c["lo"], f"hi{i}": c["hi"], f"s{i}": c["s_min"]})
    return out


def critical_batches_and_rule(path: str, panels: list, field: str, method: str = "sgd",
                              tol: float | None = None) -> dict[str, Any]:
    """A table row of panels' B_crit (`critical_batches`) and the power law over them (`scaling_rule`: slope,
    rule_lo, rule_hi)."""
    rule = scaling_rule(path, field, method, tol)
    return {**critical_batches(path, panels, method, tol), "slope": rule["slope"], "rule_lo": rule["lo"],
            "rule_hi": rule["hi"]}


def batch_point(path: str, method: str, batch: float, tol: float | None = None, **panel) -> dict[str, Any]:
    """One batch of one panel at its chosen setting: the median steps, the chosen lr, how many of the seeds
    converged (of lanes), whether every lane stalled ("stalls"/"moves"), and the median final loss of its lanes."""
    s = _batch_series(path, method, panel, tol)
    table = s.summary
    row = table[np.isclose(table["value"].to_numpy(float), float(batch))].iloc[0]
    lanes = int(row["converged"] + row["censored"] + row["stalled"] + row["diverged"])
    chosen = analysis_of(path, tol).chosen
    at = chosen[np.isclose(chosen["batch"].to_numpy(float), float(batch)) & (chosen["method"] == method)]
    for k, v in panel.items():
        at = at[np.isclose(at[k].to_numpy(float), float(v))]
    return {"median": float(row["median"]), "lr": float(row["learning_rate"]), "converged": int(row["converged"]),
            "lanes": lanes, "stalls": "stalls" if int(row["stalled"]) == lanes else "moves",
            "final_loss": float(np.median(at["final_loss"].to_numpy(float))) if "final_loss" in at else math.nan}


def batch_medians(path: str, method: str, batches: list, tol: float | None = None, **panel) -> dict[str, Any]:
    """The median steps of one panel at several batches (m0, m1, …) and the chosen lr (lr0, …)."""
    s = _batch_series(path, method, panel, tol)
    table = s.summary
    out = {}
    for i, b in enumerate(batches):
        row = table[np.isclose(table["value"].to_numpy(float), float(b))].iloc[0]
        out[f"m{i}"], out[f"lr{i}"] = float(row["median"]), float(row["learning_rate"])
        out[f"beta{i}"] = float(row["beta"]) if "beta" in row else math.nan
        out[f"one_minus_beta{i}"] = 1 - out[f"beta{i}"]
        out[f"e{i}"] = float(b) * out[f"m{i}"]  # examples to target: B × median steps (otod.nets.sweep.bill)
    for i in range(len(batches)):
        for j in range(len(batches)):
            if i != j:
                out[f"ratio{i}{j}"] = out[f"m{i}"] / out[f"m{j}"]
    return out


def method_ratio(path: str, method: str, other: str, batches: list, tol: float | None = None,
                 **panel) -> dict[str, Any]:
    """How many times ``other``'s median steps are ``method``'s at each batch (r0, r1, …: S_other / S_method), with
    their least and largest (lo, hi): "k× fewer steps than sgd"."""
    a = batch_medians(path, method, batches, tol, **panel)
    b = batch_medians(path, other, batches, tol, **panel)
    r = [b[f"m{i}"] / a[f"m{i}"] for i in range(len(batches))]
    return {**{f"r{i}": x for i, x in enumerate(r)}, "lo": min(r), "hi": max(r)}


def two_methods(path: str, method: str, other: str, batches: list, span_to: int = 0, digits: int = 3,
                tol: float | None = None, **panel) -> dict[str, Any]:
    """One method against another on a batch sweep: ``method``'s fit (`critical_batch`'s values), its medians
    m{i} and 1 − β (one_minus_beta{i}) at ``batches``, ``other``'s medians o{i} and B_crit (other_b_crit), the
    ratios r{i} = o{i}/m{i}, and span: the ratios r0..r{span_to} as "a–b" to ``digits`` significant digits (one
    value where they round alike)."""
    own = batch_medians(path, method, batches, tol, **panel)
    theirs = batch_medians(path, other, batches, tol, **panel)
    r = [theirs[f"m{i}"] / own[f"m{i}"] for i in range(len(batches))]
    shown = sorted({f"{x:.{digits}g}" for x in r[:span_to + 1]}, key=float)
    return {**critical_batch(path, method, tol, **panel), **own,
            **{f"o{i}": theirs[f"m{i}"] for i in range(len(batches))}, **{f"r{i}": x for i, x in enumerate(r)},
            "other_b_crit": critical_batch(path, other, tol, **panel)["b_crit"],
            "span": shown[0] if len(shown) == 1 else f"{shown[0]}–{shown[-1]}"}


def scaling_rule(path: str, field: str, method: str = "sgd", tol: float | None = None) -> dict[str, Any]:
    """The power law B_crit ∝ field^slope over a sweep's panels (`otod.core.critical_batch.scaling_rules`, the
    figures' dotted line and legend), with its re-selecting bootstrap 95% CI."""
    from otod.core.critical_batch import scaling_rules

    rules = [r for r in scaling_rules(analysis_of(path, tol), field) if r.method == method]
    if len(rules) != 1:
        raise KeyError(f"{len(rules)} {method} rules over {field}")
    r = rules[0]
    return {"slope": r.slope, "lo": r.ci[0], "hi": r.ci[1], "points": r.points}


def two_rules(path: str, other: str, field: str, other_field: str, method: str = "sgd",
              tol: float | None = None) -> dict[str, Any]:
    """Two power laws of B_crit (``field`` over ``path``'s panels, ``other_field`` over ``other``'s) and whether
    their CIs overlap ("overlap" or "do not overlap")."""
    a, b = scaling_rule(path, field, method, tol), scaling_rule(other, other_field, method, tol)
    apart = a["lo"] > b["hi"] or b["lo"] > a["hi"]
    return {**a, **{f"other_{k}": v for k, v in b.items()}, "overlap": "do not overlap" if apart else "overlap"}


def series_exponent(path: str, method: str = "sgd", tol: float | None = None) -> dict[str, Any]:
    """A params sweep's fitted exponent of steps against d (the noise analysis's series ``exponent``, over the
    points not censored), with the points it used."""
    s = [x for x in analysis_of(path, tol).series if x.method == method]
    if len(s) != 1:
        raise KeyError(f"{len(s)} {method} series in {path}")
    return {"exponent": s[0].exponent, "points": s[0].exponent_points}


def two_exponents(path: str, other: str, method: str = "sgd") -> dict[str, Any]:
    """`series_exponent` of two params sweeps, as e0 and e1."""
    return {"e0": series_exponent(path, method)["exponent"], "e1": series_exponent(other, method)["exponent"]}


def nqm_prediction(path: str, index: int = 0) -> dict[str, Any]:
    """The NQM's predicted critical batch kept in a net sweep's metadata (``nqm_prediction``, `otod.nets.sweep.predict`,
    the figures' open squares and faint curve): B_crit, S_min, B_noise at the target, parameters."""
    q = results_of(path).meta["nqm_prediction"][index]
    return {"b_crit": q["b_crit"], "s_min": q.get("s_min", math.nan),
            "b_noise_target": q.get("b_noise_target", math.nan), "parameters": q.get("parameters", math.nan)}


def nqm_predictions(path: str, indices: list) -> dict[str, Any]:
    """Several nets' NQM predictions (`nqm_prediction`) as b{i} (B_crit), s{i} (S_min), n{i} (B_noise at the
    target), and the noise scales measured at init that built each NQM (measured_b_noise{i},
    measured_b_simple{i})."""
    out: dict[str, Any] = {}
    for i, k in enumerate(indices):
        q = results_of(path).meta["nqm_prediction"][int(k)]
        out.update({f"b{i}": q["b_crit"], f"s{i}": q["s_min"], f"n{i}": q["b_noise_target"],
                    f"measured_b_noise{i}": q["measured_b_noise"], f"measured_b_simple{i}": q["measured_b_simple"]})
    return out


def nqm_misses(path: str, panels: list, method: str = "sgd") -> dict[str, Any]:
    """How far the NQM's prediction lies from the measurement, per net (its parameter count in ``panels``):
    r{i} = predicted / measured B_crit, inv{i} its inverse, s_ratio{i} = measured / predicted S_min."""
    predicted = {float(q["parameters"]): q for q in results_of(path).meta["nqm_prediction"]}
    out: dict[str, Any] = {}
    for i, p in enumerate(panels):
        c, q = critical_batch(path, method, dim=p), predicted[float(p)]
        out.update({f"r{i}": q["b_crit"] / c["b_crit"], f"inv{i}": c["b_crit"] / q["b_crit"],
                    f"s_ratio{i}": c["s_min"] / q["s_min"]})
    return out


# --- curvature (otod curvature's records) ----------------------------------------------------------------------


def _curvature_records(path: str) -> list[dict]:
    return list(results_of(path).records)


def curvature(path: str, step: int, quantile_key: str = "kappa_q") -> dict[str, Any]:
    """One checkpoint of an ``otod curvature`` results file: λ_max, λ_q, κ_q, the negative share, the loss."""
    rows = [r for r in _curvature_records(path) if int(r["step"]) == int(step)]
    if not rows:
        raise KeyError(f"no checkpoint at step {step}")
    r = rows[0]
    out = {k: r[k] for k in r if isinstance(r[k], (int, float, np.floating, np.integer))}
    out["trace"] = r["trace_per_parameter"] * r["parameters"]  # tr H
    out["negative_percent"] = 100 * r["negative_mass"]
    return out


def curvature_checkpoints(path: str, steps: list, field: str) -> dict[str, Any]:
    """One field (``lambda_max``, ``kappa_q``, ``negative_percent``, ``train_loss``, …) of one net at several
    checkpoints, as v0, v1, …"""
    return {f"v{i}": curvature(path, s)[field] for i, s in enumerate(steps)}


def curvature_nets(*paths: str, step: int, field: str) -> dict[str, Any]:
    """One field of several nets (one file each) at one checkpoint, as v0, v1, …, with their least and largest."""
    v = [curvature(p, step)[field] for p in paths]
    return {**{f"v{i}": x for i, x in enumerate(v)}, "lo": min(v), "hi": max(v)}


def kappa_exponents(*paths: str, steps: tuple = (0, 1000)) -> dict[str, Any]:
    """The least-squares power law κ_q ∝ P^b over the nets of ``paths`` at each checkpoint of ``steps`` (the fit
    of `otod.nets.figures.curvature.fitted_power`, the kappa_width figure's dotted line), as b0, b1, …, with each
    net's κ_q as k{checkpoint}_{net}."""
    from otod.nets.figures.curvature import fitted_power

    out: dict[str, Any] = {}
    for j, step in enumerate(steps):
        rows = [curvature(p, step) for p in paths]
        kappa = np.array([r["kappa_q"] for r in rows], float)
        fit = fitted_power(np.array([r["parameters"] for r in rows], float), kappa)
        out[f"b{j}"] = fit[0] if fit else math.nan
        out.update({f"k{j}_{i}": float(k) for i, k in enumerate(kappa)})
    return out


def curvature_corners(*paths: str, field: str, steps: list) -> dict[str, Any]:
    """One field of several nets at several checkpoints, as v{checkpoint}_{net}."""
    return {f"v{j}_{i}": curvature(p, s)[field] for j, s in enumerate(steps) for i, p in enumerate(paths)}


def curvature_table(path: str, steps: list, fields: list) -> dict[str, Any]:
    """Several fields of one net at several checkpoints, as {field}{checkpoint index}."""
    return {f"{f}{j}": curvature(path, s)[f] for j, s in enumerate(steps) for f in fields}


# --- B_crit along training (otod.nets.along: one sweep per checkpoint, its predictors beside it) ---------------


def along_fields(*paths: str, fields: list, method: str = "sgd") -> dict[str, Any]:
    """``fields`` of `along_checkpoint` (step, loss, milestone, b_crit, lo, hi, s_min, misfit)
    at each checkpoint of ``paths``, as {field}{i}."""
    out: dict[str, Any] = {}
    for i, path in enumerate(paths):
        row = along_checkpoint(path, method)
        out.update({f"{field}{i}": row[field] for field in fields})
    return out


def along_spread(*paths: str, name: str, method: str = "sgd", nqm: bool | None = None) -> dict[str, Any]:
    """One predictor's least and largest seed (`along_predictor`'s min and max) at each
    checkpoint of ``paths``, as min{i}, max{i}: how far the seeds scatter."""
    out: dict[str, Any] = {}
    for i, path in enumerate(paths):
        p = along_predictor(path, name, method, nqm)
        out.update({f"min{i}": p["min"], f"max{i}": p["max"]})
    return out


def along_row(path: str, names: list, method: str = "sgd", nqm: bool | None = None,
              batches: list = ()) -> dict[str, Any]:
    """A checkpoint's row: `along_checkpoint`'s values and, per predictor in ``names``, `along_predictor`'s as
    {name}_{value} (b_simple_median, b_noise_ratio_lo, …); with ``batches``, the median steps there (m0, m1, …:
    `batch_medians`)."""
    out = {**along_checkpoint(path, method), **(batch_medians(path, method, list(batches)) if batches else {})}
    for name in names:
        out.update({f"{name}_{k}": v for k, v in along_predictor(path, name, method, nqm).items()})
    return out


def along_range(*paths: str, names: tuple = (), method: str = "sgd", nqm: bool | None = None) -> dict[str, Any]:
    """Over the checkpoints of ``paths`` (in order): B_crit's least and largest (b_lo, b_hi) and its CIs' ends
    (ci_lo, ci_hi), the first and last S_min (s_first, s_last), and per predictor in ``names`` its ratios' least
    and largest ({name}_lo, {name}_hi), its medians' first and last ({name}_first, {name}_last) and
    {name}_growth = last / first, with B_crit's growth (b_growth = last / first)."""
    rows = [along_checkpoint(p, method) for p in paths]
    out = {"b_lo": min(r["b_crit"] for r in rows), "b_hi": max(r["b_crit"] for r in rows),
           "ci_lo": min(r["lo"] for r in rows), "ci_hi": max(r["hi"] for r in rows), "s_first": rows[0]["s_min"],
           "s_last": rows[-1]["s_min"], "b_growth": rows[-1]["b_crit"] / rows[0]["b_crit"]}
    for name in names:
        got = [along_predictor(p, name, method, nqm) for p in paths]
        ratios = [g["ratio"] for g in got if math.isfinite(g["ratio"])]
        out.update({f"{name}_lo": min(ratios), f"{name}_hi": max(ratios), f"{name}_first": got[0]["median"],
                    f"{name}_last": got[-1]["median"], f"{name}_growth": got[-1]["median"] / got[0]["median"]})
    return out


def along_triple(*paths: str, method: str = "sgd") -> dict[str, Any]:
    """B_crit at each checkpoint of ``paths``, as b0, b1, … (a path through training: 15.9 → 35.2 → 24.1)."""
    return {f"b{i}": along_checkpoint(p, method)["b_crit"] for i, p in enumerate(paths)}


def along_triple_ci(*paths: str, method: str = "sgd") -> dict[str, Any]:
    """B_crit with its CI at each checkpoint of ``paths``, as b{i}, lo{i}, hi{i}."""
    out: dict[str, Any] = {}
    for i, p in enumerate(paths):
        c = along_checkpoint(p, method)
        out.update({f"b{i}": c["b_crit"], f"lo{i}": c["lo"], f"hi{i}": c["hi"]})
    return out


def along_least_seed(*paths: str, name: str, method: str = "sgd", nqm: bool | None = None) -> dict[str, Any]:
    """Per checkpoint, a predictor's least seed (v{i}) over the top of B_crit's CI (t{i}), and the least of these
    quotients (least): how far even the lowest seed's value lies above the measurement."""
    out: dict[str, Any] = {}
    for i, p in enumerate(paths):
        out[f"v{i}"], out[f"t{i}"] = along_predictor(p, name, method, nqm)["min"], along_checkpoint(p, method)["hi"]
    out["least"] = min(out[f"v{i}"] / out[f"t{i}"] for i in range(len(paths)))
    return out


def along_best(*paths: str, method: str = "sgd", nqm: bool | None = None) -> dict[str, Any]:
    """The predictors ranked over the checkpoints of ``paths`` (`otod.nets.along.predictors.ranking`: the typical miss
    exp(median |log ratio|)), as best (its label), best_factor, and for each predictor factor_{name} and its
    least and largest ratio (lo_{name}, hi_{name})."""
    from otod.nets.along.predictors import LABELS, is_predictor, ranking

    ratios: dict[str, list[float]] = {}
    for path in paths:
        for name in predictor_values(path, nqm):
            if is_predictor(name):
                ratios.setdefault(name, []).append(along_predictor(path, name, method, nqm)["ratio"])
    ranked = ranking(ratios)
    out = {"best": LABELS.get(ranked[0]["predictor"], ranked[0]["predictor"]), "best_factor": ranked[0]["factor"]}
    for r in ranked:
        name = r["predictor"]
        out.update({f"factor_{name}": r["factor"], f"lo_{name}": r["ratio_min"], f"hi_{name}": r["ratio_max"]})
    return out


def along_best_range(*paths: str, split: int, names: list, method: str = "sgd", nqm: bool | None = None
                     ) -> dict[str, Any]:
    """The least and largest typical miss (`along_best`'s factor_{name}) of the predictors ``names`` over two nets'
    checkpoints: ``paths[:split]`` one net's, ``paths[split:]`` the other's (lo, hi)."""
    factors = [best[f"factor_{name}"] for group in (paths[:split], paths[split:])
               for best in [along_best(*group, method=method, nqm=nqm)] for name in names]
    return {"lo": min(factors), "hi": max(factors)}


# --- the joint D × P grid (otod.nets.sweep.grid on otod.core.joint_law) --------------------------------------------


def joint_law(path: str, method: str = "sgd", definition: str = "mccandlish") -> dict[str, Any]:
    """A joint grid's law log B_crit = c + a·log D + b·log P (``definition``: "mccandlish" or "zhang"), as its report
    prints it (`otod.nets.sweep.grid.grid_analyses`): a, b, a − b (d) with their 95% CIs (…_lo, …_hi), the cells
    fitted, the verdict, the smallest detectable |a − b| (NaN where a − b's interval excludes 0) and each exponent's
    upper bound rounded up as the verdict says it (a_up, b_up)."""
    import math

    law = getattr(_grid(_stamp(path), method), definition)
    verdict = law.verdict()
    return {"a": law.a, "a_lo": law.a_ci[0], "a_hi": law.a_ci[1], "b": law.b, "b_lo": law.b_ci[0],
            "b_hi": law.b_ci[1], "d": law.difference, "d_lo": law.difference_ci[0], "d_hi": law.difference_ci[1],
            "cells": law.cells, "verdict": verdict.answer,
            "detectable": math.nan if verdict.detectable is None else verdict.detectable,
            "a_up": math.ceil(law.a_ci[1] * 100) / 100, "b_up": math.ceil(law.b_ci[1] * 100) / 100}


# batch schedules (schedule_rows and the rest): otod.claim_along


READERS = {f.__name__: f for f in (report_line, record_series, rms_exponents, estimator_summary, workloads, layer_row,
                                   curvature_and_noise, lanes, lane_range, condition_bill, report_numbers, flops_row, nqm_schedule, record, power_law, depth_law, law_row, two_laws, point_summary, medians, median_range, count_range,
                                   counts, two_points, two_series, chosen_counts, width_needed, critical_batch,
                                   critical_batches, critical_batches_and_rule, batch_point, batch_medians, method_ratio, two_methods, scaling_rule, two_rules, series_exponent, two_exponents, nqm_prediction, nqm_predictions, nqm_misses,
                                   curvature, curvature_checkpoints, curvature_nets, curvature_corners,
                                   curvature_table, kappa_exponents, along_checkpoint, along_predictor,
                                   along_row, along_range, along_triple, along_triple_ci, along_least_seed, along_best, along_best_range,
                                   schedule_rows, joint_law, trace_cost, meta_value, meta_values,
                                   depth_law_over, depth_marks, lane_totals, median_ratio,
                                   mode_error, figure_seconds, along_fields, along_spread, along_below,
                                   along_holds, along_ends, along_ablation, along_seed, nqm_against, schedule_phases,
                                   schedules_rows, constant_medians, nqm_savings, bill, first_seeds,
                                   grid_left_out, ladder, nqm_curve, nqm_exponent, rate_lanes,
                                   batch_points, lattice_counts, lattice_neighbourhood, late_lanes, toy_minima,
                                   toy_stops, flow_error, doubling_ratios, schedule_path, committed_figures)}
