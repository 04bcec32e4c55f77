"""What a net sweep prints.

A batch sweep (the batch axis varies): the noise obstacle's table and the core's critical-batch fit
(`otod.core.critical_batch`:
(lr, β) chosen per B by the median over seeds, S(B) = S_min(1 + B_crit/B) with a seed bootstrap that re-chooses
the settings), one panel per net (parameter count P), then per net the measured ``B_crit`` beside the
``predicted`` one of the NQM built from the net's own spectrum and noise (`otod.nets.bridge`, recorded in the
results file at run time), B_noise at the target, the bill (FLOPs and examples to target), and over several
widths the batch-vs-parameters rule: the slope of log B_crit on log P with its bootstrap CI.

A depth sweep: iterations to target against depth per series (method · init · architecture) with the
core's law choice, power against exponential by AIC (`otod.core.laws`), as the deep linear nets use it.
"""

from __future__ import annotations

import math

import numpy as np

from otod.core.report import sweep_header


def describe(problem: dict) -> str:
    """One line naming the net and its data."""
    n = "" if problem.get("examples") is None else f", {problem['examples']} examples"
    return (f"{problem['model']} ({problem['activation']}, {problem['architecture']}, init {problem['init']}), "
            f"data {problem['data']}{n}, {problem['loss']} loss")


def inside(b_crit: float, batches) -> bool:
    """Whether a fitted B_crit lies within the batches it was fitted on (beyond them it is an extrapolation, not a
    measurement: `otod.core.critical_batch.describe_critical_batch` says so, and no rule or ratio uses it)."""
    b = np.asarray(batches, float)
    return bool(b.size and math.isfinite(b_crit) and b.min() <= b_crit <= b.max())


def width_rule(analysis) -> dict | None:
    """The batch-vs-parameters rule over the panels of a batch sweep with several nets: the least-squares slope of
    log B_crit on log P, with a 95% CI from the panels' bootstrap replicates (each panel's seeds resampled and its
    settings re-chosen independently), over the panels whose B_crit is finite and inside its grid."""
    from otod.core.analysis import fit_line

    panels = [(dim, s) for dim in analysis.dims for s in analysis.at(dim)]
    by_method: dict[str, list] = {}
    for dim, s in panels:
        if s.critical is not None and inside(s.critical.b_crit, s.x[s.fitted]):
            by_method.setdefault(s.method, []).append((dim, s))
    out = {}
    for method, rows in by_method.items():
        if len(rows) < 3:
            continue
        p = np.log(np.array([d for d, _ in rows], float))
        b = np.log(np.array([s.critical.b_crit for _, s in rows], float))
        slope, intercept, _ = (float(v) for v in fit_line(p, b))
        reps = [s.critical.replicates[:, 1] for _, s in rows]
        k = min(len(r) for r in reps)
        draws = []
        if k:
            stacked = np.log(np.stack([r[:k] for r in reps], axis=1))
            ok = np.all(np.isfinite(stacked), axis=1)
            draws = [float(fit_line(p, row)[0]) for row in stacked[ok]]
        no_ci = next((s.critical.no_ci for _, s in rows if s.critical.no_ci), None)  # too few seeds: no CI
        ci = (float(np.percentile(draws, 2.5)), float(np.percentile(draws, 97.5))) if len(draws) > 20 and \
            no_ci is None else (math.nan, math.nan)
        out[method] = {"slope": slope, "ci": ci, "points": len(rows), "no_ci": no_ci, "intercept": intercept,
                       "parameters": (float(np.exp(p.min())), float(np.exp(p.max())))}
    return out or None


def _ci(ci: tuple[float, float], no_ci: str | None) -> str:
    """'[low, high]', or '(no CI)' where the seeds are too few for one (the report says why once)."""
    return "(no CI)" if no_ci else f"[{ci[0]:.4g}, {ci[1]:.4g}]"


def prediction_lines(meta: dict, analysis, dim: float) -> list[str]:
    """The measured B_crit beside the NQM's predicted one, for the net of ``dim`` parameters."""
    lines = []
    for pred in meta.get("nqm_prediction") or []:
        if float(pred.get("parameters", math.nan)) != float(dim):
            continue
        measured = {s.method: s for s in analysis.at(dim)}
        s = measured.get(pred.get("method", "sgd"))
        got = f"B_crit {s.critical.b_crit:.4g} {_ci(s.critical.b_crit_ci, s.critical.no_ci)}, " \
              f"S_min {s.critical.s_min:.4g}" if s is not None and s.critical is not None else "no measured fit"
        grid = [b for b, steps in pred.get("curve") or [] if math.isfinite(steps)]
        ratio = ""
        if s is not None and s.critical is not None and pred.get("s_min"):
            both = inside(s.critical.b_crit, s.x[s.fitted]) and inside(pred["b_crit"], grid)
            ratio = (f"; measured/predicted B_crit {s.critical.b_crit / pred['b_crit']:.3g}" if both else
                     "; no B_crit ratio (a B_crit beyond its batches)") + \
                f", S_min {s.critical.s_min / pred['s_min']:.3g}"
        from otod.core.critical_batch import describe_critical_batch

        grid = grid or [pred["b_crit"]]
        lines.append(f"  {pred.get('method', 'sgd')}: measured {got}; predicted (NQM from the net's spectrum and "
                     f"noise, {pred.get('noise_model', '')}) B_crit {describe_critical_batch(pred['b_crit'], grid)}, "
                     f"S_min {pred['s_min']:.4g}; "
                     f"B_noise at the target {pred.get('b_noise_target', math.nan):.4g}{ratio}")
    return lines


def bill_lines(results, analysis, dim: float) -> list[str]:
    """FLOPs per iteration × steps to target, per B, for each method (XLA's count, `otod.nets.bill`)."""
    from otod.core.config import SweepConfig
    from otod.nets.bill import bill_rows

    config = SweepConfig.from_dict(analysis.config)
    at = analysis.records[analysis.records["dim"] == dim]
    shape = {"width": int(at["width"].iloc[0]), "depth": int(at["depth"].iloc[0])} if len(at) else {}
    lines = ["", "  bill: XLA's FLOPs of one step × the median steps; examples = B × steps (— where the median is "
                 "only a lower bound); rule: the layer rule's FLOPs of an SGD step (products and update only)",
             f"  {'method':<11}{'B':>6}{'FLOPs/step':>12}{'rule':>10}{'steps':>9}{'FLOPs':>11}{'examples':>10}"]
    for s in analysis.at(dim):
        steps = np.where(s.bound, np.nan, s.median)
        for r in bill_rows(lambda b: config.spec_at({**shape, "batch": b}), s.method, s.x, steps):
            done = math.isfinite(r["flops_to_target"])
            rule = "—" if not math.isfinite(r["layer_rule_flops"]) else format(r["layer_rule_flops"], ".3g")
            lines.append(f"  {s.method:<11}{r['batch']:>6g}{r['flops_per_iteration']:>12.3g}{rule:>10}"
                         f"{(format(r['steps'], 'g') if done else '—'):>9}"
                         f"{(format(r['flops_to_target'], '.3g') if done else '—'):>11}"
                         f"{(format(r['examples_to_target'], '.3g') if done else '—'):>10}")
    return lines


def batch_report(results, analysis) -> str:
    from otod.core.batch_report import critical_line, table
    from otod.nets.kind import USES_BETA
    from otod.noise.report import edge_warning

    meta = results.meta
    lines = []
    for dim in analysis.dims:
        series = analysis.at(dim)
        rec = analysis.records[analysis.records["dim"] == dim]
        width = f", width {rec['width'].iloc[0]:g}, depth {rec['depth'].iloc[0]:g}" if len(rec) else ""
        lines += ["", f"net with P = {dim:g} parameters{width}"] + table(series, "B", USES_BETA)
        no_ci = next((s.critical.no_ci for s in series if s.critical is not None and s.critical.no_ci), None)
        lines += ["", "  critical batch, S(B) = S_min·(1 + B_crit/B) (" + (no_ci or "95% CI: seed bootstrap "
                  f"re-choosing lr and β in each of {analysis.n_boot} resamples") + "):"]
        lines += [critical_line(s) for s in series if s.critical is not None]
        predicted = prediction_lines(meta, analysis, dim)
        if predicted and (analysis.meta or {}).get("retarget"):
            own = meta["config"]["target"]["tol"]
            predicted.insert(0, f"  (the NQM's prediction is the run's, at its own target {own:g})")
        lines += predicted
        lines += bill_lines(results, analysis, dim)
    lines += ["", "steps: median over seeds at the (lr, β) with the lowest median (censored lanes count as ≥ the cap; "
                  "≥N: only a lower bound, left out of fits); lr: the chosen step (absolute); *: on the edge of the "
                  "values tried; the training loss is read every step up to 32, then 2^(⌊log₂ t⌋ − 5) apart, so a "
                  "count is exact to within 3% of itself"]
    lines += edge_warning(analysis)
    rule = width_rule(analysis) if len(analysis.dims) > 1 else None
    for method, r in (rule or {}).items():
        ci = r["no_ci"] or f"95% CI [{r['ci'][0]:.3g}, {r['ci'][1]:.3g}]"
        lines.append(f"batch-vs-parameters rule ({method}): B_crit ∝ P^{r['slope']:.3g}, {ci} over {r['points']} "
                     "nets")
    return "\n".join(lines)


def depth_report(results, analysis=None) -> str:
    """Steps against depth per series, and the two laws fitted (``analysis``: the sweep's `depth_analysis`)."""
    from otod.core.laws import law_table

    analysis = depth_analysis(results) if analysis is None else analysis
    lines = []
    for group in analysis.groups:
        if group.heading:
            lines += ["", group.heading]
        for s in group.series:
            rows = s.summary
            cells = ", ".join(f"L={v:g}: " + ("≥" if b else "") + f"{m:.4g}" for v, m, b in
                              zip(rows["value"], rows["median"], rows["lower_bound"]))
            lines.append(f"  {s.name}: {cells}")
        lines += ["", "iterations vs depth: power law a·L^b against exponential a·e^{cL}, chosen by AIC (as the "
                      "deep-linear obstacle fits its laws):", law_table([s.fit for s in group.series], "L")]
    return "\n".join(lines)


def depth_analysis(results, tol: float | None = None):
    """Iterations vs depth per series method·init·architecture, at each series' chosen lr per depth, with the
    deep-linear obstacle's two laws; ``tol``: another target, re-read from the loss traces."""
    from otod.core.analysis import analyse
    from otod.core.laws import LAWS, law_fit
    from otod.core.report import frame_at

    _, tol, frame = frame_at(results, tol)
    config = results.meta["config"]
    axes = tuple(config["axes"])
    labels = frame["method"].astype(str)
    for name in ("init", "architecture"):
        if name in frame:
            labels = labels + "·" + frame[name].astype(str)
    point = tuple(a for a in axes if a != "beta")
    again = frame.attrs.get("retarget")
    return analyse(frame.assign(series=labels.to_numpy(object)), point=point, axis="depth",
                   by=("width",) if "width" in axes else (), series="series", statistic=lambda xs: LAWS,
                   fit=lambda name, boot, stat, summary=None: law_fit(name, boot, "depth"), n_boot=1000,
                   **({} if again is None else {"tol": tol, "config": {**config, "retarget": again}}))


def batch_analysis(results, tol: float | None = None):
    """A batch sweep's analysis: the core's critical batch per net (`otod.core.critical_batch.analyse_batches`:
    one group per parameter count P, the axis's d)."""
    import dataclasses

    from otod.core.critical_batch import analyse_batches
    from otod.core.report import frame_at

    _, tol, frame = frame_at(results, tol)  # another target: re-read from the loss traces
    found = analyse_batches(frame, results.meta, axis="batch", point=("dim", "batch"))
    if "retarget" not in frame.attrs:
        return found
    return dataclasses.replace(found, tol=tol, meta={**results.meta, "retarget": frame.attrs["retarget"]})


def net_analysis(results, tol: float | None = None):
    """The net sweep's one analysis (`otod.core.pipeline`): the critical batch over a batch axis
    (`batch_analysis`), else the depth laws (`depth_analysis`)."""
    if "batch" in results.meta["config"]["axes"]:
        return batch_analysis(results, tol)
    return depth_analysis(results, tol)


def target_text(analysis, config: dict) -> str:
    """The target the report reads: the run's own, or another re-read from the loss traces
    (`otod.core.traces.retarget`), with the lanes whose outcome there the run's own pruning hid."""
    again = ((getattr(analysis, "meta", None) or {}).get("retarget")
             or (analysis.config if isinstance(analysis.config, dict) else {}).get("retarget"))
    if again is None:
        return f"{config['target']['tol']:g}"
    hidden = again["undetermined"]
    return (f"{again['target']:g} (re-read from the loss traces of a run to {again['run_target']:g}"
            + (f"; {hidden} lanes the run pruned before their outcome at {again['target']:g} was known count as "
               "pruned" if hidden else "") + ")")


def text_report(results, *, full: bool = False, tol: float | None = None, analysis=None) -> str:
    """The report of a net sweep (``otod fit``, ``otod sweep net``) from its one analysis (`net_analysis`, made
    here unless given)."""
    del full
    meta = results.meta
    config = meta["config"]
    axes = tuple(config["axes"])
    analysis = net_analysis(results, tol) if analysis is None else analysis
    head = [sweep_header(results), f"net: {describe(config['problem'])}; target training loss "
                                   f"{target_text(analysis, config)}; {config['seeds']} seeds; cap "
                                   f"{config['resolved']['max_iters']}; schedule {config['options']['schedule']}"]
    body = batch_report(results, analysis) if "batch" in axes else depth_report(results, analysis)
    return "\n".join(head) + "\n" + body
