"""The conditioning obstacle: on quadratics, gradient descent zig-zags and its iterations grow like the condition
number κ; momentum makes it √κ; Newton and (on Kronecker-structured Hessians) KFAC remove it.

Problems (`quadratic`, `kronecker`), methods (`methods`), closed-form theory (`theory`), the sweep the core runs
(`kind`), its options, report, figures and command. Importing this package registers it with the core.
"""

import functools

from otod.core.registry import Obstacle, register


def _commands():
    from otod.condition.commands import commands

    return commands()


def _figure_makers():
    from otod.condition.figures import MAKERS

    return MAKERS


def _report(results, **kwargs) -> str:
    from otod.condition.report import text_report

    return text_report(results, **kwargs)


def _figure(results, base, **kwargs) -> list:
    from otod.condition.report import figure

    return figure(results, base, **kwargs)


@functools.lru_cache(maxsize=1)
def _sweeps() -> tuple:
    import dataclasses

    from otod.condition.kind import CONDITION

    return (dataclasses.replace(CONDITION, report=_report, figure=_figure),)


OBSTACLE = register(Obstacle(name="condition", summary="iterations vs condition number κ on quadratics",
                             sweeps=_sweeps, commands=_commands, figure_makers=_figure_makers))
