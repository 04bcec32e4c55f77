"""The synthetic data sets' random streams, drawn from the data seed alone (`otod.nets.model.data`'s teacher and
gaussian sets, `otod.nets.model.sequence`'s source): one place, so the two modules share them without importing
each other."""

from __future__ import annotations

import numpy as np


def streams(data_seed: int) -> list[np.random.Generator]:
    """The synthetic sets' four independent child streams of ``default_rng([data_seed, 7])``: teacher weights,
    training inputs, training label noise, held-out set. Drawn separately, so a row of one stream never shifts
    with the size of another (NumPy draws a Generator's normals in order: the first N rows of an N' × d draw are
    the N × d draw)."""
    return np.random.default_rng([data_seed, 7]).spawn(4)
