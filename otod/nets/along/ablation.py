"""The NQM built at a checkpoint, its predicted critical batch, and the ablation that says which of its assumptions
carries its miss (issue 37 item 2).

At a seed's checkpoint θ_t (float64, the whole training set) the full Hessian H is formed and diagonalized
(`otod.nets.measure.bridge.hessian_eigh`: P Hessian-vector products and a P × P ``eigh``), and the gradient moments are
measured with Σ projected on its eigenvectors (`otod.nets.measure.noise_scale.gradient_moments`). From these, NQMs
(`otod.noise.theory.Quadratic`) whose predicted S(B) is the noise obstacle's exact path with SGD's lr tuned per B
(`otod.nets.measure.bridge.predict`, fitted to S = S_min(1 + B_crit/B)), over B = 1, 2, 4, … up to the training set:

* ``nqm_scaled`` (the predictor): the checkpoint's eigenvalues binned to `BINS` log-spaced directions, C ∝ H with
  tr(HC) = the measured tr(HΣ) (`otod.nets.measure.bridge.proportional_quadratic`), the start isotropic in the eigenbasis
  with the seed's gap L_s(t) − L_ref, run to the measurement's milestone: target gap = milestone − L_ref, where
  milestone = r · L̄(t) (`otod.nets.along.branching.milestone`) and L_ref the net's loss floor
  (`otod.nets.sweep.predict.reference_loss`: 0 for cross-entropy, ½·noise²·outputs for the teacher);
* ``nqm_projected`` (the predictor): every positive eigenvalue its own direction with the measured noise
  cᵢ = vᵢᵀΣvᵢ (`otod.nets.measure.bridge.projected_quadratic`), and the same isotropic start and target
  (``start="gap"``), so it differs from ``nqm_scaled`` only by C ∝ H;

and the ablation's variants of ``nqm_scaled``, each changing one assumption:

* (a) the spectrum moving: ``ablation_init_spectrum`` takes the eigenvalues at the seed's initialization instead of
  the checkpoint's (the noise's scale tr(HΣ), the start and the target stay the checkpoint's): an NQM that holds
  the spectrum fixed, as one built once at init does;
* (b) C ∝ H: ``nqm_projected`` against ``nqm_scaled``;
* (c) the milestone: ``ablation_fractional`` runs the NQM to the same fractional decrease of its own gap,
  target gap = r · (L_s(t) − L_ref), instead of to the net's loss value (for cross-entropy, L_ref = 0, the two
  differ only by the seed's loss against the seeds' mean).

A variant whose ratio to the measured B_crit is much nearer 1 than the predictor's carries the miss.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: Log-spaced bins of the spectrum for the C ∝ H NQMs (`otod.nets.measure.bridge.from_density`'s default).
BINS = 64
#: The ablation's variants of ``nqm_scaled``: name → (letter, what it changes).
VARIANTS = {"ablation_init_spectrum": ("a", "spectrum from init"), "nqm_projected": ("b", "projected Σ, not C ∝ H"),
            "ablation_fractional": ("c", "NQM target r·gap, not the net's milestone")}


@dataclass(frozen=True)
class Setting:
    """What an NQM at a checkpoint runs to: the net's ``milestone`` loss r · L̄(t), the fraction r (``fraction``),
    the loss floor ``reference_loss`` L_ref, and the ``batches`` of its predicted S(B)."""

    milestone: float
    fraction: float
    reference_loss: float
    batches: tuple[float, ...]


def setting_of(spec, milestone: float, fraction: float) -> Setting:
    """The `Setting` of a net sweep's checkpoint: L_ref of the net (`otod.nets.sweep.predict.reference_loss`) and the
    batches 1, 2, 4, … up to its training set (`otod.nets.sweep.predict.batches`)."""
    from otod.nets.sweep.predict import batches, reference_loss

    return Setting(float(milestone), float(fraction), reference_loss(spec), batches(spec.dataset().examples))


def predicted_b_crit(q, target_gap: float, batches) -> float:
    """The NQM ``q``'s B_crit to ``target_gap`` (`otod.nets.measure.bridge.predict`, SGD), NaN where the target is not
    below its start loss or not above 0 (no prediction)."""
    from otod.core.api import OtodError
    from otod.nets.measure.bridge import predict

    if not target_gap > 0:
        return math.nan
    try:
        return float(predict(q, float(target_gap), batches, "sgd")["b_crit"])
    except OtodError:
        return math.nan


def scaled(eigenvalues, size: int, trace_h_sigma: float, gap: float):
    """The C ∝ H NQM of ``eigenvalues`` (each 1/size of the density), binned to `BINS` directions."""
    from otod.nets.measure.bridge import bin_spectrum, proportional_quadratic

    ev = np.asarray(eigenvalues, float)
    spectrum = bin_spectrum(ev, np.full(ev.shape, 1.0 / len(ev)), size, BINS)
    return proportional_quadratic(spectrum["h"], spectrum["multiplicity"], trace_h_sigma, gap)


def nqm_at(problem, setting: Setting, init_eigenvalues=None, trace_examples: int | None = None,
           seed: int = 0) -> tuple[dict, dict, np.ndarray]:
    """(the moments, the predicted B_crit per NQM and variant of the module docstring, the eigenvalues) at
    ``problem``'s point (inside ``jax.enable_x64(True)``). ``init_eigenvalues`` None: the point is the
    initialization itself, so variant (a) is the predictor; ``trace_examples`` and ``seed``: tr(HΣ) from that
    many drawn examples (`otod.nets.measure.noise_scale.gradient_moments`; None: all)."""
    from otod.nets.measure.bridge import hessian_eigh, projected_quadratic
    from otod.nets.measure.noise_scale import gradient_moments

    eigenvalues, vectors = hessian_eigh(problem)
    moments = gradient_moments(problem, trace_examples=trace_examples, basis=vectors, seed=seed)
    ref = setting.reference_loss
    gap, target = moments["loss"] - ref, setting.milestone - ref
    out = {"nqm_scaled": math.nan, "nqm_projected": math.nan, "ablation_init_spectrum": math.nan,
           "ablation_fractional": math.nan}
    if gap > 0:
        size, trace = problem.size, moments["trace_h_sigma"]
        q = scaled(eigenvalues, size, trace, gap)
        out["nqm_scaled"] = predicted_b_crit(q, target, setting.batches)
        projected, _ = projected_quadratic(eigenvalues, moments["projected_sigma"], moments["projected_gradient"],
                                           "gap", gap)
        out["nqm_projected"] = predicted_b_crit(projected, target, setting.batches)
        out["ablation_init_spectrum"] = out["nqm_scaled"] if init_eigenvalues is None else predicted_b_crit(
            scaled(init_eigenvalues, size, trace, gap), target, setting.batches)
        out["ablation_fractional"] = predicted_b_crit(q, setting.fraction * gap, setting.batches)
    return moments, out, np.asarray(eigenvalues)


def init_eigenvalues(spec, seed: int, s: int) -> np.ndarray:
    """Seed s's Hessian eigenvalues at its initialization (the spec unbranched: its step 0)."""
    import dataclasses

    import jax

    from otod.nets.model.branch import start_of_seed
    from otod.nets.measure.bridge import hessian_eigh
    from otod.nets.measure.noise_scale import Problem

    at_init = dataclasses.replace(spec, branch_step=0)
    with jax.enable_x64(True):
        return np.asarray(hessian_eigh(Problem(at_init, start_of_seed(at_init, seed, s)))[0])


# -- the ablation's table --------------------------------------------------------------------------------------


def ablation_rows(checkpoints, method: str | None = None) -> list[dict]:
    """Per checkpoint (with NQM values), the median over seeds of ``nqm_scaled`` and of each variant, and their
    ratios to the measured B_crit of ``method`` (the first method where None); none off the batch grid."""
    out = []
    for c in checkpoints:
        values = getattr(c, "extra", {}) or {}
        if "nqm_scaled" not in values:
            continue
        p = next((p for p in c.points if method is None or p.method == method), None)
        if p is None:
            continue
        on_grid = min(p.batches) <= p.b_crit <= max(p.batches) if math.isfinite(p.b_crit) else False
        row = {"step": c.step, "method": p.method, "b_crit": p.b_crit}
        for name in ("nqm_scaled", *VARIANTS):
            median = _median(values.get(name, ()))
            row[name] = median
            row[f"{name}_ratio"] = median / p.b_crit if on_grid and p.b_crit > 0 else math.nan
        out.append(row)
    return out


def _median(values) -> float:
    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    return float(np.median(v)) if v.size else math.nan


def verdict(rows: list[dict]) -> list[dict]:
    """Per variant, the median over checkpoints of |log ratio| against the predictor's (``nqm_scaled``): ``shift``
    = exp(median |log r_variant|) / exp(median |log r_scaled|); below 1 the variant comes nearer the measurement,
    so its assumption carries (that share of) the miss."""
    def factor(name):
        r = np.asarray([row[f"{name}_ratio"] for row in rows], float)
        r = r[np.isfinite(r) & (r > 0)]
        return float(np.exp(np.median(np.abs(np.log(r))))) if r.size else math.nan

    base = factor("nqm_scaled")
    return [{"variant": name, "letter": VARIANTS[name][0], "what": VARIANTS[name][1], "factor": factor(name),
             "base_factor": base, "shift": factor(name) / base if base > 0 else math.nan} for name in VARIANTS]


def ablation_text(checkpoints) -> str:
    """The ablation's table (per checkpoint: measured B_crit, the predictor and each variant, median over seeds,
    with its ratio to B_crit) and its verdict, or "" where no checkpoint has the NQM."""
    rows = ablation_rows(checkpoints)
    if not rows:
        return ""
    heads = ["NQM C∝H (checkpoint)"] + [f"({VARIANTS[n][0]}) {VARIANTS[n][1]}" for n in VARIANTS]
    lines = ["NQM ablation (median over seeds; × = ratio to the measured B_crit): which assumption carries the miss",
             f"{'step':>7} {'B_crit':>8}  " + "  ".join(f"{h:<30}" for h in heads)]
    for row in rows:
        cells = [f"{row[n]:.3g} (×{row[n + '_ratio']:.3g})" if math.isfinite(row[n]) else "—"
                 for n in ("nqm_scaled", *VARIANTS)]
        lines.append(f"{row['step']:>7} {row['b_crit']:>8.4g}  " + "  ".join(f"{c:<30}" for c in cells))
    for v in verdict(rows):
        lines.append(f"  ({v['letter']}) {v['what']}: typical miss ×{v['factor']:.3g} against the predictor's "
                     f"×{v['base_factor']:.3g} (median |log ratio| over checkpoints; ratio {v['shift']:.3g})")
    return "\n".join(lines)
