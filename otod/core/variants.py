"""One compiled program for several static points: a sweep's static points whose specs differ only in fields the
family's dynamics can switch between inside one step (``Family.variant_fields``: a net's minibatch size B, and
in a finite grid its training set's size D, `otod.nets.model.family.variant_fields`) share
one program, keyed on `Variants` (all their specs), with the point's own index among them traced.

Why: a static axis compiles one program per value (a minibatch of B examples is a shape), and where the value
changes only what one step does, the rest of the program (the engine's loop, the stopping metric, the minibatch
order) is compiled once per value for nothing. Measured on the default ``otod sweep net`` (8 batch sizes,
2-core AMD EPYC): a program's compile took 2.7–3.3 s, of which the B-dependent gradient was about 0.3 s; the
epoch's permutation alone about 1.2 s (`benchmarks/RESULTS-log.md`, issue 53 item 3).

Inside the program the family's ``variants`` hook builds one dynamics whose step runs ``specs[index]``'s step
under ``lax.switch`` on the traced ``index``: one value for the whole call, unbatched under the lanes' vmap, so
the switch stays a real branch and a step costs what its own B costs, not every B's.

Two more ways sweeps share a program (issue 53 item 3). A spec keys its program in its *program form*
(`program_form`): without the fields that set only where its seeds start (a branch's checkpoint, a batch schedule's
earlier phases), which change the draws the program is given, never the program; so the sweeps of ``--branch-at``'s
checkpoints, or a schedule phase and a sweep at the same batch, compile one program, not one each. And inside
`sharing` (a batch schedule's phases, `otod.nets.schedule.batch_schedule`), a sweep's lone static point whose program
form is one of the shared specs runs in their one program, the one the constant-batch sweep compiled: measured on
the pipeline test's schedule (teacher MLP, B = 8, 16, two phases), three programs of 5.5–7.0 s compile became one.
The records are those of the point's own program (a `Variants` program's records are one program per batch's, bit
for bit on otod's MLP, CNN, stream and a finite grid's cells: tests/nets/sweep/test_programs.py).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Variants:
    """The specs one program runs (`program_groups`), in the sweep's static-point order; hashable, so it keys the
    compiled program in place of one spec. ``family()`` is the first spec's (every spec's set-up and draws' shapes
    are the same: they differ only in the family's ``variant_fields``; where a field changes the metric, a finite
    grid's D and its held-out target, the family's ``variants`` hook switches the metric too)."""

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


def program_form(spec):
    """What of ``spec`` keys its compiled program: its ``program_form()`` where it has one (the spec without the
    fields that set only its seeds' starts, which reach the program as its draws), else ``spec`` itself."""
    form = getattr(spec, "program_form", None)
    return spec if form is None else form()


#: The groups of specs whose one program a lone static point may run in (`sharing`), innermost last.
_shared: list[tuple] = []


@contextlib.contextmanager
def sharing(specs):
    """Inside, a sweep's static point that has its program alone (no other static point of its sweep shares it)
    and whose program form is one of ``specs``' (a sweep's static points' specs, which differ only in their
    family's ``variant_fields``) runs in the one program of ``specs``, at its place among them (`program_spec`),
    instead of compiling its own: what a batch schedule's phases do with the constant-batch sweep's program."""
    forms = tuple(program_form(s) for s in specs)
    if not forms or not _variant_fields(forms[0]):  # a family that cannot switch between them: nothing shared
        yield
        return
    _shared.append(forms)
    try:
        yield
    finally:
        _shared.remove(forms)


def program_spec(spec, variants=None):
    """(what keys ``spec``'s program, the traced index of its variant), in program forms (`program_form`): the
    spec itself and 0 where it has its program alone (``variants`` None or one spec) and no group of `sharing`
    holds it, else `Variants` of ``variants`` (its group's specs, ``spec`` among them), or of the innermost shared
    group that holds it, and its place there."""
    spec = program_form(spec)
    if variants is not None and len(variants) >= 2:
        variants = [program_form(s) for s in variants]
        return Variants(tuple(variants)), variants.index(spec)
    for group in reversed(_shared):
        if len(group) >= 2 and spec in group:
            return Variants(group), group.index(spec)
    return spec, 0


def dynamics_of(spec, members, options, relative_lr: bool, index):
    """A program's dynamics: a `Variants` program's from its family's ``variants`` hook, stepping as
    ``spec.specs[index]``; else the family's own (``dynamics``), else optax's (`otod.core.dynamics`)."""
    from otod.core.dynamics import optax_dynamics

    family = spec.family()
    if isinstance(spec, Variants):
        return family.variants(family, spec.specs, members, options, relative_lr, index)
    return (family.dynamics or optax_dynamics)(family, members, options, relative_lr)
