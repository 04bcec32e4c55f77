"""What a noise or params sweep prints: steps to target per batch size (or dimension) and method with the chosen
lr and β, the perfect-scaling region, the fitted critical batch with its CI, the exact noise scales, the ideal
estimator's line, and the best lr's slope."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from otod.core import results as results_io
from otod.noise import search, theory
from otod.noise.records import choose_setting, critical_batch, lr_slope, medians, tidy


class Report(NamedTuple):
    results: results_io.Results
    text: str
    files: list


def _steps(value: float, bound: bool) -> str:
    if not math.isfinite(value):
        return "—"
    return f"≥{value:.0f}" if bound else f"{value:.6g}"


def quadratic_of(config: dict):
    """The exact quadratic of a results file's problem, or None (regression, rosenbrock)."""
    p = config["problem"]
    if p["kind"] == "nqm":
        return theory.nqm(int(p["dim"]), p["noise"])
    if p["kind"] == "isotropic":
        return theory.isotropic(int(p["dim"]), p["sigma"], p["distance"])
    return None


def exact_noise_scales(config: dict, records: list[dict]) -> list[str]:
    """B_simple and B_noise at the start (E θ² = s₀) and where SGD at the largest batch reaches the target (its
    exact second moments at its hitting step, chosen lr), whitened for precond:p (McCandlish et al. 2018)."""
    q = quadratic_of(config)
    if q is None:
        return []
    lines = []
    tol = config["target"]["tol"]
    for method in dict.fromkeys(r["method"] for r in records):
        if not (method == "sgd" or method.startswith("precond")):
            continue
        power = float(method.split(":")[1]) if ":" in method else (1.0 if method == "precond" else 0.0)
        rows = [r for r in records if r["method"] == method]
        start = theory.noise_scales(q, q.s0, power)
        text = f"{method}: B_simple {start[0]:.4g}, B_noise {start[1]:.4g} at the start"
        # the largest batch whose median over every seed (lanes that did not converge count as +∞, as in the table)
        # is finite: its median step, not one seed's, and no unconverged lane quietly left out
        by_batch: dict[float, list[dict]] = {}
        for r in rows:
            by_batch.setdefault(r["batch"], []).append(r)
        finite = [b for b, at in by_batch.items()
                  if np.isfinite(np.median([r["iterations"] if r["status"] == "converged" else np.inf for r in at]))]
        if finite:
            batch = max(finite)
            at = by_batch[batch]
            step = int(round(np.median([r["iterations"] if r["status"] == "converged" else np.inf for r in at])))
            lr = float(np.median([r["learning_rate"] for r in at]))
            x = theory.contraction(q, np.array([lr]), power)[0]
            noise = theory.noise_variance(q, np.array([lr]), np.array([batch]), power)[0]
            s = theory.sgd_second_moment(step, x, noise, q.s0)
            end = theory.noise_scales(q, s, power)
            text += (f"; B_simple {end[0]:.4g}, B_noise {end[1]:.4g} at the target ({method} at B = {batch:g}, "
                     f"median step {step} over {len(at)} seed{'s' * (len(at) > 1)})")
        lines.append(text)
    if lines:
        lines.insert(0, f"exact noise scales (expected state; loss target {tol:g}):")
        lines.append("B_noise is not one number per run: it grows as the loss falls (|G|² falls with the loss, the "
                     "gradient noise does not), from its start to its target value above; the fitted B_crit "
                     "summarises the steps of whole runs, so one expects it between the two (McCandlish et al. 2018 compare "
                     "B_crit with B_noise averaged over training)")
    return lines


def _points(pairs, axis: str) -> str:
    by_method: dict[str, list] = {}
    for m, x in pairs:
        by_method.setdefault(m, []).append(x)
    name = "B" if axis == "batch" else "d"
    return "; ".join(f"{m} at {name} = {', '.join(f'{x:g}' for x in sorted(xs))}"
                     for m, xs in sorted(by_method.items()))


def edge_lines(records: list[dict], axis: str) -> list[str]:
    """What the chosen records on an edge mean. An lr on the largest edge within `search.LIMIT_MARGIN` of the
    method's stability limit (2/L, 2(1 + β)/L for heavy-ball, in whitened coordinates) is that limit: no larger
    step is stable, so it is not a failure of the search. Any other lr edge may hide a better step beyond the
    lrs tried. β = 0 on the edge means no momentum (no averaging) is best, the end of β's range; β = 0.999 is the
    β axis's stated limit; any other β edge is the end of a --beta list."""
    chosen = [r for r in records if r.get("lr_on_edge") or r.get("beta_on_edge")]
    at_limit, lr_edge, beta_zero, beta_top, beta_list = set(), set(), set(), set(), set()
    for r in chosen:
        key = (r["method"], r[axis])
        if r.get("lr_on_edge"):
            m = r.get("lr_multiplier")
            (at_limit if m is not None and search.near_limit(r["method"], m, r["beta"]) else lr_edge).add(key)
        if r.get("beta_on_edge"):
            (beta_zero if r["beta"] == 0.0 else beta_top if r["beta"] >= 0.999 else beta_list).add(key)
    lines = []
    if at_limit:
        lines.append(f"lr* at the stability limit ({_points(at_limit, axis)}): the chosen lr is the largest tried and "
                     f"within {search.LIMIT_MARGIN:.2g} of the limit (2 × the reference step, 2(1 + β) × it for "
                     "heavy-ball): no larger step is stable, so this is the limit itself, not a failure of the search")
    if lr_edge:
        lines.append(f"warning: lr* lies on the edge of the lrs tried ({_points(lr_edge, axis)}): the best step may "
                     "lie beyond them; widen --lr-grid")
    if beta_zero:
        lines.append(f"β* = 0 ({_points(beta_zero, axis)}): no momentum (or no averaging) is best there")
    if beta_top:
        lines.append(f"warning: β* = 0.999, the β axis's limit ({_points(beta_top, axis)}): a longer memory may do "
                     "better still")
    if beta_list:
        lines.append(f"warning: β* lies on the edge of --beta ({_points(beta_list, axis)}): widen --beta")
    return lines


def text_report(results: results_io.Results, *, full: bool = False, tol: float | None = None) -> str:
    del full, tol
    meta = results.meta
    config = meta["config"]
    records = choose_setting(tidy(results))
    axis = "dim" if meta["sweep"] == "params" else "batch"
    methods = list(dict.fromkeys(r["method"] for r in records))
    p = config["problem"]
    head = (f"{meta['sweep']} sweep ({meta.get('mode', 'simulate')}): {p['kind']} "
            + ", ".join(f"{k} = {v}" for k, v in p.items() if k != "kind" and not (k == "dim" and axis == "dim"))
            + f"; target loss {config['target']['tol']:g}; schedule {config['options']['schedule']}; "
            f"{config['seeds'] if meta.get('mode') != 'exact' else 1} seed(s); cap {config['resolved']['max_iters']}")
    lines = [head, ""]
    cols = {m: medians(records, m, axis) for m in methods}
    xs = sorted({r[axis] for r in records})
    lr_of = {(r["method"], r[axis]): (r["learning_rate"], r["beta"]) for r in records}
    edge = sorted({(r["method"], r[axis]) for r in records if r.get("lr_on_edge")})
    beta_edge = sorted({(r["method"], r[axis]) for r in records if r.get("beta_on_edge")})
    header = f"{'B' if axis == 'batch' else 'd':>7} " + "".join(f"{m:>30}" for m in methods)
    lines += [header, " " * 8 + "".join(f"{'steps':>12}{'lr':>10}{'β':>8}" for _ in methods)]
    for x in xs:
        row = f"{x:>7g} "
        for m in methods:
            xm, med, bound, _, _ = cols[m]
            i = list(xm).index(x) if x in xm else None
            lr, beta = (math.nan if v is None else v for v in lr_of.get((m, x), (math.nan, math.nan)))
            uses_beta = m in ("heavy-ball", "ema")
            mark = "*" if (m, x) in edge else " "
            beta_mark = "*" if (m, x) in beta_edge else " "
            row += (f"{_steps(med[i], bound[i]) if i is not None else '—':>12}{lr:>9.3g}{mark}"
                    f"{f'{beta:.3g}' if uses_beta else '—':>7}{beta_mark if uses_beta else ' '}")
        lines.append(row)
    lines += ["", "steps: median over seeds at the (lr, β) with the lowest median (censored lanes count as ≥ the "
              "cap; ≥N: the median is only a lower bound, left out of fits); lr: the chosen step; β: heavy-ball's momentum "
              "or ema's decay (— where a method has none); *: the chosen value is the smallest or largest tried there"]
    lines += edge_lines(records, axis)
    if axis == "batch":
        q = quadratic_of(config)
        if q is not None:
            ideal = theory.ideal_steps(len(q.h), config["target"]["tol"], np.asarray(xs))
            lines.append("ideal estimator d/(2·target·B): " + ", ".join(f"B={b:g}: {v:.3g}" for b, v in
                                                                          zip(xs[::4], ideal[::4])))
        lines += ["", "critical batch, S(B) = S_min·(1 + B_crit/B) fitted with S_min, B_crit ≥ 0 (beyond the grid: "
                  "said so, not extrapolated), 95% CI from a bootstrap over seeds; perfect scaling: largest B whose "
                  "next grid point B' has S(B')/S(B) ≤ 1.1·B/B'; best-lr slope over that region:"]
        for m in methods:
            fit = critical_batch(records, m)
            xm, med, bound, _, _ = cols[m]
            ok = np.isfinite(med) & ~bound
            limit = theory.perfect_scaling_limit(xm[ok], med[ok])
            slope, n = lr_slope(records, m, limit)
            ci = "deterministic" if fit.deterministic else (f"S_min [{fit.s_min_ci[0]:.4g}, {fit.s_min_ci[1]:.4g}], "
                                                            f"B_crit [{fit.b_crit_ci[0]:.4g}, {fit.b_crit_ci[1]:.4g}]")
            region = ("no perfect-scaling region" if limit is None else
                      f"perfect scaling up to B = {limit:g}  lr slope {slope:.3g} ({n} points)")
            lines.append(f"  {m:<14} S_min {fit.s_min:.4g}  B_crit {theory.describe_critical_batch(fit.b_crit, xm[ok])} "
                         f"({ci}; {fit.points} points, {fit.excluded} censored left out)  {region}")
        lines += [""] + exact_noise_scales(config, records)
    else:
        from otod.noise.records import loglog_slope

        lines += ["", "exponent of steps vs d (log-log least squares over the points whose median is not censored):"]
        for m in methods:
            xm, med, bound, _, _ = cols[m]
            ok = np.isfinite(med) & ~bound
            lines.append(f"  {m:<14} {loglog_slope(xm[ok], med[ok]):.3g} ({int(ok.sum())} points)")
    if results.path is not None:
        lines += ["", f"results: {results.path}"]
    return "\n".join(lines)
