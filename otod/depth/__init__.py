"""The nonlinearity obstacle: a product of matrices W_L⋯W_1 fitted to a target is a linear model, yet its loss is
not convex in the factors, so depth alone makes optimization nonlinear. How iterations grow with depth depends on
the initialization and the parameterization: flat (identity or orthogonal init), or exponential (Gaussian init
on a scalar chain, Shamir 2019).

Problems (`linear`: deep-linear, chain, residual; `toy`: the essay's product of random 3×3 matrices), methods
(`methods`), per-mode theory (`theory`), the sweeps the core runs (`kind`), options, the (lr, β) selection
(`records`), the power-vs-exponential fits (`laws`), report, figures and commands. Importing this package
registers it with the core.
"""

import functools

from otod.core.registry import Obstacle, register


def _commands():
    from otod.depth.commands import commands

    return commands()


def _figure_makers():
    from otod.depth.figures import MAKERS

    return MAKERS


def _report(results, **kwargs) -> str:
    from otod.depth.report import text_report

    return text_report(results, **kwargs)


def _figure(results, base, **kwargs) -> list:
    from otod.depth.report import figure

    return figure(results, base, **kwargs)


@functools.lru_cache(maxsize=1)
def _sweeps() -> tuple:
    import dataclasses

    from otod.depth.kind import DEPTH_KIND, TOY_KIND

    return tuple(dataclasses.replace(k, report=_report, figure=_figure) for k in (DEPTH_KIND, TOY_KIND))


OBSTACLE = register(Obstacle(name="depth", summary="iterations vs depth of deep linear networks (nonlinearity)",
                             sweeps=_sweeps, commands=_commands, figure_makers=_figure_makers))
