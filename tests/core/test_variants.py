"""What keys a compiled program (`otod.core.variants.program_spec`): a spec's program form, without the fields that
set only its seeds' starts, and, inside `otod.core.variants.sharing`, the shared group's one program for a lone
static point among them (a batch schedule's phases in the constant-batch sweep's program). That the shared
program gives the records of the point's own is tests/nets/sweep/test_programs.py's (one program against one per
batch, bit for bit) and tests/nets/schedule/test_batch_schedule.py's (a one-phase schedule is the constant sweep,
record for record)."""

from __future__ import annotations

from dataclasses import replace

from otod.core.variants import Variants, program_form, program_spec, sharing
from otod.nets.model.problem import NetSpec

NET = NetSpec(data="teacher", width=8, examples=64, loss="squared", batch=8)
HISTORY = "seed=0;8:sgd:0.3:0.0:1,1"


def test_a_start_of_its_own_keys_the_program_of_the_plain_spec():
    """A schedule's phase and a branch start elsewhere: the draws differ, the program is the plain spec's."""
    phase = replace(NET, schedule_start=HISTORY)
    branch = replace(NET, branch_step=5, branch_batch=16, branch_lr=0.1)
    assert program_form(phase) == program_form(branch) == NET
    assert program_spec(phase) == program_spec(branch) == (NET, 0)
    assert program_form(NET) is NET


def test_a_lone_point_runs_in_the_shared_group_at_its_place_and_no_other_does():
    specs = [replace(NET, batch=b) for b in (8, 16, 32)]
    phase = replace(NET, batch=16, schedule_start=HISTORY)
    with sharing(specs):
        assert program_spec(phase) == (Variants(tuple(specs)), 1)
        assert program_spec(phase, [phase]) == (Variants(tuple(specs)), 1)  # a group of one: its sweep's own
        assert program_spec(replace(NET, batch=64)) == (replace(NET, batch=64), 0)  # not among them
        assert program_spec(replace(NET, width=4, batch=16)) == (replace(NET, width=4, batch=16), 0)  # another net
        own = [replace(NET, batch=b) for b in (8, 64)]  # a sweep's own group comes first
        assert program_spec(own[0], own) == (Variants(tuple(own)), 0)
    assert program_spec(phase) == (replace(NET, batch=16), 0)  # outside: its own program again
