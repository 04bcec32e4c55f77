"""A branch that stays a branch under ``vmap``: `cond_any`.

Why. Under ``vmap`` a ``lax.cond`` whose predicate is batched becomes a select that computes both branches for
every lane at every call. A lane that only now and then needs an expensive branch (a sampler that draws a new
epoch's order once per ⌊n/B⌋ steps, with B differing between lanes) would then pay for it at every step.
`cond_any` gives the branch a batching rule (``jax.custom_batching.custom_vmap``, as `otod.core.linalg` does)
that keeps one real ``lax.cond`` on "some lane's predicate holds": the expensive branch runs on the iterations
where at least one lane needs it, for all lanes, and each lane keeps the branch its own predicate picks. The
values are those of the select, bit for bit.
"""

from __future__ import annotations

from otod.core.lazy import lazy

jax = lazy("jax")
jnp = lazy("jax.numpy")


def cond_any(pred, true_fn, false_fn, *operands):
    """``lax.cond(pred, true_fn, false_fn, *operands)`` for one lane; under ``vmap``, lane i gets
    ``true_fn(xᵢ) if predᵢ else false_fn(xᵢ)`` (the select vmap makes of ``lax.cond``), with ``true_fn`` run
    only when ∨ᵢ predᵢ. Each enclosing vmap reduces its own axis in turn (the rule calls `cond_any` again), so
    under the engine's two nested vmaps one scalar predicate, ∨ over seeds and lanes, decides.

    ``true_fn`` and ``false_fn`` must take everything traced as ``operands``, never close over a traced value
    (``custom_vmap`` rejects a batched constant)."""
    branch = jax.custom_batching.custom_vmap(lambda p, *xs: jax.lax.cond(p, true_fn, false_fn, *xs))

    @branch.def_vmap
    def rule(axis_size, in_batched, p, *xs):
        xs = [_broadcast(x, flags, axis_size) for x, flags in zip(xs, in_batched[1:])]
        batched_true, batched_false = jax.vmap(true_fn), jax.vmap(false_fn)
        if in_batched[0]:
            out = cond_any(jnp.any(p), _per_lane(batched_true, batched_false),
                           lambda p, *xs: batched_false(*xs), p, *xs)
        else:
            out = cond_any(p, batched_true, batched_false, *xs)
        return out, jax.tree.map(lambda _: True, out)

    return branch(pred, *operands)


def _broadcast(x, flags, axis_size: int):
    """The pytree ``x`` with every leaf whose flag is False broadcast to a leading axis of ``axis_size``."""
    return jax.tree.map(lambda a, b: a if b else jnp.broadcast_to(a, (axis_size, *jnp.shape(a))), x, flags)


def _per_lane(batched_true, batched_false):
    """(p, *xs) ↦ per lane, batched_true's value where pᵢ, else batched_false's: both computed, then selected."""

    def pick(p, *xs):
        def select(a, b):
            return jnp.where(p.reshape(p.shape + (1,) * (a.ndim - 1)), a, b)

        return jax.tree.map(select, batched_true(*xs), batched_false(*xs))

    return pick
