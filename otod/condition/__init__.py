"""The conditioning obstacle: on quadratics, gradient descent zig-zags and its iterations grow like the condition
number κ; momentum makes it √κ; Newton and (on Kronecker-structured Hessians) KFAC remove it.

Problems (`quadratic`, `kronecker`), methods (`methods`), closed-form theory (`theory`), the sweep the core runs
(`kind`), its options, report, figures and command. Importing this package registers it with the core.
"""

from otod.core.api import Presentation, register_lazily


def _kinds() -> tuple:
    from otod.condition.kind import CONDITION

    return (CONDITION,)


def _presentation() -> Presentation:
    from otod.condition.records import condition_analysis, condition_placements
    from otod.condition.report import figure, text_report

    return Presentation(condition_analysis, text_report, figure, condition_placements)


def _commands() -> dict:
    from otod.condition.commands import commands

    return commands()


def _figure_makers() -> dict:
    from otod.condition.figures import MAKERS

    return MAKERS


OBSTACLE = register_lazily(
    "condition", "iterations vs condition number κ on quadratics",
    kinds=_kinds, presentation=_presentation, commands=_commands, figure_makers=_figure_makers)
