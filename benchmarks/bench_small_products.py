"""Benchmark (issue 20, item 2): what one small matrix product costs on XLA:CPU, the floor of the depth engine.

A deep linear net of width 8 spends its step in batched 8 × 8 products (28 of them per lane-iteration at depth 8).
Each form below runs as a chain of ``--chain`` dependent products inside one jitted ``fori_loop``, on a batch of
matrices (one per lane), so the time per product is the steady state XLA:CPU reaches:

* ``ab``: ``dot_general`` contracting the lhs's minor dimension (YNNPACK on this jaxlib);
* ``atb``: ``dot_general`` contracting both operands' major dimension (aᵀb: XLA:CPU's naive loop emitter), the form
  the depth gradient had for dPᵀW_l before `otod.depth.linear.transposed_product`;
* ``chain``: `transposed_product`, aᵀb written out as a chain of fused multiply-adds (the same bits as ``atb``,
  checked here, compiled);
* ``ab4``: ab written out in YNNPACK's summation order, four FMA accumulators (k mod 4) added as a pairwise tree
  (the same bits as ``ab`` at widths 1, 8, 12 and 16 only, checked here; not used by the engine).

Forms and batches alternate over ``--rounds`` rounds (forward on even rounds, backward on odd); each entry is the
best of 3 calls in the round, and the table prints the median over rounds in ns per matrix, with the CPU model and
load. From the repository root:

    python3 benchmarks/bench_small_products.py --rounds 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout's otod

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from otod.core.results import cpu_model  # noqa: E402
from otod.depth.linear import transposed_product  # noqa: E402

def four_accumulators(a, b):
    """ab = Σ_k a[i, k]·b[k, j] as four chains of fused multiply-adds over k ≡ r (mod 4), added as a pairwise
    tree: YNNPACK's order for 8 × 8 float32 operands on this jaxlib (measured against emulations in float64). Each
    chain's first sum is written a_{r+4}b_{r+4} + a_r b_r, since LLVM fuses the left product."""
    width = a.shape[-1]
    sums = []
    for r in range(min(4, width)):
        ks = list(range(r, width, 4))
        total = a[:, ks[0], None] * b[ks[0], None, :]
        if len(ks) > 1:
            total = a[:, ks[1], None] * b[ks[1], None, :] + total
        for k in ks[2:]:
            total = total + a[:, k, None] * b[k, None, :]
        sums.append(total)
    while len(sums) > 1:
        sums = [sums[i] + sums[i + 1] if i + 1 < len(sums) else sums[i] for i in range(0, len(sums), 2)]
    return sums[0]


FORMS = {
    "ab": lambda a, b: jax.lax.dot_general(a, b, (((1,), (0,)), ((), ()))),
    "ab4": four_accumulators,
    "atb": lambda a, b: jax.lax.dot_general(a, b, (((0,), (0,)), ((), ()))),
    "chain": transposed_product,
}


def program(form: str, chain: int):
    """``chain`` dependent products of the batch: (a, b) ← (b, ½·product(a, b)), all in one compiled loop."""
    product = jax.vmap(FORMS[form])

    def run(a, b):
        return jax.lax.fori_loop(0, chain, lambda i, c: (c[1], 0.5 * product(*c)), (a, b))

    return jax.jit(run)


def best_of_three(fn, a, b) -> float:
    times = []
    for _ in range(3):
        t = time.perf_counter()
        jax.block_until_ready(fn(a, b))
        times.append(time.perf_counter() - t)
    return min(times)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--width", type=int, default=8)
    p.add_argument("--batches", default="13,104,416")
    p.add_argument("--chain", type=int, default=1000)
    args = p.parse_args(argv)
    batches = [int(b) for b in args.batches.split(",")]
    rng = np.random.default_rng(0)
    cases = []
    for batch in batches:
        a, b = (jnp.asarray(rng.standard_normal((batch, args.width, args.width)) / 3, jnp.float32) for _ in range(2))
        for form in FORMS:
            fn = program(form, args.chain)
            jax.block_until_ready(fn(a, b))  # compile
            cases.append((form, batch, fn, a, b))
    # compiled, as the engine runs them: run op by op the chain's products and sums round apart (no FMA)
    compiled = {f: jax.jit(jax.vmap(fn)) for f, fn in FORMS.items()}

    def same_bits(x, y):
        return {batch: np.array_equal(np.asarray(compiled[x](a, b)), np.asarray(compiled[y](a, b)))
                for _, batch, _, a, b in cases}

    same, same_ab = same_bits("atb", "chain"), same_bits("ab", "ab4")
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; jax {jax.__version__}; width {args.width}, chains of "
          f"{args.chain}; load before {os.getloadavg()[0]:.2f}")
    print("chain gives atb's bits:", ", ".join(f"batch {k}: {v}" for k, v in same.items()))
    print("ab4 gives ab's bits:", ", ".join(f"batch {k}: {v}" for k, v in same_ab.items()))
    runs: dict[tuple, list] = {(form, batch): [] for form, batch, *_ in cases}
    for r in range(args.rounds):
        for form, batch, fn, a, b in (cases if r % 2 == 0 else cases[::-1]):
            runs[form, batch].append(1e9 * best_of_three(fn, a, b) / args.chain / batch)
    print(f"load after {os.getloadavg()[0]:.2f}\n")
    print("| form | " + " | ".join(f"batch {b}: ns per matrix, median (runs)" for b in batches) + " |")
    print("|---|" + "---|" * len(batches))
    for form in FORMS:
        cells = [f"{statistics.median(runs[form, b]):.1f} ({', '.join(f'{x:.0f}' for x in runs[form, b])})"
                 for b in batches]
        print(f"| {form} | " + " | ".join(cells) + " |")
    return 0 if all(same.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
