"""Noise results made by hand for the analysis tests: records whose counts a test chooses, with the metadata a
report reads (a regression problem, so that no exact quadratic enters)."""

from otod.core.config import SweepConfig
from otod.core.results import Results
from otod.core.stochastic import NoiseOptions
from otod.core.stopping import Target
from otod.noise.problems import RegressionSpec

#: The axis each sweep kind's hand-made config varies (the records a test makes need not match it: the analysis
#: reads the records, the report the config's settings).
AXES = {"noise": (("batch", (1.0, 2.0, 4.0)),), "params": (("dim", (16.0,)), ("batch", (1.0, 2.0, 4.0)))}


def meta(sweep: str = "noise", mode: str = "simulate", seeds: int = 4) -> dict:
    """A sweep's metadata with a real stored config: regression on 1024 examples in d = 16, target loss 0.05, lr
    tuned over a grid given by hand (so a choice at its end is a given list's end), a cap of 1000 steps, float64."""
    config = SweepConfig(sweep=sweep, axes=AXES[sweep], problem=RegressionSpec(examples=1024, dim=16),
                         methods=("sgd",), target=Target(0.05, kind="absolute"), seeds=seeds, lr="tuned",
                         lr_grid=(0.5, 1.0, 2.0), max_iters=1000, x64=True, options=NoiseOptions())
    return {"kind": "sweep", "sweep": sweep, "mode": mode, "config": config.to_dict()}


def record(batch: float, rate: float, seed: int, iterations: float, status: str = "converged", *,
           method: str = "sgd", beta: float = 0.0, dim: float = 16.0, mode: str = "simulate") -> dict:
    return {"sweep": "noise", "dim": dim, "batch": float(batch), "beta": beta, "method": method, "seed": seed,
            "lr_multiplier": float(rate), "learning_rate": 0.1 * rate, "iterations": iterations, "status": status,
            "hits": [iterations if status == "converged" else None], "schedule": "constant", "mode": mode}


def results(records: list[dict], **kwargs) -> Results:
    return Results(meta=meta(**kwargs), records=records)
