"""A synthetic but realistic condition-sweep results set of any size, from a seed: what `bench_results.py` saves,
loads and fits (and the tests, at 10³–10⁴ records).

The records carry every field a condition sweep writes (`otod.core.scheduler._records`): sweep, kappa, method, seed,
lr_multiplier, learning_rate, iterations, status, final_gap and hits (one per ladder rung, None where the rung was
not reached). Counts follow each method's rate, ln(1/ε)/(2 ln(1/ρ)) at every rung, times a per-seed log-normal
factor; a few lanes are censored at the cap. The metadata is a real sweep's (config, axes, chunks of 10⁴ records
with their checksums; with ``theory`` the FLOPs and exact medians a sweep stores), so `otod fit` reads the file
as it reads one `otod sweep` wrote.
"""

from __future__ import annotations


import numpy as np

from otod.core.results import records_checksum

METHODS = ("gd", "gd-opt", "heavy-ball", "nesterov")
LADDER = (0.1, 0.01, 0.001, 0.0001, 1e-05, 1e-06)


def _rho(method: str, kappa: np.ndarray) -> np.ndarray:
    root = np.sqrt(kappa)
    return {"gd": 1 - 1 / kappa, "gd-opt": (kappa - 1) / (kappa + 1), "heavy-ball": (root - 1) / (root + 1),
            "nesterov": 1 - 1 / root}[method]


def synthetic(records: int = 10 ** 6, seeds: int = 200, seed: int = 0, chunk: int = 10 ** 4, theory: bool = False):
    """(meta, records) of a condition sweep with about ``records`` lanes: κ log-spaced over [1, 10⁴], the
    `METHODS`, ``seeds`` seeds, lr theory, float32, dim 100. With ``theory``, the metadata holds what a sweep
    stores after its last chunk (`sweep_theory`: costly, κ × seeds exact lanes)."""
    rng = np.random.default_rng(seed)
    n_kappa = max(2, records // (seeds * len(METHODS)))
    kappas = [float(k) for k in np.geomspace(1.0, 1e4, n_kappa)]
    cap = 300_000
    from otod.condition.options import condition_sweep

    sweep = condition_sweep(kappas, methods=METHODS, seeds=seeds, seed=seed, max_iters=cap, x64=False)
    config = sweep.to_dict()
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
    meta = {"kind": "sweep", "sweep": "condition", "digest": sweep.digest(), "config": config,
            "axes": [{"name": "kappa", "symbol": "κ", "label": "condition number κ = L/μ", "traced": True}],
            "environment": {"device": "cpu", "device_count": 1, "synthetic": True}, "precision": "float32",
            "wall_time_s": 0.0, "compile_count": 0, "compile_time_s": 0.0, "resumed_chunks": 0, "run_time_s": 0.0,
            "complete": True, "chunks": chunks, "synthetic": f"benchmarks/synthetic_results.py seed {seed}"}
    if theory:
        meta.update(sweep_theory(sweep))
    return meta, rows


def sweep_theory(sweep) -> dict:
    """What `otod sweep condition` adds to its file once the last chunk is in (`sweep_and_report`'s ``bill``):
    FLOPs per iteration and set-up, and the exact counts' medians, by the same functions."""
    from otod.condition.bill import flops_per_iteration, setup_flops
    from otod.condition.predictions import exact_medians

    return {"flops_per_iteration": flops_per_iteration(sweep.problem, sweep.methods, max(sweep.values("kappa")),
                                                       sweep.options, sweep.resolved_x64),
            "setup_flops": {m: setup_flops(sweep.problem, m) for m in sweep.methods},
            "exact_medians": exact_medians(sweep.to_dict(), "float32", [])}
