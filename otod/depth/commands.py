"""``otod sweep depth`` and ``otod sweep toy``: parse options, build the config (`otod.depth.options`), run, print."""

from __future__ import annotations

import click

from otod.core.api import common_sweep_options, echo_report, terminal_progress


def _common(methods: str):
    """The options the depth and toy sweeps share beyond every sweep's (`common_sweep_options`), same names and
    range syntax as ``otod sweep condition``; ``methods``: the comma list of the methods the command accepts, for
    --method's help."""
    options = [
        click.option("--method", default="gd", show_default=True,
                     help=f"Comma list of {methods}. E.g. --method gd,heavy-ball,adam"),
        click.option("--beta", default=None,
                     help="Momentum β (heavy-ball) / b₁ (adam), a traced axis tuned like the lr (only with "
                          "heavy-ball or adam in --method). Default 0 and 1 − β = 10^(−j/2), j = 1…6 (0 to 0.999, "
                          "even in log(1 − β)) with heavy-ball or adam, else 0. "
                          "E.g. --beta 0,0.9"),
        click.option("--tol", default="1e-6", show_default=True,
                     help="Stop at a relative loss ≤ tol (0 < tol < 1, no smaller than the precision's smallest "
                          "normal number: 1.2e-38 in float32, 2.2e-308 with --x64). E.g. --tol 1e-4"),
        click.option("--ladder", default=None,
                     help="Further tolerances recorded in the same run. Every lane runs to the lowest rung, so rungs "
                          "at most 10⁶ below --tol are accepted (lower --tol to go deeper). E.g. --ladder 1e-8"),
        click.option("--check-every", default="1", show_default=True,
                     help="Check every N iterations, 1 or below the iteration cap. E.g. --check-every 10"),
        click.option("--max-iters", default=None, help="Iteration cap; lanes reaching it are censored. "
                                                       "E.g. --max-iters 50000"),
        click.option("--lr", default="tuned", show_default=True,
                     help="tuned (a multiplier of the reference step per point from --lr-grid, by the median over "
                          "seeds), theory (the reference step) or a number. E.g. --lr theory"),
        click.option("--lr-grid", default=None,
                     help="Multipliers tried by --lr tuned (refused where no method is tuned). Default "
                          "0.1..3:12:log and 1. E.g. --lr-grid 0.01..4:20:log"),
        click.option("--full", is_flag=True, help="Print every row. E.g. --full"),
    ]
    def add(f):
        for option in reversed(options):
            f = option(f)
        return f

    return add


def _run(config, out, no_plot, pdf, as_json, full, yes, smaller: str, lr_extend: int | None = None):
    """Check --out and the estimate (``smaller``: the options that shrink this sweep), then run and print
    (``lr_extend``: the rate's bracket, `otod.core.bracket`; None: its default)."""
    from otod.core.api import check_resources, quiet_numerics

    check_resources(config, yes, smaller)
    from otod.depth.report import sweep_and_report  # after the options are checked: it imports JAX

    with quiet_numerics():
        report = sweep_and_report(config, out_dir=out, plot=not no_plot, full=full, progress=terminal_progress(),
                                  yes=yes, pdf=pdf, lr_extend=lr_extend)
    echo_report(report, as_json)


@click.command("depth")
@click.option("--depth", default="1..12", show_default=True,
              help="Depths L ≥ 1 (a static axis: one program per depth). E.g. --depth 1..12")
@click.option("--init", default="identity,xavier,small", show_default=True,
              help="Comma list of identity, orthogonal, xavier, small, gaussian, zero (a traced axis). "
                   "E.g. --init identity,gaussian")
@click.option("--problem", default="deep-linear", show_default=True,
              help="deep-linear (W_L⋯W_1 → Φ), chain (scalar w_L⋯w_1 → y) or residual ((I+V_L)⋯(I+V_1)). "
                   "E.g. --problem chain")
@click.option("--width", default="8", show_default=True,
              help="Width n (several values: a static axis). E.g. --width 4..256:7:log")
@click.option("--init-scale", default="0.1", show_default=True,
              help="s of --init small, N(0, s²/n) (only with small in --init). E.g. --init-scale 0.01")
@click.option("--target-kappa", default="2", show_default=True,
              help="Φ's singular values spread over [1, κ_Φ], 1 ≤ κ_Φ ≤ 10¹² (not with --problem chain). "
                   "E.g. --target-kappa 10")
@click.option("--target-value", default="2", show_default=True,
              help="The chain's target y, 0 < y ≤ 10¹² (only with --problem chain). E.g. --target-value 1")
@click.option("--input-kappa", default="1", show_default=True,
              help="Condition number of the input covariance Σ, 1 (whitened) to 10¹² (not with --problem chain). "
                   "E.g. --input-kappa 10")
@click.option("--target", "target", default="symmetric", show_default=True,
              help="symmetric Φ = U S Uᵀ (identity init decoupled) or general U S Vᵀ (not with --problem chain). "
                   "E.g. --target general")
@click.option("--balanced", is_flag=True, help="Rebalance the drawn factors (Arora et al. 2018). E.g. --balanced")
@click.option("--d-in", "d_in", default=None,
              help="Input dimension d_in: a rectangular net W_1 ∈ R^(n×d_in), scaled α = √(n/d_out) (Hu, Xiao & "
                   "Pennington 2020). Default: the width (the square net). E.g. --d-in 8")
@click.option("--d-out", "d_out", default=None,
              help="Output dimension d_out: W_L ∈ R^(d_out×n). Default: the width. E.g. --d-out 8")
@click.option("--damping", default="1e-3", show_default=True,
              help="KFAC damping λ ≥ 0 (only with kfac in --method). E.g. --damping 1e-4")
@click.option("--lr-extend", default=None,
              help="Steps beyond each end of --lr-grid (at its end's log spacing) tried where the best rate sits "
                   "on that end, until it is inside the rates tried or the next one diverges. Default: 12 for the "
                   "default grid, 0 (tried as given) for a given --lr-grid. E.g. --lr-extend 4")
@_common("gd, heavy-ball, adam, kfac")
@common_sweep_options
def sweep_depth(depth, init, problem, width, init_scale, target_kappa, target_value, input_kappa, target, balanced,
                d_in, d_out, damping, lr_extend, method, beta, tol, ladder, check_every, max_iters, seeds, seed, lr,
                lr_grid, x64, out, no_plot, pdf, as_json, full, chunk_seconds, yes):
    """Iterations to tolerance vs depth of a deep linear network (the nonlinearity obstacle).

    \b
    Examples:
      otod sweep depth --depth 1..12 --init identity,xavier,small
      otod sweep depth --problem chain --depth 10..20 --init gaussian --lr theory --seeds 64
      otod sweep depth --depth 2..10:5 --width 4..64:5:log --init orthogonal,xavier
      otod sweep depth --depth 2,8,32 --width 8..256:6:log --d-in 8 --d-out 8 --init orthogonal,xavier --lr theory
    """
    from otod.core.api import given_options
    from otod.depth.options import depth_config_from_options

    given = given_options()
    config = depth_config_from_options(
        depth=depth, init=init, problem=problem, width=width, method=method, beta=beta, init_scale=init_scale,
        target_kappa=target_kappa, target_value=target_value, input_kappa=input_kappa, target=target,
        balanced=balanced, d_in=d_in, d_out=d_out, damping=damping, tol=tol, ladder=ladder, check_every=check_every,
        max_iters=max_iters, seeds=8 if seeds is None else seeds, seed=0 if seed is None else seed, lr=lr,
        lr_grid=lr_grid, x64=x64, chunk_seconds=5.0 if chunk_seconds is None else chunk_seconds, given=given)
    from otod.core.api import lr_extend_option

    _run(config, out, no_plot, pdf, as_json, full, yes, "fewer or smaller --depth and --width values, fewer --init "
                                                       "or --seeds", lr_extend_option(given, lr_extend, config))


@click.command("toy")
@click.option("--layers", default="1..8", show_default=True,
              help="Numbers k ≥ 1 of random 3×3 matrices (a static axis). E.g. --layers 1..8")
@click.option("--reading", default="per-layer", show_default=True,
              help="per-layer (a in the first matrix, b in the last) or shared (a, b in every matrix). "
                   "E.g. --reading shared")
@_common("gd, heavy-ball, adam")
@common_sweep_options
def sweep_toy(layers, reading, method, beta, tol, ladder, check_every, max_iters, seeds, seed, lr, lr_grid, x64,
              out, no_plot, pdf, as_json, full, chunk_seconds, yes):
    """Iterations to tolerance vs the number of matrices k of the essay's toy: minimise ‖M_k⋯M_1‖ over two
    entries a, b.

    \b
    Examples:
      otod sweep toy --layers 1..8
      otod sweep toy --layers 1..8 --reading shared --method gd,heavy-ball
    """
    from otod.core.api import given_options
    from otod.depth.options import toy_config_from_options

    given = given_options()
    config = toy_config_from_options(layers=layers, reading=reading, method=method, beta=beta, tol=tol,
                                     ladder=ladder, check_every=check_every, max_iters=max_iters,
                                     seeds=8 if seeds is None else seeds, seed=0 if seed is None else seed, lr=lr,
                                     lr_grid=lr_grid, x64=x64, chunk_seconds=5.0 if chunk_seconds is None
                                     else chunk_seconds, given=given)
    _run(config, out, no_plot, pdf, as_json, full, yes, "fewer or smaller --layers values, fewer --beta values or "
                                                       "--seeds")


def commands() -> dict[str, list]:
    return {"sweep": [sweep_depth, sweep_toy]}
