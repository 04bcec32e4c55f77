"""SLQ's estimates with their error, for a net above `otod.nets.measure.dense.DENSE_MAX_PARAMETERS` (below it
every quantity is exact).

Stochastic Lanczos quadrature (Ghorbani, Krishnan & Xiao 2019; Ubaru, Chen & Saad 2017) has two errors. What
follows was measured against dense spectra by `benchmarks/slq_error.py`: 7 nets of P = 2,410–4,861 (the default
digits MLP; width 64 relu and tanh; depth 3 plain and residual; a CNN; a teacher regression), each at steps 0,
100 and 1,000 of SGD, 21 spectra, each with 100 sets of 8 Rademacher probes (the default), float64.

* **Sampling** (the probes): each probe v gives Gauss quadrature of its own measure μ_v = Σ_j (u_jᵀv)²/‖v‖² δ(λ_j),
  whose mean over Rademacher probes is the spectrum's measure, 1/P per eigenvalue (Hutchinson 1989). The means
  over probes, tr H/P and tr H²/P, are exact per probe (Gauss quadrature integrates polynomials of degree ≤ 2m − 1;
  so is vᵀH⁴v for m ≥ 3). Their intervals use what is known of a quadratic form's spread, not only the 8 values'
  (`trace_interval`, `square_trace_interval`): the Student-t interval x̄ ± t_{0.975, N−1}·s/√N that was printed
  before covered tr H²/P in only 87–96% of the sets of the 21 spectra, and in 85–94% of 2,000 sets on each of 18
  small-net spectra (`benchmarks/slq_coverage.py`; the issue-49 audit saw 15 of 20): the per-probe values of a
  quadratic form in a few large eigenvalues are skewed like χ²₁, so 8 of them understate their spread when they
  fall low. The intervals below held tr H²/P in 98.2–99.6% and tr H/P in 98.5–100% of those sets, and tr H²/P in
  95.1% where one eigenvalue dominates (`tests/nets/measure/test_slq_error.py`): 95% is their floor, not their level on
  nets, and the price is width (tr H²/P's median interval ran to +62% … +250% of the exact value, the t
  interval's to +28% … +67%; `benchmarks/RESULTS.md`, issue 49).
  - tr H²/P: vᵀH²v for a Gaussian probe is Σ_j λ_j² g_j², a weighted χ²; Satterthwaite (1946) matches it with
    χ²_ν/ν · tr H² of ν = (tr H²)²/tr H⁴ degrees of freedom, so the mean of N probes is χ²_{Nν}/(Nν) · tr H²/P and
    the interval is [x̄·Nν/χ²_{Nν, 0.975}, x̄·Nν/χ²_{Nν, 0.025}]. ν is estimated from the same probes with tr H²/P
    at the lower end of the interval for ν = 1 (one eigenvalue: exact there), at least 1. A Rademacher probe's
    variance, 2(‖A‖_F² − Σ A_ii²), is at most a Gaussian's, 2‖A‖_F² (Avron & Toledo 2011), so a flat spectrum is
    covered more often than 95%.
  - tr H/P: vᵀHv/P has variance at most 2‖H‖_F²/P² = 2·(tr H²/P)/P; with tr H²/P at its interval's upper end, the
    normal interval x̄ ± 1.96·√(2·hi/P/N): at least 95% where tr H²/P's holds, wider than needed elsewhere.
* **Quadrature** (the Lanczos steps m): λ_q, κ_q and the negative mass are read off the distribution function of
  m nodes per probe, which m-node Gauss quadrature does not determine between its nodes. The probes do not
  average this out: their measures are nearly alike (each weight averages thousands of eigenvalues), so their
  nodes fall in nearly the same places and the error is a bias every probe shares. At m = 100, λ_0.9 came out
  14% high on average at the default net's init (the issue's 13%) and −26% to +104% across the 21 spectra
  (mean over the 100 sets; standard error ≤ 7 points), the negative mass −16% to +17%; an interval over the
  probes (t on the jackknife's standard error) covered λ_0.9 in 3–78% of the sets. A better rule did not remove
  it: the mid-distribution rule (`pooled_quantile` "mid": each node's weight shared half below, half above,
  linear between nodes) gave −26% to +133%. More steps did not either: m = 200 gave −38% to +35%. So the bias
  is printed, inside the interval: `quantile_interval` and `mass_interval` start from the bounds Gauss quadrature
  itself puts on each probe's distribution function (the Chebyshev–Markov–Stieltjes separation theorem: for
  nodes θ_1 < … < θ_m with weights w_i, Σ_{i<k} w_i ≤ F_v(θ_k − 0) ≤ F_v(θ_k) ≤ Σ_{i≤k} w_i; Szegő 1939 §3.41,
  Golub & Meurant 2010 §6.3), which hold for every measure with those 2m moments, and widen the mean of those
  bounds over the probes by t·se. They covered the exact λ_0.9 in 100% of the sets of all 21 spectra (both m)
  and the negative mass in 95–100%. The price is their width: the median λ_0.9 interval, taken over the
  spectra's medians, ran from −101% to +132% of the exact value at m = 100 (the next node down lies in the bulk
  at 0) and from −54% to +50% at m = 200; more Lanczos steps narrow it, more probes hardly.
* λ_max, λ_min (and κ_δ = (λ_max + δ)/(max(λ_min, 0) + δ)) are extreme Ritz values: Lanczos converges to them
  first (the smallest node matched the smallest eigenvalue to between 10⁻¹⁵ and 2·10⁻⁵ relative at m = 100), and
  |β_m s_{m,i}| bounds the distance to an eigenvalue of H (`otod.nets.measure.curvature.Tridiagonal`): their error is that
  bound, not an interval over probes.
"""

from __future__ import annotations

import math

import numpy as np

#: The quantile rules (`pooled_quantile`): "step" (λ_q's estimate) and "mid" (compared, no better).
QUANTILE_RULES = ("step", "mid")
#: The intervals' level.
LEVEL = 0.95
#: The quantities that carry an interval above the dense limit (exact below it).
INTERVAL_QUANTITIES = ("lambda_q", "kappa_q", "negative_mass", "trace_per_parameter", "square_trace_per_parameter")


def pooled_quantile(nodes, weights, q: float, rule: str = "step") -> float:
    """The q-quantile of the measure Σ w_i δ(θ_i) pooled over probes (``nodes``, ``weights`` [probes, m], any
    normalisation). ``step``: the smallest node whose cumulative weight reaches q. ``mid``: the mid-distribution
    function G(θ_k) = Σ_{i<k} w_i + w_k/2, linear between nodes, solved for G = q."""
    nodes, weights = np.ravel(nodes), np.ravel(weights)
    order = np.argsort(nodes)
    theta, w = nodes[order], weights[order] / np.sum(weights)
    cumulative = np.cumsum(w)
    if rule == "step":
        return float(theta[min(int(np.searchsorted(cumulative, q)), theta.size - 1)])
    if rule == "mid":
        return float(np.interp(q, cumulative - w / 2, theta))
    raise ValueError(f"quantile rule {rule!r}: use one of {QUANTILE_RULES}")


def pooled_mass_below(nodes, weights, threshold: float, rule: str = "step") -> float:
    """The measure's weight below ``threshold`` (weights normalised to 1): ``step`` counts the nodes below it;
    ``mid`` reads the mid-distribution function of `pooled_quantile` at it."""
    nodes, weights = np.ravel(nodes), np.ravel(weights)
    w = weights / np.sum(weights)
    if rule == "step":
        return float(np.sum(w[nodes < threshold]))
    order = np.argsort(nodes)
    cumulative = np.cumsum(w[order])
    return float(np.interp(threshold, nodes[order], cumulative - w[order] / 2, left=0.0, right=1.0))


def student_t(probes: int, level: float = LEVEL) -> float:
    """t_{(1 + level)/2, N − 1}: the interval's multiplier for N ≥ 2 probes (2.365 at N = 8)."""
    from scipy.special import stdtrit  # the t quantile, without importing scipy.stats (twice the time)

    return float(stdtrit(probes - 1, (1 + level) / 2))


def mean_interval(values: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """The Student-t interval of the mean of per-probe ``values``: x̄ ± t_{N−1}·s/√N."""
    values = np.asarray(values, float)
    half = student_t(values.size, level) * float(np.std(values, ddof=1)) / math.sqrt(values.size)
    mean = float(np.mean(values))
    return mean - half, mean + half


def _chi_square_interval(mean: float, dof: float, level: float) -> tuple[float, float]:
    """[x̄·k/χ²_{k, (1+level)/2}, x̄·k/χ²_{k, (1−level)/2}]: where E x lies if x̄ k/E x is χ²_k."""
    from scipy.special import chdtri  # chdtri(k, p): the χ²_k value exceeded with probability p

    tail = (1 - level) / 2
    return mean * dof / float(chdtri(dof, tail)), mean * dof / float(chdtri(dof, 1 - tail))


def square_trace_interval(squares, fourths, size: int, level: float = LEVEL) -> tuple[float, float]:
    """tr H²/P's interval from per-probe ``squares`` vᵀH²v/P and ``fourths`` vᵀH⁴v/P (module docstring):
    Satterthwaite's χ² of N·ν degrees of freedom, ν = P·L·x̄/ȳ (x̄, ȳ their means, L the lower end of the
    interval at ν = 1; at least 1). ν from x̄² alone tracks x̄'s own error (a high x̄ gives a high ν and a narrow
    interval): 91% on a spectrum of one large eigenvalue, against 95% with L (`tests/nets/measure/test_slq_error.py`)."""
    squares, fourths = np.asarray(squares, float), np.asarray(fourths, float)
    mean, fourth = float(np.mean(squares)), float(np.mean(fourths))
    if mean <= 0 or fourth <= 0:  # H = 0 along every probe
        return 0.0, 0.0
    worst = _chi_square_interval(mean, squares.size, level)  # ν = 1: a single eigenvalue
    return _chi_square_interval(mean, squares.size * max(1.0, size * worst[0] * mean / fourth), level)


def trace_interval(traces, square_hi: float, size: int, level: float = LEVEL) -> tuple[float, float]:
    """tr H/P's interval from per-probe ``traces`` vᵀHv/P: x̄ ± z·√(2·``square_hi``/P/N), the normal interval with
    the Rademacher estimator's variance bound 2‖H‖_F²/P² taken at tr H²/P's upper end ``square_hi``."""
    from scipy.special import ndtri

    traces = np.asarray(traces, float)
    half = float(ndtri((1 + level) / 2)) * math.sqrt(2 * max(square_hi, 0.0) / size / traces.size)
    mean = float(np.mean(traces))
    return mean - half, mean + half


def cdf_bounds(nodes, weights, xs) -> tuple[np.ndarray, np.ndarray]:
    """Per probe (row), bounds on its measure's distribution function F_v(x) at each of ``xs`` from its Gauss
    quadrature alone (the Chebyshev–Markov–Stieltjes inequalities of the module docstring): with k nodes ≤ x,
    F_v(x) lies between the cumulative weight of the first k − 1 nodes and that of the first k + 1.
    [probes, len(xs)] each."""
    nodes, weights = np.atleast_2d(nodes), np.atleast_2d(weights)
    xs = np.asarray(xs, float)
    lower, upper = np.empty((nodes.shape[0], xs.size)), np.empty((nodes.shape[0], xs.size))
    for p, (theta, w) in enumerate(zip(nodes, weights)):
        order = np.argsort(theta)
        cz = np.concatenate([[0.0], np.cumsum(w[order]) / np.sum(w)])  # cz[j]: weight of the first j nodes
        k = np.searchsorted(theta[order], xs, side="right")
        lower[p], upper[p] = cz[np.maximum(k - 1, 0)], cz[np.minimum(k + 1, theta.size)]
    return lower, upper


def _bands(lower: np.ndarray, upper: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray]:
    """(mean lower − t·se, mean upper + t·se) over probes (rows): a band on the spectrum's distribution function."""
    n = lower.shape[0]
    se = (lambda a: a.std(axis=0, ddof=1) / np.sqrt(n)) if n > 1 else (lambda a: np.zeros(a.shape[1]))
    return lower.mean(axis=0) - t * se(lower), upper.mean(axis=0) + t * se(upper)


def quantile_interval(nodes, weights, q: float, t: float) -> tuple[float, float]:
    """(lo, hi) with λ_q in (lo, hi]: the band of `_bands` on the quadrature's bounds (`cdf_bounds`), inverted.
    hi is the smallest node where the band's lower edge reaches q (F(hi) ≥ q), lo the largest where its upper edge
    stays below q (F(lo) < q); the smallest and largest node where there is none."""
    xs = np.unique(np.ravel(nodes))
    low, high = _bands(*cdf_bounds(nodes, weights, xs), t)
    below, above = np.nonzero(high < q)[0], np.nonzero(low >= q)[0]
    return float(xs[below[-1]] if below.size else xs[0]), float(xs[above[0]] if above.size else xs[-1])


def mass_interval(nodes, weights, threshold: float, t: float) -> tuple[float, float]:
    """(lo, hi) for the fraction of eigenvalues below ``threshold``: the band of `_bands` there, within [0, 1]."""
    low, high = _bands(*cdf_bounds(nodes, weights, [threshold]), t)
    return float(max(low[0], 0.0)), float(min(high[0], 1.0))


def kappa_interval(lambda_max: float, interval: tuple[float, float]) -> tuple[float, float]:
    """κ_q = λ_max/λ_q over λ_q's interval (lo, hi]: [λ_max/hi, λ_max/lo], ∞ where lo ≤ 0; NaN where hi ≤ 0 (no
    positive λ_q, so no κ_q, anywhere in it)."""
    lo, hi = interval
    if hi <= 0:
        return math.nan, math.nan
    return lambda_max / hi, (lambda_max / lo if lo > 0 else math.inf)


def unbounded_kappa(kappa_interval, lambda_q_interval) -> dict:
    """κ_q's interval as a record keeps it: an upper end of ∞ as the string "inf" (JSON has no ∞, and a null would
    read as "not measured"), with ``kappa_q_interval_note`` saying why in words (None where it is bounded)."""
    lo, hi = (float(v) for v in kappa_interval)
    if not math.isinf(hi):
        return {"kappa_q_interval": [lo, hi], "kappa_q_interval_note": None}
    return {"kappa_q_interval": [lo, "inf"], "kappa_q_interval_note": (
        f"unbounded above: λ_q's interval reaches down to {float(lambda_q_interval[0]):.3g}, not above 0, and "
        "κ_q = λ_max/λ_q grows without bound as λ_q falls to 0; more --lanczos-steps narrow λ_q's interval")}


def slq_estimates(nodes, weights, lambda_max: float, q: float, tolerance: float, size: int,
                  level: float = LEVEL) -> dict:
    """SLQ's λ_q (the "step" rule), negative mass (the weight below −tolerance·λ_max), tr H/P and tr H²/P from
    ``nodes``, ``weights`` [probes, m] of a Hessian of ``size`` parameters, each with its ``<name>_interval``
    (module docstring; NaN with one probe), and κ_q's from λ_q's."""
    nodes, weights = np.atleast_2d(np.asarray(nodes, float)), np.atleast_2d(np.asarray(weights, float))
    weights = weights / weights.sum(axis=1, keepdims=True)  # each probe's measure, of mass 1
    threshold = -tolerance * lambda_max
    per_probe = {"negative_mass": np.sum(np.where(nodes < threshold, weights, 0.0), axis=1),
                 "trace_per_parameter": np.sum(weights * nodes, axis=1),
                 "square_trace_per_parameter": np.sum(weights * nodes ** 2, axis=1)}
    fourths = np.sum(weights * nodes ** 4, axis=1)
    out = {name: float(np.mean(v)) for name, v in per_probe.items()}
    out["lambda_q"] = pooled_quantile(nodes, weights, q, "step")
    if nodes.shape[0] < 2:
        return {**out, **{f"{name}_interval": [math.nan, math.nan] for name in INTERVAL_QUANTITIES}}
    t = student_t(nodes.shape[0], level)
    lam_q = quantile_interval(nodes, weights, q, t)
    intervals = {"lambda_q": lam_q, "kappa_q": kappa_interval(lambda_max, lam_q),
                 "negative_mass": mass_interval(nodes, weights, threshold, t),
                 "square_trace_per_parameter": square_trace_interval(per_probe["square_trace_per_parameter"],
                                                                     fourths, size, level)}
    intervals["trace_per_parameter"] = trace_interval(per_probe["trace_per_parameter"],
                                                      intervals["square_trace_per_parameter"][1], size, level)
    return {**out, **{f"{name}_interval": [float(v) for v in iv] for name, iv in intervals.items()}}
