"""XLA's own count of a program's cost: FLOPs, transcendentals and bytes accessed of the compiled HLO.

``compiled_cost(fn, *args)`` lowers ``jax.jit(fn)`` with the given arguments — concrete arrays or abstract
``jax.ShapeDtypeStruct`` pytrees, so a 600M-parameter model costs no memory to count — compiles it and reads
``compiled.cost_analysis()``.

Traps this module handles (they differ across JAX versions):

* ``cost_analysis()`` returns a dict in current JAX and a list of one dict (one per module) in older ones; it may
  also return None on backends that do not implement it. All three are normalised here (lists are summed).
* A missing key means zero (XLA omits counters it did not touch, e.g. ``transcendentals`` for a pure matmul).
* ``flops`` and ``transcendentals`` are separate counters: ``exp``, ``tanh``, ``log``, ``rsqrt``... count one
  transcendental each and are *not* in ``flops``.

Trap this module does *not* handle: XLA counts a ``while`` loop body once, whatever its trip count. Unroll loops
(``jax.lax.scan(..., unroll=True)`` or a Python loop) before counting, or multiply by the trip count;
`has_while_loop` tells whether a compiled program has one.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax


class Cost(NamedTuple):
    """XLA's cost counters of one compiled program (floating-point operations, transcendental calls, bytes)."""

    flops: float
    transcendentals: float
    bytes_accessed: float

    def __add__(self, other):  # type: ignore[override]  # element-wise, not tuple concatenation
        return Cost(*(a + b for a, b in zip(self, other)))

    def __sub__(self, other):
        return Cost(*(a - b for a, b in zip(self, other)))


ZERO = Cost(0.0, 0.0, 0.0)


def normalise_cost_analysis(raw: Any) -> Cost:
    """Turn whatever ``Compiled.cost_analysis()`` returned (dict, list of dicts, or None) into a `Cost`.

    Absent keys count as zero; a list (one dict per HLO module, older JAX) is summed.
    """
    if raw is None:
        return ZERO
    if isinstance(raw, dict):
        raw = [raw]
    total = ZERO
    for entry in raw:
        entry = entry or {}
        total = total + Cost(float(entry.get("flops", 0.0)), float(entry.get("transcendentals", 0.0)),
                             float(entry.get("bytes accessed", 0.0)))
    return total


def lower_compile(fn: Callable, *args, **kwargs):
    """``jax.jit(fn).lower(*args, **kwargs).compile()``: args may be arrays or `jax.ShapeDtypeStruct` pytrees."""
    return jax.jit(fn).lower(*args, **kwargs).compile()


def compiled_cost(fn: Callable, *args, **kwargs) -> Cost:
    """XLA's cost of one call of ``fn(*args, **kwargs)``, from the compiled program, without running it.

    ``args``/``kwargs`` are traced (pass static options through ``functools.partial``); give
    ``jax.ShapeDtypeStruct`` leaves (e.g. ``jax.eval_shape(init, key)``) to count a model that would not fit in
    memory: nothing of that size is allocated. Loops are counted once per body (see module docstring).
    """
    return normalise_cost_analysis(lower_compile(fn, *args, **kwargs).cost_analysis())


def has_while_loop(fn: Callable, *args, **kwargs) -> bool:
    """Whether the compiled program of ``fn`` contains a ``while`` loop (whose body XLA counts only once)."""
    return " while(" in lower_compile(fn, *args, **kwargs).as_text()


def abstract(tree: Any) -> Any:
    """The same pytree with every array leaf replaced by its `jax.ShapeDtypeStruct` (shape and dtype only)."""
    return jax.tree_util.tree_map(lambda x: jax.ShapeDtypeStruct(jax.numpy.shape(x), jax.numpy.result_type(x)),
                                  tree)
