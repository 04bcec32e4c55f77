"""The cost of one iteration: forward, backward and update FLOPs (XLA's count and the layer formulas) and time.

Importing this package registers it with the core: its commands (`otod flops`, `otod profile`) and its figure
makers (`otod figures cost`).
"""

from otod.core.api import register_lazily


def _commands() -> dict:
    from otod.cost.cli import commands

    return commands()


def _figure_makers() -> dict:
    from otod.cost.plots import MAKERS

    return MAKERS


OBSTACLE = register_lazily(
    "cost", "FLOPs and time of one iteration (forward, backward, update)",
    commands=_commands, figure_makers=_figure_makers)
