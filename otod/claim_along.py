"""Readers of the claims table (`otod.claims`) for the along-training pages' prose: several checkpoints' fields in
one sentence ("steps 30, 100 and 300 (loss 0.063, 0.036, 0.027; misfits 0.08, 0.19, 0.24)") and a predictor's
spread over the seeds at several checkpoints, each read through `otod.claim_readers`' along-training readers
(the analysis the table and figures use). Registered in `otod.claim_readers.READERS` beside the others."""

from __future__ import annotations

from typing import Any


def along_fields(*paths: str, fields: list, method: str = "sgd") -> dict[str, Any]:
    """``fields`` of `otod.claim_readers.along_checkpoint` (step, loss, milestone, b_crit, lo, hi, s_min, misfit)
    at each checkpoint of ``paths``, as {field}{i}."""
    from otod.claim_readers import along_checkpoint

    out: dict[str, Any] = {}
    for i, path in enumerate(paths):
        row = along_checkpoint(path, method)
        out.update({f"{field}{i}": row[field] for field in fields})
    return out


def along_spread(*paths: str, name: str, method: str = "sgd", nqm: bool | None = None) -> dict[str, Any]:
    """One predictor's least and largest seed (`otod.claim_readers.along_predictor`'s min and max) at each
    checkpoint of ``paths``, as min{i}, max{i}: how far the seeds scatter."""
    from otod.claim_readers import along_predictor

    out: dict[str, Any] = {}
    for i, path in enumerate(paths):
        p = along_predictor(path, name, method, nqm)
        out.update({f"min{i}": p["min"], f"max{i}": p["max"]})
    return out
