"""A synthetic but realistic condition-sweep results set of any size, from a seed: what `bench_results.py` saves,
loads and fits (and the tests, at 10³–10⁴ records).

The records carry every field a condition sweep writes (`otod.core.sweep._records`): sweep, kappa, method, seed,
lr_multiplier, learning_rate, iterations, status, final_gap and hits (one per ladder rung, None where the rung was
not reached). Counts follow each method's rate, ln(1/ε)/(2 ln(1/ρ)) at every rung, times a per-seed log-normal
factor; a few lanes are censored at the cap. The metadata is a real sweep's (config, axes, chunks of 10⁴ records
with their checksums), so `otod fit` reads the file as it reads one `otod sweep` wrote.
"""

from __future__ import annotations

import math

import numpy as np

from otod.core.results import digest, records_checksum

METHODS = ("gd", "gd-opt", "heavy-ball", "nesterov")
LADDER = (0.1, 0.01, 0.001, 0.0001, 1e-05, 1e-06)


def _rho(method: str, kappa: np.ndarray) -> np.ndarray:
    root = np.sqrt(kappa)
    return {"gd": 1 - 1 / kappa, "gd-opt": (kappa - 1) / (kappa + 1), "heavy-ball": (root - 1) / (root + 1),
            "nesterov": 1 - 1 / root}[method]


def synthetic(records: int = 10 ** 6, seeds: int = 200, seed: int = 0, chunk: int = 10 ** 4):
    """(meta, records) of a condition sweep with about ``records`` lanes: κ log-spaced over [1, 10⁴], the
    `METHODS`, ``seeds`` seeds, lr theory, float32, dim 100."""
    rng = np.random.default_rng(seed)
    n_kappa = max(2, records // (seeds * len(METHODS)))
    kappas = [float(k) for k in np.geomspace(1.0, 1e4, n_kappa)]
    cap = 300_000
    config = {"sweep": "condition", "axes": {"kappa": kappas},
              "problem": {"kind": "quadratic", "dim": 100, "spectrum": "log-uniform", "basis": "eigen",
                          "start": "random"},
              "methods": list(METHODS), "target": {"tol": 1e-6, "kind": "relative", "ladder": list(LADDER),
                                                   "check_every": 1},
              "max_iters": cap, "seeds": seeds, "seed": seed, "lr": "theory", "lr_grid": [1.0], "x64": False,
              "options": {"damping": 0.0001}, "chunk_seconds": 5.0,
              "resolved": {"max_iters": cap, "x64": False, "learning_rates": [1.0]}}
    k = np.repeat(np.asarray(kappas), seeds)
    s = np.tile(np.arange(seeds), n_kappa)
    rows = []
    for method in METHODS:
        rho = np.maximum(_rho(method, k), 1e-12)
        rho = np.where(rho >= 1.0, 1 - 1e-12, np.where(k <= 1, 1e-12, rho))
        scale = np.exp(rng.normal(0.0, 0.05, seeds))[s]
        hits = np.ceil(np.log(1 / np.asarray(LADDER))[None, :] / (2 * np.log(1 / rho))[:, None] * scale[:, None])
        hits = np.maximum(hits, 1).astype(np.int64)
        censored = rng.random(len(k)) < 1e-3
        reached = (hits <= cap) & ~(censored[:, None] & (np.arange(len(LADDER)) >= len(LADDER) - 2))
        gap = np.where(reached[:, -1], 10 ** rng.uniform(-7.2, -6.0, len(k)), 10 ** rng.uniform(-6, -4, len(k)))
        steps = {"gd": 1 / k, "gd-opt": 2 / (k + 1), "nesterov": 1 / k}.get(method, 4 / (np.sqrt(k) + 1) ** 2)
        hits_list = np.where(reached, hits, -1).tolist()
        for i, (kv, sv, lr, g, h) in enumerate(zip(k.tolist(), s.tolist(), steps.tolist(), gap.tolist(),
                                                   hits_list)):
            h = [x if x >= 0 else None for x in h]
            rows.append({"sweep": "condition", "kappa": kv, "method": method, "seed": sv, "lr_multiplier": 1.0,
                         "learning_rate": lr, "iterations": h[-1] if h[-1] is not None else cap,
                         "status": "converged" if h[-1] is not None else "censored", "final_gap": g, "hits": h})
    chunks = [{"key": f"0/{i // chunk}", "lanes": len(rows[i:i + chunk]), "sha256": records_checksum(rows[i:i + chunk])}
              for i in range(0, len(rows), chunk)]
    meta = {"kind": "sweep", "sweep": "condition", "digest": digest(config), "config": config,
            "axes": [{"name": "kappa", "symbol": "κ", "label": "condition number κ = L/μ", "traced": True}],
            "environment": {"device": "cpu", "device_count": 1, "synthetic": True}, "precision": "float32",
            "wall_time_s": 0.0, "compile_count": 0, "compile_time_s": 0.0, "resumed_chunks": 0, "run_time_s": 0.0,
            "complete": True, "chunks": chunks, "synthetic": f"benchmarks/synthetic_results.py seed {seed}"}
    return meta, rows
