"""The gradient noise of a net over its whole training set: per-example gradients, the exact noise scales
B_simple and B_noise, and the two-batch estimator beside them.

McCandlish, Kaplan, Amodei et al. 2018 ("An empirical model of large-batch training"), with G the full-batch
gradient, Σ the covariance of one example's gradient and H the Hessian of the training loss:

* B_simple = tr Σ / |G|² (their eq. 2.9), and
* B_noise = tr(HΣ) / (GᵀHG) (eq. 2.7), the batch at which the step a noisy gradient allows is half the
  noiseless one; both predict the critical batch B_crit of S(B) = S_min(1 + B_crit/B) (eq. 2.11).

**Convention.** Σ = (1/n) Σᵢ (gᵢ − G)(gᵢ − G)ᵀ over the n training examples (the population covariance, 1/n, not
1/(n − 1)): a minibatch of B examples drawn with replacement then has covariance Σ/B, which is the noise
obstacle's convention (the NQM's minibatch noise ξ ~ N(0, C/B), C the per-example covariance,
`otod.noise.theory`).

**How.** Per-example gradients gᵢ = ∇ℓ(θ; xᵢ, yᵢ) are a vmap of grad over ``chunk`` examples at a time, so memory
stays at chunk × P floats (P the parameter count) and the n × P matrix is never held; two passes: G first (the
gradient of the mean loss), then dᵢ = gᵢ − G per chunk, summing |dᵢ|² (tr Σ) and dᵢᵀH dᵢ (tr(HΣ)). GᵀHG is one
Hessian-vector product (forward-over-reverse, as `otod.nets.measure.curvature.hessian_vector_product` defines it).

tr(HΣ) = (1/n) Σᵢ dᵢᵀ H dᵢ exactly, by one HVP per example (vmapped over a chunk of the dᵢ), each over the whole
training set: n full-data HVPs, about 3n full-data gradients (n² example passes). On the default net (digits,
1,438 training images, an MLP of width 32 and depth 2, P = 2,410) that is seconds. For larger n, ``trace_examples``
= m takes the mean over m examples drawn without replacement instead: an unbiased estimate (the sample mean of
dᵢᵀHdᵢ), at m/n of the cost, with its standard error (the finite-population one) reported beside it. The
estimator draws per example rather than Hutchinson's Rademacher z (zᵀH Σ z): Σz needs every dᵢ anyway, and the
per-example terms give the standard error directly. There, with m < n, tr Σ needs no per-example gradient at
all: Σᵢ |gᵢ − G|² comes from each layer's inputs and output gradients (`otod.nets.measure.example_norms`: the
"ghost norm" of dense layers, the per-example gradient of a convolution's kernel, a bias or a gain through that
operation alone; the vmapped gradient for any leaf it does not recognise), one forward and backward pass over
the data, and per-example gradients only of the m drawn examples.

**The two-batch estimator** (McCandlish et al. 2018, appendix A.1): with |G_B|² the squared norm of a batch-B
gradient, E|G_B|² = |G|² + tr Σ/B, so two batch sizes give unbiased |G|² and tr Σ
(`otod.noise.theory.two_batch_estimates`). The batches here are drawn as training draws them, without
replacement (the small batch the first B_small examples of the big one, as one worker's share in data-parallel
training); then E|G_B|² = |G|² + tr Σ · (n − B)/(B(n − 1)) exactly, so the estimator is fed the effective batch
B(n − 1)/(n − B) (`effective_batch`) and stays unbiased. Over ``draws`` independent draws the estimates of |G|² and
tr Σ are averaged separately and divided (McCandlish's advice: a ratio of averages, not an average of noisy
ratios); the spread is the 16th–84th percentile of that ratio over a bootstrap of the draws.
"""

from __future__ import annotations

import functools

import math

import numpy as np

from otod.core.api import lazy
from otod.nets.measure.dense import activation_floats
from otod.nets.measure.settings import NoiseScaleConfig

jax = lazy("jax")
jnp = lazy("jax.numpy")

#: Floats of per-example gradients, or of vmapped HVP work, held at once: 2^22 float64 = 32 MiB.
CHUNK_FLOATS = 2 ** 22
#: Default nested batch pairs (B_small, B_big) of the two-batch estimator, and its draws.
PAIRS = ((8, 64), (32, 256))
DRAWS = 64
#: Bootstrap resamples of the draws for the two-batch estimate's spread.
BOOTSTRAP = 400


# -- the loss as a function of flat parameters ---------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def _compiled_problem(spec) -> dict:
    """A spec's compiled functions (`_compiled_model` of its contract instance, float64), built once per spec, so
    that measuring many points or many nets of one shape compiles once (a spec is frozen and hashable). Call
    inside ``jax.enable_x64(True)``."""
    from otod.nets.model.contract import from_spec

    model = from_spec(spec, np.float64)
    return _compiled_model(model, data_chunk(model.examples, activation_floats(spec), model.parameter_count))


def data_chunk(examples: int, activations: int, size: int) -> int:
    """Examples per chunk of the data over which the loss, its gradient and the HVPs accumulate
    (`otod.nets.model.chunked`): `otod.nets.model.chunked.chunk_for` with the HVPs vmapped a chunk at a time (`hvp_vectors`)."""
    from otod.nets.model.chunked import chunk_for

    return chunk_for(examples, activations, hvp_vectors(examples, activations, size))


def hvp_vectors(examples: int, activations: int, size: int) -> int:
    """Vectors per vmapped chunk of HVPs: as many as fit in `CHUNK_FLOATS` with the whole data set's
    activations each (the one-call budget, so that a data set that fits keeps its one call), at least 1."""
    return max(1, CHUNK_FLOATS // (4 * examples * activations + 4 * size))


def _compiled_model(model, chunk: int) -> dict:
    """The jitted functions of a contract model (`otod.nets.model.contract.Model`, its arrays in float64) on flat
    parameter vectors: the mean loss, its gradient and HVPs accumulated over ``chunk`` examples at a time
    (`otod.nets.model.chunked.chunked_mean`), and per-example gradients of the examples ``idx``."""
    from otod.nets.model.chunked import chunked_mean, example_loss
    from otod.nets.measure.curvature import flatten

    data = tuple(jnp.asarray(a) for a in model.data)
    _, unflatten = flatten(model.params)
    mean_loss, one = chunked_mean(model.loss, chunk), example_loss(model.loss)

    def example(v, *ex):
        return one(unflatten(v), *ex)

    def mean(v):
        return mean_loss(unflatten(v), *data)

    grad = jax.grad(mean)

    def hvp(v, u):
        return jax.jvp(grad, (v,), (u,))[1]

    per_example = jax.vmap(jax.grad(example), (None,) + (0,) * len(data))
    return {"data": data, "n": int(data[0].shape[0]), "unflatten": unflatten, "chunk": int(chunk), "model": model,
            "example_grads": jax.jit(lambda v, idx: per_example(v, *(a[idx] for a in data))),
            "mean_loss": jax.jit(mean), "mean_grad": jax.jit(grad), "hvp": jax.jit(hvp),
            "hvps": jax.jit(jax.vmap(hvp, (None, 0)))}


class Problem:
    """A model's training set and loss in float64 on flat parameter vectors, compiled once and moved between points
    by `at`: ``flat`` (the current point), ``data`` (the n training examples), ``example_grads(v, idx)``
    (per-example gradients of the examples ``idx`` at v, [k, P]), ``mean_grad(v)``, ``mean_loss(v)`` and
    ``hvp(u)``/``hvps(U)`` (H·u of the mean training loss at ``flat``, one vector or a stack). H·u is the
    forward-mode derivative of the gradient along u, jvp(∇L, (θ,), (u,)) (Pearlmutter 1994), as
    `otod.nets.measure.curvature.hessian_vector_product` defines it, here with θ an argument so one compilation serves every
    checkpoint; the loss, gradient and HVPs accumulate over chunks of the data (`otod.nets.model.chunked`). Built from a
    spec (`NetSpec`, cached per spec) or, by `of_model`, from a contract model. Build and use it inside
    ``jax.enable_x64(True)``."""

    def __init__(self, spec, params, compiled: dict | None = None, activations: int | None = None):
        import dataclasses

        if compiled is None:
            compiled = _compiled_problem(dataclasses.replace(spec, batch=1))  # the loss does not read the batch
            activations = activation_floats(spec)
        self.data, self.n, self.unflatten = compiled["data"], compiled["n"], compiled["unflatten"]
        self.chunk = compiled["chunk"]
        self._example_grads, self.mean_loss, self.mean_grad = (compiled["example_grads"], compiled["mean_loss"],
                                                               compiled["mean_grad"])
        self._hvp, self._hvps = compiled["hvp"], compiled["hvps"]
        self._compiled = compiled
        self.activations = int(activations)
        self.at(params)

    @classmethod
    def of_model(cls, model, chunk: int | None = None) -> "Problem":
        """The Problem of a contract model (`otod.nets.model.contract.Model`), cast to float64, at its start; ``chunk``
        examples per chunk of the data (default: `data_chunk` of its estimated activations)."""
        from otod.nets.model.chunked import activation_floats as estimated
        from otod.nets.model.contract import cast

        model = cast(model, jnp.float64)
        activations = estimated(model.loss, model.params, model.data)
        chunk = chunk or data_chunk(model.examples, activations, model.parameter_count)
        return cls(None, model.params, _compiled_model(model, chunk), activations)

    def at(self, params) -> "Problem":
        """Move to ``params`` (a pytree of the model's shapes, any float dtype; held as float64)."""
        from otod.nets.measure.curvature import flatten

        self.flat = flatten(jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), params))[0]
        self.size = int(self.flat.shape[0])
        return self

    def hvp(self, u):
        return self._hvp(self.flat, u)

    def hvps(self, U):
        return self._hvps(self.flat, U)

    def example_grads(self, v, idx):
        return self._example_grads(v, jnp.asarray(idx, jnp.int32))

    def centred_square_sum(self, G) -> float:
        """Σᵢ |gᵢ − G|² over the n examples at ``flat`` (G their mean gradient), per-example gradients formed only
        for the leaves whose layers are not recognised (`otod.nets.measure.example_norms`)."""
        from otod.nets.measure.example_norms import problem_square_sum

        return problem_square_sum(self._compiled, self.flat, G)

    def gradient_chunk(self) -> int:
        """Examples per vmapped chunk of per-example gradients (chunk × P floats ≤ `CHUNK_FLOATS`)."""
        return max(1, min(self.n, CHUNK_FLOATS // max(1, 4 * self.size)))

    def hvp_chunk(self) -> int:
        """Vectors per vmapped chunk of HVPs: each holds one data chunk's primal and tangent activations (forward
        and backward, about 4 × chunk × activations floats) and a few P-vectors."""
        return max(1, CHUNK_FLOATS // (4 * min(self.n, self.chunk) * self.activations + 4 * self.size))


def chunks(indices: np.ndarray, size: int) -> list[np.ndarray]:
    """``indices`` in consecutive pieces of at most ``size`` (the last one shorter)."""
    return [indices[i:i + size] for i in range(0, len(indices), size)]


# -- exact moments over the whole training set ---------------------------------------------------------------


def gradient_moments(problem: Problem, trace_examples: int | None = None, basis: np.ndarray | None = None,
                     seed: int = 0) -> dict:
    """The exact moments of the per-example gradients at ``problem.flat`` (module docstring: Σ with 1/n):

    * ``g2`` = |G|², G = ∇L (the mean loss's gradient); ``gHg`` = GᵀHG (one HVP);
    * ``trace_sigma`` = tr Σ = (1/n) Σᵢ |gᵢ − G|²;
    * ``trace_h_sigma`` = tr(HΣ) = (1/n) Σᵢ (gᵢ − G)ᵀH(gᵢ − G) over all n examples, or (``trace_examples`` = m <
      n) the mean over m drawn without replacement, with ``trace_h_sigma_se`` its standard error (0 when exact);
    * ``b_simple`` = tr Σ/|G|², ``b_noise`` = tr(HΣ)/GᵀHG;
    * with ``basis`` (columns v_k, e.g. the Hessian's eigenvectors): ``projected_sigma`` = v_kᵀ Σ v_k =
      (1/n) Σᵢ (v_kᵀ(gᵢ − G))² and ``projected_gradient`` = v_kᵀ G (NumPy arrays);
    * ``gradient``: G (NumPy), ``loss``: the mean training loss, ``examples`` n, ``parameters`` P."""
    v = problem.flat
    G = problem.mean_grad(v)
    HG = problem.hvp(G)
    n = problem.n
    m = n if trace_examples is None else min(n, max(2, int(trace_examples)))  # two at least: a standard error
    traced = np.arange(n) if m == n else np.sort(np.random.default_rng([seed, 19]).choice(n, m, replace=False))
    traced_mask = np.zeros(n, bool)
    traced_mask[traced] = True
    V = None if basis is None else jnp.asarray(basis, jnp.float64)
    norms = V is None and m < n  # tr Σ from the layers' norms; per-example gradients only of the traced examples
    sq_sum, proj_sum, dhd = problem.centred_square_sum(G) if norms else 0.0, None, []
    hvp_chunk = problem.hvp_chunk()
    for idx in chunks(traced if norms else np.arange(n), problem.gradient_chunk()):
        d = problem.example_grads(v, idx) - G
        sq_sum += 0.0 if norms else float(jnp.sum(d * d))
        if V is not None:
            p = d @ V
            proj_sum = jnp.sum(p * p, 0) + (0.0 if proj_sum is None else proj_sum)
        keep = d[jnp.asarray(traced_mask[idx])]
        for part in chunks(np.arange(keep.shape[0]), hvp_chunk):
            dp = keep[part]
            dhd.append(np.asarray(jnp.sum(dp * problem.hvps(dp), -1)))
    dhd = np.concatenate(dhd) if dhd else np.zeros(0)
    g2, gHg, trace = float(G @ G), float(G @ HG), sq_sum / n
    refuse_zero_gradient(g2, gHg)
    trace_h = float(np.mean(dhd))
    se = 0.0 if m == n else float(np.std(dhd, ddof=1) / math.sqrt(m) * math.sqrt((n - m) / (n - 1)))
    out = {"loss": float(problem.mean_loss(v)), "examples": n, "parameters": problem.size, "g2": g2,
           "gHg": gHg, "trace_sigma": trace, "trace_h_sigma": trace_h, "trace_h_sigma_se": se,
           "trace_examples": m, "b_simple": trace / g2, "b_noise": trace_h / gHg, "gradient": np.asarray(G)}
    if V is not None:
        out["projected_sigma"] = np.asarray(proj_sum) / n
        out["projected_gradient"] = np.asarray(G @ V)
    return out


def refuse_zero_gradient(g2: float, gHg: float, where: str = "here",
                         fix: str = "measure at other --steps, or check that the loss uses params") -> None:
    """One line where B_simple = tr Σ/|G|² or B_noise = tr(HΣ)/GᵀHG has a zero denominator: |G|² = 0 (a stationary
    point, or a loss that does not depend on its parameters) or GᵀHG = 0 (no curvature along the gradient, e.g. a
    loss linear in them); neither noise scale is defined there."""
    from otod.core.api import OtodError

    if g2 == 0.0:
        raise OtodError(f"the mean gradient is exactly zero {where} (|G|² = 0: a stationary point, or a loss that does "
                        f"not depend on its parameters); the noise scales tr Σ/|G|² and tr(HΣ)/GᵀHG are undefined "
                        f"there: {fix}")
    if gHg == 0.0:
        raise OtodError(f"the curvature along the mean gradient is exactly zero {where} (GᵀHG = 0, e.g. a loss linear "
                        f"in its parameters); B_noise = tr(HΣ)/GᵀHG is undefined there: {fix}")


# -- the two-batch estimator ---------------------------------------------------------------------------------


def effective_batch(batch, n: int):
    """B(n − 1)/(n − B): the batch with replacement whose noise tr Σ/B equals that of B examples drawn without
    replacement from n, tr Σ (n − B)/(B(n − 1)) (the finite-population correction); +∞ at B = n."""
    b = np.asarray(batch, float)
    with np.errstate(divide="ignore"):
        return np.where(b >= n, np.inf, b * (n - 1) / np.maximum(n - b, 1e-300))


def nested_draws(n: int, b_small: int, b_big: int, draws: int, rng: np.random.Generator) -> np.ndarray:
    """[draws, b_big] example indices, each row drawn without replacement; a row's first b_small are the small
    batch."""
    return np.stack([rng.choice(n, b_big, replace=False) for _ in range(draws)])


def batch_norms(problem: Problem, rows: np.ndarray, b_small: int) -> tuple[np.ndarray, np.ndarray]:
    """(|G_small|², |G_big|²) per row of ``rows`` (`nested_draws`): the batch gradients as means of per-example
    gradients, several rows at a time where a chunk of per-example gradients holds whole rows, else row by row
    with each row's sums accumulated over chunks of its examples (`row_gradients`), so that at most one chunk of
    per-example gradients is held: a whole B_big × P row of them (512 × P bytes at B_big = 64) took 5.6 GB at
    P = 10⁷."""
    per_chunk = problem.gradient_chunk() // rows.shape[1]
    if per_chunk < 1:
        sums = [row_gradients(problem, row, b_small) for row in rows]
        return (np.array([float(jnp.sum(gs * gs)) for gs, _ in sums]),
                np.array([float(jnp.sum(gb * gb)) for _, gb in sums]))
    small, big = [], []
    for part in chunks(np.arange(rows.shape[0]), per_chunk):
        idx = rows[part]
        g = problem.example_grads(problem.flat, idx.reshape(-1)).reshape(len(part), idx.shape[1], -1)
        gs, gb = jnp.mean(g[:, :b_small], 1), jnp.mean(g, 1)
        small.append(np.asarray(jnp.sum(gs * gs, -1)))
        big.append(np.asarray(jnp.sum(gb * gb, -1)))
    return np.concatenate(small), np.concatenate(big)


def row_gradients(problem: Problem, row: np.ndarray, b_small: int):
    """(G_small, G_big) of one row of example indices (its first ``b_small`` the small batch), each the mean of
    the per-example gradients summed over chunks of `Problem.gradient_chunk` examples."""
    def total(idx):
        return sum((jnp.sum(problem.example_grads(problem.flat, part), 0)
                    for part in chunks(idx, problem.gradient_chunk())), jnp.zeros(problem.size, jnp.float64))

    small = total(row[:b_small])
    return small / b_small, (small + total(row[b_small:])) / len(row)


def ratio_spread(numerator: np.ndarray, denominator: np.ndarray, rng: np.random.Generator,
                 resamples: int = BOOTSTRAP) -> tuple[float, float]:
    """The 16th and 84th percentiles of mean(numerator)/mean(denominator) over a bootstrap of the draws."""
    k = len(numerator)
    pick = rng.integers(0, k, (resamples, k))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = numerator[pick].mean(1) / denominator[pick].mean(1)
    lo, hi = np.nanpercentile(ratios, [16, 84])
    return float(lo), float(hi)


def two_batch_note(small_sq: float, big_sq: float, g2: float, trace: float, b_small: int, b_big: int) -> str | None:
    """Why mean(tr Σ̂)/mean(|Ĝ|²) is no batch size (None where it is one): tr Σ̂ ∝ |G_small|² − |G_big|² and
    |Ĝ|² ∝ B_big|G_big|² − B_small|G_small|² (mean squared norms over the draws, effective batches) must both be
    positive, or the ratio is a negative or infinite "batch"."""
    fix = "more --draws, or a pair farther apart, resolve it"
    if not trace > 0:
        return (f"undefined: mean |G_small|² {small_sq:.4g} is not above mean |G_big|² {big_sq:.4g} at "
                f"{b_small}:{b_big}, so the tr Σ estimate is {trace:.3g} ≤ 0 (the draws do not resolve the "
                f"gradient noise); {fix}")
    if not g2 > 0:
        return (f"undefined: the |G|² estimate is {g2:.3g} ≤ 0 at {b_small}:{b_big} (B_big|G_big|² is not above "
                f"B_small|G_small|²: the draws do not resolve the mean gradient under its noise); {fix}")
    return None


def two_batch(problem: Problem, b_small: int, b_big: int, draws: int = DRAWS, seed: int = 0) -> dict:
    """McCandlish's two-batch estimates of |G|² and tr Σ over ``draws`` nested draws without replacement (module
    docstring): their means and standard errors, and B_simple ≈ mean(tr Σ̂)/mean(|Ĝ|²) with its bootstrap
    16–84% interval, and ``b_simple_estimate_note`` saying why that ratio is no batch size where it is not
    (`two_batch_note`; None where it is one)."""
    from otod.noise.theory import two_batch_estimates

    n = problem.n
    if not 1 <= b_small < b_big <= n:
        raise ValueError(f"need 1 ≤ B_small < B_big ≤ n = {n}, got {b_small}:{b_big}")
    rng = np.random.default_rng([seed, b_small, b_big])
    gs, gb = batch_norms(problem, nested_draws(n, b_small, b_big, draws, rng), b_small)
    g2, trace = two_batch_estimates(gs, gb, float(effective_batch(b_small, n)), float(effective_batch(b_big, n)))
    lo, hi = ratio_spread(trace, g2, rng)
    se = 1.0 / math.sqrt(max(1, draws - 1))
    return {"b_small": int(b_small), "b_big": int(b_big), "draws": int(draws),
            "g2_estimate": float(np.mean(g2)), "g2_estimate_se": float(np.std(g2) * se),
            "trace_sigma_estimate": float(np.mean(trace)), "trace_sigma_estimate_se": float(np.std(trace) * se),
            "b_simple_estimate": float(np.mean(trace) / np.mean(g2)), "b_simple_estimate_lo": lo,
            "b_simple_estimate_hi": hi,
            "b_simple_estimate_note": two_batch_note(float(np.mean(gs)), float(np.mean(gb)), float(np.mean(g2)),
                                                     float(np.mean(trace)), b_small, b_big)}


# -- records along training ----------------------------------------------------------------------------------


EXACT_FIELDS = ("loss", "g2", "gHg", "trace_sigma", "trace_h_sigma", "trace_h_sigma_se", "trace_examples",
                "b_simple", "b_noise", "examples", "parameters")


def measure(spec, params, pairs=PAIRS, draws: int = DRAWS, trace_examples: int | None = None, seed: int = 0,
            step: int = 0) -> list[dict]:
    """At one point ``params`` of ``spec``'s net: one record per batch pair (one record if there are none) holding
    the exact moments and noise scales (`gradient_moments`) and that pair's two-batch estimates (`two_batch`),
    float64 throughout."""
    with jax.enable_x64(True):
        return measure_at(Problem(spec, params), pairs, draws, trace_examples, seed, step)


def measure_at(problem: Problem, pairs=PAIRS, draws: int = DRAWS, trace_examples: int | None = None,
               seed: int = 0, step: int = 0) -> list[dict]:
    """`measure` on a `Problem` already at its point (inside ``jax.enable_x64(True)``); pairs whose big batch
    exceeds the training set are left out."""
    from otod.core.api import OtodError

    try:
        moments = gradient_moments(problem, trace_examples, seed=seed)
    except OtodError as e:
        raise OtodError(str(e).replace(" here ", f" at step {int(step)} ", 1)) from None
    exact = {"step": int(step), **{k: moments[k] for k in EXACT_FIELDS}}
    pairs = [p for p in pairs if p[1] <= problem.n]
    if not pairs:
        return [exact]
    return [{**exact, **two_batch(problem, b_small, b_big, draws, seed)} for b_small, b_big in pairs]


def measure_along(spec, steps, lr: float, seed: int = 0, s: int = 0, pairs=PAIRS, draws: int = DRAWS,
                  trace_examples: int | None = None, progress=None) -> list[dict]:
    """`measure` at every checkpoint of one SGD run (`otod.nets.measure.trajectory.train` at step ``lr``, batch
    ``spec.batch``, seed ``s`` of root ``seed``): at init (step 0), during and at the end of training. Each record
    carries its ``step`` and the run's ``lr``; ``progress(done, total)`` after each checkpoint."""
    from otod.nets.measure.trajectory import train

    records, problem = [], None
    runs = train(spec, steps, lr, seed, s)
    for i, (t, params) in enumerate(runs):
        with jax.enable_x64(True):
            problem = Problem(spec, params) if problem is None else problem.at(params)
            records += [{**r, "lr": float(lr)} for r in measure_at(problem, pairs, draws, trace_examples, seed, t)]
        if progress is not None:
            progress(i + 1, len(runs))
    return records


# -- ``otod noise-scale --model …`` --------------------------------------------------------------------------

#: The command's defaults on a net: checkpoints (init, during, end), the SGD step of the run, draws per pair.
NET_STEPS, NET_LR, NET_PAIRS = "0,100,1000", 0.1, "8:64,32:256"
#: Seconds per unit of work, measured on the shared 2-core development machine (default net: digits, MLP width 32
#: depth 2, n = 1,438, P = 2,410, 4,820 flops per example forward): the exact moments took 2.5 s once compiled
#: (n² × flops = 10¹⁰: 2.5·10⁻¹⁰ s each), 10,000 SGD steps of B = 32 in float32 6.2 s (6·10⁻⁴ s per step at this
#: size, mostly per-step overhead; the B × flops × 3 term covers larger nets), a two-batch pair of 64 draws of
#: 256 examples 0.13 s; compiling them about 10 s.
SECONDS_PER_TRACE_FLOP, SECONDS_PER_STEP, SECONDS_PER_FLOP, COMPILE_SECONDS = 2.5e-10, 6e-4, 1e-10, 10.0


def parse_checkpoints(text) -> list[int]:
    """--steps of a net's run (``noise-scale --model``, ``curvature``): a comma list of step counts from 0 (the
    start) to 10⁹, sorted, duplicates dropped; an empty item is refused."""
    from otod.core.api import OtodError, positive_int

    items = [t.strip() for t in str(text).split(",")]
    if any(not t for t in items):
        raise OtodError(f"--steps {text}: give checkpoints as a comma list of step counts, e.g. --steps 0,100,1000")
    return sorted({positive_int(t, "--steps", "0,100,1000", minimum=0, maximum=10 ** 9) for t in items})


def trace_examples_option(value, n: int) -> int | None:
    """``--trace-examples``: from 2 to the n training examples (None: all, exact)."""
    from otod.core.api import OtodError, positive_int

    if value is None:
        return None
    m = positive_int(value, "--trace-examples", "256", minimum=2)
    if m > n:
        raise OtodError(f"--trace-examples {value}: more than the {n:,} training examples; use at most {n}, or "
                        "leave it out for the exact tr(HΣ) over all of them")
    return m


def net_spec(*, model, width, depth, activation, architecture, init, data, examples, loss, batch):
    """The `NetSpec` of the command's options (strings as typed); its own checks refuse an unknown model or data
    set, a width or depth < 1 and a batch larger than the data set, each in one line. ``loss`` None: cross-entropy
    on digits, squared on the regressions."""
    from otod.core.api import positive_int
    from otod.nets.model.problem import NetSpec

    loss = loss or ("cross-entropy" if data == "digits" else "squared")
    return NetSpec(model=model, width=positive_int(width, "--width", "32"), depth=positive_int(depth, "--depth", "2"),
                   activation=activation, architecture=architecture, init=init, data=data,
                   examples=None if examples is None else positive_int(examples, "--examples", "512"), loss=loss,
                   batch=positive_int(batch, "--batch", "32"))


def plan_seconds(spec, checkpoints, pairs, draws: int, trace_examples: int | None = None) -> float:
    """The run's estimated seconds (`SECONDS_PER_TRACE_FLOP` and the rest): compile, train to the last checkpoint,
    then per checkpoint the exact moments (m × n × flops per example, m = n or ``trace_examples``; with m < n the
    norm pass and G besides, about 6 forward passes over the data) and the pairs' draws."""
    n, flops = spec.dataset().examples, spec.flops_per_example()
    m = n if trace_examples is None else min(n, trace_examples)
    train = train_seconds(spec, max(checkpoints))
    norms = 6 * n * flops * SECONDS_PER_FLOP if m < n else 0.0
    per_point = m * n * flops * SECONDS_PER_TRACE_FLOP + norms + sum(3 * draws * big * flops * SECONDS_PER_FLOP
                                                                     for _, big in pairs)
    return COMPILE_SECONDS + train + len(checkpoints) * per_point


def train_seconds(spec, steps: int) -> float:
    """Estimated seconds of ``steps`` SGD steps of the spec's batch (`SECONDS_PER_STEP` and a forward and backward
    pass, 3 × the forward flops, per example)."""
    return steps * (SECONDS_PER_STEP + 3 * spec.batch * spec.flops_per_example() * SECONDS_PER_FLOP)


def describe(spec) -> str:
    ds = spec.dataset()
    return (f"{spec.model} width {spec.width} depth {spec.depth} {spec.activation} {spec.architecture} {spec.init} "
            f"on {spec.data} ({ds.examples} training examples, P = {spec.parameter_count}), {spec.loss} loss")


def net_report(spec, records: list[dict], lr: float, seed: int, what: str | None = None,
               batch: int | None = None) -> str:
    """The command's text: per checkpoint the exact |G|², tr Σ, GᵀHG, tr(HΣ), B_simple, B_noise, then each pair's
    two-batch estimates with their spread. ``what`` and ``batch`` name a contract model's run where ``spec`` is
    None."""
    what = describe(spec) if what is None else what
    batch = spec.batch if batch is None else batch
    lines = [f"noise-scale: {what}; SGD at B = {batch}, lr {lr:g}, seed {seed}; float64",
             "Σ: the per-example gradient covariance over the training set (1/n); B_simple = tr Σ/|G|², "
             "B_noise = tr(HΣ)/GᵀHG (McCandlish et al. 2018)"]
    for step in dict.fromkeys(r["step"] for r in records):
        rows = [r for r in records if r["step"] == step]
        r = rows[0]
        trace = f"{r['trace_h_sigma']:.4g}" + (f" ± {r['trace_h_sigma_se']:.2g}" if r["trace_h_sigma_se"] else "")
        lines += ["", f"step {step}: training loss {r['loss']:.4g}",
                  f"  exact      |G|² {r['g2']:.4g}   tr Σ {r['trace_sigma']:.4g}   GᵀHG {r['gHg']:.4g}   "
                  f"tr(HΣ) {trace}   B_simple {r['b_simple']:.4g}   B_noise {r['b_noise']:.4g}"]
        paired = [p for p in rows if "b_small" in p]
        if paired:
            lines.append(f"  two-batch {'B_s:B_b':>9}{'|G|² est ± se':>22}{'tr Σ est ± se':>22}"
                         f"{'B_simple est [16–84%]':>28}")
            for p in paired:
                pair = f"{p['b_small']}:{p['b_big']}"
                g2 = f"{p['g2_estimate']:.4g} ± {p['g2_estimate_se']:.2g}"
                tr = f"{p['trace_sigma_estimate']:.4g} ± {p['trace_sigma_estimate_se']:.2g}"
                est = (f"{p['b_simple_estimate']:.4g} [{p['b_simple_estimate_lo']:.4g}, "
                       f"{p['b_simple_estimate_hi']:.4g}]")
                note = p.get("b_simple_estimate_note")
                lines.append(f"  {'':9} {pair:>9}{g2:>22}{tr:>22}{'undefined (below)' if note else est:>28}")
                if note:
                    lines.append(f"  {'':9} {pair:>9}  B_simple est {note}")
    lines += ["", f"two-batch: McCandlish et al.'s appendix A.1 estimates from nested batches drawn without "
                  f"replacement (effective batch B(n − 1)/(n − B)), {records[0].get('draws', 0)} draws per pair; "
                  "B_simple est = mean(tr Σ̂)/mean(|Ĝ|²), its 16–84% interval by a bootstrap of the draws"]
    return "\n".join(lines)


def results_path(out: str, meta_config: dict):
    """``out`` itself where it names a results file, else ``<out>/noise-scale-net-<digest>.parquet``."""
    from pathlib import Path

    from otod.core.api import SUFFIXES, digest

    if Path(out).suffix in SUFFIXES:
        return Path(out)
    return Path(out) / f"noise-scale-net-{digest(meta_config)[:12]}.parquet"


def run_command(spec, config: NoiseScaleConfig, out: str) -> tuple[str, object]:
    """Measure ``spec`` along the run ``config`` describes, write the results file (one record per checkpoint and
    pair) and return (text, path)."""
    import time

    from otod.core.api import digest, environment, save_results

    started = time.perf_counter()
    from otod.core.api import count_progress

    c = config
    records = measure_along(spec, list(c.checkpoints), c.lr, c.seed, 0, list(c.pairs), c.draws, c.trace_examples,
                            count_progress("noise-scale checkpoints"))
    stored = c.stored_for_net(spec)
    path = results_path(out, stored)
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"kind": "noise-scale-net", "config": stored, "digest": digest(stored),
            "environment": environment(), "precision": "float64",
            "wall_time_s": time.perf_counter() - started, "complete": True}
    save_results(path, meta, [{**r, "seed": c.seed} for r in records])
    return net_report(spec, records, c.lr, c.seed), path
