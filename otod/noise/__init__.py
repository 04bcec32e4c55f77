"""The gradient-noise obstacle: minibatch gradient noise grows like √d and averaging B samples shrinks it like
1/√B; up to a critical batch, doubling B halves the steps to target, beyond it more batch buys little.

Problems (`problems`: the noisy quadratic model, an isotropic quadratic, finite-sample regression, Rosenbrock),
methods and schedules (`methods`), the lanes' dynamics (`dynamics`), the NQM's exact theory (`theory`, NumPy),
the exact path that answers a sweep from it (`exact`), the sweeps the core runs (`kind`), their options, report,
noise-scale estimators, figures and commands. Importing this package registers it with the core.
"""

from otod.core.api import register_lazily

OBSTACLE = register_lazily(
    "noise", "steps to target vs batch size under gradient noise",
    kinds=("otod.noise.kind:NOISE", "otod.noise.kind:PARAMS"), analyse="otod.noise.analysis:analyse",
    report="otod.noise.report:text_report", figure="otod.noise.figures:sweep_figure",
    commands="otod.noise.commands:commands", figure_makers="otod.noise.figures:MAKERS")
