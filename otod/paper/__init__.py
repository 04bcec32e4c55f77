"""The paper's figures across obstacles: one obstacle's measurements drawn beside another's (the nets' steps
against depth beside the deep-linear obstacle's law). This package sits above every obstacle and may import any of
them; no obstacle imports it, nor another obstacle for such a figure. It registers its figure makers with
`otod.core.registry` as the obstacles do, so that ``otod figures`` finds them by the names the TOML specs give.
"""

from otod.core.api import register_lazily


def _figure_makers() -> dict:
    from otod.paper.figures import MAKERS

    return MAKERS


OBSTACLE = register_lazily("paper", "figures that draw one obstacle beside another", figure_makers=_figure_makers)
