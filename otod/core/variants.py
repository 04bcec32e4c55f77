"""One compiled program for several static points: a sweep's static points whose specs differ only in fields the
family's dynamics can switch between inside one step (``Family.variant_fields``: a net's minibatch size B) share
one program, keyed on `Variants` (all their specs), with the point's own index among them traced.

Why: a static axis compiles one program per value (a minibatch of B examples is a shape), and where the value
changes only what one step does, the rest of the program (the engine's loop, the stopping metric, the minibatch
order) is compiled once per value for nothing. Measured on the default ``otod sweep net`` (8 batch sizes,
2-core AMD EPYC): a program's compile took 2.7–3.3 s, of which the B-dependent gradient was about 0.3 s; the
epoch's permutation alone about 1.2 s (`benchmarks/RESULTS-log.md`, issue 53 item 3).

Inside the program the family's ``variants`` hook builds one dynamics whose step runs ``specs[index]``'s step
under ``lax.switch`` on the traced ``index``: one value for the whole call, unbatched under the lanes' vmap, so
the switch stays a real branch and a step costs what its own B costs, not every B's.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Variants:
    """The specs one program runs (`program_groups`), in the sweep's static-point order; hashable, so it keys the
    compiled program in place of one spec. ``family()`` is the first spec's (every spec's set-up, metric and
    draws' shapes are the same: they differ only in the family's ``variant_fields``)."""

    specs: tuple

    @property
    def kind(self) -> str:
        return self.specs[0].kind

    def family(self):
        return self.specs[0].family()


def program_groups(static_points: list[dict], specs: list) -> list[tuple[int, ...]]:
    """For each static point, the indices of the static points that share its program (itself included, in
    order): those whose values differ only on axes the family switches between (its ``variant_fields``), where the
    family has a ``variants`` hook; else the point alone."""
    groups: dict = {}
    keys = []
    fields = _variant_fields(specs[0]) if specs else ()
    for point in static_points:
        key = tuple(sorted((k, v) for k, v in point.items() if k not in fields))
        keys.append(key)
        groups.setdefault(key, []).append(len(keys) - 1)
    return [tuple(groups[key]) for key in keys]


def _variant_fields(spec) -> tuple[str, ...]:
    """The fields a spec's family switches between in one program (none without a ``variants`` hook)."""
    family = spec.family()
    return tuple(family.variant_fields) if family.variants is not None else ()


def program_spec(spec, variants=None):
    """(what keys ``spec``'s program, the traced index of its variant): ``spec`` itself and 0 where it has its
    program alone (``variants`` None or one spec), else `Variants` of ``variants`` (its group's specs, ``spec``
    among them) and its place there."""
    if variants is None or len(variants) < 2:
        return spec, 0
    return Variants(tuple(variants)), list(variants).index(spec)


def dynamics_of(spec, members, options, relative_lr: bool, index):
    """A program's dynamics: a `Variants` program's from its family's ``variants`` hook, stepping as
    ``spec.specs[index]``; else the family's own (``dynamics``), else optax's (`otod.core.dynamics`)."""
    from otod.core.dynamics import optax_dynamics

    family = spec.family()
    if isinstance(spec, Variants):
        return family.variants(family, spec.specs, members, options, relative_lr, index)
    return (family.dynamics or optax_dynamics)(family, members, options, relative_lr)
