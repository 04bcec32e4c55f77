"""Matrix products in the precision the arrays have: float32 means float32 on every device.

JAX's default matmul precision lets a GPU run a float32 ``dot`` in TF32, whose inputs keep 10 bits of mantissa
(float32 keeps 23): a 512 × 512 product's largest relative error was 3.0·10⁻⁴ instead of 3.0·10⁻⁷. XLA:CPU has no
such mode: there the default already is float32. On an NVIDIA H100 (jax 0.11.2, 2026-11-27,
`benchmarks/gpu_check.sh`) the default moved the records away from the CPU's and from theory: in the rotated
condition sweep (``--k 1..100 --basis rotated``) 399 of 3,200 iteration counts changed, Newton's among them (2
iterations where exact arithmetic needs 1), and in ``otod sweep depth --depth 4,8 --init xavier --seeds 8`` 110 of
208, 6 converged lanes becoming censored. With ``"highest"`` the condition, regression and net sweeps' counts
equalled the CPU's, every one, and the depth sweep's moved only where float32 rounding decides (18 of 208: 11
converged lanes by 0.01–2.1 %, the other 7 diverging lanes at 3× the step). On XLA:CPU ``"highest"`` changes no
record (the rotated condition, depth, toy and net sweeps compared bit for bit).

Every function that writes records enters `exact_float32` (`otod.core.sweep.run_sweep`, the nets' curvature),
so a notebook gets the same arithmetic as the command line.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

#: jax's name for float32 products in float32 (its "float32" alias), not TF32 or bfloat16 passes
MATMUL_PRECISION = "highest"


@contextlib.contextmanager
def exact_float32() -> Iterator[None]:
    """Trace and run everything inside with ``jax.default_matmul_precision(MATMUL_PRECISION)``; usable as a
    decorator. JAX is imported here, not at module import, so that ``otod --help`` stays fast."""
    import jax

    with jax.default_matmul_precision(MATMUL_PRECISION):
        yield
