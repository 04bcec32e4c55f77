"""The nonlinearity obstacle: a product of matrices W_L⋯W_1 fitted to a target is a linear model, yet its loss is
not convex in the factors, so depth alone makes optimization nonlinear. How iterations grow with depth depends on
the initialization and the parameterization: flat (identity or orthogonal init), or exponential (Gaussian init
on a scalar chain, Shamir 2019).

Problems (`linear`: deep-linear, chain, residual; `toy`: the essay's product of random 3×3 matrices), methods
(`methods`), per-mode theory (`theory`), the sweeps the core runs (`kind`), options, the (lr, β) selection
(`records`), the power-vs-exponential fits (`laws`), report, figures and commands. Importing this package
registers it with the core.
"""

from otod.core.api import register_lazily

OBSTACLE = register_lazily(
    "depth", "iterations vs depth of deep linear networks (nonlinearity)",
    kinds=("otod.depth.kind:DEPTH_KIND", "otod.depth.kind:TOY_KIND"), analyse="otod.depth.records:depth_analysis",
    report="otod.depth.report:text_report",
    figure="otod.depth.report:figure", commands="otod.depth.commands:commands",
    figure_makers="otod.depth.figures:MAKERS")
