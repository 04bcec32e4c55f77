"""Reading otod results from a notebook: ``otod.results.load(path)`` reads every format (``.json``, ``.npz``) and
verifies it; ``load(path).records`` is a list of dicts, ``load(path).columns()`` a dict of NumPy arrays, so
``pandas.DataFrame(otod.results.load(path).columns())`` is a data frame in one line."""

from otod.core.results import Results, convert, load, save

__all__ = ["Results", "convert", "load", "save"]
