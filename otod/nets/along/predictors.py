"""Which cheap measurement predicts the critical batch along training (issue 37 item 2): the predictors at one
checkpoint, per seed, and each one's ratio to the measured B_crit(t) with a confidence interval that covers both.

**The predictors** at a checkpoint θ_t of seed s (its reference run's weights after t steps, `otod.nets.model.branch`),
each a number per seed, in float64 over the whole training set (McCandlish et al. 2018):

* ``b_simple`` = tr Σ / |G|² and ``b_noise`` = tr(HΣ) / GᵀHG, exact (`otod.nets.measure.noise_scale.gradient_moments`:
  n per-example gradients and n full-data Hessian-vector products, the cost of about n² example passes; 3 s per
  seed on the digits MLP, about 2.5 min on the width-32 CNN); with ``trace_examples`` = m < n, tr(HΣ) is the mean
  over m examples drawn without replacement (m HVPs), and ``se_b_noise`` holds each seed's standard error of
  B_noise from that draw (a diagnostic: the ratio's CI below covers the seeds' scatter, not this error);
* ``two_batch_8_64`` and ``two_batch_32_256``: McCandlish's two-batch estimate of B_simple from |G_B|² at the
  nested pair (B_small, B_big) = (8, 64) and (32, 256), 64 draws each (`otod.nets.measure.noise_scale.two_batch`; a few
  hundred batch gradients: well under a second);
* ``nqm_scaled`` and ``nqm_projected``: the B_crit the NQM built at the checkpoint predicts
  (`otod.nets.along.ablation`: the checkpoint's exact Hessian spectrum, with C ∝ H scaled to the measured tr(HΣ), or
  with the measured Σ projected on the Hessian's eigenvectors), to the measurement's own milestone. They need the
  full Hessian (P Hessian-vector products and an eigendecomposition of P × P: 40–65 s per seed on the digits
  MLP, P = 2,410, on 2 shared cores), so they run only when asked (``--predict`` with ``--branch-at``).

**The ratio's CI.** The ratio of a predictor to the measurement is median_s(predictor_s) / B_crit, both from the
same seeds. Its 95% CI is a percentile interval of a joint seed bootstrap: each replicate draws the seeds with
replacement once, re-chooses every batch's (lr, β) on them and refits S(B) = S_min(1 + B_crit/B) (the critical
batch's own re-selecting bootstrap, `otod.core.analysis.bootstrap`: the ratio is a statistic of it, read with
its very draws, ``Bootstrap.draws``, so replicate r's B_crit is the one behind B_crit's CI), and takes the median of the
predictor over the same drawn seeds. So the interval covers the seeds' scatter of both the predictor and the
measurement, and their correlation (a seed whose net is noisier both moves B_crit and its own noise scale).

**The best predictor** per method of a workload: the smallest median over checkpoints of |log(ratio)| (a
factor-of-two miss either way counts the same), checkpoints whose B_crit lies on its batch grid only; its spread
is the least and largest ratio over those checkpoints.
"""

from __future__ import annotations

import math

import numpy as np

#: The two-batch pairs (B_small, B_big) and the draws per pair (those of ``otod noise-scale --model``).
PAIRS = ((8, 64), (32, 256))
DRAWS = 64
#: The predictors in the order the tables and figures give them, with their labels.
LABELS = {"b_simple": "B_simple", "b_noise": "B_noise", "two_batch_8_64": "two-batch 8:64",
          "two_batch_32_256": "two-batch 32:256", "nqm_scaled": "NQM C∝H", "nqm_projected": "NQM projected Σ"}
#: The core's resamples and generator seed for the critical batch (`otod.core.critical_batch.N_BOOT`, the seed
#: ``analyse_batches`` uses): the draws of a deterministic sweep's ratio, whose bootstrap keeps none.
N_BOOT, BOOT_SEED = 500, 0


#: Per-seed values that are diagnostics, not predictors: the NQM ablation's variants and standard errors.
DIAGNOSTIC_PREFIXES = ("ablation_", "se_")


def is_predictor(name: str) -> bool:
    """Whether ``name`` is a predictor to rank and tabulate, not a diagnostic (`DIAGNOSTIC_PREFIXES`)."""
    return not name.startswith(DIAGNOSTIC_PREFIXES)


def pair_name(pair) -> str:
    """The name of the two-batch predictor at ``pair`` (B_small, B_big)."""
    return f"two_batch_{int(pair[0])}_{int(pair[1])}"


def names(values: dict) -> list[str]:
    """The predictors present in ``values`` (name → per-seed values), in `LABELS` order, the others after."""
    known = [n for n in LABELS if n in values]
    return known + [n for n in values if n not in LABELS]


def cheap_at(problem, moments: dict, pairs=PAIRS, draws: int = DRAWS, seed: int = 0) -> dict[str, float]:
    """One seed's cheap predictors at ``problem``'s point (`otod.nets.measure.noise_scale.Problem`, inside
    ``jax.enable_x64(True)``) from its exact ``moments`` (`gradient_moments`): B_simple, B_noise and the two-batch
    B_simple estimate of every pair whose big batch fits in the training set."""
    import warnings

    from otod.nets.measure.noise_scale import two_batch

    out = {"b_simple": float(moments["b_simple"]), "b_noise": float(moments["b_noise"])}
    for small, big in pairs:
        if big <= problem.n:
            with warnings.catch_warnings(), np.errstate(all="ignore"):  # a draw's ratio may be 0/0: left out
                warnings.simplefilter("ignore", RuntimeWarning)
                estimate = two_batch(problem, small, big, draws, seed)["b_simple_estimate"]
            out[pair_name((small, big))] = float(estimate)
    return out


def checkpoint_predictors(spec, seed: int, seeds: int, nqm=None, init_spectra: dict | None = None,
                          pairs=PAIRS, draws: int = DRAWS,
                          trace_examples: int | None = None) -> dict[str, tuple[float, ...]]:
    """Every predictor (module docstring) at each seed's start of ``spec`` (a branched spec's: its checkpoint),
    name → per-seed values for seeds 0..seeds−1 of root ``seed``. ``nqm`` (an `otod.nets.along.ablation.Setting`, or
    None: skipped) adds the NQM's predictions and its ablation's variants; ``init_spectra`` caches each seed's
    Hessian eigenvalues at initialization for the ablation (filled where empty); ``trace_examples``: tr(HΣ) from
    that many examples per seed (None: all, exact), adding ``se_b_noise``."""
    import jax

    from otod.nets.along import ablation
    from otod.nets.model.branch import start_of_seed
    from otod.nets.measure.noise_scale import gradient_moments

    per_seed, problem = [], None
    for s in range(seeds):
        params = start_of_seed(spec, seed, s)
        with jax.enable_x64(True):
            problem = noise_problem(spec, params) if problem is None else problem.at(params)
            if nqm is None:
                moments, predicted = gradient_moments(problem, trace_examples, seed=1000 * seed + s), {}
            else:
                init = None if init_spectra is None else init_spectra.get(s)
                if init is None and spec.branch_step:
                    init = ablation.init_eigenvalues(spec, seed, s)
                moments, predicted, eigenvalues = ablation.nqm_at(problem, nqm, init, trace_examples,
                                                                  seed=1000 * seed + s)
                if init_spectra is not None:
                    init_spectra[s] = eigenvalues if not spec.branch_step else init
            traced = {} if trace_examples is None else {"se_b_noise": moments["trace_h_sigma_se"] / moments["gHg"]}
            per_seed.append({**cheap_at(problem, moments, pairs, draws, seed=1000 * seed + s), **predicted, **traced})
    keys = list(dict.fromkeys(k for row in per_seed for k in row))
    return {k: tuple(float(row.get(k, math.nan)) for row in per_seed) for k in keys}


# -- the joint bootstrap ---------------------------------------------------------------------------------------


def resampled_predictor(values, cols: np.ndarray) -> np.ndarray:
    """The median (non-finite values left out) of a predictor's per-seed ``values`` over each resample ``cols``;
    NaN where a resample drew no finite value."""
    import warnings

    picked = np.asarray(values, float)[cols]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmedian(np.where(np.isfinite(picked), picked, np.nan), axis=-1)


def percentile_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The ``level`` percentile interval of ``values`` as `otod.core.analysis.Bootstrap.ci` takes it (linear
    interpolation; an end interpolated towards ±∞ is that infinity): NaN left out, ±∞ kept (a replicate B_crit
    beyond the grid or at 0 gives a ratio of 0 or ∞, and is counted); NaN where none."""
    v = np.asarray(values, float)
    v = v[~np.isnan(v)]
    if not v.size:
        return math.nan, math.nan
    tail = 100 * (1 - level) / 2
    with np.errstate(invalid="ignore"):
        ends = np.percentile(v, [tail, 100 - tail])
    lo, hi = (np.percentile(v, q, method="higher" if q > 50 else "lower") if np.isnan(e) else e
              for e, q in zip(ends, (tail, 100 - tail)))
    return float(lo), float(hi)


def joint_ratio_intervals(series, values: dict, level: float = 0.95) -> dict[str, tuple[float, float]]:
    """Per predictor (name → per-seed values, seed s at index s), the ``level`` CI of median(predictor)/B_crit by
    the joint seed bootstrap (module docstring) of one method's critical-batch ``series``
    (`otod.core.critical_batch.Series`): the ratio is a statistic of the core's bootstrap, its B_crit replicates
    divided by the predictor's median over the very seed columns each replicate drew (``critical.draws``); NaN
    ends where the series has no CI (too few seeds, no fit)."""
    from otod.core.api import no_ci_reason, seed_draws

    critical = series.critical
    n_seeds = series.choice.cube.count.shape[-1]
    nan = (math.nan, math.nan)
    if critical is None or no_ci_reason(n_seeds) is not None:
        return {name: nan for name in values}
    seeds = np.asarray(series.choice.cube.seeds)
    if not np.array_equal(seeds.astype(float), np.arange(n_seeds, dtype=float)):
        raise ValueError(f"the sweep's seeds {seeds.tolist()} are not 0..{n_seeds - 1}: no per-seed pairing")
    if critical.deterministic:  # every seed alike: each replicate's B_crit is the estimate, on the core's draws
        cols = np.concatenate(seed_draws(n_seeds, N_BOOT, BOOT_SEED) or [np.zeros((0, n_seeds), np.int64)])
        b_crit = np.full(len(cols), critical.b_crit)
    elif critical.draws is None or not len(critical.replicates):  # no point to fit: no replicate
        return {name: nan for name in values}
    else:
        cols, b_crit = critical.draws, critical.replicates[:, 1]
    out = {}
    for name, v in values.items():
        if len(v) != n_seeds:
            out[name] = nan
            continue
        with np.errstate(all="ignore"):
            out[name] = percentile_interval(resampled_predictor(v, cols) / b_crit, level)
    return out


# -- the best predictor ---------------------------------------------------------------------------------------


def ranking(ratios: dict[str, list[float]]) -> list[dict]:
    """Per predictor (name → its ratios to B_crit over the checkpoints, NaN where none), sorted best first: the
    median over checkpoints of |log ratio| as ``factor`` = exp of it (1 is perfect; 3 means a typical 3× miss
    either way), the least and largest ratio, and the checkpoints counted."""
    out = []
    for name, r in ratios.items():
        r = np.asarray(r, float)
        r = r[np.isfinite(r) & (r > 0)]
        if not r.size:
            continue
        out.append({"predictor": name, "factor": float(np.exp(np.median(np.abs(np.log(r))))),
                    "ratio_min": float(r.min()), "ratio_max": float(r.max()), "checkpoints": int(r.size)})
    return sorted(out, key=lambda d: (d["factor"], -d["checkpoints"]))


def ratio_text(ratio: float, ci) -> str:
    """A ratio and its joint CI, e.g. ``2.1 [1.3, 4.0]``; "—" where there is none."""
    if not math.isfinite(ratio):
        return "—"
    lo, hi = ci
    return f"{ratio:.3g}" + (f" [{lo:.3g}, {hi:.3g}]" if not (math.isnan(lo) or math.isnan(hi)) else " [no CI]")


def noise_problem(spec, params):
    """`otod.nets.measure.noise_scale.Problem` of one of otod's nets, or of a user's model (`Problem.of_model`), at
    ``params``."""
    from otod.nets.measure.noise_scale import Problem

    return Problem.of_model(spec.loaded()).at(params) if spec.kind == "model" else Problem(spec, params)
