"""Learning-rate selection, honest under noise: one rate per sweep point, chosen by the median over seeds.

Keeping each seed's own best rate picks lucky runs and reports counts biased low (under gradient noise the
luckiest seed at each rate wins). Here a point (every axis value and the method) gets one rate: the one whose
median count over seeds is lowest, with lanes that did not converge counted as worst (+∞), ties going to the
smaller rate, as in Shallue et al. 2019 ("Measuring the effects of data parallelism on neural network
training"). Every seed's count at that rate is reported. A rate on the edge of the grid is flagged: the best rate
may lie beyond it.
"""

from __future__ import annotations

import math

import numpy as np


def count_at(record: dict, rung: int | None = None) -> float:
    """The record's iterations to target (at ladder rung ``rung``, default the reported tol), +∞ if it did not
    converge there."""
    if rung is None:
        return float(record["iterations"]) if record["status"] == "converged" else math.inf
    hit = record.get("hits", [None])[rung]
    return math.inf if hit is None or hit < 0 else float(hit)


def median_count(records: list[dict], rung: int | None = None) -> float:
    return float(np.median([count_at(r, rung) for r in records]))


def choose_rate(records: list[dict], rung: int | None = None) -> tuple[float, bool]:
    """(chosen lr multiplier, on the grid's edge) among the records of one point: lowest median count over
    seeds, ties to the smaller rate. When no rate converges on more than half the seeds, the reference step (1,
    where the grid has it) is chosen. The rule itself is `_kept_rows`'s, the one `selected` applies."""
    from otod.core.frame import Frame

    keep = _kept_rows(Frame.of_records(list(records)), (), rung)
    chosen = [r for r, k in zip(records, keep) if k]
    return chosen[0]["lr_multiplier"], _on_edge(records, chosen, rung)


def _on_edge(group: list[dict], chosen: list[dict], rung: int | None = None) -> bool:
    """Whether a point's chosen rate (the rate of its ``chosen`` records) is the smallest or largest of its grid,
    with a finite median: the best rate may then lie beyond the grid."""
    rates = sorted({r["lr_multiplier"] for r in group})
    return (len(rates) > 1 and chosen[0]["lr_multiplier"] in (rates[0], rates[-1])
            and math.isfinite(median_count(chosen, rung)))


def mark_selection(records: list[dict], point_fields: tuple[str, ...]) -> None:
    """Set ``lr_selected`` (and ``lr_on_edge`` on the chosen ones) on records of whole points, in place, by the
    rule `selected` applies."""
    from otod.core.frame import Frame

    keep = _kept_rows(Frame.of_records(list(records)), point_fields, None)
    groups: dict[tuple, list[dict]] = {}
    for r, k in zip(records, keep):
        r["lr_selected"] = bool(k)
        groups.setdefault(tuple(r[f] for f in point_fields) + (r["method"],), []).append(r)
    for group in groups.values():
        chosen = [r for r in group if r["lr_selected"]]
        edge = _on_edge(group, chosen)
        for r in chosen:
            r["lr_on_edge"] = edge


def selected(records, point_fields: tuple[str, ...], rung: int | None = None):
    """The records (a list of dicts, or a `otod.core.frame.Frame`) at each point's chosen rate (one per seed), in
    their order. Records of a single rate pass through. With ``rung`` the choice is remade on that ladder rung's
    counts (``otod fit --tol``). One implementation for both forms: a list goes through its Frame."""
    from otod.core.frame import Frame

    frame = records if isinstance(records, Frame) else Frame.of_records(list(records))
    keep = _kept_rows(frame, point_fields, rung)
    if isinstance(records, Frame):
        return records if keep is None else records.where(keep)
    return list(records) if keep is None else [r for r, k in zip(records, keep) if k]


def _group_ids(*columns: np.ndarray) -> np.ndarray:
    """One integer per row naming its combination of values of ``columns``."""
    ids = np.zeros(len(columns[0]), np.int64)
    for column in columns:
        _, inverse = np.unique(column.astype(str) if column.dtype == object else column, return_inverse=True)
        ids = np.unique(ids * (inverse.max(initial=0) + 1) + inverse, return_inverse=True)[1]
    return ids


def _kept_rows(frame, point_fields: tuple[str, ...], rung: int | None) -> np.ndarray | None:
    """Which rows `selected` keeps, by group-bys (None: a single rate, keep all): each (point, method) keeps its
    rows at the rate `choose_rate` picks (the lowest median count over seeds, ties to the smaller rate, the
    reference step where none converges on more than half the seeds), or its ``lr_selected`` rows where the sweep
    marked them."""
    from otod.core.frame import is_missing

    if len(frame) == 0 or "lr_multiplier" not in frame or is_missing(frame["lr_multiplier"][:1])[0]:
        return None
    group = _group_ids(*(frame[f] for f in point_fields), frame["method"])
    rate = frame["lr_multiplier"].astype(float)
    if rung is None:
        counts = np.where(frame["status"] == "converged", frame["iterations"], np.inf).astype(float)
    else:
        hit = frame["hits"][:, rung]
        counts = np.where(np.isnan(hit) | (hit < 0), np.inf, hit)
    sub = _group_ids(group, rate)  # (group, rate) pairs
    order = np.lexsort((counts, sub))
    sizes = np.bincount(sub)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    ranked = counts[order]
    score = 0.5 * (ranked[starts + (sizes - 1) // 2] + ranked[starts + sizes // 2])
    sub_group = np.zeros(len(sizes), np.int64)
    sub_rate = np.zeros(len(sizes))
    sub_group[sub], sub_rate[sub] = group, rate
    best = np.lexsort((sub_rate, score, sub_group))  # per group: lowest score, then smallest rate
    first = best[np.r_[True, np.diff(sub_group[best]) != 0]]
    chosen = np.empty(sub_group.max() + 1)
    chosen[sub_group[first]] = sub_rate[first]
    stuck = np.isinf(score[first])
    has_one = np.zeros(len(chosen), bool)
    has_one[group[rate == 1.0]] = True
    fallback = sub_group[first][stuck & has_one[sub_group[first]]]
    chosen[fallback] = 1.0
    keep = rate == chosen[group]
    if rung is None and "lr_selected" in frame:
        marked = ~is_missing(frame["lr_selected"])
        marked_group = np.zeros(len(chosen), bool)
        marked_group[group[marked]] = True  # the dict path reads the group's first record; every record of a
        keep = np.where(marked_group[group], frame["lr_selected"] == True, keep)  # noqa: E712 (a group has it or not)
    return keep.astype(bool)
