"""How often SLQ's printed intervals hold the exact value (issue 49): tr H/P, tr H²/P, λ_q and κ_q, over many
probe sets on small nets whose dense spectrum is the truth.

Per net and checkpoint (SGD at lr 0.1, B = 32, float64, as ``otod curvature --x64`` trains; `NETS`): the dense
Hessian's eigendecomposition H = U Λ Uᵀ (`otod.nets.measure.dense.dense_hessian`). Then:

* traces: ``--sets`` sets of 8 Rademacher probes v (8: ``otod curvature``'s default), each probe's vᵀH^k v/P =
  Σ_j λ_j^k (u_jᵀv)²/P exactly (what Gauss quadrature gives for k ≤ 2m − 1, so no Lanczos is needed), and each
  interval of `otod.nets.measure.slq_error` for tr H/P and tr H²/P, with the Student-t interval it replaced
  (``t (before)``) beside it;
* λ_q and κ_q: ``--lanczos-sets`` sets of 8 probes run through `otod.nets.measure.curvature.lanczos` (m = 100, full
  re-orthogonalization) on diag(Λ) from Uᵀv (the same Krylov space rotated), then `otod.nets.measure.slq_error.slq_estimates`
  with the exact λ_max; κ_q's coverage, and how often its interval is unbounded above.

Coverage is the fraction of sets whose interval holds the exact value; with S sets its standard error is
√(c(1 − c)/S) (0.5 points at S = 2000 and c = 0.95). Prints one table; ``--json`` writes the numbers.

    python3 benchmarks/slq_coverage.py --sets 2000 --lanczos-sets 100
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

#: Small nets (P = 610–2,410), so the dense spectrum is cheap on 2 cores: NetSpec fields.
NETS = {"w8": dict(width=8), "w32": dict(width=32), "tanh16": dict(width=16, activation="tanh"),
        "d3w16": dict(width=16, depth=3), "teacher40": dict(width=40, data="teacher", loss="squared"),
        "cnn4": dict(model="cnn", width=4)}
#: The nets' learning rate (the teacher regression diverges at 0.1 in `benchmarks/slq_error.py`).
LR = {"teacher40": 0.01}
PROBES = 8


def spectra(name: str, checkpoints):
    """(step, eigenvalues, eigenvectors) of the dense Hessian at each checkpoint of SGD, float64."""
    import jax
    import jax.numpy as jnp
    import scipy.linalg

    from otod.nets.measure.dense import dense_hessian
    from otod.nets.model.problem import NetSpec
    from otod.nets.measure.trajectory import train

    spec = NetSpec(**NETS[name])
    with jax.enable_x64(True):
        x, y = (jnp.asarray(a) for a in spec.training_arrays(np.float64))
        for step, params in train(spec, checkpoints, LR.get(name, 0.1), seed=0, dtype=np.float64):
            params = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), params)
            h = np.asarray(dense_hessian(spec.mean_loss, params, (x, y)))
            lam, u = scipy.linalg.eigh(h, driver="evd", overwrite_a=True, check_finite=False)
            if np.all(np.isfinite(lam)):
                yield step, lam, u


def trace_coverage(lam, u, sets: int, seed: int) -> dict:
    """Per interval of the traces: the fraction of ``sets`` sets of `PROBES` probes whose interval holds the
    exact tr H/P or tr H²/P, and the median interval's ends relative to the exact value."""
    from otod.nets.measure import slq_error as E

    rng = np.random.default_rng(seed)
    size = lam.size
    names = ("tr H/P", "tr H/P t (before)", "tr H²/P", "tr H²/P t (before)")
    out = {name: {"cover": 0, "lo": [], "hi": []} for name in names}
    exact = {"tr H/P": float(np.mean(lam)), "tr H²/P": float(np.mean(lam ** 2))}
    done = 0
    while done < sets:
        chunk = min(250, sets - done)
        v = rng.choice([-1.0, 1.0], size=(chunk * PROBES, size))
        z2 = (v @ u) ** 2 / size  # (u_jᵀv)²/P; ‖v‖² = P
        moments = {k: (z2 * lam ** k).sum(axis=1).reshape(chunk, PROBES) for k in (1, 2, 4)}
        for s in range(chunk):
            m1, m2, m4 = (moments[k][s] for k in (1, 2, 4))
            square = E.square_trace_interval(m2, m4, size)
            intervals = {"tr H/P": E.trace_interval(m1, square[1], size), "tr H/P t (before)": E.mean_interval(m1),
                         "tr H²/P": square, "tr H²/P t (before)": E.mean_interval(m2)}
            for name, (lo, hi) in intervals.items():
                truth = exact[name.split(" t ")[0]]
                out[name]["cover"] += lo <= truth <= hi
                out[name]["lo"].append(lo / truth - 1)
                out[name]["hi"].append(hi / truth - 1)
        done += chunk
    return {name: {"cover": r["cover"] / sets, "lo_median": float(np.median(r["lo"])),
                   "hi_median": float(np.median(r["hi"]))} for name, r in out.items()}


def kappa_coverage(lam, u, sets: int, seed: int, steps: int = 100, q: float = 0.9) -> dict:
    """κ_q's and λ_q's coverage over ``sets`` sets of `PROBES` Lanczos probes, and how often κ_q's interval is
    unbounded above."""
    import jax
    import jax.numpy as jnp

    from otod.nets.measure import curvature as C
    from otod.nets.measure import slq_error as E
    from otod.nets.measure.dense import exact_summary

    exact = exact_summary(lam, q, C.NEGATIVE_TOLERANCE)
    kappa = exact["lambda_max"] / exact["lambda_q"] if exact["lambda_q"] > 0 else math.inf
    rng = np.random.default_rng(seed)
    counts = {"lambda_q": 0, "kappa_q": 0, "kappa_q unbounded": 0}
    with jax.enable_x64(True):
        lam_j = jnp.asarray(lam)
        run = jax.jit(jax.vmap(lambda v, k: C.lanczos(lambda x: lam_j * x, v, steps, k)[:2]))
        for s in range(sets):
            z = rng.choice([-1.0, 1.0], size=(PROBES, lam.size)) @ u
            alphas, betas = run(jnp.asarray(z), jax.random.split(jax.random.PRNGKey(s), PROBES))
            tri = [C.tridiagonal_eigen(a, b) for a, b in zip(np.asarray(alphas), np.asarray(betas))]
            nodes, weights = np.array([t.ritz for t in tri]), np.array([t.first ** 2 for t in tri])
            est = E.slq_estimates(nodes, weights, exact["lambda_max"], q, C.NEGATIVE_TOLERANCE, lam.size)
            lo, hi = est["lambda_q_interval"]
            counts["lambda_q"] += lo < exact["lambda_q"] <= hi or lo == hi == exact["lambda_q"]
            klo, khi = est["kappa_q_interval"]
            counts["kappa_q"] += klo <= kappa <= khi
            counts["kappa_q unbounded"] += math.isinf(khi)
    return {name: c / sets for name, c in counts.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nets", default=",".join(NETS))
    parser.add_argument("--checkpoints", default="0,100,1000")
    parser.add_argument("--sets", type=int, default=2000, help="probe sets for the traces' coverage")
    parser.add_argument("--lanczos-sets", type=int, default=100, help="probe sets for λ_q's and κ_q's (0: none)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows = {}
    print(f"{'spectrum':<22}{'P':>6} {'interval':<20}{'cover%':>8}{'median interval':>24}", flush=True)
    for name in args.nets.split(","):
        for step, lam, u in spectra(name, [int(c) for c in args.checkpoints.split(",")]):
            start = time.perf_counter()
            key = f"{name} step {step}"
            row = trace_coverage(lam, u, args.sets, seed=step + 1)
            for interval, r in row.items():
                print(f"{key:<22}{lam.size:>6} {interval:<20}{100 * r['cover']:>8.1f}"
                      f"{'[' + format(100 * r['lo_median'], '+.0f') + '%, ' + format(100 * r['hi_median'], '+.0f'):>19}%]")
            if args.lanczos_sets:
                row["lanczos"] = kappa_coverage(lam, u, args.lanczos_sets, seed=step + 7)
                print(f"{key:<22}{lam.size:>6} " + ", ".join(f"{k} {100 * v:.0f}%" for k, v in row["lanczos"].items())
                      + f" ({args.lanczos_sets} sets)")
            print(f"{'':<22}({time.perf_counter() - start:.0f} s)", flush=True)
            rows[key] = row
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
