"""What every obstacle shares: the engine, stopping, axes, sweeps, results, fits, reports, plotting and ranges.

Nothing here imports an obstacle. An obstacle (``otod.condition``, ``otod.cost``, ...) registers itself with
`otod.core.registry`: its sweeps (axes, problem families, methods, theory, report and figure), its commands and
its figure makers. Importing this package is cheap: JAX is imported by the modules that need it, when they are.
"""
