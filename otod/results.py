"""Reading otod results from a notebook: ``otod.results.load(path)`` (or ``otod.load(path)``) reads every format
(``.parquet``, ``.json``, ``.npz``) and verifies it; ``load(path).records`` is a list of dicts,
``load(path).to_pandas()`` a data frame in one line, ``load(path).columns()`` a dict of NumPy arrays. A Parquet
file also reads without otod: ``pandas.read_parquet(path)``."""

from otod.core.results import Results, convert, load, save

__all__ = ["Results", "convert", "load", "save"]
