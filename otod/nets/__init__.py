"""The obstacles on real networks: small MLPs and a CNN on shipped or generated data, their curvature (Lanczos,
stochastic Lanczos quadrature), their gradient noise (per-example gradients, the noise scales B_simple and
B_noise), their steps to target against batch, width and depth through the core engine, and the noisy quadratic
model built from their measured spectrum and noise held beside the measurement.
"""

from otod.core.api import register_lazily

OBSTACLE = register_lazily(
    "nets", "curvature, gradient noise and steps to target vs batch, width and depth of small real nets",
    kinds=("otod.nets.sweep.kind:NET",), analyse="otod.nets.sweep.report:net_analysis",
    report="otod.nets.sweep.report:text_report", figure="otod.nets.figures.sweep:sweep_figure",
    commands="otod.nets.commands:commands", figure_makers="otod.nets.figures.sweep:ALL_MAKERS",
    measurements="otod.nets.measurements:MEASUREMENTS")
