"""A block's lanes laid out and set up for the engine (`otod.core.engine`): rows of lanes, and per lane the
dynamics' constants and starting carry, with whatever depends on a seed's draws alone kept once per seed.

With ``by_seed`` a block's lanes (whole points, [point, rate, seed]) are laid out [seed, lane]: the set-up is
vmapped over seeds outside and lanes inside, and what it computes from the seed's draws alone (found by
`lane_dependent`: a rotation, Kronecker factors) stays one array per seed, multiplied batched by seed, instead of
a copy per lane. Otherwise the lanes are one row, each with its own seed's draws.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def lane_dependent(fn, lane_args, shared_args) -> list[bool]:
    """For each output leaf of ``fn(*lane_args, *shared_args)``, whether it depends on ``lane_args`` (a
    dependence analysis of its jaxpr; conservative: an equation with any dependent input makes all its outputs
    dependent). Outputs computed from ``shared_args`` alone (a seed's rotation, its Kronecker factors) need not be
    copied into every lane."""
    closed = jax.make_jaxpr(fn)(*lane_args, *shared_args)
    jaxpr = closed.jaxpr
    n_lane = len(jax.tree.leaves(lane_args))
    dependent = {v for v in jaxpr.invars[:n_lane]}

    def hit(v):
        return not hasattr(v, "val") and v in dependent

    for eqn in jaxpr.eqns:
        if any(hit(v) for v in eqn.invars):
            dependent.update(eqn.outvars)
    return [hit(v) for v in jaxpr.outvars]


def layout(by_seed: bool, seeds: int, draws, seed_indices):
    """How a block's ``n`` lanes are laid out in rows: (nest, unnest, drawn). ``nest`` turns a per-lane array
    into [row, lane, ...] and ``unnest`` back; ``drawn`` is the draws the rows read: one per seed ([seed, ...]) with
    ``by_seed`` (the block holds whole points, each with all ``seeds`` seeds), else each lane's own seed's
    ([1, lane, ...])."""
    n = seed_indices.shape[0]
    if by_seed:
        def nest(a):
            return jnp.swapaxes(a.reshape(n // seeds, seeds, *a.shape[1:]), 0, 1)

        def unnest(a):
            return jnp.swapaxes(a, 0, 1).reshape(n, *a.shape[2:])

        return nest, unnest, jax.tree.map(lambda a: a[:seeds], draws)

    def nest(a):
        return a[None]

    def unnest(a):
        return a[0]

    return nest, unnest, jax.tree.map(lambda a: a[seed_indices][None], draws)


def set_up_lanes(dynamics, by_seed: bool, rates: int | None, points, lrs, method_indices, drawn):
    """Every lane's set-up (`otod.core.dynamics`: constants, carry, first metric, step size) from the nested
    [row, lane] inputs, vmapped over rows and lanes. Returns (lanes, the constants' vmap axes): 0 for a leaf per
    lane, None for one per seed (``by_seed`` only). A family with ``prepare`` prepares each point once, not once
    per learning rate (`prepared_lanes`)."""

    def set_up(point, lr, m, drawn):
        return dynamics.set_up(point, drawn, lr, m)

    lane_args = _abstract((points, lrs, method_indices), 2)
    shared_arg = _abstract(drawn, 1 if by_seed else 2)
    shape = jax.eval_shape(set_up, *lane_args, shared_arg)
    const_leaves, const_tree = jax.tree.flatten(shape.constants)
    if by_seed and dynamics.prepare is not None:
        return prepared_lanes(dynamics, rates, points, lrs, method_indices, drawn, lane_args, shared_arg, shape)
    if by_seed:
        dependent = lane_dependent(set_up, lane_args, (shared_arg,))
        const_axes = jax.tree.unflatten(const_tree, [0 if d else None for d in dependent[:len(const_leaves)]])
    else:
        const_axes = 0
    inner = jax.vmap(set_up, in_axes=(0, 0, 0, None if by_seed else 0), out_axes=type(shape)(const_axes, 0, 0, 0))
    return jax.vmap(inner)(points, lrs, method_indices, drawn), const_axes


def _abstract(tree, skip: int):
    """The shapes and dtypes of ``tree``'s leaves less their first ``skip`` axes: one lane's (or one seed's)."""
    return jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape[skip:], a.dtype), tree)


def prepared_lanes(dynamics, rates, points, lrs, method_indices, drawn, lane_args, shared_arg, shape):
    """The seed-major set-up with the point-and-seed part prepared once per point (not once per learning rate):
    ``prepare`` vmapped over [seed, point], its per-point outputs repeated for the point's rates, then
    ``set_up_prepared`` over [seed, lane]. Outputs of ``prepare`` that depend on the seed alone stay one per
    seed; so do the lanes' constants that come from them. Returns (lanes, constants' vmap axes)."""
    point_abs, lr_abs, m_abs = lane_args
    on_point = lane_dependent(dynamics.prepare, (point_abs,), (shared_arg,))
    prep_shape = jax.eval_shape(dynamics.prepare, point_abs, shared_arg)
    prep_leaves, prep_tree = jax.tree.flatten(prep_shape)
    prep_axes = jax.tree.unflatten(prep_tree, [0 if d else None for d in on_point])
    firsts = jax.tree.map(lambda a: a[:, ::rates], points)  # a point's rates share its axis values
    per_point = jax.vmap(jax.vmap(dynamics.prepare, in_axes=(0, None), out_axes=prep_axes))(firsts, drawn)
    leaves = [jnp.repeat(a, rates, axis=1) if d else a for a, d in zip(jax.tree.leaves(per_point), on_point)]

    def from_parts(varying, lr, m, fixed):  # the prepared pytree from its per-lane and per-seed leaves
        v, f = iter(varying), iter(fixed)
        return dynamics.set_up_prepared(jax.tree.unflatten(prep_tree, [next(v) if d else next(f) for d in on_point]),
                                        lr, m)

    varying = [a for a, d in zip(leaves, on_point) if d]
    fixed = [a for a, d in zip(leaves, on_point) if not d]
    varying_abs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a, d in zip(prep_leaves, on_point) if d]
    fixed_abs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a, d in zip(prep_leaves, on_point) if not d]
    n_const = len(jax.tree.leaves(shape.constants))
    dependent = lane_dependent(from_parts, (varying_abs, lr_abs, m_abs), (fixed_abs,))[:n_const]
    const_axes = jax.tree.unflatten(jax.tree.structure(shape.constants), [0 if d else None for d in dependent])
    inner = jax.vmap(from_parts, in_axes=(0, 0, 0, None), out_axes=type(shape)(const_axes, 0, 0, 0))
    return jax.vmap(inner)(varying, lrs, method_indices, fixed), const_axes
