"""What ``otod curvature`` prints and where it writes, shared by otod's own nets (`otod.nets.curvature_cli`) and a
user's model (`otod.nets.contract_cli`): the results file's default name, the spectrum line, the intervals and
the table of κ_q, λ_q, tr H/P and the negative mass per checkpoint, each exact or with its interval."""

from __future__ import annotations

import math
from pathlib import Path

from otod.core.api import OtodError


def results_file(out: str, config: dict) -> Path:
    """``out`` itself where it names a results file (.parquet, .json, .npz), else ``<out>/curvature-<digest>.parquet``
    (one file per distinct configuration, as the other commands name theirs)."""
    from otod.core.api import SUFFIXES, digest

    if not str(out).strip():
        raise OtodError("--out: empty; name a folder or a results file, e.g. --out results/")
    path = Path(out)
    if path.suffix in SUFFIXES:
        return path
    if path.suffix:
        raise OtodError(f"--out {out}: name a folder or a results file ending in {', '.join(SUFFIXES)}, e.g. "
                        "--out results/curvature.parquet")
    return path / f"curvature-{digest(config)}.parquet"


def _number(x, digits: int = 4) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}g}"


def _interval(pair, digits: int = 3) -> str:
    """'[lo, hi]' (∞ where unbounded), '—' where there is none."""
    lo, hi = (float(v) for v in pair)
    if math.isnan(lo) or math.isnan(hi):
        return "—"
    return f"[{_number(lo, digits)}, {'∞' if math.isinf(hi) else _number(hi, digits)}]"


def spectrum_line(records: list[dict]) -> str:
    """The header (two lines): which numbers are exact, and where the others' errors are."""
    from otod.nets.measure.dense import DENSE_MAX_PARAMETERS

    r = records[0]
    size = r.get("parameters", len(r["slq_nodes"]))
    if r.get("spectrum") == "dense":
        return (f"spectrum: exact, all {size:,} eigenvalues of the dense Hessian (P ≤ {DENSE_MAX_PARAMETERS:,})\n"
                f"  every number in the table is exact to {r['precision']} rounding; the top k below are "
                "Lanczos's, with residual bounds")
    return (f"spectrum: SLQ estimates, {r['probes']} Rademacher probes × {r['lanczos_steps']} Lanczos steps "
            f"(P = {size:,} > {DENSE_MAX_PARAMETERS:,}, too large for the dense Hessian)\n"
            "  none is exact: the 95% intervals below the table give each one's error")


def interval_lines(records: list[dict]) -> list[str]:
    """SLQ's 95% intervals, one row per checkpoint, and the Ritz values' residual bound (`otod.nets.measure.slq_error`)."""
    probes = records[0]["probes"]
    lines = ["", "95% intervals. λ_q, neg. mass: Gauss quadrature's bounds on the spectrum's distribution "
                 "(Chebyshev–Markov–Stieltjes),",
             f"  widened by t·se over the {probes} probes: they hold the quadrature's bias (more --lanczos-steps "
             "narrow them);",
             f"  κ_q: λ_max/λ_q over λ_q's; tr H/P: normal over the {probes} probes, its variance bounded by "
             "tr H²/P's (χ²) upper end: at least 95%",
             f"{'step':>7} {'λ_q':>22} {'κ_q':>20} {'neg. mass':>18} {'tr H/P':>22}"]
    for r in records:
        lines.append(f"{r['step']:>7} {_interval(r['lambda_q_interval']):>22} {_interval(r['kappa_q_interval']):>20} "
                     f"{_interval(r['negative_mass_interval']):>18} "
                     f"{_interval(r['trace_per_parameter_interval']):>22}")
    unbounded = [str(r["step"]) for r in records if r.get("kappa_q_interval_note")]
    if unbounded:
        lines.append(f"κ_q ∞ at step {', '.join(unbounded)}: λ_q's interval reaches down to 0 or below, and "
                     "κ_q = λ_max/λ_q has no upper bound as λ_q falls to 0 (more --lanczos-steps narrow it)")
    bound = max(r["lambda_min_residual"] for r in records)
    lines.append(f"λ_min (and κ_δ where λ_min > 0): SLQ's smallest Ritz value; an eigenvalue of H lies within "
                 f"{bound:.1e} of it (Lanczos residual bound)")
    return lines


def table(records: list[dict]) -> str:
    """The printed table: one row per checkpoint, SLQ's intervals where the spectrum is not exact, then each
    checkpoint's top eigenvalues."""
    lines = [f"{'step':>7} {'loss':>9} {'λ_max':>10} {'λ_q':>10} {'κ_q':>9} {'λ_min':>10} {'neg. mass':>9} "
             f"{'κ_δ':>9} {'tr H/P':>10} {'test acc.':>9}"]
    for r in records:
        lines.append(f"{r['step']:>7} {_number(r['train_loss']):>9} {_number(r['lambda_max']):>10} "
                     f"{_number(r['lambda_q']):>10} {_number(r['kappa_q']):>9} {_number(r['lambda_min']):>10} "
                     f"{r['negative_mass']:>9.3f} {_number(r['kappa_damped']):>9} "
                     f"{_number(r['trace_per_parameter']):>10} {_number(r.get('test_accuracy'), 3):>9}")
    if records and records[0].get("spectrum") == "slq":
        lines += interval_lines(records)
    lines.append("")
    for r in records:
        top = ", ".join(_number(v, 5) for v in r["top_eigenvalues"])
        lines.append(f"step {r['step']}: top {len(r['top_eigenvalues'])} eigenvalues (Lanczos, "
                     f"{r['top_lanczos_steps']} steps, residual bound ≤ {max(r['top_residuals']):.1e}): {top}")
    if records and "layer_lambda_max" in records[0]:
        lines += layer_lines(records)
    return "\n".join(lines)


def layer_lines(records: list[dict]) -> list[str]:
    """The per-layer table: per checkpoint and layer (a group of the parameter pytree's leaves that share a
    parent, named by its path), the top eigenvalue of the layer's diagonal Hessian block (other layers held
    fixed; Lanczos, with its residual bound) beside the whole net's λ_max, and their ratio (≤ 1: Cauchy
    interlacing)."""
    width = max(12, *(len(name) for r in records for name in r["layer_names"]))
    lines = ["", "per layer: the top eigenvalue of each layer's diagonal Hessian block (the Hessian in that layer's "
                 "parameters, the others held fixed; Lanczos), beside the whole net's λ_max",
             f"{'step':>7} {'layer':<{width}} {'params':>10} {'λ_max(block)':>13} {'residual':>9} {'λ_max(net)':>11} "
             f"{'ratio':>6}"]
    for r in records:
        for name, size, top, res in zip(r["layer_names"], r["layer_parameters"], r["layer_lambda_max"],
                                        r["layer_residuals"]):
            ratio = top / r["lambda_max"] if r["lambda_max"] else math.nan
            lines.append(f"{r['step']:>7} {name:<{width}} {size:>10,} {_number(top, 5):>13} {res:>9.1e} "
                         f"{_number(r['lambda_max'], 5):>11} {_number(ratio, 3):>6}")
    return lines
