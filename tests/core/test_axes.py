"""Coded axes: named choices swept as a traced axis (the engine sees the code, records the name)."""

from __future__ import annotations

import pytest

from otod.core.axes import Axis, named_records
from otod.core.errors import OtodError

INIT = Axis("init", "init", "initialization", "--init", minimum=0, maximum=2, integer=True, what="inits",
            example="a,c", labels=("a", "b", "c"))


def test_names_parse_to_their_codes_sorted_and_deduplicated():
    assert INIT.parse("c,a,c") == (0.0, 2.0)
    assert INIT.parse(["b"]) == (1.0,)


def test_an_unknown_name_is_one_line_naming_the_choices():
    with pytest.raises(OtodError, match=r"--init z: unknown initialization; choose from a, b, c"):
        INIT.parse("a,z")


def test_records_carry_the_name_and_the_name_maps_back_to_the_code():
    assert INIT.record_value(2.0) == "c" and INIT.record_value("c") == "c"
    assert INIT.code("b") == 1.0 and INIT.code(1.0) == 1.0
    plain = Axis("kappa", "κ", "κ", "--kappa")
    assert plain.record_value(3) == 3.0


def test_named_records_maps_old_codes_and_leaves_names_and_other_axes_alone():
    axes = [{"name": "init", "labels": ["a", "b", "c"]}, {"name": "depth"}]
    records = [{"init": 2.0, "depth": 3.0}, {"init": "b", "depth": 1.0}, {"depth": 2.0}]
    assert named_records(axes, records) == [{"init": "c", "depth": 3.0}, {"init": "b", "depth": 1.0},
                                            {"depth": 2.0}]
    assert named_records([{"name": "depth"}], records) is records
