"""The curvature of a net's training loss: Hessian-vector products, Lanczos for the top eigenvalues, stochastic
Lanczos quadrature (SLQ) for the spectral density, a condition number κ that exists for nets, and the curvature
measured at checkpoints of training.

* H·v is the forward-mode derivative of the gradient along v, jvp(∇L, (θ,), (v,)) (Pearlmutter 1994): one
  forward-over-reverse pass, about the cost of two gradients, never forming H. Vectors are flat (`flatten`), so
  the linear algebra is that of ordinary arrays.
* `lanczos`: m steps of the Lanczos recurrence H q_j = β_{j−1} q_{j−1} + α_j q_j + β_j q_{j+1} from a start v,
  with *full* re-orthogonalization (each new vector is projected off every earlier one, twice: classical
  Gram–Schmidt twice is enough, Giraud et al. 2005), so the basis stays orthonormal to rounding and no ghost
  copies of converged eigenvalues appear (Paige 1971; Golub & Van Loan §10.3). A breakdown (β_j ≈ 0: the Krylov
  space is invariant, as for a Hessian with repeated eigenvalues) restarts from a random vector orthogonal to the
  basis with β_j = 0, so the tridiagonal T_m splits into blocks and its eigenvalues stay eigenvalues of H. The
  eigenvalues of T_m (Ritz values θ_i) approximate H's extreme eigenvalues first; |β_m s_{m,i}| (s_i T_m's
  eigenvector) bounds the residual ‖H y_i − θ_i y_i‖ of each Ritz pair, so there is an eigenvalue of H within that
  distance of θ_i.
* `slq`, stochastic Lanczos quadrature (Golub & Meurant 1994; Ubaru, Chen & Saad 2017; Ghorbani, Krishnan & Xiao
  2019): for a unit start v, vᵀ f(H) v = Σ_i τ_i² f(θ_i) exactly for every polynomial f of degree ≤ 2m − 1 (Gauss
  quadrature), τ_i the first component of T_m's i-th eigenvector. Averaged over random starts (Rademacher ±1/√P,
  or Gaussian normalised: E[v vᵀ] = I/P for both), the nodes θ_i and weights τ_i²/probes give a discrete measure
  whose moments are unbiased estimates of tr f(H)/P: the spectral density of H, normalised to 1. The density for
  plots is that measure convolved with a Gaussian of width σ (`broadened_density`).
* κ: a net's Hessian has a bulk of eigenvalues near zero, some negative (Sagun et al. 2017; Ghorbani et al.
  2019), and a few large outliers (about one per class, Papyan 2019). λ_max/λ_min is then negative or infinite,
  so it describes nothing. Two definitions that exist for nets, both stated in every output:

  - ``kappa_q`` = λ_max / λ_q, where λ_q is the q-quantile of the spectrum: the eigenvalue below which a
    fraction q of the P eigenvalues lie (the ⌈qP⌉-th smallest). Default q = 0.9: the spread of the top 10% of
    the directions, which the outliers and the upper edge of the bulk span. A lower quantile (the median) falls
    into the bulk at ≈ 0 or below, where κ has no sign or size. κ_q is None when λ_q ≤ 0 (most of the spectrum
    negative). SLQ estimates it from its spectral measure, to the accuracy of that measure's distribution
    function, which m-node Gauss quadrature resolves only to about the weight of the nodes next to λ_q (the
    Chebyshev–Markov–Stieltjes bounds): more Lanczos steps, not more probes, sharpen it;
  - ``kappa_damped`` = (λ_max + δ)/(max(λ_min, 0) + δ), the conditioning of H + δI as a damped second-order
    method (KFAC's damping, Martens & Grosse 2015) or weight decay δ sees it; negative eigenvalues count as 0
    (the damped method is not convex there either). With λ_min⁺ ≈ 0, as in nets, it is ≈ λ_max/δ + 1. The
    default δ = 10⁻³ is absolute (loss units), the same at every width, so that κ_δ compares across nets.

  ``negative_mass`` says how much of the spectrum is negative: the SLQ weight on nodes below −ε·λ_max,
  ε = `NEGATIVE_TOLERANCE` = 10⁻³. The threshold is not 0 because a net's Hessian often holds a large cluster
  at 0 (dead ReLUs, the null space: half the eigenvalues of a 1,210-parameter digits MLP at init lie within
  10⁻³ of 0), which m-node quadrature cannot resolve: it spreads that mass over nodes on both sides of 0. On
  that net (8 probes) the weight below 0 came out 0.56 at m = 60, 0.54 at m = 100 and 0.30 at m = 120 against an
  exact 0.16, while the weight below −10⁻³λ_max came out 0.103, 0.112 and 0.112 against an exact 0.107.

  Measured on that net (float64, 8 Rademacher probes) against `numpy.linalg.eigh` of the dense Hessian:
  λ_0.9 = 0.0353 at m = 60, 0.0423 at m = 100, 0.0425 at m = 120 and 0.0420 at m = 240, exact 0.0428. That
  1% did not carry over: at the default net (P = 2,410) λ_0.9 at m = 100 came out 14% high on average, and
  −26% to +47% on nets of P ≈ 4,800 (`otod.nets.measure.slq_error`).

* Exact where affordable: for P ≤ `otod.nets.measure.dense.DENSE_MAX_PARAMETERS` (the default net among them)
  `curvature_record` computes every quantity above from all P eigenvalues of the dense Hessian, with no sampling
  or quadrature error, and says so (``spectrum`` "dense", ``exact``); above it, SLQ's estimates each carry a 95%
  interval that holds both errors (`otod.nets.measure.slq_error`). The top-k stay Lanczos's, with their residual bounds.

Everything here is a pure function of its arguments; the jit-compiled kernels take the loss as a static argument
(a function of (params, *data)) and the parameters and data as traced ones, so one compile serves every
checkpoint of one net.
"""

from __future__ import annotations

import functools
import math
from typing import Callable, NamedTuple

import numpy as np

from otod.core.api import exact_float32, lazy

jax = lazy("jax")
jnp = lazy("jax.numpy")

#: The default quantile of κ_q = λ_max / λ_q (see the module docstring).
QUANTILE = 0.9
#: The default damping δ of κ_δ = (λ_max + δ)/(max(λ_min, 0) + δ).
DAMPING = 1e-3
#: Negative mass counts SLQ nodes below −NEGATIVE_TOLERANCE · λ_max.
NEGATIVE_TOLERANCE = 1e-3
#: The default Lanczos steps per SLQ probe and the default number of probes.
LANCZOS_STEPS, PROBES = 100, 8
#: What the dense spectrum makes exact (`curvature_record`): every quantity read off the spectrum.
EXACT_QUANTITIES = ("lambda_max", "lambda_min", "lambda_q", "kappa_q", "kappa_damped", "negative_mass",
                    "trace_per_parameter", "square_trace_per_parameter")
#: Breakdown threshold of the Lanczos recurrence: β_j ≤ BREAKDOWN · eps · ‖T‖ (a running estimate of ‖H‖).
BREAKDOWN = 100.0


def flatten(params):
    """(flat vector, unflatten): `jax.flatten_util.ravel_pytree`."""
    from jax.flatten_util import ravel_pytree

    return ravel_pytree(params)


def hessian_vector_product(loss: Callable, params) -> Callable:
    """v ↦ ∇²loss(params)·v on flat vectors v, for a loss of the parameter pytree alone."""
    flat, unflatten = flatten(params)
    grad = jax.grad(lambda f: loss(unflatten(f)))

    def hvp(v):
        return jax.jvp(grad, (flat,), (v.astype(flat.dtype),))[1]

    return hvp


# -- Lanczos ------------------------------------------------------------------------------------------------------


def lanczos(matvec: Callable, v0, steps: int, key):
    """``steps`` Lanczos steps with full re-orthogonalization from ``v0`` (traceable; the callers jit it).

    Returns (alpha [m], beta [m], basis [m + 1, P]): T_m = tridiag(beta[:-1], alpha, beta[:-1]), beta[-1] the
    residual factor β_m of the last step, basis the orthonormal Lanczos vectors. A breakdown restarts from a
    random vector (``key`` folded with the step) orthogonal to the basis and stores β = 0 there."""
    n, dtype = v0.shape[0], v0.dtype
    eps = jnp.finfo(dtype).eps
    basis = jnp.zeros((steps + 1, n), dtype).at[0].set(v0 / jnp.sqrt(jnp.vdot(v0, v0)))

    def orthogonalize(w, q):
        for _ in range(2):  # twice is enough (Giraud et al. 2005); rows not yet filled are 0 and project nothing
            w = w - q.T @ (q @ w)
        return w

    def body(j, carry):
        basis, alpha, beta, scale = carry
        q = basis[j]
        w = matvec(q)
        a = jnp.dot(q, w)
        w = orthogonalize(w, basis)  # subsumes w − α_j q_j − β_{j−1} q_{j−1}
        b = jnp.sqrt(jnp.vdot(w, w))
        scale = jnp.maximum(scale, jnp.abs(a) + b)
        broke = b <= BREAKDOWN * eps * scale
        fresh = orthogonalize(jax.random.normal(jax.random.fold_in(key, j), (n,), dtype), basis)
        w = jnp.where(broke, fresh, w)
        w = w / jnp.maximum(jnp.sqrt(jnp.vdot(w, w)), jnp.finfo(dtype).tiny)
        return basis.at[j + 1].set(w), alpha.at[j].set(a), beta.at[j].set(jnp.where(broke, 0.0, b)), scale

    zeros = jnp.zeros(steps, dtype)
    basis, alpha, beta, _ = jax.lax.fori_loop(0, steps, body, (basis, zeros, zeros, jnp.zeros((), dtype)))
    return alpha, beta, basis


def _hvp_of(loss, params, data):
    flat, unflatten = flatten(params)
    grad = jax.grad(lambda f: loss(unflatten(f), *data))
    return lambda v: jax.jvp(grad, (flat,), (v,))[1]


def _lanczos_run(loss, params, data, v0, key, steps):
    alpha, beta, _ = lanczos(_hvp_of(loss, params, data), v0, steps, key)
    return alpha, beta


def _slq_run(loss, params, data, starts, keys, steps):
    hvp = _hvp_of(loss, params, data)
    return jax.vmap(lambda v, k: lanczos(hvp, v, steps, k)[:2])(starts, keys)


@functools.cache
def _compiled(name: str):
    """The jit of `_lanczos_run` or `_slq_run` (loss and steps static), made on first use so that importing this
    module imports no JAX."""
    return jax.jit({"lanczos": _lanczos_run, "slq": _slq_run}[name], static_argnames=("loss", "steps"))


class Tridiagonal(NamedTuple):
    """T_m's eigenpairs: Ritz values θ (ascending), first components τ of the eigenvectors (SLQ's weights are
    τ²), and residual bounds |β_m s_{m,i}| (an eigenvalue of H lies within each of its θ)."""

    ritz: np.ndarray
    first: np.ndarray
    residual: np.ndarray


def tridiagonal_eigen(alpha, beta) -> Tridiagonal:
    """Eigenpairs of T_m = tridiag(β_1..β_{m−1}; α_1..α_m) in float64 NumPy."""
    alpha, beta = np.asarray(alpha, np.float64), np.asarray(beta, np.float64)
    t = np.diag(alpha) + np.diag(beta[:-1], 1) + np.diag(beta[:-1], -1)
    theta, s = np.linalg.eigh(t)
    return Tridiagonal(theta, s[0], np.abs(beta[-1] * s[-1]))


def parameter_size(params) -> int:
    return int(sum(np.size(leaf) for leaf in jax.tree.leaves(params)))


def default_top_steps(k: int, size: int) -> int:
    """Lanczos steps for the top k: 3k + 40, at most P. The top Ritz values of a net's Hessian (outliers, well
    separated) converge in far fewer; the residual bounds recorded with them say how well they did."""
    return int(min(size, 3 * k + 40))


class TopEigen(NamedTuple):
    """The k largest Ritz values (descending), their residual bounds, and the Lanczos steps taken. A bound is
    never reported below eps·max|θ|, the rounding of H·v in the working precision: |β_m s_{m,i}| alone falls far
    below it (to 10⁻²⁵ in float32) once a Ritz vector has converged, but H·v is not computed more exactly."""

    eigenvalues: np.ndarray
    residuals: np.ndarray
    steps: int


def top_eigenvalues(loss: Callable, params, k: int, data: tuple = (), steps: int | None = None,
                    seed: int = 0) -> TopEigen:
    """The k largest eigenvalues of ∇²loss(params, *data) by Lanczos (full re-orthogonalization) from a Gaussian
    start drawn from PRNGKey(seed), in the parameters' dtype; ``steps`` defaults to `default_top_steps`."""
    size = parameter_size(params)
    if not 1 <= k <= size:
        raise ValueError(f"k = {k}: need 1 ≤ k ≤ the parameter count {size}")
    m = default_top_steps(k, size) if steps is None else int(min(steps, size))
    m = max(m, k)
    dtype = jax.tree.leaves(params)[0].dtype
    key_start, key_restart = jax.random.split(jax.random.PRNGKey(seed))
    v0 = jax.random.normal(key_start, (size,), dtype)
    alpha, beta = _compiled("lanczos")(loss, params, tuple(data), v0, key_restart, m)
    tri = tridiagonal_eigen(alpha, beta)
    order = np.argsort(tri.ritz)[::-1][:k]
    floor = float(jnp.finfo(dtype).eps) * float(np.max(np.abs(tri.ritz)))
    return TopEigen(tri.ritz[order], np.maximum(tri.residual[order], floor), m)


# -- stochastic Lanczos quadrature ---------------------------------------------------------------------------------


def probe_vectors(key, probes: int, size: int, kind: str = "rademacher", dtype=np.float32):
    """``probes`` random starts [probes, size]: Rademacher ±1 or standard Gaussian (Lanczos normalises them).
    Both have E[v vᵀ]/‖v‖² = I/P, so vᵀ f(H) v/‖v‖² is unbiased for tr f(H)/P (Hutchinson 1989)."""
    if kind == "rademacher":
        return jax.random.rademacher(key, (probes, size), dtype)
    if kind == "gaussian":
        return jax.random.normal(key, (probes, size), dtype)
    raise ValueError(f"probe kind {kind!r}: use rademacher or gaussian")


def slq_starts(seed: int, probes: int, size: int, kind: str = "rademacher", dtype=np.float32):
    """`slq`'s starts and its restart key, both from PRNGKey(seed): what a test needs to redo its quadrature."""
    key_start, key_restart = jax.random.split(jax.random.PRNGKey(seed))
    return probe_vectors(key_start, probes, size, kind, dtype), key_restart


class Spectrum(NamedTuple):
    """SLQ's spectral measure: ``nodes`` [probes, m] (Ritz values per probe) and ``weights`` [probes, m]
    (τ²/probes, summing to 1 over all), with the settings that made it, and each node's residual bound
    [probes, m] (`Tridiagonal`)."""

    nodes: np.ndarray
    weights: np.ndarray
    probes: int
    steps: int
    kind: str
    residuals: np.ndarray | None = None


def slq(loss: Callable, params, probes: int, steps: int, data: tuple = (), seed: int = 0,
        kind: str = "rademacher") -> Spectrum:
    """Stochastic Lanczos quadrature of ∇²loss(params, *data): ``probes`` starts of ``kind`` from
    PRNGKey(seed), ``steps`` (≤ P) Lanczos steps each; nodes = the Ritz values, weights = the squared first
    components of T_m's eigenvectors over the number of probes (Ubaru, Chen & Saad 2017, Alg. 1; Ghorbani et al.
    2019, §2)."""
    size = parameter_size(params)
    m = int(min(steps, size))
    starts, key_restart = slq_starts(seed, probes, size, kind, jax.tree.leaves(params)[0].dtype)
    alphas, betas = _compiled("slq")(loss, params, tuple(data), starts, jax.random.split(key_restart, probes), m)
    alphas, betas = np.asarray(alphas), np.asarray(betas)
    nodes, weights, residuals = np.empty((probes, m)), np.empty((probes, m)), np.empty((probes, m))
    for p in range(probes):
        tri = tridiagonal_eigen(alphas[p], betas[p])
        nodes[p], weights[p], residuals[p] = tri.ritz, tri.first ** 2 / probes, tri.residual
    return Spectrum(nodes, weights, probes, m, kind, residuals)


def spectral_moment(nodes, weights, power: int) -> float:
    """Σ w_i θ_i^power: SLQ's estimate of tr H^power / P (exact per probe for power ≤ 2m − 1)."""
    nodes, weights = np.ravel(nodes), np.ravel(weights)
    return float(np.sum(weights * nodes ** power))


def spectral_quantile(nodes, weights, q: float) -> float:
    """The q-quantile of the discrete measure Σ w_i δ(θ_i) (weights normalised to sum 1): the smallest node whose
    cumulative weight reaches q."""
    nodes, weights = np.ravel(nodes), np.ravel(weights)
    order = np.argsort(nodes)
    cumulative = np.cumsum(weights[order]) / np.sum(weights)
    return float(nodes[order][min(int(np.searchsorted(cumulative, q)), nodes.size - 1)])


def broadened_density(nodes, weights, grid, sigma: float) -> np.ndarray:
    """φ(t) = Σ w_i N(t; θ_i, σ²) on ``grid``: the spectral measure smoothed for a plot (Ghorbani et al. 2019's
    Gaussian kernel; σ sets the resolution, and the area stays Σ w_i = 1)."""
    nodes, weights, grid = np.ravel(nodes), np.ravel(weights), np.asarray(grid, np.float64)
    z = (grid[:, None] - nodes[None, :]) / sigma
    return (np.exp(-0.5 * z ** 2) @ weights) / (sigma * math.sqrt(2 * math.pi))


def kappa_quantile(lambda_max: float, lambda_q: float) -> float | None:
    """κ_q = λ_max / λ_q, None where λ_q ≤ 0 (no positive curvature at that quantile)."""
    return float(lambda_max / lambda_q) if lambda_q > 0 else None


def kappa_damped(lambda_max: float, lambda_min: float, damping: float) -> float:
    """κ_δ = (λ_max + δ)/(max(λ_min, 0) + δ): the condition number of H + δI with H's negative part set to 0."""
    return float((lambda_max + damping) / (max(lambda_min, 0.0) + damping))


def definitions(q: float = QUANTILE, damping: float = DAMPING) -> dict:
    """The κ definitions in words, for a results file and a printed table."""
    return {"kappa_q": f"λ_max / λ_q, λ_q the eigenvalue below which a fraction q = {q:g} of the spectrum lies "
                       "(None where λ_q ≤ 0)",
            "kappa_damped": f"(λ_max + δ) / (max(λ_min, 0) + δ), δ = {damping:g} (absolute)",
            "negative_mass": f"the fraction of the P eigenvalues below −{NEGATIVE_TOLERANCE:g}·λ_max",
            "spectrum": f"all P eigenvalues of the dense Hessian where P ≤ {dense_limit():,} (exact), else "
                        "SLQ's spectral measure with a 95% interval per estimate; λ_max from Lanczos above that",
            "test_accuracy": "the fraction of the held-out examples classified right (— for a regression)"}


def dense_limit() -> int:
    """`otod.nets.measure.dense.DENSE_MAX_PARAMETERS`, read at each call (a test may lower it)."""
    from otod.nets.measure import dense as curvature_dense

    return curvature_dense.DENSE_MAX_PARAMETERS


# -- measured along training ---------------------------------------------------------------------------------------


def curvature_record(loss: Callable, params, data: tuple, k: int, probes: int, steps: int, seed: int = 0,
                     top_steps: int | None = None, q: float = QUANTILE, damping: float = DAMPING,
                     kind: str = "rademacher", chunk: int = 64) -> dict:
    """One point's curvature as a plain record: the top-k eigenvalues (Lanczos) and their residual bounds, the
    spectrum (``slq_nodes``, ``slq_weights``, sorted), λ_min, λ_q, κ_q, κ_δ, the negative mass, tr H/P and tr H²/P,
    and how they were had: ``spectrum`` "dense" (P ≤ `dense_limit`: all P eigenvalues of the dense Hessian, ``chunk``
    columns at a time, as the nodes with weight 1/P each; every such quantity exact, listed in ``exact``) or "slq"
    (``probes`` × ``steps`` stochastic Lanczos quadrature: ``exact`` empty, and each estimate's 95% interval
    ``<name>_interval``, `otod.nets.measure.slq_error`). ``lambda_min_residual`` bounds λ_min's distance to an eigenvalue
    (0 where dense)."""
    from otod.nets.measure import dense
    from otod.nets.measure.slq_error import INTERVAL_QUANTITIES, slq_estimates, unbounded_kappa

    top = top_eigenvalues(loss, params, k, data, top_steps, seed)
    size = parameter_size(params)
    if dense.is_dense(size, dense_limit()):
        nodes = dense.dense_eigenvalues(loss, params, data, chunk)
        weights = np.full(size, 1.0 / size)
        est = dense.exact_summary(nodes, q, NEGATIVE_TOLERANCE)
        lambda_max, residual, method = est.pop("lambda_max"), 0.0, "dense"
    else:
        spectrum = slq(loss, params, probes, steps, data, seed + 1, kind)
        lambda_max = float(max(top.eigenvalues[0], spectrum.nodes.max()))
        est = slq_estimates(spectrum.nodes, spectrum.weights, lambda_max, q, NEGATIVE_TOLERANCE, size)
        at = np.unravel_index(np.argmin(spectrum.nodes), spectrum.nodes.shape)
        floor = float(jnp.finfo(jax.tree.leaves(params)[0].dtype).eps) * float(np.max(np.abs(spectrum.nodes)))
        residual = max(float(spectrum.residuals[at]), floor)  # H·v is no more exact than this (`TopEigen`)
        est["lambda_min"], method = float(spectrum.nodes[at]), "slq"
        order = np.argsort(spectrum.nodes, axis=None)
        nodes, weights = spectrum.nodes.ravel()[order], spectrum.weights.ravel()[order]
    kappa_q = kappa_quantile(lambda_max, est["lambda_q"])
    record = {"train_loss": float(loss(params, *data)), "lambda_max": lambda_max, "lambda_min": est["lambda_min"],
              "lambda_q": est["lambda_q"], "quantile": q, "kappa_q": kappa_q, "damping": damping,
              "kappa_damped": kappa_damped(lambda_max, est["lambda_min"], damping),
              "negative_mass": est["negative_mass"], "trace_per_parameter": est["trace_per_parameter"],
              "square_trace_per_parameter": est["square_trace_per_parameter"], "spectrum": method,
              "exact": list(EXACT_QUANTITIES) if method == "dense" else [], "lambda_min_residual": residual}
    for name in INTERVAL_QUANTITIES:  # where exact, the interval is the value itself
        value = math.nan if record[name] is None else record[name]
        record[f"{name}_interval"] = est.get(f"{name}_interval", [value, value])
    record.update(unbounded_kappa(record["kappa_q_interval"], record["lambda_q_interval"]))
    return {**record, "top_eigenvalues": [float(v) for v in top.eigenvalues],
            "top_residuals": [float(r) for r in top.residuals], "top_lanczos_steps": top.steps,
            "probes": probes, "lanczos_steps": int(min(steps, size)), "probe_kind": kind,
            "slq_nodes": [float(v) for v in nodes], "slq_weights": [float(w) for w in weights]}


def spec_fields(spec) -> dict:
    """The net's settings as record fields (its flat dataclass), with its parameter count."""
    import dataclasses

    return {**dataclasses.asdict(spec), "parameters": spec.parameter_count}


@exact_float32()
def curvature_along_training(spec, checkpoints, lr: float, seed: int = 0, k: int = 10, probes: int = PROBES,
                             steps: int = LANCZOS_STEPS, x64: bool = False, q: float = QUANTILE, damping: float = DAMPING,
                             momentum: float = 0.0, top_steps: int | None = None,
                             per_layer: bool = False, progress=None) -> list[dict]:
    """The curvature of ``spec``'s full training loss at the ``checkpoints`` (step counts; 0 = init) of one SGD
    run (`otod.nets.measure.trajectory.train`: seed 0's start under root ``seed``, lr, the spec's batch), in float64 with
    ``x64``: one record per checkpoint (`curvature_record` plus the step, the net's settings and the
    precision; with ``per_layer``, each layer's block too, `otod.nets.measure.curvature_layers`); ``progress(done,
    total)`` after each checkpoint."""
    from otod.nets.model.contract import from_spec
    from otod.nets.measure.dense import activation_floats
    from otod.nets.measure.trajectory import train

    dtype = np.float64 if x64 else np.float32
    with jax.enable_x64(x64):
        runs = train(spec, checkpoints, lr, seed=seed, momentum=momentum, dtype=dtype)
        model = from_spec(spec, dtype, seed=seed)
        records = []
        for step, params in runs:
            params = jax.tree.map(lambda a: jnp.asarray(a, dtype), params)
            rec = curvature_at(model, params, k, probes, steps, seed, top_steps, q, damping,
                               activations=activation_floats(spec), per_layer=per_layer)
            records.append({"step": int(step), **rec, "test_accuracy": spec.held_out_accuracy(params),
                            "lr": float(lr), "seed": int(seed),
                            "precision": "float64" if x64 else "float32", **spec_fields(spec)})
            if progress is not None:
                progress(len(records), len(runs))
    return records


def curvature_at(model, params, k: int, probes: int = PROBES, steps: int = LANCZOS_STEPS, seed: int = 0,
                 top_steps: int | None = None, q: float = QUANTILE, damping: float = DAMPING,
                 kind: str = "rademacher", activations: int | None = None, chunk: int | None = None,
                 per_layer: bool = False) -> dict:
    """`curvature_record` of a contract model (`otod.nets.model.contract.Model`) at ``params``, the one path of every
    curvature measurement: the loss and its Hessian-vector products accumulate over ``chunk`` examples at a time
    (`otod.nets.model.chunked`; default `data_chunk_of`, from ``activations`` floats per example, estimated from the
    loss where None), and the dense spectrum's columns go as many at a time as fit beside one chunk. The record
    holds the ``chunk`` it used; with ``per_layer``, the top eigenvalue of each layer's diagonal Hessian block
    over the same chunks (`otod.nets.measure.curvature_layers.layer_curvature`)."""
    from otod.nets.model.chunked import activation_floats, chunked_mean
    from otod.nets.measure.dense import dense_chunk

    if activations is None:
        activations = activation_floats(model.loss, model.params, model.data)
    from otod.nets.measure.dense import is_dense

    size = parameter_size(params)
    vectors = 1 if is_dense(size, dense_limit()) else probes  # SLQ runs its probes' products at once (vmap)
    data = chunk or data_chunk_of(model.examples, activations, vectors)
    columns = dense_chunk(min(data, model.examples), activations, size)
    loss = chunked_mean(model.loss, data)
    rec = curvature_record(loss, params, model.data, k, probes, steps, seed, top_steps, q, damping, kind,
                           chunk=columns)
    if per_layer:
        from otod.nets.measure.curvature_layers import layer_curvature

        rec.update(layer_curvature(top_eigenvalues, loss, params, model.data, seed, top_steps))
    return {**rec, "chunk": int(min(data, model.examples))}


def data_chunk_of(examples: int, activations: int, vectors: int = 1) -> int:
    """Examples per chunk of the data for the curvature's HVPs, ``vectors`` of them at once (SLQ's probes): the
    whole data set where its one call fits the dense columns' budget (`otod.nets.measure.dense.CHUNK_FLOATS`, so
    a net that fit before is measured as before), else as many examples as fit it
    (`otod.nets.model.chunked.chunk_for`)."""
    from otod.nets.model.chunked import chunk_for
    from otod.nets.measure.dense import CHUNK_FLOATS

    return chunk_for(examples, activations, vectors, CHUNK_FLOATS)
