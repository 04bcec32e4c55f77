"""Which records a condition table, fit or figure reads: per static point, at a ladder rung, one learning rate
per point."""

from __future__ import annotations

from otod.core import results as results_io
from otod.core.fit import at_rung
from otod.core.stopping import Target
from otod.core.tuning import selected


def _target(config: dict) -> Target:
    t = config["target"]
    return Target(tol=t["tol"], kind=t["kind"], ladder=tuple(t["ladder"]), check_every=t["check_every"])


def static_groups(results: results_io.Results) -> list[tuple[str, list[dict]]]:
    """(heading, records) per static point: one group ('') without static axes, else one per dimension."""
    static = [a["name"] for a in results.meta.get("axes", []) if not a["traced"]]
    if not static:
        return [("", results.records)]
    groups: dict[tuple, list[dict]] = {}
    for r in results.records:
        groups.setdefault(tuple(r[n] for n in static), []).append(r)
    return [(", ".join(f"{n} = {v:g}" for n, v in zip(static, key)), rows) for key, rows in sorted(groups.items())]


def chosen_records(results: results_io.Results, records: list[dict], tol: float | None = None) -> list[dict]:
    """The records a table and fit use: at the ladder rung of ``tol`` (default: the sweep's tol), one learning
    rate per point (chosen by the median over seeds, `otod.core.tuning`)."""
    config = results.meta["config"]
    rung = None
    if tol is not None and tol != config["target"]["tol"]:
        rung = _target(config).index(tol)
        records = at_rung(records, rung)
    fields = tuple(a["name"] for a in results.meta.get("axes", [{"name": "kappa"}]))
    return selected(records, fields, rung)
