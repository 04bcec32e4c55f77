"""Which records a depth or toy table, fit or figure reads: one learning rate and one β per point.

The core chooses one learning-rate multiplier per point (β included, `otod.core.tuning`); `choose_beta` then
chooses one β per point the same way: the β whose median count over seeds (at its chosen rate) is lowest,
lanes that did not converge counting as worst (+∞), ties to the smaller β. So (lr, β) is chosen by the median
over seeds, never per seed. Methods that ignore β (gd, kfac) give equal counts at every β and keep β = 0.
"""

from __future__ import annotations

from otod.core.fit import at_rung
from otod.core.stopping import Target
from otod.core.tuning import median_count, selected
from otod.depth.linear import init_name


def choose_beta(records: list[dict], point_fields: tuple[str, ...], rung: int | None = None) -> list[dict]:
    """The records at each point's chosen β (``point_fields`` without ``beta``): lowest median count over seeds,
    ties to the smaller β. Records without a ``beta`` field pass through."""
    if not records or "beta" not in records[0]:
        return list(records)
    groups: dict[tuple, dict[float, list[dict]]] = {}
    for r in records:
        groups.setdefault(tuple(r[f] for f in point_fields) + (r["method"],), {}).setdefault(r["beta"], []).append(r)
    out = []
    for by_beta in groups.values():
        best = min(by_beta, key=lambda b: (median_count(by_beta[b], rung), b))
        out += by_beta[best]
    return out


def axis_names(meta: dict) -> tuple[str, ...]:
    return tuple(a["name"] for a in meta.get("axes", []))


def chosen_records(meta: dict, records: list[dict], tol: float | None = None) -> list[dict]:
    """One (lr, β) per point, at the ladder rung of ``tol`` (default: the sweep's own)."""
    config = meta["config"]
    rung = None
    if tol is not None and tol != config["target"]["tol"]:
        t = config["target"]
        rung = Target(tol=t["tol"], kind=t["kind"], ladder=tuple(t["ladder"]), check_every=t["check_every"]).index(tol)
        records = at_rung(records, rung)
    fields = axis_names(meta)
    return choose_beta(selected(records, fields, rung), tuple(f for f in fields if f != "beta"), rung)


def label(record: dict) -> str:
    """The series a record belongs to: ``method·init`` in depth sweeps, the method in toy sweeps."""
    if "init" not in record:
        return record["method"]
    init = record["init"]
    return f"{record['method']}·{init if isinstance(init, str) else init_name(init)}"


def relabelled(records: list[dict]) -> list[dict]:
    """Copies whose ``method`` is the series label, so the core's summaries and fits treat each init apart."""
    return [{**r, "method": label(r)} for r in records]


def static_groups(meta: dict, records: list[dict]) -> list[tuple[str, list[dict]]]:
    """(heading, records) per width where width is swept, else one group."""
    if "width" not in axis_names(meta):
        return [("", records)]
    widths = sorted({r["width"] for r in records})
    return [(f"width n = {w:g}", [r for r in records if r["width"] == w]) for w in widths]
