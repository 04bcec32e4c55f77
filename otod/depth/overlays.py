"""The theory's counts beside a sweep's measurements, at each point's chosen step: the table's theory columns and
the figures' overlays read them from here."""

from __future__ import annotations

from typing import Callable

import pandas as pd


def step_of(chosen: pd.DataFrame) -> dict:
    """(series, axis value) → the chosen step (the same for every seed of a point), from the records at the
    chosen settings (a group's ``chosen``, with its ``series`` column)."""
    axis = "depth" if "depth" in chosen else "layers"
    return dict(zip(zip(chosen["series"].tolist(), chosen[axis].tolist()), chosen["learning_rate"].tolist()))


def theory_columns(meta: dict, chosen: pd.DataFrame) -> dict[str, Callable]:
    """The theory's counts at each point's chosen step, where they apply: for gd from the identity init on a
    whitened, symmetric deep linear problem, the end-to-end per-mode recursion (``modes``) and the gradient-flow
    estimate (``flow``); for gd on the k = 1 per-layer toy, the quadratic's count (``theory``)."""
    from otod.core.api import read_config
    from otod.depth import theory

    config = read_config(meta)
    tol = config.target.tol
    steps = step_of(chosen)
    spec = config.problem
    if meta["sweep"] == "toy":
        if spec.reading != "per-layer":
            return {}

        def toy(series, k):
            return theory.toy_quadratic_iterations(steps[(series, k)], tol) if series == "gd" and k == 1 \
                and (series, k) in steps else None
        return {"theory": toy}
    if not (spec.input_kappa == 1.0 and spec.target == "symmetric" and not spec.balanced) \
            or spec.kind == "residual" or spec.rectangular:
        return {}
    cap = config.resolved.max_iters

    def applies(series, depth):
        return series == "gd·identity" and (series, depth) in steps

    def modes(series, depth):
        if not applies(series, depth):
            return None
        s = spec.target_singular_values()
        return theory.mode_iterations(int(depth), s, steps[(series, depth)], tol, max_iters=cap)

    def flow(series, depth):
        if not applies(series, depth):
            return None
        s = spec.target_singular_values()
        value = theory.flow_iterations(int(depth), s, steps[(series, depth)], tol)
        return None if value is None else round(value, 1)

    return {"modes": modes, "flow": flow}
