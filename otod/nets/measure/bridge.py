"""The bridge: a noisy quadratic model (NQM) built from a net's measured Hessian spectrum and gradient noise, and
its predicted steps to target against batch, beside what the net measures.

Zhang, Li, Nado, Martens, Sachdeva, Dahl, Shallue & Grosse 2019 ("Which algorithmic choices matter at which batch
sizes?") model a net's training as the NQM ½ Σᵢ hᵢθᵢ² with minibatch noise of covariance C/B, and predict where
its critical batch lies; McCandlish et al. 2018 ("An empirical model of large-batch training") predict it by the
noise scale B_noise = tr(HΣ)/GᵀHG. Here the NQM (`otod.noise.theory.Quadratic`) is read off the net:

* **the spectrum** h: the Hessian's eigenvalues (exact ``eigh`` on a small net, `hessian_eigh`) or a density
  (nodes λ_k and weights w_k summing to 1, as stochastic Lanczos quadrature gives), each node standing for
  P·w_k directions (P the parameter count), optionally binned on a log scale to a manageable number of
  directions (`bin_spectrum`). A bin of m directions of equal h, each with noise c and start moment s₀, is exactly
  one direction with (h, m·c, m·s₀): every direction's second moment follows a linear recursion in (s₀, c), so the
  loss ½ Σ h s is linear in them. Non-positive eigenvalues (a net's Hessian has some) have no NQM direction: they
  are dropped and their count is reported.
* **the noise**, two ways (``mode``):
  - ``proportional``: C ∝ H, cᵢ = κ hᵢ (the NQM's own choice, and what a Fisher ≈ Hessian argument gives near a
    minimum), with κ set so that tr(HC) equals the measured tr(HΣ): the noise's cost to the loss per step
    (η²/2 · tr(HC)/B) and hence B_noise is what the net measures, where matching tr Σ instead would give the noise
    in flat directions, which costs nothing, the weight of the sharp ones. The start is isotropic in the
    eigenbasis (θ₀ ~ N(0, σ₀² I), as in the NQM) with σ₀ set so the quadratic's start loss is the net's start gap.
  - ``projected``: cᵢ = vᵢᵀΣvᵢ, the measured per-example covariance on the Hessian's eigenvectors vᵢ (small nets,
    full ``eigh``), and s₀ᵢ = (vᵢᵀG)²/hᵢ², the start offset H⁻¹G (a Newton step) that gives the measured gradient
    in every direction (``start="gradient"``); or the isotropic start scaled to the gap (``start="gap"``). On a
    quadratic the gradient start is exact; on a net its start loss ½GᵀH⁻¹G need not be the measured gap (flat
    directions inflate it), and is reported beside it.
* **the target**: a net's loss at the target is not a quadratic's. The net's loss L maps to the quadratic's gap
  L − L_ref, where L_ref (``reference_loss``) is the lowest loss the net reaches (the end of a long run, or a value
  given; on a quadratic, its minimum), so the target is the gap L_target − L_ref and the start is
  L(θ₀) − L_ref.

S(B) is then the exact path's count (`otod.noise.search.exact_search`, the NQM's moment recursions with the lr
tuned as ``otod sweep noise --mode exact`` tunes it: the default lattice grid refined by compass search, and β too
for heavy-ball), each batch's setting chosen by the sweeps' one rule (`otod.core.analysis.chosen`), fitted by the
noise obstacle's fitter (`otod.noise.critical_batch.mccandlish_fit`, S = S_min(1 + B_crit/B)). B_noise at the target is
the NQM's (`otod.noise.theory.noise_scales`) at the expected state where SGD at the smallest batch, with its
tuned lr, first reaches the target. Every function returns plain dicts or arrays.
"""

from __future__ import annotations

import math

import numpy as np

from otod.core.api import OtodError, lazy, mccandlish_fit

jax = lazy("jax")
jnp = lazy("jax.numpy")

#: Batches of the predicted S(B) by default: 1 to 2^14.
BATCHES = tuple(float(2 ** k) for k in range(15))
#: The exact path's step cap (as `otod.noise.estimators.FIT_CAP`).
CAP = 10 ** 8
#: Eigenvalues at most this fraction of the largest are treated as zero (no NQM direction): below it the
#: recursion's steps exceed any cap.
FLOOR = 1e-12
#: Largest parameter count whose Hessian `hessian_eigh` forms (P² floats).
EIGH_LIMIT = 8000


# -- the spectrum ---------------------------------------------------------------------------------------------


def hessian_eigh(problem) -> tuple[np.ndarray, np.ndarray]:
    """(eigenvalues ascending, eigenvectors as columns) of the training loss's Hessian at ``problem.flat``
    (`otod.nets.measure.noise_scale.Problem`): H formed column by column from vmapped HVPs on the unit vectors,
    symmetrized (½(H + Hᵀ)), then ``numpy.linalg.eigh``. P HVPs and P² floats: small nets only."""
    from otod.nets.measure.noise_scale import chunks

    P = problem.size
    if P > EIGH_LIMIT:
        raise OtodError(f"a full Hessian of {P} parameters is too large ({EIGH_LIMIT} at most); use a spectral "
                        "density (Lanczos) and the proportional mode")
    eye = jnp.eye(P, dtype=jnp.float64)
    H = np.concatenate([np.asarray(problem.hvps(eye[idx])) for idx in chunks(np.arange(P), problem.hvp_chunk())])
    return np.linalg.eigh(0.5 * (H + H.T))


def positive(h: np.ndarray, floor: float = FLOOR) -> np.ndarray:
    """Which eigenvalues get an NQM direction: h > floor × max h (and max h > 0)."""
    h = np.asarray(h, float)
    top = np.max(h) if h.size else 0.0
    return h > floor * top if top > 0 else np.zeros(h.shape, bool)


def bin_spectrum(nodes, weights, parameter_count: int, bins: int | None = None,
                 floor: float = FLOOR) -> dict:
    """A spectral density as NQM directions: ``h`` (each bin's weight-averaged node), ``multiplicity`` (P × its
    weight) and ``dropped`` (P × the weight of the non-positive nodes). ``bins`` None keeps every positive node
    as its own direction; else the positive nodes are grouped in ``bins`` log-spaced bins between the smallest and
    the largest (empty bins left out)."""
    nodes, weights = np.asarray(nodes, float), np.asarray(weights, float)
    keep = positive(nodes, floor)
    dropped = float(parameter_count * np.sum(weights[~keep]))
    lam, w = nodes[keep], weights[keep]
    if bins is None or len(lam) <= bins:
        order = np.argsort(lam)
        return {"h": lam[order], "multiplicity": parameter_count * w[order], "dropped": dropped}
    edges = np.geomspace(lam.min(), lam.max(), bins + 1)
    which = np.clip(np.searchsorted(edges, lam, side="right") - 1, 0, bins - 1)
    mass = np.bincount(which, w, bins)
    moment = np.bincount(which, w * lam, bins)
    full = mass > 0
    return {"h": moment[full] / mass[full], "multiplicity": parameter_count * mass[full], "dropped": dropped}


# -- the quadratics --------------------------------------------------------------------------------------------


def isotropic_start(h: np.ndarray, multiplicity: np.ndarray, start_gap: float) -> np.ndarray:
    """s₀ = σ₀² m per direction (θ₀ ~ N(0, σ₀² I) in the eigenbasis), σ₀² = 2·gap/Σ m h, so ½ Σ h s₀ = gap."""
    return multiplicity * (2.0 * start_gap / float(np.sum(multiplicity * h)))


def proportional_quadratic(h, multiplicity, trace_h_sigma: float, start_gap: float):
    """The NQM with C ∝ H (module docstring): c = κ m h, κ = tr(HΣ)/Σ m h², so Σ h c = tr(HΣ), and the isotropic
    start with start loss ``start_gap``."""
    from otod.noise.theory import Quadratic

    h, m = np.asarray(h, float), np.asarray(multiplicity, float)
    kappa = trace_h_sigma / float(np.sum(m * h * h))
    return Quadratic(h, kappa * m * h, isotropic_start(h, m, start_gap))


def projected_quadratic(eigenvalues, projected_sigma, projected_gradient, start: str = "gradient",
                        start_gap: float | None = None, floor: float = FLOOR):
    """The NQM with the measured noise on the Hessian's eigenbasis (module docstring): per positive eigenvalue hᵢ,
    cᵢ = vᵢᵀΣvᵢ and s₀ᵢ = (vᵢᵀG/hᵢ)² (``start="gradient"``) or the isotropic start of loss ``start_gap``
    (``start="gap"``). Returns (Quadratic, number of eigenvalues dropped)."""
    from otod.noise.theory import Quadratic

    h = np.asarray(eigenvalues, float)
    keep = positive(h, floor)
    h, c, g = h[keep], np.asarray(projected_sigma, float)[keep], np.asarray(projected_gradient, float)[keep]
    if start == "gradient":
        s0 = (g / h) ** 2
    elif start == "gap":
        s0 = isotropic_start(h, np.ones_like(h), start_gap)
    else:
        raise ValueError(f"start {start!r}: gradient or gap")
    return Quadratic(h, c, s0), int(np.sum(~keep))


# -- the prediction ------------------------------------------------------------------------------------------


def tuned_steps(q, target_gap: float, batches, method: str = "sgd", cap: int = CAP) -> dict:
    """The exact path's steps to the loss ``target_gap`` at each batch with (lr, β) tuned (`otod.noise.search`:
    the default lattice grid, every ``EXACT_STRIDE``-th point, refined by compass search; β only for heavy-ball
    and ema), chosen per batch by the sweeps' rule (`otod.core.analysis.chosen`): ``steps`` (NaN where no
    setting reaches it within ``cap``), ``lr`` (absolute) and ``beta`` per batch."""
    import pandas as pd

    from otod.core.api import chosen, cubes, fit_medians
    from otod.noise import search
    from otod.noise.exact import USES_BETA, reference_lr, trial_records

    batches = np.asarray(batches, float)
    reference = reference_lr(q, method)
    lr_axis = search.Axis(True, search.DEFAULT_LR_INDICES[::search.EXACT_STRIDE])
    beta_axis = search.Axis(True, search.DEFAULT_BETA_INDICES[::search.EXACT_STRIDE]) if method in USES_BETA else None
    trials = search.exact_search(method, q, batches, float(target_gap), int(cap), reference, 0.0, lr_axis, beta_axis)
    frame = pd.DataFrame(trial_records(method, trials, int(cap), reference))
    cube = cubes(frame, ["batch"])[0]
    choice = chosen(cube)
    steps = fit_medians(choice.median, choice.bound)
    order = np.argsort(cube.x("batch"))
    return {"batches": cube.x("batch")[order], "steps": steps[order],
            "lr": (cube.rates[choice.index] * reference)[order], "beta": cube.betas[choice.index][order]}


def noise_scale_at_target(q, target_gap: float, batch: float, lr: float) -> dict:
    """The NQM's (B_simple, B_noise) (`otod.noise.theory.noise_scales`) at the expected state where SGD at
    ``batch`` and step ``lr`` first reaches ``target_gap`` (the closed form `theory.sgd_second_moment`)."""
    from otod.noise import theory

    hit = theory.method_hitting_steps("sgd", q, np.array([lr]), np.array([batch]), float(target_gap), CAP)[0, 0]
    if hit < 0:
        return {"target_step": None, "b_simple_at_target": math.nan, "b_noise_at_target": math.nan}
    x = theory.contraction(q, np.array([lr]))[0]
    noise = theory.noise_variance(q, np.array([lr]), np.array([batch]))[0]
    simple, bnoise = theory.noise_scales(q, theory.sgd_second_moment(int(hit), x, noise, q.s0))
    return {"target_step": int(hit), "b_simple_at_target": simple, "b_noise_at_target": bnoise}


def predict(q, target_gap: float, batches=BATCHES, method: str = "sgd", cap: int = CAP) -> dict:
    """The NQM's predicted S(B) (`tuned_steps`), its fit (S_min, B_crit) by `otod.noise.critical_batch.mccandlish_fit`,
    its noise scales at the start and at the target (`noise_scale_at_target`, along SGD at the smallest batch with
    SGD's tuned lr), and its start loss; a plain dict."""
    from otod.noise import theory

    if not 0 < target_gap < theory.initial_loss(q):
        raise OtodError(f"target gap {target_gap:.4g}: must lie in (0, the quadratic's start loss "
                        f"{theory.initial_loss(q):.4g})")
    tuned = tuned_steps(q, target_gap, batches, method, cap)
    s_min, b_crit = mccandlish_fit(tuned["batches"], tuned["steps"])
    sgd = tuned if method == "sgd" else tuned_steps(q, target_gap, tuned["batches"][:1], "sgd", cap)
    simple0, noise0 = theory.noise_scales(q, q.s0)
    return {"method": method, "directions": int(len(q.h)), "start_loss": theory.initial_loss(q),
            "target_gap": float(target_gap), "b_simple_start": simple0, "b_noise_start": noise0,
            "s_min": s_min, "b_crit": b_crit, "batches": tuned["batches"].tolist(), "steps": tuned["steps"].tolist(),
            "lr": tuned["lr"].tolist(), "beta": tuned["beta"].tolist(),
            **noise_scale_at_target(q, target_gap, float(sgd["batches"][0]), float(sgd["lr"][0]))}


def from_density(nodes, weights, parameter_count: int, trace_h_sigma: float, start_gap: float, target_gap: float,
                 batches=BATCHES, method: str = "sgd", bins: int | None = 64) -> dict:
    """The proportional NQM (C ∝ H, matched to tr(HΣ)) of a measured spectral density (nodes, weights; e.g.
    stochastic Lanczos quadrature's), binned to ``bins`` directions, and its prediction (`predict`)."""
    spectrum = bin_spectrum(nodes, weights, parameter_count, bins)
    q = proportional_quadratic(spectrum["h"], spectrum["multiplicity"], trace_h_sigma, start_gap)
    return {"mode": "proportional", "dropped_directions": spectrum["dropped"],
            **predict(q, target_gap, batches, method)}


# -- a net, end to end ---------------------------------------------------------------------------------------


def net_quadratics(spec, params, reference_loss: float, start_loss: float | None = None, bins: int | None = None,
                   start: str = "gradient") -> dict:
    """Measure at ``params`` (float64): the Hessian's eigenpairs (`hessian_eigh`), the gradient moments with the
    noise projected on the eigenvectors (`otod.nets.measure.noise_scale.gradient_moments`), and build both NQMs:
    ``quadratics`` {"proportional": q, "projected": q}, with ``measured`` (loss, |G|², tr Σ, tr(HΣ), GᵀHG,
    B_simple, B_noise, eigenvalue range, the count of non-positive ones) and ``start_gap`` = (``start_loss`` or
    the loss at ``params``) − ``reference_loss``."""
    from otod.nets.measure.noise_scale import EXACT_FIELDS, Problem, gradient_moments

    with jax.enable_x64(True):
        problem = Problem(spec, params)
        eigenvalues, eigenvectors = hessian_eigh(problem)
        moments = gradient_moments(problem, basis=eigenvectors)
    loss = moments["loss"] if start_loss is None else float(start_loss)
    gap = loss - float(reference_loss)
    if not gap > 0:
        raise OtodError(f"reference loss {reference_loss:.4g}: must lie below the start loss {loss:.4g}")
    P = problem.size
    spectrum = bin_spectrum(eigenvalues, np.full(P, 1.0 / P), P, bins)
    projected, dropped = projected_quadratic(eigenvalues, moments["projected_sigma"], moments["projected_gradient"],
                                             start, gap)
    measured = {k: moments[k] for k in EXACT_FIELDS}
    measured.update(lambda_max=float(eigenvalues[-1]), lambda_min=float(eigenvalues[0]),
                    nonpositive_eigenvalues=dropped)
    return {"measured": measured, "start_gap": gap, "eigenvalues": eigenvalues,
            "quadratics": {"proportional": proportional_quadratic(spectrum["h"], spectrum["multiplicity"],
                                                                  moments["trace_h_sigma"], gap),
                           "projected": projected}}


def net_bridge(spec, params, target_loss: float, reference_loss: float, batches=BATCHES, method: str = "sgd",
               start_loss: float | None = None, bins: int | None = None, start: str = "gradient") -> dict:
    """The NQM predictions for ``spec``'s net measured at ``params`` (`net_quadratics`): per mode
    (proportional, projected) the predicted S(B), S_min, B_crit and B_noise at the target (`predict`), for the
    target gap ``target_loss − reference_loss``; with the measured noise scales beside them. A plain dict."""
    built = net_quadratics(spec, params, reference_loss, start_loss, bins, start)
    target_gap = float(target_loss) - float(reference_loss)
    out = {"measured": built["measured"], "start_gap": built["start_gap"], "target_gap": target_gap,
           "reference_loss": float(reference_loss), "target_loss": float(target_loss)}
    for mode, q in built["quadratics"].items():
        try:
            out[mode] = predict(q, target_gap, batches, method)
        except OtodError as e:  # e.g. the projected start loss ½GᵀH⁻¹G below the target: said, not raised
            out[mode] = {"error": str(e), "start_loss": float(0.5 * np.sum(q.h * q.s0))}
    return out
