"""The contract between the core and an obstacle's problems: a *family* of problems as pure functions.

A problem spec is a frozen, hashable dataclass of static options (the shapes: dimension, depth, width) with a
``kind`` and a ``family()`` method returning a `Family`. The engine vmaps the family's functions over lanes, so
each is a pure function of arrays:

* ``draws(rng)``: the random numbers of one seed, drawn once in NumPy (the compiled program holds no generator);
* ``make(point, drawn)``: one problem (a pytree of arrays) from the traced axis values ``point`` (a mapping from
  axis name to a scalar, e.g. ``{"kappa": 10.0}``) and one seed's draws;
* ``init(problem)``: the initial parameters, any pytree;
* ``metric(problem, params)``: the exact quantity stopping reads: f − f* for a relative target, the loss itself
  for an absolute one. Its gradient is the exact gradient;
* ``gradient(problem, params, key)``: a sampled gradient for stochastic families (``None``: exact, ∇metric). The
  key is the lane's per-step key, fold_in(fold_in(root, seed), t); a batch size is a traced axis the family
  puts into its problem in ``make``;
* ``info(problem, params)``: what methods may read (``{"curvature": ..., "kronecker": ...}``), named in
  ``provides``; computed once at set-up, or at every step when ``info_every_step`` (per-layer KFAC factors);
* ``dynamics``: optional, a family's own step in place of an optax update (the NQM's exact moment recursion):
  a function ``(family, methods, options) -> Dynamics`` (see `otod.core.dynamics`);
* ``stall``: when the engine calls a lane stalled (`otod.core.engine`). ``"window"`` (the default): no 0.1%
  decrease of the metric for a window of iterations, a heuristic for a floor (of the precision, of the gradient
  noise) that also stops a lane that is only slow. ``"fixed-point"``: the lane's floating-point state (parameters,
  gradient, optimizer state) came out of an iteration bit for bit unchanged. A deterministic iteration at a fixed
  point never leaves it, so such a lane is stuck for any cap (an exact saddle, a minimum other than the target, a
  step that rounds to zero), and a slow lane, which still moves, is never called stalled: it runs to the cap and
  is censored. Only for deterministic families (no ``gradient``).

``checks(t)``, optional: a scalar predicate of the iteration count saying when the metric is worth reading (a
net's full training loss costs many minibatch steps); dynamics that split their step from their metric pass it to
the engine (`otod.core.dynamics.Dynamics`).

``value_and_grad(problem, params)``: optional, (metric, its gradient in the params) computed by the family itself
(a written-out reverse mode cheaper than tracing the metric's); None: ``jax.value_and_grad`` of ``metric``.

``variants(family, specs, members, options, relative_lr, index)`` and ``variant_fields``: optional, one dynamics
for several static points, ``specs`` (this family's spec and others equal to it but in ``variant_fields``, e.g. a
net's minibatch size), stepping as ``specs[index]``'s own dynamics with ``index`` traced: the sweep compiles one
program for all of them instead of one each (`otod.core.variants`).

``floats_per_seed`` and ``floats_per_lane`` let the sweep estimate memory before anything is allocated, and
cost a lane-iteration (`otod.core.device_costs.TripCosts.lane_seconds`); a family whose time goes into arithmetic
rather than moving its state (the transformer) declares ``flops_per_lane``, the FLOPs of one lane's step, and
``flops_per_check``, those of one read of its metric (at the iterations ``checks`` picks), costed at the device's
FLOP rate, and ``compile_seconds``, its program's compile time where it is far from the planner's default
(`otod.core.plan.estimate`; 0: not counted);
``seconds_per_seed``, its time to draw one seed's problem on the host (a net's orthogonal inits factor a square per
layer), is added to the sweep's time estimate.

``compactable``: whether a lane's numbers are the same whatever the number of lanes it is batched with, so that
the engine may gather a block's last running lanes and go on with them alone (`otod.core.engine.compact_width`).
False where XLA folds the lanes into a product's dimensions and the kernel (and its rounding) changes with their
number: the nets' full training loss, whose last bits changed when 16 lanes went on instead of 56 (measured,
`tests/core/test_engine.py`).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, NamedTuple, Protocol

import numpy as np


def no_info(problem, params) -> Mapping[str, Any]:
    """A family that offers methods nothing."""
    del problem, params
    return {}


class Family(NamedTuple):
    """Pure functions of one problem family; see the module docstring."""

    draws: Callable[[np.random.Generator], Any]
    make: Callable[[Mapping[str, Any], Any], Any]
    init: Callable[[Any], Any]
    metric: Callable[[Any, Any], Any]
    gradient: Callable[[Any, Any, Any], Any] | None = None
    info: Callable[[Any, Any], Mapping[str, Any]] = no_info
    provides: frozenset = frozenset()
    info_every_step: bool = False
    dynamics: Callable[..., Any] | None = None
    floats_per_seed: int = 0
    floats_per_lane: int = 0
    flops_per_lane: float = 0.0
    flops_per_check: float = 0.0
    compile_seconds: float = 0.0
    seconds_per_seed: float = 0.0
    stall: str = "window"
    checks: Callable[[Any], Any] | None = None
    compactable: bool = True
    value_and_grad: Callable[[Any, Any], tuple[Any, Any]] | None = None
    variants: Callable[..., Any] | None = None
    variant_fields: tuple[str, ...] = ()

    @property
    def stochastic(self) -> bool:
        """Whether the gradient is sampled (then each step gets its own random key)."""
        return self.gradient is not None


class ProblemSpec(Protocol):
    """Static options of a family: frozen and hashable (it keys the compiled program)."""

    @property
    def kind(self) -> str: ...

    def family(self) -> Family: ...
