"""The names the cost commands accept, importable without JAX (for the command line's help and for checking
options before the heavy imports): networks (`otod.cost.models`), optimizers (`otod.cost.optimizers.OPTIMIZERS`)
and precisions (`otod.cost.profile.PRECISIONS`); tests/cost checks that the lists match those tables."""

NETWORKS = ("linearnet", "onenet", "convnet", "deeperconvnet", "mlp", "transformer")
OPTIMIZER_NAMES = ("sgd", "momentum", "adam")
PRECISION_NAMES = ("float32", "bfloat16")
