"""The obstacles on real networks: small MLPs and a CNN on shipped or generated data, their curvature (Lanczos,
stochastic Lanczos quadrature), their gradient noise (per-example gradients, the noise scales B_simple and
B_noise), their steps to target against batch, width and depth through the core engine, and the noisy quadratic
model built from their measured spectrum and noise held beside the measurement.
"""
