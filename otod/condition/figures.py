"""The conditioning obstacle's figures, and the makers ``otod figures condition`` runs from
``experiments/condition.toml``: iterations (or FLOPs) to tolerance against κ with theory and fitted exponents,
the whole bill side by side, and gradient descent's zig-zag on a 2-D quadratic. The conventions are
`otod.core.plotting`'s: the median over seeds as a line, the seed spread (min to max over converged seeds) as a
band, theory dashed in the same colour, the fitted exponent with its 95% CI in the legend, censored lanes as open
markers at the cap.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from otod.condition import theory
from otod.condition.bill import iteration_flops
from otod.condition.records import chosen_records
from otod.core.fit import fit_sweep, iteration_matrix
from otod.core.plotting import COLORS, save
from otod.core.results import Results


def _describe(meta: dict) -> str:
    c = meta["config"]
    p = c["problem"]
    shape = f"d={p['dim']}, {p['spectrum']}, {p['basis']} basis" if p["kind"] == "quadratic" else \
        f"{p['rows']}×{p['cols']} Kronecker, ε={p['perturbation']:g}"
    return (f"{shape}, start {p['start']}, tol {c['target']['tol']:g}, {c['seeds']} seeds, lr {c['lr']}, "
            f"{meta['precision']}")


def fit_label(f) -> str:
    """Legend text of one method: fitted exponent and CI, theory, and the lanes left out of the fit."""
    if not np.isfinite(f.exponent):
        label = f"{f.method}: fewer than 2 κ values converged, no fit"
    else:
        label = f"{f.method}: b = {f.exponent:.3f} [{f.ci_low:.3f}, {f.ci_high:.3f}]"
        if f.theory_grid is not None:
            label += f"; closed form {f.theory_grid:.3f} here, {f.theory_asymptotic:g} as κ→∞"
    left_out = [f"{n} {what}" for n, what in ((f.excluded_censored, "censored"), (f.excluded_diverged, "diverged"))
                if n]
    return label + (f" ({', '.join(left_out)} lanes left out)" if left_out else "")


def draw_condition(ax, results: Results, *, flops: dict[str, float] | None = None) -> None:
    """Iterations (or FLOPs, where ``flops`` gives FLOPs per iteration) to tolerance against κ on ``ax``."""
    meta = results.meta
    tol = meta["config"]["target"]["tol"]
    with_theory = theory.applies_to(meta["config"])
    cap = meta["config"]["resolved"]["max_iters"]
    records = chosen_records(results, results.records)
    fits = {f.method: f for f in fit_sweep(
        records, "kappa", exponent=theory.exponent if with_theory else None,
        exponent_on_grid=(lambda m, xs: theory.exponent_on_grid(m, xs, tol)) if with_theory else None)}
    censored_labelled = False
    for method in dict.fromkeys(r["method"] for r in records):
        scale = flops[method] if flops else 1.0
        xs, y, status = iteration_matrix(records, method, "kappa")
        color = COLORS.get(method, None)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            med, lo, hi = np.nanmedian(y, 1), np.nanmin(y, 1), np.nanmax(y, 1)
        label = fit_label(fits[method])
        ax.plot(xs, med * scale, "o-", ms=2.5, lw=1.4, color=color, label=label)
        ax.fill_between(xs, lo * scale, hi * scale, color=color, alpha=0.2, lw=0)
        eps = meta["config"]["problem"].get("perturbation", 0.0)
        th = [theory.iterations(method, x, tol, eps) for x in xs]
        if with_theory and all(t is not None for t in th):
            ax.plot(xs, np.asarray(th, float) * scale, "--", lw=1.0, color=color, alpha=0.9)
        cens = np.any(status == "censored", axis=1)
        if cens.any():
            ax.plot(xs[cens], np.full(cens.sum(), cap * scale), "o", mfc="none", color=color, ms=5,
                    label=None if censored_labelled else f"censored at --max-iters {cap}")
            censored_labelled = True
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("condition number κ = L/μ")
    ax.set_ylabel("FLOPs to tolerance" if flops else "iterations to tolerance")
    ax.grid(True, which="both", alpha=0.25)
    if with_theory:
        ax.plot([], [], "k--", lw=1.0, label="theory ⌈ln(1/ε)/(2 ln(1/ρ))⌉")


def condition_figure(results: Results, base: Path, *, flops: dict[str, float] | None = None) -> list[Path]:
    """Figure (a): iterations (or FLOPs) to tolerance vs κ, log-log, written to ``base``.png/.pdf."""
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    draw_condition(ax, results, flops=flops)
    ax.set_title("Conditioning: iterations to tolerance vs κ", fontsize=11)
    ax.legend(fontsize=7.5, loc="best")
    fig.text(0.5, -0.01, _describe(results.meta), ha="center", va="top", fontsize=7.5, color="0.35")
    return save(fig, base)


def zigzag_paths(kappa: float = 10.0, angle: float = 0.5, start=(-3.0, 0.6), steps: int = 80) -> dict:
    """Paths of gd (step 2/(L+μ)), heavy-ball and newton on f(x) = ½ xᵀ R diag(1, κ) Rᵀ x from one start (given
    in the eigenbasis: mostly along the shallow direction), run through the same optax transformations as the
    engine."""
    import jax.numpy as jnp
    import optax

    from otod.condition.methods import METHODS, MethodOptions
    from otod.condition.quadratic import Curvature

    c, s = np.cos(angle), np.sin(angle)
    rot = np.array([[c, -s], [s, c]])
    h = rot @ np.diag([1.0, kappa]) @ rot.T
    curv = Curvature(mu=jnp.asarray(1.0), lipschitz=jnp.asarray(kappa),
                     hessian_eigenvalues=jnp.asarray([1.0, kappa]), hessian_eigenvectors=jnp.asarray(rot),
                     hessian_diagonal=jnp.diag(h), jacobi_lipschitz=jnp.asarray(1.0))
    info = {"curvature": curv}
    paths = {"h": h}
    for name, key in (("gd, step 2/(L+μ)", "gd-opt"), ("heavy-ball", "heavy-ball"), ("newton", "newton")):
        m = METHODS[key]
        opt = m.build(m.reference_lr(info), info, MethodOptions())
        x = jnp.asarray(rot @ np.asarray(start))
        state = opt.init(x)
        pts = [np.asarray(x)]
        for _ in range(steps):
            u, state = opt.update(jnp.asarray(h) @ x, state, x)
            x = optax.apply_updates(x, u)
            pts.append(np.asarray(x))
            if 0.5 * float(x @ (jnp.asarray(h) @ x)) < 1e-8:
                break
        paths[name] = np.asarray(pts)
    return paths


def zigzag_figure(base: Path, kappa: float = 10.0) -> list[Path]:
    """Figure (b): contours of a 2-D quadratic with κ = 10 and the paths of gd, heavy-ball and newton."""
    paths = zigzag_paths(kappa)
    h = paths.pop("h")
    extent = 1.1 * max(np.abs(p).max() for p in paths.values())
    g = np.linspace(-extent, extent, 300)
    xx, yy = np.meshgrid(g, g)
    ff = 0.5 * (h[0, 0] * xx ** 2 + 2 * h[0, 1] * xx * yy + h[1, 1] * yy ** 2)
    fig, ax = plt.subplots(figsize=(5.2, 5.0))
    ax.contour(xx, yy, ff, levels=np.geomspace(0.02, ff.max(), 14), colors="0.75", linewidths=0.7)
    for (name, pts), color in zip(paths.items(), ("C0", "C1", "C3")):
        ax.plot(pts[:, 0], pts[:, 1], "o-", ms=3, lw=1.2, color=color,
                label=f"{name}: {len(pts) - 1} step{'s' if len(pts) > 2 else ''} to f < 1e-8")
    ax.plot(0, 0, "k*", ms=10)
    ax.set_aspect("equal")
    ax.set_xlim(-extent, extent)
    ax.set_ylim(-extent, extent)
    ax.set_title(f"The zig-zag: a 2-D quadratic with κ = {kappa:g}", fontsize=11)
    ax.set_xlabel("parameter x₁")
    ax.set_ylabel("parameter x₂")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    return save(fig, base)


def _sweep_from_spec(spec: dict[str, Any]) -> Results:
    """Run (or resume) the sweep an experiment spec describes, with the CLI's own option parsing."""
    from otod.condition.options import sweep_config_from_options
    from otod.core.sweep import run_sweep

    options = {k: v for k, v in spec.items() if k not in ("maker", "name", "results_dir")}
    return run_sweep(sweep_config_from_options(**options), out_dir=spec.get("results_dir", "results"))


def make_condition_iterations(spec: dict[str, Any], out_dir: Path) -> list[Path]:
    return condition_figure(_sweep_from_spec(spec), Path(out_dir) / spec["name"])


def make_zigzag(spec: dict[str, Any], out_dir: Path) -> list[Path]:
    return zigzag_figure(Path(out_dir) / spec["name"], float(spec.get("kappa", 10.0)))


def bill_figure(results: Results, flops: dict[str, float], base: Path) -> list[Path]:
    """Iterations and FLOPs to tolerance side by side: serial complexity and the whole bill."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11.5, 4.6))
    draw_condition(left, results)
    draw_condition(right, results, flops=flops)
    left.set_title("iterations to tolerance", fontsize=10)
    right.set_title("FLOPs to tolerance = iterations × XLA FLOPs of one iteration", fontsize=10)
    left.legend(fontsize=7, loc="upper left")
    per_iter = ", ".join(f"{m} {f:.3g}" for m, f in flops.items())
    fig.suptitle("The whole bill: iterations × cost of one iteration", fontsize=11)
    fig.text(0.5, -0.01, _describe(results.meta) + f"\nFLOPs per iteration: {per_iter}", ha="center", va="top",
             fontsize=7.5, color="0.35")
    return save(fig, base)


def make_condition_bill(spec: dict[str, Any], out_dir: Path) -> list[Path]:
    results = _sweep_from_spec(spec)
    return bill_figure(results, iteration_flops(results), Path(out_dir) / spec["name"])


MAKERS = {"condition-iterations": make_condition_iterations, "condition-bill": make_condition_bill,
          "zigzag": make_zigzag}
