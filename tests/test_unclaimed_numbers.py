"""benchmarks/unclaimed_numbers.py's rules for formula constants (issue 50): each sorts a constant of a formula
without a reader and still lists a measured number on the same line, so no rule hides a measurement."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("unclaimed_numbers", ROOT / "benchmarks" / "unclaimed_numbers.py")
audit = importlib.util.module_from_spec(_spec)
sys.modules["unclaimed_numbers"] = audit  # its dataclass looks its module up
_spec.loader.exec_module(audit)


def left(tmp_path: Path, text: str) -> list[str]:
    """The numbers of ``text`` (a page of its own) left for a reader to sort: no claims, only the rules."""
    page = tmp_path / "page.md"
    page.write_text(text)
    return [u.number for u in audit.unclaimed(page, tmp_path, []) if not u.reason]


@pytest.mark.parametrize("line, measured", [
    ("The mean follows (1 − x) m and the count is 5052 against 5059 steps.", ["5052", "5059"]),
    ("gd-opt steps 2/(L + μ) and took 869,666 steps.", ["869,666"]),
    ("a factor 10^(5/32) apart, and the best sat 1.6% below it.", ["1.6"]),
    ("its limit is 2(1 + β), and heavy-ball needed 184 steps.", ["184"]),
    ("the rate ⌈ln(1/ε) / (2 ln(1/ρ))⌉ undercounts by 29% at 1.5 times.", ["29", "1.5"]),
    ("stable for 0 < x < 2(1 + β); it diverged on 3 of 8 lanes.", ["3", "8"]),
])
def test_a_formula_constant_is_sorted_and_a_measurement_on_its_line_is_not(tmp_path, line, measured):
    assert left(tmp_path, line + "\n") == measured


def test_a_formula_tables_bare_cells_are_constants_and_a_measurement_table_is_not(tmp_path):
    formulas = "| method | step | β |\n|---|---|---|\n| gd | 1/L | 0 |\n"
    assert left(tmp_path, formulas) == []
    measured = "| method | steps | β |\n|---|---|---|\n| gd | 5059 | 0 |\n"
    assert left(tmp_path, measured) == ["5059", "0"]


@pytest.mark.parametrize("line, measured", [
    ("B_crit grows like P^0.4 over the nets.", ["0.4"]),  # a fitted exponent
    ("kfac diverged on 3/8 lanes at depth 4.", ["3", "4"]),  # a count over a count (the audit reads "3/8" as 3)
    ("the sweep's nets have P ≤ 721 and B_crit < 8.", ["721", "8"]),  # single bounds: ranges of the data
    ("It took 64 log bins and 2.2% more.", ["64", "2.2"]),  # "log" not followed by an argument
])
def test_what_looks_like_a_formula_but_is_measured_stays_listed(tmp_path, line, measured):
    assert left(tmp_path, line + "\n") == measured


def test_the_docstring_names_no_missing_file():
    """The module's docstring promised a reviewed sort in benchmarks/unclaimed_numbers.toml, which never existed."""
    assert "unclaimed_numbers.toml" not in audit.__doc__


@pytest.mark.parametrize("line, measured", [
    # a list of settings after its name; the count the line measures stays listed
    ("at B = 1, 64, 1024 and 65536 the EMA took 5052 steps.", ["5052"]),
    ("SGD paths with noise σ = 0, 3, 30 reach 0.41 after 100 steps.", ["0.41", "100"]),
    # a citation's year after "et al." whatever follows; the share it cites from a measurement of ours is listed
    ("as Zhang et al. 2019 report, we save 29% of the steps.", ["29"]),
    # a half-open range is a domain; a closed interval is a fit's CI and stays listed
    ("β tuned over [0, 1) gives B_crit 118 [96, 140].", ["118", "96", "140"]),
    # a matrix's shape; the steps it jumps are measured here
    ("the 3×3 recursions jump 4096 steps.", ["4096"]),
    # a subscripted symbol is an operand: S_min − 1 holds a constant; the misfit is measured
    ("the hyperbola (S/S_min − 1) fits with misfit 0.077.", ["0.077"]),
])
def test_a_setting_rule_sorts_the_setting_and_leaves_the_measurement(tmp_path, line, measured):
    assert left(tmp_path, line + "\n") == measured


@pytest.mark.parametrize("line, measured", [
    ("the nets of widths 8, 16, 32 and 64 reach κ 248 at steps 0, 100 and 1000.", ["248"]),
    ("SLQ 4 probes × 100 steps, the median of 25 repeats: 14.1 ms.", ["14.1"]),
    ("the reference ratios 1:1 and 3:1 against XLA's 1.52.", ["1.52"]),
    ("runs cap 5,000 on P = 610–19,210 and stalls 85 lanes.", ["85"]),
    ("kfac diverges from depth 7 on all lanes.", ["7"]),
    ("Checkpoints t = 0, 30, 100 of each run; B_crit 15.9 there.", ["15.9"]),  # a measured onset after the singular "depth"
])
def test_a_list_of_settings_or_a_ratio_is_sorted_and_a_measurement_stays(tmp_path, line, measured):
    assert left(tmp_path, line + "\n") == measured
