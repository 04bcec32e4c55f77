"""A net sweep over a joint grid of data size D and width (parameter count P): ``otod sweep net --examples D1,D2,…
--width W1,W2,…`` runs every cell (D, P), each an S(B) batch sweep with (lr, β) chosen per batch, as one
`otod.core.config.SweepConfig` (so sharing, resuming and ``otod merge`` are every sweep's), and reads the joint law
log B_crit = c + a·log D + b·log P over the cells with one seed bootstrap (`otod.core.joint_law.analyse_grid`:
McCandlish et al.'s B_crit and Zhang et al.'s critical batch per cell, the CIs on a, b and a − b, the verdict).

`grid_analyses` reads it per method from a results file; `grid_lines` is what the report prints.
"""

from __future__ import annotations

import math

import numpy as np

#: The fields of a grid cell's point: D (the records' ``examples``), P (``dim``, the parameter count), B.
POINT = ("examples", "dim", "batch")


def is_grid(config) -> bool:
    """Whether a net sweep is a joint grid: batch, width and examples all axes of its config."""
    axes = dict(config.axes)
    return all(name in axes for name in ("batch", "width", "examples"))


def grid_analyses(results, tol: float | None = None, n_boot: int | None = None) -> dict:
    """{method: `otod.core.joint_law.GridAnalysis`} of a joint grid's results (at ``tol``: default the run's target,
    `otod.core.report.frame_at`), one cube per method over (D, P, B) and one seed bootstrap per cube
    (``n_boot`` resamples, default the critical batch's `otod.core.critical_batch.N_BOOT`)."""
    from otod.core.api import N_BOOT, analyse_grid, cubes, frame_at

    _, _, frame = frame_at(results, tol)
    return {cube.series: analyse_grid(cube, data="examples", params="dim", axis="batch",
                                      n_boot=N_BOOT if n_boot is None else n_boot)
            for cube in cubes(frame, POINT)}


def _value(value: float, ci: tuple[float, float], place: str) -> str:
    """A critical batch as the table prints it: the estimate and its CI, or only its bound beyond the batches."""
    from otod.core.api import ABOVE, BELOW, NONE

    if place == NONE or not math.isfinite(value) and place != ABOVE:
        return "—"
    if place in (ABOVE, BELOW):
        return ">" if place == ABOVE else "<"
    ci_text = "" if not np.all(np.isfinite(ci)) else f" [{ci[0]:.3g}, {ci[1]:.3g}]"
    return f"{value:.3g}{ci_text}"


def cell_rows(grid, targets: dict | None = None) -> list[str]:
    """The per-cell table: D, P, McCandlish's B_crit [95% CI], Zhang's critical batch [95% CI] (">" / "<": only a
    bound, beyond or below the batches), and with a held-out target the cell's target and its reference lr."""
    head = f"  {'D':>8}{'P':>9}{'B_crit (McCandlish)':>26}{'B_crit (Zhang)':>26}"
    head += f"{'target':>11}{'ref lr':>9}" if targets else ""
    rows = [head]
    for cell in grid.cells:
        line = (f"  {cell.data:>8g}{cell.params:>9g}"
                f"{_value(cell.values['mccandlish'], cell.cis['mccandlish'], cell.places['mccandlish']):>26}"
                f"{_value(cell.values['zhang'], cell.cis['zhang'], cell.places['zhang']):>26}")
        if targets:
            target, lr = targets.get((cell.data, cell.params), (math.nan, math.nan))
            line += f"{target:>11.4g}{lr:>9.3g}"
        rows.append(line)
    return rows


def law_lines(law, name: str) -> list[str]:
    """One definition's joint law: a, b, a − b with their 95% CIs, the cells fitted and left out, and the verdict
    (`otod.core.joint_law.PlaneLaw.verdict`)."""
    def ci(pair):
        return "(no CI)" if not np.all(np.isfinite(pair)) else f"[{pair[0]:.3g}, {pair[1]:.3g}]"

    if not math.isfinite(law.a):
        return [f"  {name}: {law.no_ci or 'no plane'}"]
    lines = [f"  {name}: a = {law.a:.3g} {ci(law.a_ci)}, b = {law.b:.3g} {ci(law.b_ci)}, a − b = "
             f"{law.difference:.3g} {ci(law.difference_ci)} over {law.cells} cells (rms of log B about the plane "
             f"{law.residual:.3g}; {law.rows} bootstrap rows)"]
    if law.left_out:
        lines.append("    left out (only a bound): " + ", ".join(f"D = {d:g}, P = {p:g} ({w})" for d, p, w in
                                                                  law.left_out))
    verdict = law.verdict()
    lines.append(f"    verdict: {verdict.answer}")
    lines += [f"      {line}" for line in verdict.lines]
    return lines


def held_out_targets(config, places: bool = False) -> dict:
    """{(D, P): (target, reference lr)} of a sweep with a held-out target (``--regime``), else {}; with ``places``,
    {(D, P): where the reference lr lies} (`otod.nets.model.reference.reference_places`: None in an older table)."""
    from otod.nets.model.reference import parse_table, reference_places

    spec = config.problem
    if getattr(spec, "held_out_targets", None) is None:
        return {}
    read = reference_places if places else parse_table
    out = {}
    for (d, width), value in read(spec.held_out_targets).items():
        p = config.spec_at({"width": width, "examples": d}).parameter_count
        out[float(d), float(p)] = value
    return out


def reference_edge_lines(targets: dict, lr_grid, places: dict | None = None) -> list[str]:
    """Where the reference lrs lie (``targets``: {(D, P): (target, lr)}; ``places``: {(D, P): place}, from a tuned
    reference's table, `otod.nets.model.reference.tuned_reference`): a line counting the cells whose reference lr
    is interior, at the stability limit, or beyond --lr-grid (the search extended it), and a warning for the
    cells still on an edge (the search's steps ran out), whose target may be easier than a tuned reference's.
    A table without places (written before the reference was tuned): a warning for the cells whose lr is the
    smallest or the largest of ``lr_grid``."""
    from otod.core.api import GRID_END, INTERIOR, LIMIT, LIST_END

    if not targets or not lr_grid:
        return []
    places = {cell: place for cell, place in (places or {}).items() if place is not None}
    if places:
        count = lambda where: sum(place == where for place in places.values())  # noqa: E731
        outside = sorted(cell for cell, (_, lr) in targets.items() if not min(lr_grid) <= lr <= max(lr_grid))
        lines = [f"  reference lr: interior at {count(INTERIOR)} of {len(places)} cells, at the stability limit at "
                 f"{count(LIMIT)}" + (f"; beyond --lr-grid (the search extended it) at "
                                      + ", ".join(f"D = {d:g}, P = {p:g} (lr {targets[d, p][1]:.3g})"
                                                  for d, p in outside) if outside else "")]
        stuck = sorted(cell for cell, place in places.items() if place in (GRID_END, LIST_END))
        if stuck:
            lines.append("  warning: the reference lr is still on the edge of the rates tried after its search's steps "
                         "at " + ", ".join(f"D = {d:g}, P = {p:g}" for d, p in stuck) + ": those targets may be "
                         "easier than a tuned reference's")
        return lines
    ends = {"smallest": min(lr_grid), "largest": max(lr_grid)}
    lines = []
    for side, end in ends.items():
        cells = sorted((d, p) for (d, p), (_, lr) in targets.items() if abs(lr - end) <= 1e-9 * end)
        if cells:
            where = ", ".join(f"D = {d:g}, P = {p:g}" for d, p in cells)
            lines.append(f"  warning: the reference lr is the {side} of --lr-grid ({end:g}) at {where}: its best step "
                         "may lie beyond the grid, so those targets may be easier than a tuned reference's; widen "
                         "--lr-grid")
    return lines


def grid_lines(results, config, tol: float | None = None, analyses: dict | None = None) -> list[str]:
    """The joint-law section of a grid's report, per method: the per-cell table and both definitions' laws."""
    analyses = grid_analyses(results, tol) if analyses is None else analyses
    targets = held_out_targets(config)
    lines = []
    for method, grid in analyses.items():
        boot = grid.boot
        said = "every seed alike: no sampling error" if boot.deterministic else (
            boot.no_ci or f"95% CIs: one seed bootstrap of {len(boot.replicates)} resamples re-choosing (lr, β) at "
                          "every batch of every cell")
        lines += ["", f"joint law over the D × P grid ({method}): log B_crit = c + a·log D + b·log P, least squares "
                      f"over the cells whose critical batch lies inside their batches ({said})"]
        if targets:
            lines.append("  target: each cell's held-out loss that the reference run (the smallest batch at its best "
                         "lr) reaches after D examples (Zhang et al. 2024)")
        lines += cell_rows(grid, targets)
        lines += reference_edge_lines(targets, config.lr_grid, held_out_targets(config, places=True))
        lines += law_lines(grid.mccandlish, "McCandlish (S(B) = S_min·(1 + B_crit/B))")
        lines += law_lines(grid.zhang, "Zhang et al. (largest B within 20% of linear scaling; biased low, "
                                       "a second view)")
    return lines


def side_by_side(analyses: dict, width: int = 10) -> list[str]:
    """The joint laws of several grids side by side (``analyses``: {label, e.g. the regime: `GridAnalysis`}), one
    row per grid and definition: a, b and a − b with their 95% CIs, the cells fitted, the verdict and, where a − b's
    interval holds 0, the smallest |a − b| the grid could detect (`otod.core.joint_law.Verdict`)."""
    def ci(value, pair):
        return f"{value:.3g} [{pair[0]:.3g}, {pair[1]:.3g}]" if np.all(np.isfinite(pair)) else f"{value:.3g} (no CI)"

    head = (f"  {'grid':<{width}}{'definition':<12}{'a (D)':>24}{'b (P)':>24}{'a − b':>24}{'cells':>7}  verdict "
            "(smallest detectable |a − b|)")
    rows = [head]
    for label, grid in analyses.items():
        for name, law in (("McCandlish", grid.mccandlish), ("Zhang", grid.zhang)):
            if not math.isfinite(law.a):
                rows.append(f"  {label:<{width}}{name:<12}  {law.no_ci or 'no plane'}")
                continue
            verdict = law.verdict()
            said = verdict.answer + (f" ({verdict.detectable:.2f})" if verdict.detectable is not None else "")
            rows.append(f"  {label:<{width}}{name:<12}{ci(law.a, law.a_ci):>24}{ci(law.b, law.b_ci):>24}"
                        f"{ci(law.difference, law.difference_ci):>24}{law.cells:>7}  {said}")
    return rows


def regimes_side_by_side(paths: dict, n_boot: int | None = None) -> str:
    """`side_by_side` of results files ({label: path}, e.g. {"stream": …, "finite": …}), per method: what
    ``python -m otod.nets.sweep.grid stream=FILE finite=FILE`` prints."""
    from otod.core.api import load_results

    per_method: dict[str, dict] = {}
    for label, path in paths.items():
        for method, grid in grid_analyses(load_results(path), n_boot=n_boot).items():
            per_method.setdefault(method, {})[label] = grid
    lines = []
    for method, analyses in per_method.items():
        lines += [f"joint law log B_crit = c + a·log D + b·log P ({method}), side by side (95% CIs, seed bootstrap)"]
        lines += side_by_side(analyses)
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    from otod.core.api import OtodError

    pairs = [arg.partition("=") for arg in sys.argv[1:]]
    if not pairs or any(not sep or not label or not path for label, sep, path in pairs):
        print("usage: python -m otod.nets.sweep.grid LABEL=FILE [LABEL=FILE ...], e.g. stream=results/net-1.parquet "
              "finite=results/net-2.parquet", file=sys.stderr)
        sys.exit(2)
    try:
        print(regimes_side_by_side({label: path for label, _, path in pairs}))
    except (OtodError, OSError) as error:
        print(f"otod: error: {error}", file=sys.stderr)
        sys.exit(2)

