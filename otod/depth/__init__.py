"""The nonlinearity obstacle: a product of matrices W_L⋯W_1 fitted to a target is a linear model, yet its loss is
not convex in the factors, so depth alone makes optimization nonlinear. How iterations grow with depth depends on
the initialization and the parameterization: flat (identity or orthogonal init), or exponential (Gaussian init
on a scalar chain, Shamir 2019).

Problems (`linear`: deep-linear, chain, residual; `toy`: the essay's product of random 3×3 matrices), methods
(`methods`), per-mode theory (`theory`), the sweeps the core runs (`kind`), options, the (lr, β) selection
(`records`), the power-vs-exponential fits (`laws`), report, figures and commands. Importing this package
registers it with the core.
"""

from otod.core.api import Presentation, register_lazily


def _kinds() -> tuple:
    from otod.depth.kind import DEPTH_KIND, TOY_KIND

    return (DEPTH_KIND, TOY_KIND)


def _presentation() -> Presentation:
    from otod.depth.records import depth_analysis, depth_placements
    from otod.depth.report import figure, text_report

    return Presentation(depth_analysis, text_report, figure, depth_placements)


def _commands() -> dict:
    from otod.depth.commands import commands

    return commands()


def _figure_makers() -> dict:
    from otod.depth.figures import MAKERS

    return MAKERS


OBSTACLE = register_lazily(
    "depth", "iterations vs depth of deep linear networks (nonlinearity)",
    kinds=_kinds, presentation=_presentation, commands=_commands, figure_makers=_figure_makers)
