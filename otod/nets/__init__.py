"""The obstacles on real networks: small MLPs and a CNN on shipped or generated data, their curvature (Lanczos,
stochastic Lanczos quadrature), their gradient noise (per-example gradients, the noise scales B_simple and
B_noise), their steps to target against batch, width and depth through the core engine, and the noisy quadratic
model built from their measured spectrum and noise held beside the measurement.
"""

from otod.core.api import Presentation, register_lazily


def _kinds() -> tuple:
    from otod.nets.sweep.kind import NET

    return (NET,)


def _presentation() -> Presentation:
    from otod.nets.figures.sweep import sweep_figure
    from otod.nets.sweep.report import net_analysis, net_placed, text_report

    return Presentation(net_analysis, text_report, sweep_figure, net_placed)


def _commands() -> dict:
    from otod.nets.commands import commands

    return commands()


def _figure_makers() -> dict:
    from otod.nets.figures.grid import MAKERS as GRID_MAKERS
    from otod.nets.figures.sweep import ALL_MAKERS

    return {**ALL_MAKERS, **GRID_MAKERS}


def _measurements() -> dict:
    from otod.nets.measurements import MEASUREMENTS

    return MEASUREMENTS


OBSTACLE = register_lazily(
    "nets", "curvature, gradient noise and steps to target vs batch, width and depth of small real nets",
    kinds=_kinds, presentation=_presentation, commands=_commands, figure_makers=_figure_makers,
    measurements=_measurements)
