"""The gradient-noise obstacle: minibatch gradient noise grows like √d and averaging B samples shrinks it like
1/√B; up to a critical batch, doubling B halves the steps to target, beyond it more batch buys little.

Problems (`problems`: the noisy quadratic model, an isotropic quadratic, finite-sample regression, Rosenbrock),
methods and schedules (`methods`), the lanes' dynamics (`dynamics`), the NQM's exact theory (`theory`, NumPy),
the exact path that answers a sweep from it (`exact`), the sweeps the core runs (`kind`), their options, report,
noise-scale estimators, figures and commands. Importing this package registers it with the core.
"""

import functools

from otod.core.registry import Obstacle, register


def _commands():
    from otod.noise.commands import commands

    return commands()


def _figure_makers():
    from otod.noise.figures import MAKERS

    return MAKERS


def _report(results, **kwargs) -> str:
    from otod.noise.report import text_report

    return text_report(results, **kwargs)


def _figure(results, base, **kwargs) -> list:
    from otod.noise.figures import sweep_figure

    return sweep_figure(results, base, **kwargs)


@functools.lru_cache(maxsize=1)
def _sweeps() -> tuple:
    import dataclasses

    from otod.noise.kind import NOISE, PARAMS

    return tuple(dataclasses.replace(k, report=_report, figure=_figure) for k in (NOISE, PARAMS))


OBSTACLE = register(Obstacle(name="noise", summary="steps to target vs batch size under gradient noise",
                             sweeps=_sweeps, commands=_commands, figure_makers=_figure_makers))
