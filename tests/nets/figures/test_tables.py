"""The nets figures' tables typed (issue 51 item 4): a table inside a table parsed by `otod.nets.figures.tables`
(fields by key, the net's options checked, an unknown or missing key one line), every table of
``experiments/nets.toml`` parsed into its maker's spec with a misspelt key refused, the sweep configs the shipped
tables build naming the committed results files, and ``otod figures nets`` refusing a bad key with exit code 2."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import pytest

from otod.core.errors import OtodError

ROOT = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class Pair:
    left: str
    right: int = 2
    through: str = field(default="a", metadata={"key": "from"})


@dataclass(frozen=True, kw_only=True)
class WithOptions:
    label: str
    options: Mapping[str, Any] = field(default_factory=dict)


def test_parse_table_reads_each_field_by_its_key_and_refuses_unknown_and_missing_keys():
    from otod.nets.figures.tables import parse_table

    assert parse_table(Pair, {"left": "x", "from": "b"}, "t") == Pair("x", 2, "b")
    assert parse_table(Pair, Pair("y"), "t") == Pair("y")  # parsed already: kept
    with pytest.raises(OtodError, match=r"^t: unknown keys rihgt, through; known: from, left, right$"):
        parse_table(Pair, {"left": "x", "rihgt": 3, "through": "b"}, "t")  # the field's name is not its key
    with pytest.raises(OtodError, match=r"^t: missing key left$"):
        parse_table(Pair, {"right": 3}, "t")
    with pytest.raises(OtodError, match=r"^t: a table of keys expected, got 'x'$"):
        parse_table(Pair, "x", "t")


def test_parse_table_puts_the_other_keys_in_options_checked_against_the_option_function():
    from otod.nets.figures.tables import parse_table

    def options_of(*, batch=None, seeds=None):
        return batch, seeds

    assert parse_table(WithOptions, {"label": "A", "seeds": 3}, "w", options_of) == WithOptions(
        label="A", options={"seeds": 3})
    with pytest.raises(OtodError, match=r"^w: unknown key seedz; known: batch, label, seeds$"):
        parse_table(WithOptions, {"label": "A", "seedz": 3}, "w", options_of)


def _nets_tables() -> dict[str, dict]:
    return tomllib.loads((ROOT / "experiments" / "nets.toml").read_text())


def _makers():
    from otod.core.figures import makers
    from otod.obstacles import load_all

    load_all()
    return makers()


@pytest.mark.parametrize("name", list(_nets_tables()))
def test_every_nets_table_parses_into_its_typed_spec_and_a_misspelt_key_is_refused(name):
    """Each shipped table becomes its maker's spec (no table is handed on as a dict); the same table with a
    misspelt key (``seedz``) is one `OtodError` naming the file, the table and the key."""
    from otod.core.figures import FigureSpec, TypedMaker, parsed

    table, makers = _nets_tables()[name], _makers()
    assert isinstance(makers[table["maker"]], TypedMaker)
    spec = parsed(makers, "nets", name, table)
    assert isinstance(spec, FigureSpec) and spec.name == name and spec.maker == table["maker"]
    with pytest.raises(OtodError, match=rf"^experiments/nets.toml \[{name}\]: unknown key seedz for maker "):
        parsed(makers, "nets", name, {**table, "seedz": 5})


def test_a_misspelt_key_inside_a_nested_table_is_refused_with_the_table_named():
    """A workload of the schedule figure and the depth figure's ``deep_linear``: one line each, prefixed with the
    figure's file and table."""
    from otod.core.figures import parsed

    tables, makers = _nets_tables(), _makers()
    schedule = tables["batch_schedule"]
    bad = {**schedule, "workloads": [schedule["workloads"][0], {**schedule["workloads"][1], "sedes": 5}]}
    with pytest.raises(OtodError, match=r"^experiments/nets.toml \[batch_schedule\]: workloads, table 2: unknown "
                                        r"key sedes; known: .*\bseeds\b"):
        parsed(makers, "nets", "batch_schedule", bad)
    with pytest.raises(OtodError, match=r"^experiments/nets.toml \[batch_schedule\]: workloads, table 1: missing "
                                        r"key schedules$"):
        parsed(makers, "nets", "batch_schedule", {**schedule, "workloads": [{"label": "A"}]})
    depth = tables["steps_vs_depth"]
    with pytest.raises(OtodError, match=r"^experiments/nets.toml \[steps_vs_depth\]: deep_linear: unknown key "
                                        r"form; known: figure, from, series$"):
        parsed(makers, "nets", "steps_vs_depth", {**depth, "deep_linear": {"figure": "f", "series": "s", "form": "x"}})
    spec = parsed(makers, "nets", "steps_vs_depth", depth)
    assert (spec.deep_linear.figure, spec.deep_linear.series, spec.deep_linear.through) == (
        "depth_iterations", "gd·xavier", "sgd·kaiming·plain")


def _sweep_options(spec) -> list[dict]:
    """The net options of each sweep a parsed nets sweep figure runs."""
    from otod.nets.figures.sweep import DataSizeSpec, data_size_specs

    return list(data_size_specs(spec)) if isinstance(spec, DataSizeSpec) else [dict(spec.options)]


def test_the_shipped_sweep_figures_build_the_configs_of_the_committed_results_files(monkeypatch):
    """The config each nets sweep figure builds from its typed spec (`otod.nets.figures.sweep.sweep_options`) is the
    one its committed results file was run under: the file its digest names exists, so ``otod figures nets``
    reads it back instead of sweeping again (a changed config would rerun the sweep).

    The digest is the config's stored form (`SweepConfig.to_dict`), which no start loss enters: the net kind's
    check of each target against its net's start (`otod.nets.sweep.kind.validate`: a compiled program per net, 23
    nets here, 10 of the test's 13 CPU-s) is stubbed to a start of +inf; the files it finds passed it when run."""
    from otod.core.figures import SweepFigureSpec, parsed
    from otod.core.sweep import default_path
    from otod.nets.figures.sweep import sweep_options
    from otod.nets.model.problem import NetSpec
    from otod.nets.sweep.options import net_config

    monkeypatch.setattr(NetSpec, "initial_loss", lambda self, seed=0, s=0: float("inf"))
    makers = _makers()
    found = {}
    for name, table in _nets_tables().items():
        spec = parsed(makers, "nets", name, table)
        if isinstance(spec, SweepFigureSpec):
            found[name] = [default_path(net_config(**sweep_options(o)), ROOT / "results").name
                           for o in _sweep_options(spec)]
    assert sorted(found) == ["critical_batch_vs_data", "critical_batch_vs_data_digits",
                             "critical_batch_vs_parameters", "steps_vs_batch", "steps_vs_depth"]
    missing = {name: [f for f in files if not (ROOT / "results" / f).exists()] for name, files in found.items()}
    assert {name: files for name, files in missing.items() if files} == {}


def test_otod_figures_nets_refuses_an_unknown_key_in_one_line_with_exit_code_2(tmp_path):
    """The command line: a misspelt net option of a workload in a scratch ``experiments/nets.toml`` is one line on
    stderr and exit code 2, before any figure runs (nothing written)."""
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "nets.toml").write_text(
        '[steps_vs_batch]\nmaker = "nets-batch"\nbatch = "8,16"\nseeds = 2\n\n'
        '[batch_schedule]\nmaker = "nets-schedule"\n\n[[batch_schedule.workloads]]\nlabel = "A"\n'
        'schedules = ["8@0.5"]\nwidht = 8\n')
    env = {**os.environ, "OTOD_FIGURE_SECONDS": str(tmp_path / "s.json"), "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "otod", "figures", "nets", "--out", str(tmp_path / "f")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith(
        "experiments/nets.toml [batch_schedule]: workloads, table 1: unknown key widht; known: activation, "
        "architecture, batch, beta, chunk_seconds, data, depth, examples, heads, init, label, loss, lr, lr_grid, "
        "max_iters, method, model, regime, schedule, schedules, seed, seeds, stream, target, width, x64"), lines
    assert not list(tmp_path.glob("f/*")) and not (tmp_path / "results").exists()  # no figure, no sweep
