"""The names of the networks `otod.cost.models` builds, importable without JAX (for the command line's help)."""

NETWORKS = ("linearnet", "onenet", "convnet", "deeperconvnet", "mlp", "transformer")
