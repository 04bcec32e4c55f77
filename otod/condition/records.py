"""Which records a condition table, fit or figure reads: per static point, at a ladder rung, one learning rate
per point."""

from __future__ import annotations

from otod.core import results as results_io
import numpy as np

from otod.core.fit import at_rung
from otod.core.frame import Frame
from otod.core.stopping import Target
from otod.core.tuning import selected


def _target(config: dict) -> Target:
    t = config["target"]
    return Target(tol=t["tol"], kind=t["kind"], ladder=tuple(t["ladder"]), check_every=t["check_every"])


def static_groups(results: results_io.Results, frame: Frame | None = None) -> list[tuple[str, list[dict] | Frame]]:
    """(heading, records) per static point: one group ('') without static axes, else one per dimension. With
    ``frame`` (the results' `Frame`), the groups are Frames."""
    static = [a["name"] for a in results.meta.get("axes", []) if not a["traced"]]
    if frame is not None:
        if not static:
            return [("", frame)]
        keys = np.stack([frame[n] for n in static], axis=1)
        return [(", ".join(f"{n} = {v:g}" for n, v in zip(static, key)),
                 frame.where(np.all(keys == np.asarray(key), axis=1))) for key in np.unique(keys, axis=0).tolist()]
    if not static:
        return [("", results.records)]
    groups: dict[tuple, list[dict]] = {}
    for r in results.records:
        groups.setdefault(tuple(r[n] for n in static), []).append(r)
    return [(", ".join(f"{n} = {v:g}" for n, v in zip(static, key)), rows) for key, rows in sorted(groups.items())]


def chosen_records(results: results_io.Results, records: list[dict] | Frame, tol: float | None = None
                   ) -> list[dict] | Frame:
    """The records a table and fit use: at the ladder rung of ``tol`` (default: the sweep's tol), one learning
    rate per point (chosen by the median over seeds, `otod.core.tuning`)."""
    config = results.meta["config"]
    rung = None
    if tol is not None and tol != config["target"]["tol"]:
        rung = _target(config).index(tol)
        records = at_rung(records, rung)
    fields = tuple(a["name"] for a in results.meta.get("axes", [{"name": "kappa"}]))
    return selected(records, fields, rung)


#: The fits' asymptotic range: κ at or above this (the count at κ = 1 is 1 by construction).
FIT_MIN_KAPPA = 10.0


def fit_range(records: list[dict] | Frame) -> float | None:
    """The smallest κ a fit uses: `FIT_MIN_KAPPA`, or every κ (None) when fewer than 3 values reach it."""
    if isinstance(records, Frame):
        kappa = records["kappa"]
        return FIT_MIN_KAPPA if len(np.unique(kappa[kappa >= FIT_MIN_KAPPA])) >= 3 else None
    return FIT_MIN_KAPPA if len({r["kappa"] for r in records if r["kappa"] >= FIT_MIN_KAPPA}) >= 3 else None


def condition_fits(records: list[dict] | Frame, predictions):
    """The power-law fits of a condition sweep's chosen records over the asymptotic range, with the theory's
    exponents where the closed forms apply: the asymptotic one, and the slope of the exact counts (or of the
    bound) over the fitted κ (`otod.condition.predictions`)."""
    from otod.condition import theory
    from otod.core.fit import fit_sweep

    return fit_sweep(records, "kappa", min_x=fit_range(records),
                     exponent=theory.exponent if predictions else None,
                     exponent_on_grid=predictions.slope if predictions else None)


def coordinate_wise_note(config: dict) -> str | None:
    """A warning where coordinate-wise methods meet a diagonal Hessian (the eigen basis): there Adam and Jacobi
    are exact diagonal preconditioners and look immune to conditioning."""
    methods = [m for m in config["methods"] if m in ("adam", "jacobi")]
    if methods and config["problem"]["kind"] == "quadratic" and config["problem"]["basis"] == "eigen":
        return (f"note: {', '.join(methods)} {'is' if len(methods) == 1 else 'are'} coordinate-wise and H is diagonal "
                "in the eigen basis, where a diagonal preconditioner is exact: use --basis rotated to see them "
                "meet conditioning")
    return None


def edge_points(records: list[dict] | Frame) -> list[tuple[str, float]]:
    """The (method, κ) points whose chosen rate lies on the edge of the lr grid, sorted."""
    if isinstance(records, Frame):
        if "lr_on_edge" not in records:
            return []
        on = records["lr_on_edge"] == True  # noqa: E712 (an object column: True, False or None)
        return sorted(set(zip(records["method"][on].tolist(), records["kappa"][on].tolist())))
    return sorted({(r["method"], r["kappa"]) for r in records if r.get("lr_on_edge")})
