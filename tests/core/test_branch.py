"""`otod.core.branch.cond_any`: the values of ``lax.cond`` (the select it becomes under vmap), with the true branch
left inside one real ``cond`` under the engine's two nested vmaps."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from otod.core.branch import cond_any

N = 16


def _draw(key, epoch, held):
    return epoch, jax.random.permutation(jax.random.fold_in(key, epoch), N)


def _keep(key, epoch, held):
    return held


def _with(cond):
    """One lane's refresh: a new permutation of N for ``epoch`` where it differs from the held one."""

    def lane(key, epoch, held):
        return cond(epoch != held[0], _draw, _keep, key, epoch, held)

    return lane


def _nested(lane):
    """Seeds outside (one key each), lanes inside (the key unbatched there), as the engine nests them."""
    return jax.jit(jax.vmap(jax.vmap(lane, in_axes=(None, 0, 0)), in_axes=(0, 0, 0)))


def _primitives_outside_cond(jaxpr) -> set:
    """The primitives a jaxpr runs unconditionally: every equation's, recursing into sub-jaxprs except a cond's."""
    names = set()
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "cond":
            continue
        names.add(eqn.primitive.name)
        for value in eqn.params.values():
            for sub in value if isinstance(value, (tuple, list)) else (value,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    names |= _primitives_outside_cond(inner)
    return names


def test_values_are_the_selects_of_lax_cond_under_nested_vmaps_and_one_lane():
    """3 seeds × 5 lanes, random epochs against held ones (some lanes due, some not, one seed with none due, then
    none due at all): every output equals vmap(vmap(lax.cond)); one lane alone, jitted, too."""
    rng = np.random.default_rng(0)
    keys = jax.random.split(jax.random.PRNGKey(1), 3)
    held = (jnp.asarray(rng.integers(0, 3, (3, 5)), jnp.int32), jnp.asarray(rng.integers(0, N, (3, 5, N)), jnp.int32))
    epochs = jnp.asarray(rng.integers(0, 3, (3, 5)), jnp.int32).at[1].set(held[0][1])
    ours, select = _nested(_with(cond_any)), _nested(_with(jax.lax.cond))
    for e in (epochs, held[0]):
        for a, b in zip(ours(keys, e, held), select(keys, e, held)):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert not np.array_equal(np.asarray(ours(keys, epochs, held)[1]), np.asarray(held[1]))
    one = (held[0][0, 0], held[1][0, 0])
    for e in (epochs[0, 0], one[0]):
        for a, b in zip(jax.jit(_with(cond_any))(keys[0], e, one), _with(jax.lax.cond)(keys[0], e, one)):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_the_sort_runs_only_inside_a_cond_under_nested_vmaps():
    """Under two vmaps ``lax.cond``'s true branch (the permutation's sort) runs unconditionally, as a select;
    `cond_any` leaves it inside a cond on one scalar predicate."""
    keys = jax.random.split(jax.random.PRNGKey(1), 3)
    args = (keys, jnp.zeros((3, 5), jnp.int32), (jnp.zeros((3, 5), jnp.int32), jnp.zeros((3, 5, N), jnp.int32)))
    select = jax.make_jaxpr(jax.vmap(jax.vmap(_with(jax.lax.cond), in_axes=(None, 0, 0))))(*args)
    ours = jax.make_jaxpr(jax.vmap(jax.vmap(_with(cond_any), in_axes=(None, 0, 0))))(*args)
    assert "sort" in _primitives_outside_cond(select.jaxpr)
    assert "sort" not in _primitives_outside_cond(ours.jaxpr) and "sort" in str(ours)
