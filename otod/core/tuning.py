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
    where the grid has it) is chosen."""
    by_rate: dict[float, list[dict]] = {}
    for r in records:
        by_rate.setdefault(r["lr_multiplier"], []).append(r)
    rates = sorted(by_rate)
    scores = [median_count(by_rate[m], rung) for m in rates]
    best = min(range(len(rates)), key=lambda i: (scores[i], rates[i]))
    if math.isinf(scores[best]) and 1.0 in by_rate:
        best = rates.index(1.0)
    on_edge = len(rates) > 1 and best in (0, len(rates) - 1) and not math.isinf(scores[best])
    return rates[best], on_edge


def mark_selection(records: list[dict], point_fields: tuple[str, ...]) -> None:
    """Set ``lr_selected`` (and ``lr_on_edge`` on the chosen ones) on records of whole points, in place."""
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault(tuple(r[f] for f in point_fields) + (r["method"],), []).append(r)
    for group in groups.values():
        rate, edge = choose_rate(group)
        for r in group:
            r["lr_selected"] = r["lr_multiplier"] == rate
            if r["lr_selected"]:
                r["lr_on_edge"] = edge


def selected(records: list[dict], point_fields: tuple[str, ...], rung: int | None = None) -> list[dict]:
    """The records at each point's chosen rate (one per seed). Records of a single rate pass through. With
    ``rung`` the choice is remade on that ladder rung's counts (``otod fit --tol``)."""
    if not records or records[0].get("lr_multiplier") is None:
        return list(records)
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault(tuple(r[f] for f in point_fields) + (r["method"],), []).append(r)
    out = []
    for group in groups.values():
        if rung is None and "lr_selected" in group[0]:
            out += [r for r in group if r["lr_selected"]]
        else:
            rate, _ = choose_rate(group, rung)
            out += [r for r in group if r["lr_multiplier"] == rate]
    return out
