"""``otod noise-scale``: the two-batch estimators of |G|² and tr Σ that training code uses (gpt-neox,
k-diffusion, AdaptDL), run along an SGD run on the NQM where the true values are known.

At each step the run draws a small batch of B_s examples and a big one of B_b ⊇ it (the small batch is one
worker's share of the big, as in data-parallel training), and forms McCandlish et al.'s (2018, app. A.1)
unbiased estimates

  |G|² ≈ (B_b|g_b|² − B_s|g_s|²)/(B_b − B_s),   tr Σ ≈ (|g_s|² − |g_b|²)/(1/B_s − 1/B_b),

keeps an EMA of each (decay γ; γ = 0 keeps the last) and divides them: B_simple ≈ EMA(tr Σ)/EMA(|G|²). On the
NQM the truth at θ_t is |G|² = Σ hᵢ²θᵢ² and tr Σ = Σ cᵢ. NumPy, seeded: the same options give the same numbers.
"""

from __future__ import annotations

import math

import numpy as np

from otod.core.api import (OtodError, describe_critical_batch, finite_float, mccandlish_fit, positive_int,
                           representable_lr, seed_value)
from otod.noise import theory

#: Seconds per (step × seed × direction × (pairs + 1)) of `run_estimators` (NumPy), measured on the shared 2-core
#: development machine: d = 1000, 400 steps, 64 seeds, 3 pairs ran in 5.4 s, d = 4000 in 18.5 s.
SECONDS_PER_DRAW = 5e-8
#: The exact fit of the report: 42 rates × 15 batches, to a cap of 10⁸ steps (`noise_scale_report`).
FIT_RATES, FIT_BATCHES, FIT_CAP = 42, 15, 10 ** 8


def plan_cost(dim: int, pairs: int, decays: int, steps: int, seeds: int) -> tuple[float, float]:
    """(peak bytes, seconds) of `noise_scale_report`, from its sizes alone: the [seeds, steps] tables (one per pair
    and decay, and the truth), the [seeds, d] state and a pair's draws, and the exact fit's recursions; the time
    of the run and of the fit."""
    from otod.noise.options import EXACT_SECONDS_PER_FLOAT, exact_cost

    fit_bytes, fit_operations = exact_cost(float(dim), FIT_BATCHES, FIT_RATES, FIT_CAP, 1)
    tables = 8.0 * seeds * steps * (pairs * decays + 3)
    state = 8.0 * seeds * dim * 8
    seconds = SECONDS_PER_DRAW * steps * seeds * dim * (pairs + 1) + EXACT_SECONDS_PER_FLOAT * fit_operations
    return tables + state + fit_bytes, seconds


def check_plan(options: dict, yes: bool = False, available: int | None = None) -> None:
    """Refuse before allocating what will not fit in the free memory (one line naming the sizes), and a run
    estimated above an hour unless ``yes``."""
    from otod.core.api import refuse_memory, refuse_time

    need, seconds = plan_cost(options["dim"], len(options["pairs"]), len(options["decays"]), options["steps"],
                              options["seeds"])
    what = f"noise-scale with --dim {options['dim']} --steps {options['steps']} --seeds {options['seeds']}"
    refuse_memory(need, what, "use a smaller --dim, fewer --steps or fewer --seeds", available)
    refuse_time(seconds, yes, what, "use a smaller --dim, fewer --steps or fewer --seeds")


def parse_scale_options(*, dim, pairs, decay, lr, batch, steps, seeds, seed) -> dict:
    pair_list = []
    for item in str(pairs).split(","):
        try:
            small, big = (int(v) for v in item.split(":"))
        except (ValueError, OverflowError):
            raise OtodError(f"--pairs {item}: write B_small:B_big, e.g. --pairs 1:8,4:32") from None
        if not 1 <= small < big:
            raise OtodError(f"--pairs {item}: need 1 ≤ B_small < B_big, e.g. --pairs 1:8")
        pair_list.append((small, big))
    decays = []
    for item in str(decay).split(","):
        g = finite_float(item, "--decay", "0.9")
        if not 0.0 <= g < 1.0:
            raise OtodError(f"--decay {item}: an EMA decay lies in [0, 1), e.g. --decay 0.9")
        decays.append(g)
    lr = finite_float(lr, "--lr", "0.05")
    if not lr > 0:
        raise OtodError(f"--lr {lr:g}: a learning rate must be positive, e.g. --lr 0.05")
    representable_lr(lr, example="0.05")
    return {"dim": positive_int(dim, "--dim", "1000"), "pairs": pair_list, "decays": decays, "lr": lr,
            "batch": positive_int(batch, "--batch", "32"), "steps": positive_int(steps, "--steps", "400"),
            "seeds": positive_int(seeds, "--seeds", "64"), "seed": seed_value(seed)}


def two_batch_draw(rng, G, c, b_small: int, b_big: int, shape=()):
    """(|g_s|², |g_b|²) for nested batches at true gradient G with per-example noise variance c: g_s = G +
    ξ_s/√B_s, and g_b averages those B_s examples with B_b − B_s more."""
    xi_s = rng.standard_normal(shape + G.shape) * np.sqrt(c / b_small)
    xi_r = rng.standard_normal(shape + G.shape) * np.sqrt(c / (b_big - b_small))
    g_s = G + xi_s
    g_b = G + (b_small * xi_s + (b_big - b_small) * xi_r) / b_big
    return np.sum(g_s * g_s, -1), np.sum(g_b * g_b, -1)


def run_estimators(dim: int, pairs, decays, lr: float, batch: int, steps: int, seeds: int, seed: int = 0) -> dict:
    """Along ``seeds`` SGD runs on the NQM (batch ``batch``, step ``lr``): for each pair and decay, the estimated
    and true B_simple at every step, [seeds, steps] each, and the true |G|², tr Σ."""
    q = theory.nqm(dim)
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal((seeds, dim))
    trace = float(np.sum(q.c))
    g2_true = np.zeros((seeds, steps))
    est = {(p, g): np.zeros((seeds, steps)) for p in pairs for g in decays}
    ema = {(p, g): [None, None] for p in pairs for g in decays}
    for t in range(steps):
        G = q.h * theta
        g2_true[:, t] = np.sum(G * G, -1)
        for p in pairs:
            gs, gb = two_batch_draw(rng, G, q.c, *p)
            g2, tr = theory.two_batch_estimates(gs, gb, *p)
            for g in decays:
                slot = ema[(p, g)]
                slot[0] = tr if slot[0] is None else g * slot[0] + (1 - g) * tr
                slot[1] = g2 if slot[1] is None else g * slot[1] + (1 - g) * g2
                est[(p, g)][:, t] = slot[0] / slot[1]
        theta = theta - lr * (G + rng.standard_normal((seeds, dim)) * np.sqrt(q.c / batch))
    return {"estimates": est, "true": trace / g2_true, "g2": g2_true, "trace": trace, "quadratic": q}


#: The kind (the name's prefix) of the results file `otod figures noise/estimator` keeps (`measured_estimates`).
FIGURE_KIND = "noise-estimator"


def estimate_records(out: dict) -> list[dict]:
    """`run_estimators`' output as the figure draws it, one record per pair, decay and step: ``b_small``, ``b_big``,
    ``decay``, ``step`` k = 1…steps (the k-th SGD step, whose batches are drawn at θ_{k−1}), the quartiles of the
    estimate over seeds (``q25``, ``median``, ``q75``) and ``exact``, the mean over seeds of tr Σ/|G(θ_{k−1})|²."""
    exact = out["true"].mean(0)
    records = []
    for ((small, big), decay), e in out["estimates"].items():
        q25, q50, q75 = np.percentile(e, [25, 50, 75], axis=0)
        records += [{"b_small": int(small), "b_big": int(big), "decay": float(decay), "step": k + 1,
                     "q25": float(q25[k]), "median": float(q50[k]), "q75": float(q75[k]), "exact": float(exact[k])}
                    for k in range(e.shape[1])]
    return records


def measured_estimates(options: dict, folder: str = "results") -> list[dict]:
    """`estimate_records` of `run_estimators` (``options``: `parse_scale_options`'), read back from
    ``<folder>/noise-estimator-<digest>.parquet`` where an earlier run wrote it, else run and written there
    (`otod.core.results.kept`)."""
    from otod.core.api import kept

    config = {"kind": FIGURE_KIND, **options, "pairs": [list(p) for p in options["pairs"]]}
    return kept(FIGURE_KIND, config, lambda: estimate_records(run_estimators(**options)), folder,
                suffix=".parquet").records


def estimate_series(records: list[dict]) -> dict[tuple[tuple[int, int], float], dict[str, np.ndarray]]:
    """The records by (pair, decay), in their order, each as arrays over its steps: step, q25, median, q75,
    exact."""
    out: dict[tuple[tuple[int, int], float], dict[str, list]] = {}
    for r in records:
        series = out.setdefault(((int(r["b_small"]), int(r["b_big"])), float(r["decay"])), {})
        for name in ("step", "q25", "median", "q75", "exact"):
            series.setdefault(name, []).append(r[name])
    return {key: {name: np.asarray(v, float) for name, v in s.items()} for key, s in out.items()}


def estimate_summary(records: list[dict]) -> list[dict]:
    """Per (pair, decay), in the records' order, what the figure's caption and the text say of it: ``cut``, the
    share of steps whose lower quartile is ≤ 0 (the band left out); ``below``, the share of steps whose median lies
    under the exact value; the exact value over the median, its least and largest over the steps where the median
    is positive (``lag_lo``, ``lag_hi``) and the step of the largest (``lag_step``)."""
    out = []
    for ((small, big), decay), s in estimate_series(records).items():
        positive = s["median"] > 0
        lag = s["exact"][positive] / s["median"][positive]
        out.append({"pair": f"{small}:{big}", "decay": decay, "cut": float(np.mean(s["q25"] <= 0)),
                    "below": float(np.mean(s["median"] < s["exact"])),
                    "lag_lo": float(lag.min()) if lag.size else math.nan,
                    "lag_hi": float(lag.max()) if lag.size else math.nan,
                    "lag_step": int(s["step"][positive][np.argmax(lag)]) if lag.size else 0})
    return out


def exact_simple_noise_scale(q, lr: float, batch: int, t: int) -> float:
    """B_simple = tr Σ / E|G(θ_t)|² after ``t`` SGD updates at step ``lr`` and batch ``batch`` from θ₀ ~ N(0, I):
    E|G|² = Σ hᵢ² E θᵢ²(t) by the NQM's exact second-moment recursion (`theory.sgd_second_moment`), the ratio of
    expectations that the sweep's exact noise scales report, not a Monte-Carlo mean of per-run ratios."""
    x = theory.contraction(q, np.array([lr]))[0]
    noise = theory.noise_variance(q, np.array([lr]), np.array([batch]))[0]
    second = theory.sgd_second_moment(t, x, noise, q.s0)
    return float(np.sum(q.c) / np.sum(q.h * q.h * second))


def best_steps(batches: np.ndarray, rates: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """The exact steps to target at each batch's chosen rate (``steps`` [batch, rate], −1: not reached within the
    cap), by the sweeps' one selection rule (`otod.core.analysis.chosen`); NaN where none reaches the target."""
    import pandas as pd

    from otod.core.api import chosen, cubes, fit_medians

    reached = steps >= 0
    frame = pd.DataFrame({"method": "sgd", "batch": np.repeat(batches, len(rates)),
                          "lr_multiplier": np.tile(rates, len(batches)),
                          "iterations": np.where(reached, steps, FIT_CAP).ravel(),
                          "status": np.where(reached, "converged", "censored").ravel()})
    choice = chosen(cubes(frame, ["batch"])[0])
    return fit_medians(choice.median, choice.bound)


def noise_scale_report(dim, pairs, decays, lr, batch, steps, seeds, seed) -> str:
    out = run_estimators(dim, pairs, decays, lr, batch, steps, seeds, seed)
    q = out["quadratic"]
    checkpoints = sorted({max(1, steps // 4), max(1, steps // 2), steps - 1})
    lines = [f"noise-scale: NQM d = {dim}, SGD at B = {batch}, lr {lr:g}, {steps} steps, {seeds} seeds; "
             "B_simple = tr Σ/|G|² (McCandlish et al. 2018), estimated from nested batch pairs, EMA over steps",
             "", f"{'pair':>10}{'decay':>8}{'step':>7}{'exact B_simple':>16}{'estimate':>12}{'bias':>10}"
             f"{'rel. std':>10}"]
    exact = {t: exact_simple_noise_scale(q, lr, batch, t) for t in checkpoints}
    undefined = []
    for (p, g), e in out["estimates"].items():
        for t in checkpoints:
            truth = exact[t]
            mean = float(np.median(e[:, t]))
            spread = float(np.std(e[:, t]) / truth)
            if not mean > 0:  # no batch size: an EMA of tr Σ̂ or |Ĝ|² is ≤ 0 in half the seeds or more
                undefined.append(f"{p[0]}:{p[1]} decay {g:g} step {t}")
                lines.append(f"{p[0]:>5}:{p[1]:<4}{g:>8g}{t:>7}{truth:>16.4g}{'undefined':>12}{'—':>10}{spread:>10.2f}")
                continue
            lines.append(f"{p[0]:>5}:{p[1]:<4}{g:>8g}{t:>7}{truth:>16.4g}{mean:>12.4g}"
                         f"{(mean - truth) / truth:>+10.1%}{spread:>10.2f}")
    if undefined:
        lines.append(f"undefined ({'; '.join(undefined)}): the median over seeds of EMA(tr Σ̂)/EMA(|Ĝ|²) is ≤ 0, no "
                     "batch size: tr Σ̂ ∝ |G_small|² − |G_big|² or |Ĝ|² ∝ B_big|G_big|² − B_small|G_small|² is ≤ 0 in "
                     "at least half the seeds (the pair does not resolve the noise or the gradient); a pair farther apart or a "
                     "higher decay averages more")
    lines += ["", "step t: the state θ_t after t updates, where the step's batches are drawn; exact B_simple = tr Σ / "
              "E|G(θ_t)|², the ratio of expectations, E θ_t² from the NQM's second-moment recursion (the sweep's "
              "exact value); estimate: median over seeds of EMA(tr Σ̂)/EMA(|Ĝ|²); bias relative to the exact value; "
              "rel. std: the "
              "estimate's spread over seeds ÷ truth. A ratio of EMAs lags the truth as |G|² falls (the bias grows "
              "with the decay), and a ratio of noisy estimates is biased even at decay 0 (Jensen)."]
    # the measured critical batch of the same problem: the exact path's fit at the loss this run reaches
    s_end = theory.sgd_second_moment(steps, theory.contraction(q, np.array([lr]))[0],
                                     theory.noise_variance(q, np.array([lr]), np.array([batch]))[0], q.s0)
    target = float(0.5 * np.sum(q.h * s_end)) * 1.05
    batches = 2.0 ** np.arange(0, 15)
    grid = 2.0 ** (np.arange(-40, 2) / 2)
    steps_at = theory.method_hitting_steps("sgd", q, grid, batches, target, FIT_CAP)
    s_min, b_crit = mccandlish_fit(batches, best_steps(batches, grid, steps_at))
    if not math.isnan(b_crit):
        simple, noise = theory.noise_scales(q, s_end)
        lines.append(f"measured critical batch of SGD to loss {target:.3g} (exact path, lr tuned): B_crit "
                     f"{describe_critical_batch(b_crit, batches)} (S_min {s_min:.4g}); exact B_simple there "
                     f"{simple:.4g}, B_noise {noise:.4g} (after {steps} updates)")
    return "\n".join(lines)
