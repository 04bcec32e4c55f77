"""The whole bill: FLOPs to tolerance = set-up + iterations × FLOPs of one iteration of that method on that
problem.

One iteration is one optimizer update, its application and one value-and-gradient of the loss, for a single
lane, with the method in its cheapest optax form (`otod.methods.Method.cheapest`: ``optax.sgd(lr)`` for gd, not
the engine's shared momentum program with β = 0, which would bill gd for multiplications by zero). Its FLOPs are
XLA's cost analysis of that program compiled on its own (`otod.cost.xla.compiled_cost`; the lowered, unoptimised
HLO over-counts what runs, e.g. a product the compiler computes once but the code writes twice). Counting the
body alone is counting one iteration (XLA counts a while body once).

Set-up is what a method computes once before its first iteration, beyond building the problem: `setup_flops`.
It is counted from the textbook costs of the dense factorisations, because XLA's cost analysis leaves LAPACK
calls out (it reports ~3·10⁴ FLOPs for a 100×100 ``eigh``, which performs ~9·10⁶).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np
import optax

from otod.condition.methods import METHODS, MethodOptions
from otod.core.api import Results, compiled_cost, lookup, optax_dynamics, seed_problem_draws as seed_draws


class IterationCost(NamedTuple):
    """XLA FLOPs of one iteration, with transcendental operations (sqrt, exp) counted apart, as XLA does."""

    method: str
    flops: float
    transcendentals: float


def iteration_cost(problem_spec, method_name: str, kappa: float, options: MethodOptions = MethodOptions(),
                   x64: bool = False) -> IterationCost:
    """XLA's count of one iteration of ``method_name`` (update + apply + value-and-gradient) on a problem of
    ``problem_spec`` at condition number ``kappa`` (see module docstring). The lane is traced abstractly
    (``jax.eval_shape``): nothing is computed and the only compiles are the counted programs."""
    m = lookup(METHODS, method_name, "condition")
    family = problem_spec.family()
    with jax.enable_x64(x64):
        dtype = np.float64 if x64 else np.float32
        drawn = jax.tree.map(lambda a: a[0], seed_draws(problem_spec, 0, 1, dtype))
        dynamics = optax_dynamics(family, (m,), options, True)
        lane = jax.eval_shape(dynamics.set_up, {"kappa": dtype(kappa)}, drawn, dtype(1.0), 0)
        problem, info, step_size, _ = lane.constants
        params, g = lane.carry[0], lane.carry[-1]

        def optimizer_of(info, step_size):
            return m.cheapest(step_size, info, options)

        state = jax.eval_shape(lambda info, s, x: optimizer_of(info, s).init(x), info, step_size, params)

        def one_iteration(problem, info, step_size, x, state, g):
            updates, state = optimizer_of(info, step_size).update(g, state, x)
            f, g = jax.value_and_grad(family.metric, argnums=1)(problem, optax.apply_updates(x, updates))
            return f, g, state

        body = compiled_cost(one_iteration, problem, info, step_size, params, state, g)
    return IterationCost(method_name, body.flops, body.transcendentals)


#: Dense factorisation counts (Golub & Van Loan, *Matrix Computations*, 4th ed., 2013: §8.3 for the symmetric QR
#: algorithm, §3.2 for LU): symmetric eigendecomposition with vectors, eigenvalues only, and an inverse.
def eigh_flops(n: int) -> float:
    return 9.0 * n ** 3


def eigvalsh_flops(n: int) -> float:
    return 4.0 * n ** 3 / 3.0


def inverse_flops(n: int) -> float:
    return 2.0 * n ** 3


def setup_flops(problem_spec, method: str) -> float:
    """FLOPs a method's lanes compute before their first iteration, beyond building the problem.

    Quadratics are built from their eigendecomposition, so μ, L, H⁻¹ and the spectrum are known by construction
    and cost nothing; only Jacobi on the rotated basis computes the L of D^-½ H D^-½ (an ``eigvalsh``).
    On a Kronecker problem (d = mn) with a perturbation, μ and L of the dense H come from its eigendecomposition:
    the first-order methods need the eigenvalues (4d³/3), Newton the eigenvectors too (9d³), Jacobi the
    eigenvalues of the scaled H. At ε = 0, H = A ⊗ B has the spectrum a_i·b_j and eigenvectors U_A ⊗ U_B by
    construction, and Jacobi needs only the two scaled factors' eigenvalues. KFAC inverts its two damped factors
    (2m³ + 2n³); Adam needs nothing."""
    if method == "adam":
        return 0.0
    if problem_spec.kind == "quadratic":
        rotated = problem_spec.basis == "rotated"
        return eigvalsh_flops(problem_spec.dim) + problem_spec.dim ** 2 if method == "jacobi" and rotated else 0.0
    m, n = problem_spec.rows, problem_spec.cols
    d = m * n
    if method == "kfac":
        return inverse_flops(m) + inverse_flops(n)
    if not problem_spec.perturbation:  # H = A ⊗ B: its spectrum is a_i·b_j by construction (no dense factorisation)
        return eigvalsh_flops(m) + eigvalsh_flops(n) + 2.0 * (m * m + n * n) if method == "jacobi" else 0.0
    if method == "newton":
        return eigh_flops(d)
    if method == "jacobi":
        return eigvalsh_flops(d) + 2.0 * d ** 2
    return eigvalsh_flops(d)


def setup_description(problem, method: str) -> str:
    """What `setup_flops` charges ``method`` for on ``problem`` (a config's problem spec), in words for a legend:
    the factorisation and what it finds. Empty where the set-up costs nothing."""
    if method == "adam":
        return ""
    if problem.kind == "quadratic":
        return "eigvalsh of D^-½ H D^-½ to find its L" if method == "jacobi" and problem.basis == "rotated" else ""
    if method == "kfac":
        return "inverses of the two damped Kronecker factors"
    if not problem.perturbation:
        return "eigvalsh of the two scaled factors to find L" if method == "jacobi" else ""
    if method == "newton":
        return "eigh of the dense H (μ, L and H⁻¹)"
    if method == "jacobi":
        return "eigvalsh of the dense D^-½ H D^-½ to find μ and L"
    return "eigvalsh of the dense H to find μ and L"


def flops_per_iteration(problem_spec, methods, kappa: float, options: MethodOptions = MethodOptions(),
                        x64: bool = False, on_hit=None) -> dict[str, float]:
    """``{method: FLOPs of one iteration}`` for the given methods (see `iteration_cost`), read from the disk cache
    where an earlier process counted the same (method, problem shape, options, precision, JAX version): the count
    depends on shapes alone, not on κ, so a later sweep compiles nothing extra for its FLOPs column. ``on_hit(key)``
    is called for each count read back."""
    from otod.core.api import side_cache

    out = {}
    with side_cache("flops") as cache:
        for m in methods:
            key = repr((m, problem_spec, options, bool(x64), jax.__version__))
            if key in cache:
                if on_hit is not None:
                    on_hit(key)
            else:
                cache[key] = iteration_cost(problem_spec, m, kappa, options, x64).flops
            out[m] = cache[key]
    return out


def iteration_flops(results: Results) -> dict[str, float]:
    """FLOPs of one iteration per method, from the file's metadata or, where absent, counted now."""
    stored = results.meta.get("flops_per_iteration")
    if stored:
        return stored
    from otod.core.api import read_config

    config = read_config(results.meta)
    return flops_per_iteration(config.problem, config.methods, max(config.values("kappa")), config.options,
                               config.resolved_x64)


def setup_costs(results: Results) -> dict[str, float]:
    """Set-up FLOPs per method, from the file's metadata or, where absent, from its config (`setup_flops`)."""
    stored = results.meta.get("setup_flops")
    if stored:
        return stored
    from otod.core.api import read_config

    config = read_config(results.meta)
    return {m: setup_flops(config.problem, m) for m in config.methods}
