"""What a net sweep prints.

A batch sweep (the batch axis varies): the noise obstacle's table and the core's critical-batch fit
(`otod.core.critical_batch`:
(lr, β) chosen per B by the median over seeds, S(B) = S_min(1 + B_crit/B) with a seed bootstrap that re-chooses
the settings), one panel per net (parameter count P), then per net the measured ``B_crit`` beside the
``predicted`` one of the NQM built from the net's own spectrum and noise (`otod.nets.measure.bridge`, recorded in the
results file at run time), B_noise at the target, the bill (FLOPs and examples to target); with a training-set
axis, one panel per net and size D. Over several widths the batch-vs-parameters rule, over several sizes the
batch-vs-data rule: the slope of log B_crit on log P (at fixed D) or on log D (at fixed P) with its bootstrap CI
(`otod.core.critical_batch.scaling_rules`).

A depth sweep: iterations to target against depth per series (method · init · architecture) with the
core's law choice, power against exponential by AIC (`otod.core.laws`), as the deep linear nets use it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from otod.core.api import Analysis, sweep_header
from otod.nets.model.sequence import HELD_OUT as HELD_OUT_SEQUENCES


@dataclass(frozen=True, eq=False)
class DepthAnalysis(Analysis):
    """A net sweep over depth's analysis (`depth_analysis`), with ``retarget``: what `otod.core.retarget.retarget`
    said of the lanes where the counts were re-read at another target (None at the run's own)."""

    retarget: dict | None = None


def describe(problem) -> str:
    """One line naming the net and its data (``problem``: a config's `otod.nets.model.problem.NetSpec`, or a user's
    `otod.nets.model.model_problem.ModelProblem`: its reference, size and digest)."""
    if problem.kind == "model":
        n = problem.examples or problem.data_examples
        return (f"{problem.reference} (your model: P = {problem.parameters:,}, {n:,} training examples, "
                f"digest {problem.digest})")
    n = "" if problem.examples is None else f", {problem.examples} examples"
    net = f"{problem.model} ({problem.activation}, {problem.architecture}, init {problem.init})"
    if problem.model == "transformer":
        from otod.nets.model.transformer_net import MLP_RATIO, heads_of

        net = f"transformer ({heads_of(problem)} heads, MLP {MLP_RATIO}·d, GPT-2 init)"
    if problem.data == "sequence":
        from otod.nets.model import sequence

        n = (f"{n or ''} (sequences of {sequence.LENGTH} tokens over {sequence.VOCABULARY}, loss floor the "
             f"entropy rate {sequence.source(data_seed=int(problem.data_seed)).entropy_rate:.4g} nats)")
    if getattr(problem, "held_out_targets", None) is not None:
        from otod.nets.model.data import STREAM_HELD_OUT

        held = {"digits": "the held-out digits", "sequence": f"{HELD_OUT_SEQUENCES:,} held-out sequences"}.get(
            problem.data, f"{STREAM_HELD_OUT:,} held-out examples")
        return (f"{net}, data "
                f"{problem.data}, regime " + ("stream (fresh examples every step, never repeated)" if problem.stream
                                              else "finite (D training examples repeated over epochs)")
                + f", held-out loss on {held}, {problem.loss} loss" + (n if problem.data == "sequence" else ""))
    if problem.stream:
        from otod.nets.model.data import STREAM_HELD_OUT

        held = HELD_OUT_SEQUENCES if problem.data == "sequence" else STREAM_HELD_OUT
        n = (f", a stream (fresh examples every step; the target is the loss on a fixed held-out set of "
             f"{held:,})")
    return f"{net}, data {problem.data}{n}, {problem.loss} loss"


def panel_words(panel: tuple, short: bool = False) -> str:
    """A panel's heading: 'P = 2410 parameters', with ', D = 256 examples' where the sweep has a D axis (``short``:
    'P = 2410, D = 256')."""
    values = dict(panel)
    p, d = ("", "") if short else (" parameters", " examples")
    words = f"P = {values['dim']:g}{p}" if "dim" in values else "one net"
    return words + (f", D = {values['examples']:g}{d}" if "examples" in values else "")


def of_panel(pred: dict, panel: tuple) -> bool:
    """Whether an NQM prediction (`otod.nets.sweep.predict.sweep_predictions`) is of the net and data of ``panel``."""
    values = dict(panel)
    same_net = float(pred.get("parameters", math.nan)) == float(values.get("dim", math.nan))
    return same_net and ("examples" not in values or pred.get("examples") is None or
                         float(pred["examples"]) == values["examples"])


#: The panel fields a rule may scale B_crit with, and how the report names them.
RULE_FIELDS = {"dim": ("parameters", "P", "nets"), "examples": ("training examples", "D", "training sets")}


def rule_lines(analysis) -> list[str]:
    """B_crit ∝ P^b over the widths (at each fixed D) and ∝ D^a over the training-set sizes (at each fixed P), each
    with its re-selecting bootstrap CI (`otod.core.critical_batch.scaling_rules`)."""
    from otod.core.api import scaling_rules

    lines = []
    for field, (name, symbol, what) in RULE_FIELDS.items():
        for r in scaling_rules(analysis, field):
            ci = r.no_ci or f"95% CI [{r.ci[0]:.3g}, {r.ci[1]:.3g}]"
            at = ", ".join(f"{RULE_FIELDS[f][1]} = {v:g}" for f, v in r.fixed if f in RULE_FIELDS)
            head = "batch-vs-parameters rule" if field == "dim" else "batch-vs-data rule"
            lines.append(f"{head} ({r.method}{', at ' + at if at else ''}): B_crit ∝ {symbol}^{r.slope:.3g}, {ci} "
                         f"over {r.points} {what} ({symbol} = {r.span[0]:g}..{r.span[1]:g})")
    return lines


def _ci(ci: tuple[float, float], no_ci: str | None) -> str:
    """'[low, high]', or '(no CI)' where the seeds are too few for one (the report says why once)."""
    return "(no CI)" if no_ci else f"[{ci[0]:.4g}, {ci[1]:.4g}]"


def prediction_lines(meta: dict, analysis, panel: tuple) -> list[str]:
    """The measured B_crit beside the NQM's predicted one, for the net and data of ``panel``."""
    from otod.core.api import inside

    lines = []
    for pred in meta.get("nqm_prediction") or []:
        if not of_panel(pred, panel):
            continue
        measured = {s.method: s for s in analysis.in_panel(panel)}
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
        from otod.core.api import describe_critical_batch

        grid = grid or [pred["b_crit"]]
        lines.append(f"  {pred.get('method', 'sgd')}: measured {got}; predicted (NQM from the net's spectrum and "
                     f"noise, {pred.get('noise_model', '')}) B_crit {describe_critical_batch(pred['b_crit'], grid)}, "
                     f"S_min {pred['s_min']:.4g}; "
                     f"B_noise at the target {pred.get('b_noise_target', math.nan):.4g}{ratio}")
    return lines


def bill_lines(results, analysis, panel: tuple) -> list[str]:
    """FLOPs per iteration × steps to target, per B, for each method (XLA's count, `otod.nets.sweep.bill`)."""
    from otod.nets.sweep.bill import bill_rows

    config = analysis.config
    at = panel_records(analysis, panel)
    shape = {k: int(at[k].iloc[0]) for k in ("width", "depth") if k in at and len(at)}
    if len(at) and "examples" in dict(panel):
        shape["examples"] = int(dict(panel)["examples"])
    lines = ["", "  bill: XLA's FLOPs of one step × the median steps; examples = B × steps (— where the median is "
                 "only a lower bound); rule: the layer rule's FLOPs of an SGD step (products and update only)",
             f"  {'method':<11}{'B':>6}{'FLOPs/step':>12}{'rule':>10}{'steps':>9}{'FLOPs':>11}{'examples':>10}"]
    recorded = results.meta.get("iteration_flops") if config.problem.kind == "model" else None
    for s in analysis.in_panel(panel):
        steps = np.where(s.bound, np.nan, s.median)
        for r in bill_rows(lambda b: config.spec_at({**shape, "batch": b}), s.method, s.x, steps, recorded):
            done = math.isfinite(r["flops_to_target"])
            rule = "—" if not math.isfinite(r["layer_rule_flops"]) else format(r["layer_rule_flops"], ".3g")
            lines.append(f"  {s.method:<11}{r['batch']:>6g}{r['flops_per_iteration']:>12.3g}{rule:>10}"
                         f"{(format(r['steps'], 'g') if done else '—'):>9}"
                         f"{(format(r['flops_to_target'], '.3g') if done else '—'):>11}"
                         f"{(format(r['examples_to_target'], '.3g') if done else '—'):>10}")
    return lines


def batch_report(results, analysis) -> str:
    from otod.core.api import critical_line, table
    from otod.nets.sweep.kind import USES_BETA

    meta = results.meta
    lines = []
    for panel in analysis.panels:
        series = analysis.in_panel(panel)
        rec = panel_records(analysis, panel)
        width = f", width {rec['width'].iloc[0]:g}, depth {rec['depth'].iloc[0]:g}" if len(rec) and "width" in rec \
            else ""
        lines += ["", f"net with {panel_words(panel)}{width}"] + table(series, "B", USES_BETA)
        no_ci = next((s.critical.no_ci for s in series if s.critical is not None and s.critical.no_ci), None)
        lines += ["", "  critical batch, S(B) = S_min·(1 + B_crit/B) (" + (no_ci or "95% CI: seed bootstrap "
                  f"re-choosing lr and β in each of {analysis.n_boot} resamples") + "):"]
        lines += [critical_line(s) for s in series if s.critical is not None]
        predicted = prediction_lines(meta, analysis, panel)
        if predicted and (analysis.meta or {}).get("retarget"):
            own = analysis.config.target.tol
            predicted.insert(0, f"  (the NQM's prediction is the run's, at its own target {own:g})")
        lines += predicted
        lines += bill_lines(results, analysis, panel)
    lines += ["", "steps: median over seeds at the (lr, β) with the lowest median (censored lanes count as ≥ the cap; "
                  "≥N: only a lower bound, left out of fits); lr: the chosen step (absolute); *: on the edge of the "
                  "values tried; the training loss is read every step up to 32, then 2^(⌊log₂ t⌋ − 5) apart, so a "
                  "count is exact to within 3% of itself"]
    lines += bracket_lines(results, analysis, "B") + edge_warnings(results, analysis)
    lines += rule_lines(analysis)
    return "\n".join(lines)


def bracket_lines(results, analysis, symbol: str) -> list[str]:
    """Where the chosen rates lie after ``--lr-extend`` ran lanes beyond --lr-grid (``meta["bracket"]``,
    `otod.core.bracket.place_lines`: how many are interior, which sit at the stability limit or still on an edge
    after the steps allowed); nothing for a grid tried as given (the table's * and `edge_warnings` say it)."""
    import pandas as pd

    from otod.core.api import place_lines

    if not (results.meta.get("bracket") or {}).get("lanes"):
        return []
    summary = pd.concat([group.summary for group in analysis.groups], ignore_index=True)
    tuned = summary["method"].map(analysis.config.tuned).to_numpy(bool)
    return place_lines(summary[tuned], symbol, results.meta)


def edge_warnings(results, analysis) -> list[str]:
    """The noise obstacle's lines on chosen settings at an edge (`otod.noise.search.edge_warning`); after a
    bracket (`bracket_lines`, which says where each rate lies) of β alone."""
    from otod.nets.sweep.kind import USES_BETA
    from otod.noise.search import INTERIOR, chosen_places, edge_lines

    chosen = chosen_places(analysis, USES_BETA)
    if (results.meta.get("bracket") or {}).get("lanes"):
        chosen = [{**r, "lr_place": INTERIOR} for r in chosen]
    return edge_lines(chosen, analysis.axis)


def panel_records(analysis, panel: tuple):
    """The chosen records of one panel."""
    records = analysis.records
    keep = np.ones(len(records), bool)
    for field, value in panel:
        keep &= records[field].to_numpy(float) == value
    return records[keep]


def ladder_lines(results) -> list[str]:
    """Per target of a ladder (the stream's ``--target 0.05,0.03,0.02``), per panel and method: B_crit with its CI
    (each rung's steps re-read from the same run, `otod.core.analysis.at_rung`, and analysed afresh, the (lr, β)
    re-chosen per rung), S_min, E_min = S_min·B_crit (McCandlish et al. 2018: the fewest examples, reached as
    B → 0) and the examples seen at B = B_crit, D = B_crit·S(B_crit) = 2·S_min·B_crit."""
    from otod.core.api import analyse_batches, at_rung, describe_critical_batch, frame_of, read_config

    config = read_config(results.meta)
    ladder = config.target.ladder
    frame = frame_of(results)
    seen: dict[tuple, list] = {}
    lines = ["", "per target (steps to each loss of the ladder, read from the same run, lr re-chosen per target): "
                 "B_crit [95% CI], S_min, E_min = S_min·B_crit, and D at B_crit = 2·S_min·B_crit examples seen "
                 "(a secondary view: this D is read off B_crit's own fit, so B_crit stands on both axes; "
                 "--regime stream sets D before the sweep)",
             f"  {'target':>8}  {'panel':<28}{'method':<11}{'B_crit':>26}{'S_min':>9}{'E_min':>10}{'D at B_crit':>13}"]
    for rung, tol in enumerate(ladder):
        analysis = analyse_batches(at_rung(frame, rung), results.meta, axis="batch",
                                   point=("dim", "examples", "batch"), by=("dim", "examples"), config=config)
        for panel in analysis.panels:
            for s in analysis.in_panel(panel):
                c = s.critical
                if c is None:
                    continue
                said = describe_critical_batch(c.b_crit, s.x[s.fitted]) if s.fitted.any() else "—"
                ci = "" if c.no_ci or not np.isfinite(c.b_crit_ci[0]) else \
                    f" [{c.b_crit_ci[0]:.3g}, {c.b_crit_ci[1]:.3g}]"
                inside_grid = said[:1] not in "<>—"
                e_min, d = ((c.s_min * c.b_crit, 2 * c.s_min * c.b_crit) if inside_grid else (math.nan, math.nan))
                lines.append(f"  {tol:>8g}  {panel_words(panel, short=True):<28}{s.method:<11}"
                             f"{(said.split(' (')[0] + ci):>26}{c.s_min:>9.4g}"
                             f"{(format(e_min, '.3g') if math.isfinite(e_min) else '—'):>10}"
                             f"{(format(d, '.3g') if math.isfinite(d) else '—'):>13}")
                if inside_grid:
                    seen.setdefault((panel, s.method), []).append(c)
    for (panel, method), fits in seen.items():
        rule = seen_rule(fits)
        if rule is not None:
            slope, ci = rule
            said = fits[0].no_ci or f"95% CI [{ci[0]:.3g}, {ci[1]:.3g}]"
            lines.append(f"  across targets ({panel_words(panel, short=True)}, {method}): B_crit ∝ D^{slope:.3g}, "
                         f"{said}, over {len(fits)} targets, D = the examples seen at B_crit")
    return lines


def seen_rule(fits: list) -> tuple[float, tuple[float, float]] | None:
    """B_crit ∝ D^a across a ladder's targets, D = 2·S_min·B_crit the examples seen at B_crit (at least 3 targets
    whose B_crit lies inside the batches): the least-squares slope of log B_crit on log D, and its 95% CI from the
    bootstrap rows refitted (each rung's analysis draws the same seed resamples, from the same bootstrap seed, so
    row r is one resample of the seeds, its (lr, β) re-chosen at every target)."""
    from otod.core.api import fit_line

    if len(fits) < 3:
        return None
    b = np.array([c.b_crit for c in fits])
    slope = float(fit_line(np.log(2 * np.array([c.s_min for c in fits]) * b), np.log(b))[0])
    k = min(len(c.replicates) for c in fits)
    if fits[0].no_ci or not k:
        return slope, (math.nan, math.nan)
    reps = np.stack([c.replicates[:k, :2] for c in fits], axis=1)  # [row, target, (S_min, B_crit)]
    with np.errstate(divide="ignore", invalid="ignore"):
        log_b, log_d = np.log(reps[..., 1]), np.log(2 * reps[..., 0] * reps[..., 1])
    ok = np.all(np.isfinite(log_b) & np.isfinite(log_d), axis=1)
    draws = fit_line(log_d[ok], log_b[ok])[0]
    draws = draws[np.isfinite(draws)]
    if len(draws) <= 20:
        return slope, (math.nan, math.nan)
    return slope, (float(np.percentile(draws, 2.5)), float(np.percentile(draws, 97.5)))


def depth_report(results, analysis=None) -> str:
    """Steps against depth per series, and the two laws fitted (``analysis``: the sweep's `depth_analysis`)."""
    from otod.core.api import law_table

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
    bracketed = bracket_lines(results, analysis, "L")
    return "\n".join(lines + ([""] + bracketed if bracketed else []))


def depth_series(frame, config):
    """(the records with their ``series`` label method·init·architecture, the point fields, the group fields) of a
    net depth sweep: what its analysis (`depth_analysis`) and its bracket's read (`net_placed`) both group by."""
    axes = tuple(n for n, _ in config.axes)
    labels = frame["method"].astype(str)
    for name in ("init", "architecture"):
        if name in frame:
            labels = labels + "·" + frame[name].astype(str)
    return (frame.assign(series=labels.to_numpy(object)), tuple(a for a in axes if a != "beta"),
            ("width",) if "width" in axes else ())


#: A batch sweep's point and group fields (`batch_analysis`, `net_placed`): one panel per net (P) and training set.
BATCH_POINT, BATCH_BY = ("dim", "examples", "batch"), ("dim", "examples")


def net_placed(results) -> tuple:
    """The choices the net sweep's analysis (`net_analysis`) makes at the run's own target, on the point
    estimates alone (`otod.core.analysis.placements`, through `otod.core.critical_batch.place_batches` for a batch
    sweep: no bootstrap, no fit): what the bracket's rounds read (`--lr-extend`, `otod.core.bracket`)."""
    from otod.core.api import frame_at, place_batches, placements

    config, _, frame = frame_at(results, None)
    if "batch" in dict(config.axes):
        return place_batches(frame, axis="batch", point=BATCH_POINT, by=BATCH_BY)
    labelled, point, by = depth_series(frame, config)
    return placements(labelled, point=point, by=by, series="series")


def depth_analysis(results, tol: float | None = None):
    """Iterations vs depth per series method·init·architecture, at each series' chosen lr per depth, with the
    deep-linear obstacle's two laws; ``tol``: another target, re-read from the loss traces."""
    from otod.core.api import LAWS, analyse, frame_at, law_fit

    config, tol, frame = frame_at(results, tol)
    labelled, point, by = depth_series(frame, config)
    again = frame.attrs.get("retarget")
    found = analyse(labelled, point=point, axis="depth", by=by, series="series", statistic=lambda xs: LAWS,
                    fit=lambda name, boot, stat, summary=None: law_fit(name, boot, "depth"), n_boot=1000,
                    **({} if again is None else {"tol": tol}), config=config)
    return DepthAnalysis(found.axis, found.tol, found.groups, found.theory, found.config, retarget=again)


def batch_analysis(results, tol: float | None = None):
    """A batch sweep's analysis at ``tol`` (default: the run's target; a rung of a stream's ladder, or any target
    above the run's own re-read from the lanes' loss traces: `otod.core.report.frame_at`): the core's critical batch
    per net and training set (`otod.core.critical_batch.analyse_batches`: one panel per parameter count P, the
    axis's d, and training-set size D, where the records hold it)."""
    import dataclasses

    from otod.core.api import analyse_batches, frame_at

    config, tol, frame = frame_at(results, tol)
    found = analyse_batches(frame, results.meta, axis="batch", point=BATCH_POINT, by=BATCH_BY, config=config)
    if "retarget" not in frame.attrs:
        return found
    return dataclasses.replace(found, tol=tol, meta={**results.meta, "retarget": frame.attrs["retarget"]})


def net_analysis(results, tol: float | None = None):
    """The net sweep's one analysis (`otod.core.pipeline`): the critical batch over a batch axis
    (`batch_analysis`), else the depth laws (`depth_analysis`)."""
    from otod.core.api import read_config

    if "batch" in dict(read_config(results.meta).axes):
        return batch_analysis(results, tol)
    return depth_analysis(results, tol)


def target_text(analysis, config) -> str:
    """The target the report reads: the run's own (``config``'s), or another re-read from the loss traces
    (`otod.core.retarget.retarget`), with the lanes whose outcome there the run's own pruning hid."""
    again = (getattr(analysis, "meta", None) or {}).get("retarget") or getattr(analysis, "retarget", None)
    if again is None:
        return f"{config.target.tol:g}"
    hidden = again["undetermined"]
    return (f"{again['target']:g} (re-read from the loss traces of a run to {again['run_target']:g}"
            + (f"; {hidden} lanes the run pruned before their outcome at {again['target']:g} was known count as "
               "pruned" if hidden else "") + ")")


def text_report(results, *, full: bool = False, tol: float | None = None, analysis=None) -> str:
    """The report of a net sweep (``otod fit``, ``otod sweep net``) from its one analysis (`net_analysis`, made
    here unless given)."""
    del full
    from otod.core.api import read_config

    config = read_config(results.meta)
    axes = tuple(n for n, _ in config.axes)
    analysis = net_analysis(results, tol) if analysis is None else analysis
    loss = "held-out" if getattr(config.problem, "stream", None) else "training"
    target = f"target {loss} loss {target_text(analysis, config)}"
    if getattr(config.problem, "held_out_targets", None) is not None:
        target = (f"target: each cell's held-out loss that the reference run (batch {config.problem.reference_batch}, "
                  "its best lr) reaches after D examples (the metric: held-out loss ÷ that target; 1 = reached)")
    head = [sweep_header(results), f"net: {describe(config.problem)}; {target}; {config.seeds} seeds; cap "
                                   f"{config.resolved.max_iters}; schedule {config.options.schedule}"]
    body = batch_report(results, analysis) if "batch" in axes else depth_report(results, analysis)
    if "batch" in axes and len(config.target.ladder) > 1:
        body += "\n" + "\n".join(ladder_lines(results))
    from otod.nets.sweep.grid import grid_lines, is_grid

    if is_grid(config):
        body += "\n" + "\n".join(grid_lines(results, config, tol))
    return "\n".join(head) + "\n" + body
