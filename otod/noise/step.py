"""What a noise family's sampled gradient receives each step (shared by the problems and the dynamics)."""

from __future__ import annotations

from typing import Any, Callable, NamedTuple


class Step(NamedTuple):
    """The lane's per-step key and the iteration t (0-based): sampling without replacement needs to know where in
    its epoch a step falls. ``order``: what the family's `Order` holds for step t (None: the family has none, or
    the caller steps without the dynamics' carry, and the gradient draws what it needs from the key and t)."""

    key: object
    t: object
    order: Any = None


class Order(NamedTuple):
    """State a family's sampler keeps in the lane's carry between steps, so that it need not redraw it each step
    (an epoch's minibatch order changes once per epoch). ``start(problem)``: the held value before the first
    step; ``refresh(problem, held, t)``: the value step t reads (as ``Step.order``), which the carry then keeps."""

    start: Callable[[Any], Any]
    refresh: Callable[[Any, Any, Any], Any]
