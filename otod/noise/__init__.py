"""The gradient-noise obstacle: minibatch gradient noise grows like √d and averaging B samples shrinks it like
1/√B; up to a critical batch, doubling B halves the steps to target, beyond it more batch buys little.

Problems (`problems`: the noisy quadratic model, an isotropic quadratic, finite-sample regression, Rosenbrock),
methods and schedules (`methods`), the lanes' dynamics (`dynamics`), the NQM's exact theory (`theory`, NumPy),
the exact path that answers a sweep from it (`exact`), the sweeps the core runs (`kind`), their options, report,
noise-scale estimators, figures and commands. Importing this package registers it with the core.
"""

from otod.core.api import Presentation, register_lazily


def _kinds() -> tuple:
    from otod.noise.kind import NOISE, PARAMS

    return (NOISE, PARAMS)


def _presentation() -> Presentation:
    from otod.noise.analysis import analyse, placed
    from otod.noise.figures import sweep_figure
    from otod.noise.report import text_report

    return Presentation(analyse, text_report, sweep_figure, placed)


def _commands() -> dict:
    from otod.noise.commands import commands

    return commands()


def _figure_makers() -> dict:
    from otod.noise.figures import MAKERS

    return MAKERS


OBSTACLE = register_lazily(
    "noise", "steps to target vs batch size under gradient noise",
    kinds=_kinds, presentation=_presentation, commands=_commands, figure_makers=_figure_makers)
