import pytest

from otod.core.errors import OtodError
from otod.core.ranges import parse_range


@pytest.mark.parametrize("text,expected", [
    ("1..5", (1, 2, 3, 4, 5)), ("1..1e4:5:log", (1, 10, 100, 1000, 10000)), ("0..1:3", (0, 0.5, 1)),
    ("1,2,5,10", (1, 2, 5, 10)), ("3e2", (300,)), ("1..3,10", (1, 2, 3, 10)), ("5,1,5", (1, 5)),
])
def test_accepted_forms(text, expected):
    assert parse_range(text) == pytest.approx(expected)


@pytest.mark.parametrize("text,fragment", [
    ("5..1", "exceeds its end"), ("abc", "not a number"), ("1..2:x", "not a number"), ("1.5..3", "integer ends"),
    ("1..4:3:lin", "'log'"), ("", "empty"), ("1,,2", "empty item"), ("0..10:3:log", "positive start"),
    ("nan", "finite"), ("1..10:0", "point count"),
])
def test_rejected_forms_name_the_problem_and_the_accepted_forms(text, fragment):
    with pytest.raises(OtodError, match=fragment) as e:
        parse_range(text, "--k")
    assert "--k" in str(e.value)


def test_minimum_is_enforced():
    with pytest.raises(OtodError, match="must be ≥ 1"):
        parse_range("0..5", "--k", minimum=1)
