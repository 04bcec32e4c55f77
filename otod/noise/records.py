"""The records a noise analysis reads: one pandas DataFrame per results file, every lane with its named fields.

A noise or params record carries its dimension d, batch size B, β, schedule and path (exact or simulate) from
the run on (`otod.noise.kind.record_fields`). Files written before records carried them (otod before the
analysis port, issue 18) are filled in here, once, where the frame is built: d from the problem, B from the
proportional rule's B/d·d, β = 0, the schedule from the config and the path from the metadata (the simulator
wrote none). No reader fills them in again.

β is a setting of heavy-ball (momentum) and ema (the average's decay) only: the simulator runs every method at
every β of the axis, so the other methods' lanes repeat at each β; they are kept at the smallest β, so that the
selection (`otod.core.analysis.select`) does not pick the best of repeated runs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from otod.core.api import frame_of
from otod.noise.kind import ratio_batch
from otod.noise.options import USES_BETA

#: The fields of a point (besides β, which is a setting): one (lr, β) is chosen per point and method.
POINT_FIELDS = ("dim", "batch", "batch_ratio")


def frame(results) -> pd.DataFrame:
    """The records of a noise or params `Results` as one DataFrame, old files' missing fields filled in
    (`filled`) and the repeated β lanes of methods without β dropped (`own_settings`)."""
    return own_settings(filled(frame_of(results), results.meta))


def _missing(frame: pd.DataFrame, name: str) -> np.ndarray:
    return frame[name].isna().to_numpy() if name in frame else np.ones(len(frame), bool)


def filled(frame: pd.DataFrame, meta: dict) -> pd.DataFrame:
    """``frame`` with every named field a noise record carries (`otod.noise.kind.record_fields`) where a record
    lacks it: d (the problem's, 2 for Rosenbrock), B (`ratio_batch` of the record's B/d and d), β (0), the
    schedule (the config's), the path (the metadata's ``mode``; files of the simulator had none) and
    ``lr_multiplier`` (none: an absolute step). A frame that has them all is returned as it is."""
    from otod.core.api import read_config

    config = read_config(meta)
    dim = float(getattr(config.problem, "dim", 2))
    defaults = {"dim": dim, "beta": 0.0, "schedule": config.options.schedule,
                "mode": meta.get("mode", "simulate"), "lr_multiplier": np.nan}
    fill = {}
    for name, value in defaults.items():
        gone = _missing(frame, name)
        if gone.any():
            fill[name] = frame[name].where(~gone, value) if name in frame else value
    out = frame.assign(**fill) if fill else frame
    gone = _missing(out, "batch")
    if gone.any():
        ratio = out["batch_ratio"].to_numpy(float)
        made = [ratio_batch(r, d) for r, d in zip(ratio, out["dim"].to_numpy(float))]
        out = out.assign(batch=np.where(gone, made, out["batch"].to_numpy(float) if "batch" in out else np.nan))
    return out


def own_settings(frame: pd.DataFrame) -> pd.DataFrame:
    """The records less the lanes that repeat a method without β (sgd, precond, adam) at a larger β of the axis:
    for those methods β is no setting, only heavy-ball and ema read it."""
    if len(frame) == 0:
        return frame
    reads_beta = frame["method"].map(lambda m: m in USES_BETA).to_numpy(bool)
    smallest = frame.groupby("method", sort=False)["beta"].transform("min").to_numpy(float)
    keep = reads_beta | (frame["beta"].to_numpy(float) == smallest)
    return frame if keep.all() else frame[keep]
