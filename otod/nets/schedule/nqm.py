"""What the NQM built for a net predicts a batch schedule saves: the exact schedule search of the noise obstacle
(`otod.noise.schedule_search.best`) run on the noisy quadratic model read off the net at its start, so that the
measured saving of a batch schedule on the net (`otod.nets.schedule.batch_schedule`) has its theory beside it.

The NQM is the one ``otod sweep net --predict`` builds (`otod.nets.sweep.predict`): the SLQ spectrum of seed 0's start
binned to 64 log-spaced directions, noise C ∝ H with tr(HC) matched to the measured tr(HΣ), the isotropic start with
the net's start gap L(θ₀) − L_ref, the target gap L_target − L_ref (L_ref: 0 for cross-entropy, the label-noise
floor for the squared loss). On it the search finds, within ``budget_factor`` × E_min examples (E_min the fewest
examples of any constant batch), the best constant batch, the best two-phase lr schedule at one batch and the best
two-phase batch schedule (each with its own lr), and the saving 1 − S_schedule / S_constant. What the NQM assumes
and the net does not do: one fixed H (a net's moves while it trains) and C ∝ H.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: The NQM directions the spectrum is binned to (`otod.nets.measure.bridge.bin_spectrum`), as the sweep's prediction does.
BINS = 64


@dataclass(frozen=True)
class NetQuadratic:
    """A net's NQM as `otod.noise.schedule_search` reads a problem: the quadratic (``h``, ``c``, ``s0`` per
    direction), the target gap, the step cap and the preconditioner power (0: SGD)."""

    h: tuple[float, ...]
    c: tuple[float, ...]
    s0: tuple[float, ...]
    target: float
    max_steps: int = 10 ** 8
    power: float = 0.0

    def quadratic(self):
        from otod.noise.theory import Quadratic

        return Quadratic(np.array(self.h), np.array(self.c), np.array(self.s0))

    def reference(self, q) -> float:
        """The reference step 1/max h (the lr lattice is fractions of the stability limit 2/max h)."""
        return float(1.0 / np.max(q.h))


def net_quadratic(spec, target_loss: float, seed: int = 0) -> NetQuadratic:
    """The NQM of the module docstring for ``spec`` at seed 0's start (root ``seed``), to ``target_loss``."""
    from otod.nets.measure import bridge
    from otod.nets.sweep.predict import measured, reference_loss, seed_start

    params = seed_start(spec, np.random.default_rng([seed, 0]))
    moments, spectrum = measured(spec, params, seed)
    ref = reference_loss(spec)
    binned = bridge.bin_spectrum(np.ravel(spectrum.nodes), np.ravel(spectrum.weights), spec.parameter_count, BINS)
    q = bridge.proportional_quadratic(binned["h"], binned["multiplicity"], moments["trace_h_sigma"],
                                      moments["loss"] - ref)
    return NetQuadratic(tuple(map(float, q.h)), tuple(map(float, q.c)), tuple(map(float, q.s0)),
                        float(target_loss) - ref)


def predicted_saving(spec, target_loss: float, seed: int = 0, budget_factor: float = 2.0) -> dict:
    """The search's three optima on the net's NQM (module docstring): steps and examples of the best constant
    batch, lr schedule and batch schedule within ``budget_factor`` × E_min, each schedule's saving against the
    constant batch, and the schedules as text."""
    from otod.noise.schedule_search import best

    found = best(net_quadratic(spec, target_loss, seed), budget_factor, 2)
    constant = found.optima["constant"]
    out = {"budget": float(found.budget), "e_min": float(found.fewest.examples)}
    for name, key in (("constant", "constant"), ("lr_schedule", "lr-decay"), ("batch_schedule", "batch")):
        o = found.optima[key]
        out.update({f"{name}_steps": int(o.steps), f"{name}_examples": float(o.examples),
                    f"{name}_saving": 1.0 - o.steps / constant.steps,
                    f"{name}_phases": [(float(p.batch), float(p.lr), None if p.steps is None else int(p.steps))
                                       for p in o.schedule.phases]})
    return out
