"""What a sweep's report is (`Report`), and its plain-text parts as the CLI prints them (and a notebook can): the
header line, the table of medians (from an `otod.core.analysis` summary) and the fitted laws. The axis symbol,
the theory column's name and the notes under the table come from the obstacle."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from otod.core.analysis import at_rung, frame_of
from otod.core.fit import PowerLawFit
from otod.core.retarget import has_traces, retarget


@dataclass(frozen=True, eq=False)
class Report:
    """A finished sweep: its results, the printed text, the files written (results file first), and the
    `otod.core.analysis.Analysis` the text and figure were made from (None where the obstacle makes none)."""

    results: Any
    text: str
    files: list[Path]
    analysis: Any = None


def frame_at(results, tol: float | None = None) -> tuple[Any, float, pd.DataFrame]:
    """What every obstacle's analysis starts from: the sweep's config read back once, typed
    (`otod.core.config.read_config`), the tol (default: the sweep's own), and the records as a DataFrame
    at that tol's ladder rung (`otod.core.analysis.at_rung`), or, where the records keep each lane's trace, as a
    run at that tol would have written them (`otod.core.retarget.retarget`; a tol below the run's own is refused);
    any other tol the run did not record is refused."""
    from otod.core.config import read_config

    config = read_config(results.meta)
    tol = config.target.tol if tol is None else tol
    if not any(math.isclose(t, tol, rel_tol=1e-9) for t in config.target.ladder) and has_traces(results):
        return config, tol, retarget(frame_of(results), results.meta, tol)  # any target above the run's
    rung = config.rung(tol)
    frame = frame_of(results)
    return config, tol, frame if rung is None else at_rung(frame, rung)


def _fmt_num(v, digits=4) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "—"
    return f"{v:.{digits}g}"


def _finite(v) -> bool:
    return v is not None and math.isfinite(v)


def _cell(s: dict) -> str:
    """The median over seeds, with the counts of lanes that did not converge: '353', '410 2c', '≥5000 8c' (more
    than half censored: the median is only a lower bound), '12 1d', '≥900 3s' (stalled)."""
    if not _finite(s["median"]):
        text = "—"
    else:
        text = ("≥" if s.get("lower_bound") else "") + f"{s['median']:g}"
    tags = "".join(f"{s[k]}{k[0]}" for k in ("censored", "stalled", "diverged") if s.get(k))
    return f"{text} {tags}".strip()


def _pick_rows(values: list[float], max_rows: int | None) -> list[float]:
    """At most ``max_rows`` of the values, log-spaced in value (not in index), ends included."""
    if max_rows is None or len(values) <= max_rows:
        return values
    v = np.asarray(values, float)
    if v[0] <= 0:
        idx = np.unique(np.round(np.linspace(0, len(v) - 1, max_rows)).astype(int))
    else:
        targets = np.geomspace(v[0], v[-1], max_rows)
        idx = np.unique([int(np.argmin(np.abs(np.log(v) - np.log(t)))) for t in targets])
    return [values[i] for i in idx]


def sweep_table(summary: pd.DataFrame, *, value_name: str, max_rows: int | None = 16,
                flops: dict[str, float] | None = None, setup: dict[str, float] | None = None,
                notes: list[str] = (),
                columns: dict[str, Callable[[str, float], float | None]] | None = None) -> str:
    """Axis value × method table of median iterations to target (``summary``: `otod.core.analysis.summary` rows;
    censored 'c', stalled 's' and diverged 'd' lane counts beside them), a ``m·NAME`` column for each of ``columns`` (the theory's predictions, evaluated only on
    the rows shown, and only for methods where it gives a number), and FLOPs to target where ``flops`` gives each
    method's FLOPs per iteration (plus ``setup`` FLOPs, where given); ``notes`` are printed under it."""
    rows_of = summary.to_dict("records")
    methods = list(dict.fromkeys(s["method"] for s in rows_of))
    by = {(s["method"], s["value"]): s for s in rows_of}
    values = sorted({s["value"] for s in rows_of})
    shown = _pick_rows(values, max_rows)
    extra = {(m, name, v): fn(m, v) for m in methods for name, fn in (columns or {}).items() for v in shown}
    groups = []  # (method, [sub-column names])
    for m in methods:
        subs = ["median"] + [name for name in (columns or {}) if any(extra[(m, name, v)] is not None for v in shown)]
        if flops and m in flops:
            subs.append("flops")
        groups.append((m, subs))
    rows = []
    for v in shown:
        row = [_fmt_num(v, 5)]
        for m, subs in groups:
            s = by.get((m, v))
            for name in subs:
                if name == "median":
                    row.append(_cell(s) if s else "")
                elif name == "flops":
                    once = (setup or {}).get(m, 0.0)
                    row.append(_fmt_num(once + s["median"] * flops[m], 3) if s and _finite(s["median"])
                               else "—")
                else:
                    row.append(_fmt_num(extra[(m, name, v)], 6))
        rows.append(row)
    sub_header = [value_name] + [name if len(subs) > 1 else "" for _, subs in groups for name in subs]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(sub_header)]
    top, i = [" " * widths[0]], 1
    for m, subs in groups:  # the method's name over its sub-columns, widening them if the name is longer
        span = sum(widths[i:i + len(subs)]) + 2 * (len(subs) - 1)
        if len(m) > span:
            widths[i + len(subs) - 1] += len(m) - span
            span = len(m)
        top.append(m.center(span) if len(subs) > 1 else m.rjust(span))
        i += len(subs)
    lines = ["  ".join(top)]
    if any(len(subs) > 1 for _, subs in groups):
        lines.append("  ".join(h.rjust(w) for h, w in zip(sub_header, widths)))
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]
    notes = list(notes)
    if flops:
        notes.append("flops = median iterations × XLA's FLOPs of one iteration (value-and-gradient + update)"
                     + (" + the method's set-up (factorisations, inverses; textbook counts)" if setup else ""))
    if len(shown) < len(values):
        notes.append(f"{len(shown)} of {len(values)} {value_name} values shown (log-spaced); --full shows all, "
                     "the results file holds every lane")
    return "\n".join(lines + [""] + notes)


def fit_table(fits: list[PowerLawFit], value_name: str, theory_name: str = "theory") -> str:
    """One line per method: fitted exponent b with its 95% CI, the theory beside it, and what was excluded."""
    header = ["method", f"b (iterations ≈ a·{value_name}^b)", "95% CI (seeds)", f"b of {theory_name} (this grid)", f"theory b ({value_name}→∞)",
              "a", "residual", "points", "left out"]
    rows = []
    for f in fits:
        ci = ("deterministic: no sampling error" if f.deterministic
              else f.no_ci or f"[{_fmt_num(f.ci_low, 3)}, {_fmt_num(f.ci_high, 3)}]")
        left = [f"{n} {what}" for n, what in ((f.excluded_points, "points"), (f.excluded_censored, "censored"),
                                              (f.excluded_diverged, "diverged")) if n]
        rows.append([f.method, _fmt_num(f.exponent, 3), ci, _fmt_num(f.theory_grid, 3),
                     _fmt_num(f.theory_asymptotic, 3), _fmt_num(f.prefactor, 3), _fmt_num(f.residual, 2),
                     str(f.points), ", ".join(left) or "none"])
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths))]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(out)


def sweep_header(results, tol: float | None = None) -> str:
    """The first line of a sweep's report: lanes, precision, compilations, wall time, devices, the lane-iterations
    the while loops executed per one a lane needed, and whether the file was read back or resumed."""
    from otod.core.config import read_config

    meta = results.meta
    env = meta["environment"]
    devices = env.get("device_count", 1)
    where = f"{env['device']}" + (f" ×{devices}" if devices > 1 else "")
    if meta.get("processes", 1) > 1:
        where += f" in {meta['processes']} processes"
    work = meta.get("lane_iterations") or {}
    waste = f", {work['ratio']:.2f} lane-iterations run per one needed" if work.get("ratio") else ""
    at = f", at tol {tol:g}" if tol is not None and tol != read_config(meta).target.tol else ""
    status = ""
    if meta.get("read_back"):
        status += "  (read back from the finished results file: nothing recomputed)"
    if meta.get("merged_from"):
        status += f"  (merged from {len(meta['merged_from'])} part files)"
    elif meta.get("resumed_chunks"):
        status += f"  (resumed: {meta['resumed_chunks']} chunks came from the interrupted run)"
    if meta.get("reused"):
        status += (f"  ({meta['reused']['lanes']} lanes read from {', '.join(meta['reused']['from'])}, "
                   "measured there under the same settings)")
    return (f"{meta['sweep']} sweep: {len(results)} lanes, {meta['precision']}, "
            f"{meta['compile_count']} compilations ({meta.get('compile_time_s', 0.0):.1f} s), "
            + (f"{meta['cache_loads']} program{'s' if meta['cache_loads'] != 1 else ''} loaded from the compilation "
               "cache, " if meta.get("cache_loads") else "")
            + f"wall {meta.get('wall_time_s', meta.get('run_time_s', 0.0)):.1f} s on {where}{waste}{at}{status}")
