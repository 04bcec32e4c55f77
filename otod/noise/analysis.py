"""The analysis of a noise or params sweep: the core's critical-batch analysis (`otod.core.critical_batch`) of its
records, computed once per command and read by the text report, the figures and ``otod fit``.

Per method (and per d, where a batch sweep has several): one (lr, β) per point, chosen by the median over seeds
(Shallue et al. 2019); the medians there; for a batch sweep the critical batch S(B) = S_min (1 + B_crit/B) with a
seed bootstrap that re-chooses every point's setting inside each resample, the perfect-scaling region and the
chosen lr's slope over it; for a params sweep the exponent of the steps in d. What is the noise obstacle's own
here is its records (`otod.noise.records.frame`: old files' fields filled in, the repeated β lanes of methods
without β dropped) and, for a simulated sweep on a quadratic, the exact path's choice on the same sweep
(`exact_twin`): the theory its figure draws, computed from the recursions at most once per command.
"""

from __future__ import annotations

import dataclasses
import functools

from otod.core.api import BatchAnalysis, N_BOOT, Placed, analyse_batches
from otod.noise import records as noise_records

#: The analysis of a noise sweep is the core's batch analysis.
NoiseAnalysis = BatchAnalysis


def analyse(results, *, n_boot: int = N_BOOT, seed: int = 0, fit: bool = True, tol: float | None = None
            ) -> BatchAnalysis:
    """The analysis of a noise or params `Results` (`otod.core.critical_batch.analyse_batches` on
    `otod.noise.records.frame`); the critical-batch bootstrap draws ``n_boot`` seed resamples from ``seed``.
    ``fit`` False: the choice and medians only (a curve to draw). ``tol``: only the sweep's own target (the
    noise sweeps record one)."""
    from otod.core.api import read_config

    axis = sweep_axis(results.meta)
    found = analyse_batches(noise_records.frame(results), results.meta, axis=axis,
                            point=noise_records.POINT_FIELDS, n_boot=n_boot, seed=seed, fit=fit,
                            config=read_config(results.meta))
    return dataclasses.replace(found, theory=ExactTwin(results.meta))


def placed(results) -> tuple[Placed, ...]:
    """The choices `analyse` makes on a simulated noise or params `Results`, on the point estimates alone
    (`otod.core.critical_batch.place_batches` on the same records: no bootstrap, no fit): what the bracket's
    rounds read (`otod.core.bracket`)."""
    from otod.core.api import place_batches

    return place_batches(noise_records.frame(results), axis=sweep_axis(results.meta),
                         point=noise_records.POINT_FIELDS)


def sweep_axis(meta: dict) -> str:
    """The axis a noise or params sweep's analysis reads along: d for a params sweep, B for a noise sweep."""
    return "dim" if meta["sweep"] == "params" else "batch"


class ExactTwin:
    """The exact path's choice and medians for a simulated sweep on a quadratic (nqm or isotropic under a constant
    schedule): the theory a simulated figure draws beside the measurement. Computed from the recursions on first
    use (`value`) and kept, so a command computes it at most once, and never where nothing reads it."""

    def __init__(self, meta: dict):
        self.meta = meta

    @functools.cached_property
    def value(self) -> BatchAnalysis | None:
        from otod.core.api import Results, read_config
        from otod.noise.exact import exact_records

        meta = self.meta
        config = read_config(meta)
        if meta.get("mode") == "exact" or config.problem.kind not in ("nqm", "isotropic") or \
                config.options.schedule != "constant":
            return None
        methods = tuple(m for m in config.methods if m != "adam")
        if not methods:
            return None
        config = dataclasses.replace(config, methods=methods, seeds=1, max_iters=10 ** 8)
        twin = Results(meta={**meta, "mode": "exact", "config": config.to_dict()}, records=exact_records(config))
        return analyse(twin, fit=False)
