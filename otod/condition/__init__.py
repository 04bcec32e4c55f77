"""The conditioning obstacle: on quadratics, gradient descent zig-zags and its iterations grow like the condition
number κ; momentum makes it √κ; Newton and (on Kronecker-structured Hessians) KFAC remove it.

Problems (`quadratic`, `kronecker`), methods (`methods`), closed-form theory (`theory`), the sweep the core runs
(`kind`), its options, report, figures and command. Importing this package registers it with the core.
"""

from otod.core.api import register_lazily

OBSTACLE = register_lazily(
    "condition", "iterations vs condition number κ on quadratics", kinds=("otod.condition.kind:CONDITION",),
    analyse="otod.condition.records:condition_analysis",
    report="otod.condition.report:text_report", figure="otod.condition.report:figure",
    commands="otod.condition.commands:commands", figure_makers="otod.condition.figures:MAKERS")
