"""What a noise or params sweep prints, read from its one analysis (`otod.noise.analysis.NoiseAnalysis`): steps to
target per batch size (or dimension) and method with the chosen lr and β, each marked by where it lies among the
values searched (inside them, at a true limit, or at the end of a list or grid tried as given: `MARKS`, with one
line per kind), the critical batch with its CI and misfit, the perfect-scaling region and the chosen
lr's slope over it, the exact noise scales, and the ideal estimator's line."""

from __future__ import annotations


import numpy as np

from otod.core.batch_report import critical_line, table
from otod.core.config import SweepConfig
from otod.noise import search, theory
from otod.core.critical_batch import Series
from otod.noise.analysis import NoiseAnalysis, analyse
from otod.noise.options import USES_BETA


def quadratic_of(config: SweepConfig, dim: float | None = None):
    """The exact quadratic of a sweep's problem (at dimension ``dim``, default the problem's), or None
    (regression, rosenbrock)."""
    p = config.problem
    if p.kind == "nqm":
        return theory.nqm(int(p.dim if dim is None else dim), p.noise)
    if p.kind == "isotropic":
        return theory.isotropic(int(p.dim if dim is None else dim), p.sigma, p.distance)
    return None


def _power(method: str) -> float:
    return float(method.split(":")[1]) if ":" in method else (1.0 if method == "precond" else 0.0)


def exact_noise_scales(config: SweepConfig, series: list[Series], dim: float | None = None) -> list[str]:
    """B_simple and B_noise at the start (E θ² = s₀) and where SGD (or precond:p) at the largest batch whose
    median is a count (not a lower bound) reaches the target: the exact second moments at its median step and
    chosen lr, whitened for precond:p (McCandlish et al. 2018)."""
    q = quadratic_of(config, dim)
    if q is None:
        return []
    lines = []
    for s in series:
        if not (s.method == "sgd" or s.method.startswith("precond")):
            continue
        power = _power(s.method)
        start = theory.noise_scales(q, q.s0, power)
        text = f"{s.method}: B_simple {start[0]:.4g}, B_noise {start[1]:.4g} at the start"
        fitted = np.flatnonzero(s.fitted)
        if fitted.size:
            i = fitted[-1]
            row = s.summary.iloc[i]
            batch, step, lr = float(row["value"]), int(round(row["median"])), float(row["learning_rate"])
            seeds = int(row[["converged", "censored", "stalled", "diverged"]].sum())
            x = theory.contraction(q, np.array([lr]), power)[0]
            noise = theory.noise_variance(q, np.array([lr]), np.array([batch]), power)[0]
            end = theory.noise_scales(q, theory.sgd_second_moment(step, x, noise, q.s0), power)
            text += (f"; B_simple {end[0]:.4g}, B_noise {end[1]:.4g} at the target ({s.method} at B = {batch:g}, "
                     f"median step {step} over {seeds} seed{'s' * (seeds > 1)})")
        lines.append(text)
    if lines:
        lines.insert(0, f"exact noise scales (expected state; loss target {config.target.tol:g}):")
        lines.append("B_noise is not one number per run: it grows as the loss falls (|G|² falls with the loss, the "
                     "gradient noise does not), from its start to its target value above; the fitted B_crit "
                     "summarises the steps of whole runs, so one expects it between the two (McCandlish et al. 2018 "
                     "compare B_crit with B_noise averaged over training)")
    return lines


def _points(pairs, axis: str) -> str:
    by_method: dict[str, list] = {}
    for m, x in pairs:
        by_method.setdefault(m, []).append(x)
    name = "B" if axis == "batch" else "d"
    return "; ".join(f"{m} at {name} = {', '.join(f'{x:g}' for x in sorted(xs))}"
                     for m, xs in sorted(by_method.items()))


def edge_lines(chosen: list[dict], axis: str) -> list[str]:
    """What the chosen settings that are not interior mean (``chosen``: one dict per point with method, the axis
    value, beta, lr_place and beta_place: `otod.noise.search.lr_place`, `beta_place`). An lr at its limit is
    within `search.LIMIT_MARGIN` of the method's stability limit (2/L, 2(1 + β)/L for heavy-ball, in whitened
    coordinates): no larger step is stable, so it is not a failure of the search. β = 0 means no momentum (no
    averaging) is best, the end of β's range [0, 1); β at its other limit is 1 − β = 10⁻¹⁴, where float64 resolves
    no β closer to 1. The end of a given list or of a default grid tried as given may hide a better value beyond
    it."""
    found: dict[tuple, set] = {}
    for r in chosen:
        key = (r["method"], r[axis])
        found.setdefault(("lr", r.get("lr_place")), set()).add(key)
        if r.get("beta_place") == search.LIMIT:
            found.setdefault(("beta", "zero" if r["beta"] == 0.0 else "floor"), set()).add(key)
        else:
            found.setdefault(("beta", r.get("beta_place")), set()).add(key)
    words = [
        (("lr", search.LIMIT), "lr* at the stability limit ({}): the chosen lr is the largest tried and within "
         f"{search.LIMIT_MARGIN:.2g} of the limit (2 × the reference step, 2(1 + β) × it for heavy-ball): no larger "
         "step is stable, so this is the limit itself, not a failure of the search"),
        (("lr", search.LIST_END), "warning: lr* lies on the edge of the lrs tried ({}): the best step may lie beyond "
         "them; widen --lr-grid"),
        (("lr", search.GRID_END), "warning: lr* lies on the end of the default lr grid, tried as given ({}): the best "
         "step may lie beyond it; widen it with --lr-grid"),
        (("beta", "zero"), "β* = 0 ({}): no momentum (or no averaging) is best there"),
        (("beta", "floor"), "β* at its limit, 1 − β at the run's float precision (10⁻¹⁴ in float64, 10⁻⁵ in float32) "
         "({}): no β closer to 1 is resolved"),
        (("beta", search.LIST_END), "warning: β* lies on the edge of --beta ({}): widen --beta"),
        (("beta", search.GRID_END), "warning: β* lies on the end of the default β list, "
         f"{max(search.DEFAULT_BETAS):g}, tried as given ({{}}): a longer memory may do better still; give --beta "
         "values closer to 1 (the noise sweep's exact path searches on to β's limit)"),
    ]
    return [text.format(_points(found[key], axis)) for key, text in words if found.get(key)]


def _is_default(values, default: tuple) -> bool:
    return values is not None and len(values) == len(default) and bool(np.allclose(values, default, rtol=1e-12))


def given_lists(config: SweepConfig) -> tuple[bool, bool]:
    """(lr, β): whether a sweep's config tried a list as given rather than the default grid (a --lr-grid, a --beta
    list); a sweep without a β axis counts as given."""
    return (not _is_default(config.lr_grid, search.DEFAULT_LR_GRID),
            not _is_default(dict(config.axes).get("beta"), search.DEFAULT_BETAS))


def beta_limit(config: SweepConfig) -> float:
    """The smallest 1 − β the sweep's precision resolves, where a chosen β is at its limit: the last of the β the
    simulator brackets (`otod.noise.kind.simulated_betas`: 10⁻⁵ in float32), 10⁻¹⁴ in float64 (the exact
    path's `search.BETA_FLOOR`)."""
    from otod.core.bracket import beta_floor, beta_ladder

    ladder = beta_ladder(search.DEFAULT_BETAS, beta_floor(config.resolved.x64))
    return max(1.0 - ladder[-1], search.BETA_FLOOR) if ladder else search.BETA_FLOOR


def chosen_places(analysis: NoiseAnalysis) -> list[dict]:
    """Per series point: d, method, the axis value, the chosen lr multiplier (the core summary's rate) and β, the
    median steps there and the chosen absolute step, and where each lies (`otod.noise.search.lr_place`, `beta_place`), from the analysis's edge flags and which lists
    its config gave (`given_lists`)."""
    lr_given, beta_given = given_lists(analysis.config)
    floor = beta_limit(analysis.config)
    return [{"dim": s.dim, "method": s.method, analysis.axis: float(x), "lr_multiplier": rate, "beta": beta,
             "iterations": steps, "learning_rate": lr,
             "lr_place": search.lr_place(s.method, rate, beta, bool(lr_on), lr_given),
             "beta_place": search.beta_place(beta, bool(beta_on), beta_given, floor) if s.method in USES_BETA
             else None}
            for s in analysis.series
            for x, (rate, beta, lr_on, beta_on, steps, lr) in zip(
                s.x, s.summary[["rate", "beta", "lr_on_edge", "beta_on_edge", "median", "learning_rate"]].itertuples(
                    index=False))]


def exact_choices(config) -> list[dict]:
    """Each point's choice on the exact path as the report prints it (`otod.noise.report.chosen_places`: the chosen
    lr multiplier and β, the steps there, the step, and where lr and β lie): the one analysis of `otod.noise.exact.exact_records`,
    with no file written (a notebook's view, and the tests')."""
    from otod.core.results import Results
    from otod.noise.exact import exact_records

    meta = {"sweep": config.sweep, "mode": "exact", "config": config.to_dict()}
    return chosen_places(analyse(Results(meta=meta, records=exact_records(config)), fit=False))


def edge_warning(analysis: NoiseAnalysis) -> list[str]:
    """`edge_lines` of the analysis's chosen settings."""
    return edge_lines(chosen_places(analysis), analysis.axis)


def places_of(chosen: list[dict], axis: str) -> dict:
    """(d, method, axis value) → (lr place, β place) of every chosen setting (`chosen_places`): what `table`
    marks."""
    return {(r["dim"], r["method"], r[axis]): (r["lr_place"], r["beta_place"] or search.INTERIOR) for r in chosen}


def batch_lines(analysis: NoiseAnalysis, series: list[Series], dim: float) -> list[str]:
    config = analysis.config
    lines = []
    q = quadratic_of(config, dim)
    if q is not None:
        xs = sorted({x for s in series for x in s.x})
        ideal = theory.ideal_steps(len(q.h), config.target.tol, np.asarray(xs))
        lines.append("ideal estimator d/(2·target·B): " + ", ".join(f"B={b:g}: {v:.3g}" for b, v in
                                                                      zip(xs[::4], ideal[::4])))
    lines += ["", "critical batch, S(B) = S_min·(1 + B_crit/B) fitted with S_min, B_crit ≥ 0 (beyond the grid: "
              "said so, not extrapolated), 95% CI from a bootstrap over seeds that re-chooses every point's lr and β "
              f"in each of {analysis.n_boot} resamples, rms relative misfit |S_fit/S − 1|; perfect scaling: largest B "
              "whose next grid point B' has S(B')/S(B) ≤ 1.1·B/B'; best-lr slope over that region:"]
    lines += [critical_line(s) for s in series]
    scales = exact_noise_scales(config, series, dim)
    return lines + ([""] + scales if scales else [])


def render(analysis: NoiseAnalysis) -> str:
    """The report's text, from the analysis alone."""
    meta, config = analysis.meta, analysis.config
    batch = analysis.axis == "batch"
    symbol = "B" if batch else "d"
    p = config.problem_fields()
    dims = analysis.dims
    head = (f"{meta['sweep']} sweep ({analysis.mode}): {config.problem.kind} "
            + ", ".join(f"{k} = {v}" for k, v in p.items()
                        if k != "kind" and not (k == "dim" and (not batch or len(dims) > 1)))
            + f"; target loss {config.target.tol:g}; schedule {config.options.schedule}; "
            f"{config.seeds if analysis.mode != 'exact' else 1} seed(s); cap {config.resolved.max_iters}")
    notes = ["", "steps: median over seeds at the (lr, β) with the lowest median (censored lanes count as ≥ the cap; "
             "≥N: the median is only a lower bound, left out of fits); lr: the chosen step; β: heavy-ball's momentum "
             "or ema's decay (— where a method has none); no mark: inside the values searched; |: at a true limit "
             "(the lr's stability limit, β = 0, 1 − β at the run's float resolution: 10⁻¹⁴ in float64, 10⁻⁵ in "
             "float32); *: at the end of a list or grid tried as given, where a better value may lie beyond"]
    chosen = chosen_places(analysis)
    places = places_of(chosen, analysis.axis)
    notes += edge_lines(chosen, analysis.axis)
    lines = [head]
    for dim in dims:  # one table (and its fits) per d of a batch sweep over several
        series = analysis.at(dim)
        lines += [""] + ([f"d = {dim:g}"] if len(dims) > 1 else []) + table(series, symbol, USES_BETA, places)
        lines += notes if len(dims) == 1 else []
        lines += batch_lines(analysis, series, dim) if batch else []
    lines += notes if len(dims) > 1 else []
    if not batch:
        lines += ["", "exponent of steps vs d (log-log least squares over the points whose median is not censored):"]
        lines += [f"  {s.method:<14} {s.exponent:.3g} ({s.exponent_points} points)" for s in analysis.series]
    return "\n".join(lines)


def text_report(results, *, full: bool = False, tol: float | None = None,
                analysis: NoiseAnalysis | None = None) -> str:
    """The report of a noise or params `Results` (``otod fit``, the sweep commands); ``analysis``: the one the
    command already made (else it is made here, once). ``full`` and ``tol`` change nothing: every B is shown and
    a noise sweep records one target."""
    del full, tol
    return render(analysis if analysis is not None else analyse(results))
