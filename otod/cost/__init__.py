"""The cost of one iteration: forward, backward and update FLOPs (XLA's count and the layer formulas) and time.

Importing this package registers it with the core: its commands (`otod flops`, `otod profile`) and its figure
makers (`otod figures cost`).
"""

from otod.core.api import register_lazily

OBSTACLE = register_lazily("cost", "FLOPs and time of one iteration (forward, backward, update)",
                           commands="otod.cost.cli:commands", figure_makers="otod.cost.plots:MAKERS")
