"""Noise results made by hand for the analysis tests: records whose counts a test chooses, with the metadata a
report reads (a regression problem, so that no exact quadratic enters)."""

from otod.core.results import Results


def meta(sweep: str = "noise", mode: str = "simulate", seeds: int = 4, **config) -> dict:
    return {"kind": "sweep", "sweep": sweep, "mode": mode,
            "config": {"problem": {"kind": "regression", "examples": 1024, "dim": 16}, "target": {"tol": 0.05},
                       "options": {"schedule": "constant"}, "seeds": seeds, "lr": "tuned",
                       "resolved": {"max_iters": 1000}, **config}}


def record(batch: float, rate: float, seed: int, iterations: float, status: str = "converged", *,
           method: str = "sgd", beta: float = 0.0, dim: float = 16.0, mode: str = "simulate") -> dict:
    return {"sweep": "noise", "dim": dim, "batch": float(batch), "beta": beta, "method": method, "seed": seed,
            "lr_multiplier": float(rate), "learning_rate": 0.1 * rate, "iterations": iterations, "status": status,
            "hits": [iterations if status == "converged" else None], "schedule": "constant", "mode": mode}


def results(records: list[dict], **kwargs) -> Results:
    return Results(meta=meta(**kwargs), records=records)
