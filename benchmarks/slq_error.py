"""SLQ's error against the exact spectrum (issue 34, item 5): what `otod.nets.measure.slq_error` states, measured.

For each net and checkpoint (SGD at `NETS`' lr, B = 32, float64, as ``otod curvature --x64`` trains): the dense Hessian
(`otod.nets.measure.dense.dense_hessian`) and its eigendecomposition H = U Λ Uᵀ; then ``--probes`` Rademacher
starts v (`otod.nets.measure.curvature.slq_starts`), each run through `otod.nets.measure.curvature.lanczos` (full
re-orthogonalization) on diag(Λ) from Uᵀv: the Krylov spaces of H from v and of Λ from Uᵀv are the same rotated,
so the nodes and weights are those of `otod.nets.measure.curvature.slq` on the net, without a Hessian-vector product per
step. Stage 1 (``--save``) writes each spectrum's exact eigenvalues and per-probe nodes and weights to an .npz;
stage 2 (``--analyse``) groups the probes into sets of ``--set`` (8, the default of ``otod curvature``) and
reports, per quantity and rule, the mean relative error over the sets (the bias), its standard error and
spread, the t-interval over the probes (the jackknife's standard error) with its coverage, and for λ_q and the
negative mass the interval of `otod.nets.measure.slq_error` (quadrature bounds widened by the probes' spread) with its
coverage against the exact value. The figures in `otod.nets.measure.slq_error` came from the 7 nets below at steps 0,
100 and 1000, 800 probes, m = 100 and 200, stage 1 on a GPU (about 10 s a spectrum there; the eigenvectors and
m × P bases make it slow on 2 cores), stage 2 here (about 10 min); a percentile bootstrap over probes was measured
in an earlier version of stage 2 (10 of the spectra) and dropped.

    python3 benchmarks/slq_error.py --save /tmp/slq --nets default,w64,d3,teacher,tanh,cnn,residual --chunk 800
    python3 benchmarks/slq_error.py --analyse /tmp/slq
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

#: The nets of the study: NetSpec fields, and the SGD lr of the run (0.1 as ``otod curvature``'s default; the
#: teacher regression diverges there, λ_max ≈ 92 > 2/0.1, so it runs at 0.01).
NETS = {"default": (dict(width=32), 0.1), "w64": (dict(width=64), 0.1), "d3": (dict(width=40, depth=3), 0.1),
        "teacher": (dict(width=270, data="teacher", loss="squared"), 0.01), "w8": (dict(width=8), 0.1),
        "tanh": (dict(width=64, activation="tanh"), 0.1), "cnn": (dict(model="cnn", width=28), 0.1),
        "residual": (dict(width=40, depth=3, architecture="residual"), 0.1)}


def spectra(name: str, checkpoints, probes: int, steps_list, out: Path, chunk: int = 50) -> None:
    import jax
    import jax.numpy as jnp
    import scipy.linalg

    from otod.nets.measure import curvature as C
    from otod.nets.measure.dense import dense_hessian
    from otod.nets.model.problem import NetSpec
    from otod.nets.measure.trajectory import train

    fields, lr = NETS[name]
    spec = NetSpec(**fields)
    with jax.enable_x64(True):
        x, y = (jnp.asarray(a) for a in spec.training_arrays(np.float64))
        saved = {}
        for step, params in train(spec, checkpoints, lr, seed=0, dtype=np.float64):
            params = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), params)
            t = time.perf_counter()
            h = dense_hessian(spec.mean_loss, params, (x, y))
            if jax.default_backend() == "cpu":
                lam, u = scipy.linalg.eigh(h, driver="evd", overwrite_a=True, check_finite=False)
            else:  # the accelerator's eigensolver: the same decomposition, faster there
                lam, u = (np.asarray(a) for a in jnp.linalg.eigh(jnp.asarray(h)))
            size = lam.size
            starts, key = C.slq_starts(1, probes, size, "rademacher", np.float64)
            z = np.asarray(starts) @ u  # rows: Uᵀv
            lam_j = jnp.asarray(lam)
            saved[f"eigenvalues_{step}"] = lam
            for m in steps_list:
                run = jax.jit(jax.vmap(lambda v, k: C.lanczos(lambda q: lam_j * q, v, m, k)[:2]))
                nodes, weights = np.empty((probes, m)), np.empty((probes, m))
                for lo in range(0, probes, chunk):
                    keys = jax.random.split(jax.random.fold_in(key, lo), min(chunk, probes - lo))
                    alphas, betas = run(jnp.asarray(z[lo:lo + chunk]), keys)
                    for i, (a, b) in enumerate(zip(np.asarray(alphas), np.asarray(betas))):
                        tri = C.tridiagonal_eigen(a, b)
                        nodes[lo + i], weights[lo + i] = tri.ritz, tri.first ** 2
                saved[f"nodes_{step}_{m}"], saved[f"weights_{step}_{m}"] = nodes, weights
            np.savez(out / f"{name}.npz", **saved)
            print(f"{name} step {step}: P = {size}, {time.perf_counter() - t:.0f} s", flush=True)


def estimators(nodes, weights, q: float, threshold: float):
    """Per quantity and estimator: a function of one set's (nodes, weights) [probes, m]."""
    from otod.nets.measure import slq_error as E

    out = {f"lambda_q/{rule}": (lambda n, w, rule=rule: E.pooled_quantile(n, w, q, rule)) for rule in E.QUANTILE_RULES}
    out.update({f"negative_mass/{rule}": (lambda n, w, rule=rule: E.pooled_mass_below(n, w, threshold, rule))
                for rule in ("step", "mid")})
    out["trace_per_parameter"] = lambda n, w: float(np.sum(w * n) / np.sum(w))
    out["square_trace_per_parameter"] = lambda n, w: float(np.sum(w * n ** 2) / np.sum(w))
    return out


def jackknife_se(nodes, weights, statistic) -> float:
    """The jackknife's standard error over probes (rows): √((N − 1)/N Σ (θ̂_(i) − mean θ̂_(i))²), θ̂_(i) the statistic
    with probe i left out (Efron & Tibshirani 1993, §11); s/√N for a mean over probes."""
    n = nodes.shape[0]
    loo = np.array([statistic(nodes[keep], weights[keep]) for keep in ~np.eye(n, dtype=bool)])
    return math.sqrt((n - 1) / n * float(np.sum((loo - loo.mean()) ** 2)))


def one_set(nodes, weights, statistic, exact: float, t: float) -> dict:
    """One set's estimate and its t-interval over probes (the jackknife's se), relative to the exact value."""
    est = statistic(nodes, weights)
    se = jackknife_se(nodes, weights, statistic)
    scale = abs(exact) or 1.0  # an exact 0 (no negative mass): absolute errors
    return {"rel": (est - exact) / scale, "half": t * se / scale, "cover": abs(est - exact) <= t * se}


def bounded(nodes, weights, interval, exact: float) -> dict:
    """One set's interval from the quadrature bounds and the probes' spread, relative to the exact value."""
    lo, hi = interval(nodes, weights)
    scale = abs(exact) or 1.0
    return {"lo": (lo - exact) / scale, "hi": (hi - exact) / scale, "cover": lo <= exact <= hi}


def analyse(folder: Path, set_size: int, q: float = 0.9, tolerance: float = 1e-3) -> dict:
    from otod.nets.measure import slq_error as E
    from otod.nets.measure.dense import exact_summary

    rows = {}
    t = E.student_t(set_size)
    for path in sorted(folder.glob("*.npz")):
        data = np.load(path)
        for key in sorted(k for k in data if k.startswith("eigenvalues")):
            step = key.split("_")[1]
            lam = data[key]
            if not np.all(np.isfinite(lam)):
                continue  # a run that diverged
            exact = exact_summary(lam, q, tolerance)
            threshold = -tolerance * exact["lambda_max"]
            for m in sorted(int(k.split("_")[2]) for k in data if k.startswith(f"nodes_{step}_")):
                nodes, weights = data[f"nodes_{step}_{m}"], data[f"weights_{step}_{m}"]
                sets = nodes.shape[0] // set_size
                parts = [slice(i * set_size, (i + 1) * set_size) for i in range(sets)]
                out = {"P": int(lam.size), "sets": sets, "exact": exact}
                for name, statistic in estimators(nodes, weights, q, threshold).items():
                    value = exact[name.split("/")[0]]
                    per = [one_set(nodes[s], weights[s], statistic, value, t) for s in parts]
                    cols = {k: np.array([p[k] for p in per], float) for k in per[0]}
                    out[name] = {"bias": cols["rel"].mean(), "bias_se": cols["rel"].std(ddof=1) / math.sqrt(sets),
                                 "sd": cols["rel"].std(ddof=1), "half": cols["half"].mean(),
                                 "cover": cols["cover"].mean()}
                for name, interval in (("lambda_q", lambda n, w: E.quantile_interval(n, w, q, t)),
                                       ("negative_mass", lambda n, w: E.mass_interval(n, w, threshold, t))):
                    per = [bounded(nodes[s], weights[s], interval, exact[name]) for s in parts]
                    cols = {k: np.array([p[k] for p in per], float) for k in per[0]}
                    out[f"{name}/bounds"] = {"lo_median": float(np.median(cols["lo"])),
                                             "hi_median": float(np.median(cols["hi"])), "cover": cols["cover"].mean()}
                lmin = np.array([nodes[s].min() for s in parts])
                out["lambda_min"] = {"max_abs_rel": float(np.max(np.abs(lmin / exact["lambda_min"] - 1)))}
                rows[f"{path.stem} step {step} m={m}"] = out
    return rows


def table(rows: dict) -> str:
    """One line per (spectrum, quantity, estimator): bias ± its standard error, sd, the t-interval's mean
    half-width and coverage (%); for the bounds, the median interval relative to the exact value and coverage."""
    lines = [f"{'spectrum':<24}{'quantity':<30}{'bias%':>7}{'±se':>6}{'sd%':>6}{'half%':>7}{'cover%':>7}"]
    for name, row in rows.items():
        for quantity, r in row.items():
            if isinstance(r, dict) and "bias" in r:
                lines.append(f"{name:<24}{quantity:<30}{100 * r['bias']:>7.2f}{100 * r['bias_se']:>6.2f}"
                             f"{100 * r['sd']:>6.2f}{100 * r['half']:>7.2f}{100 * r['cover']:>7.0f}")
            elif isinstance(r, dict) and "lo_median" in r:
                lines.append(f"{name:<24}{quantity:<30}  median interval [{100 * r['lo_median']:+.1f}%, "
                             f"{100 * r['hi_median']:+.1f}%]{100 * r['cover']:>7.0f}")
        lines.append(f"{name:<24}{'lambda_min (max |rel| error)':<30}{row['lambda_min']['max_abs_rel']:>10.1e}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--save", type=Path)
    parser.add_argument("--analyse", type=Path)
    parser.add_argument("--nets", default="default,w64,d3,teacher")
    parser.add_argument("--checkpoints", default="0,100,1000")
    parser.add_argument("--probes", type=int, default=800)
    parser.add_argument("--steps", default="100,200")
    parser.add_argument("--set", type=int, default=8)
    parser.add_argument("--chunk", type=int, default=50, help="probes per vmapped Lanczos call")
    args = parser.parse_args()
    if args.save:
        args.save.mkdir(parents=True, exist_ok=True)
        for name in args.nets.split(","):
            spectra(name, [int(c) for c in args.checkpoints.split(",")], args.probes,
                    [int(m) for m in args.steps.split(",")], args.save, args.chunk)
    if args.analyse:
        rows = analyse(args.analyse, args.set)
        print(table(rows))
        (args.analyse / "analysis.json").write_text(json.dumps(rows, indent=1, default=float))


if __name__ == "__main__":
    main()
