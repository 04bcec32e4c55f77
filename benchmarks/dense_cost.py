"""The cost of the dense Hessian spectrum (`otod.nets.measure.dense`) against SLQ, per checkpoint (issue 34,
item 5): what `DENSE_MAX_PARAMETERS`'s docstring states.

Each case runs in its own process (peak RSS is per process), on the digits MLP at seed 0's init, float32 unless
``--x64``: ``columns`` (H by Hessian-vector products, `dense_chunk` at a time, then the eigenvalues), ``hessian``
(`jax.hessian` on the flat parameters, then the eigenvalues), ``slq`` (the default 8 probes × 100 Lanczos steps
and the top-10 Lanczos of `otod.nets.measure.curvature.curvature_record`). Each is called twice; the second call is
timed (compile excluded), and its peak RSS printed. ``--compare`` prints the largest relative difference between
the float32 and float64 dense summaries at the default net's init.

    python3 benchmarks/dense_cost.py --widths 32,64 --cases columns,hessian,slq
    taskset -c 0,1 python3 benchmarks/dense_cost.py ...   # two cores of a larger machine
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))


def one(width: int, case: str, x64: bool) -> dict:
    import jax
    import jax.numpy as jnp
    import scipy.linalg

    from otod.nets.measure import curvature as C
    from otod.nets.measure import dense as D
    from otod.nets.model.family import seed_starts, start_of
    from otod.nets.model.problem import NetSpec

    jax.config.update("jax_enable_x64", x64)
    dtype = np.float64 if x64 else np.float32
    spec = NetSpec(width=width)
    start = start_of(spec, seed_starts(spec, np.random.default_rng([0, 0])))
    params = jax.tree.map(lambda a: jnp.asarray(a, dtype), start)
    data = tuple(jnp.asarray(a) for a in spec.training_arrays(dtype))
    size, n = spec.parameter_count, spec.dataset().examples
    chunk = D.dense_chunk(n, D.activation_floats(spec), size)
    out = {"width": width, "P": size, "case": case, "x64": x64}
    for _ in range(2):
        t = time.perf_counter()
        if case == "columns":
            h = D.dense_hessian(spec.mean_loss, params, data, chunk)
        elif case == "hessian":
            flat, unflatten = C.flatten(params)
            h = np.asarray(jax.jit(jax.hessian(lambda f, *d: spec.mean_loss(unflatten(f), *d)))(flat, *data),
                           np.float64)
            h = (h + h.T) / 2
        else:
            C.curvature_record(spec.mean_loss, params, data, 10, 8, 100)
        build = time.perf_counter() - t
        eig = 0.0
        if case != "slq":
            t = time.perf_counter()
            scipy.linalg.eigh(h, eigvals_only=True, driver="evd", check_finite=False)
            eig = time.perf_counter() - t
    out.update(build_s=round(build, 2), eigenvalues_s=round(eig, 2), chunk=chunk if case == "columns" else None,
               peak_rss_gib=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20, 2))
    return out


def compare() -> dict:
    """The float32 dense summary at the default net's init against the float64 one: the largest |relative|
    difference per quantity."""
    import jax
    import jax.numpy as jnp

    from otod.nets.measure import dense as D
    from otod.nets.model.family import seed_starts, start_of
    from otod.nets.model.problem import NetSpec

    spec = NetSpec()
    out = {}
    for dtype in (np.float32, np.float64):
        with jax.enable_x64(dtype == np.float64):
            params = jax.tree.map(lambda a: jnp.asarray(a, dtype),
                                  start_of(spec, seed_starts(spec, np.random.default_rng([0, 0]))))
            data = tuple(jnp.asarray(a) for a in spec.training_arrays(dtype))
            out[dtype.__name__] = D.exact_summary(D.dense_eigenvalues(spec.mean_loss, params, data), 0.9, 1e-3)
    return {k: abs(out["float32"][k] / out["float64"][k] - 1) for k in out["float64"]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--widths", default="32,64")
    parser.add_argument("--cases", default="columns,hessian,slq")
    parser.add_argument("--x64", action="store_true")
    parser.add_argument("--one", nargs=2)
    parser.add_argument("--compare", action="store_true")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(int(args.one[0]), args.one[1], args.x64)))
        return
    if args.compare:
        print(json.dumps(compare()))
        return
    for width in (int(w) for w in args.widths.split(",")):
        for case in args.cases.split(","):
            if case == "hessian" and width > 32:
                continue  # all P tangents at once: several GiB beyond P = 2,410
            cmd = [sys.executable, __file__, "--one", str(width), case] + (["--x64"] if args.x64 else [])
            print(subprocess.run(cmd, capture_output=True, text=True).stdout.strip() or f"{width} {case}: failed",
                  flush=True)


if __name__ == "__main__":
    main()
