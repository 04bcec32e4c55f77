"""otod: measurements of why training takes so many sequential iterations.

The name is the initials of the three Obstacles TO Decreasing serial complexity: nonlinearity, conditioning and
gradient noise; beside them otod measures the cost of one iteration.

``otod.load(path)`` reads a results file of any format; ``otod.load(path).to_pandas()`` is its data frame.
"""

from otod.core.version import __version__

__all__ = ["__version__", "load"]


def load(path):
    """Load and verify a results file (``.parquet``, ``.json`` or ``.npz``, by its suffix) as
    `otod.core.results.Results`: ``.records``, ``.meta``, ``.to_pandas()``. The results module is imported on
    the first call, so ``import otod`` (and ``otod --help``) imports no NumPy, pandas or JAX."""
    from otod.core.results import load as load_results

    return load_results(path)
