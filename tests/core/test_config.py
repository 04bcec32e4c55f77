"""A sweep's config read back from its results file: `SweepConfig.from_dict` and `read_config`, the one typed
reading of the stored ``config`` (round trip for every sweep kind, old files without newer keys, refusals)."""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path

import pytest

from otod.condition.kronecker import KroneckerSpec
from otod.condition.options import condition_sweep
from otod.core import results as results_io
from otod.core.config import DEFAULT_LR_GRID, CHUNK_SECONDS, Resolved, SweepConfig, read_config
from otod.core.errors import OtodError
from otod.depth.options import depth_config_from_options, toy_config_from_options
from otod.nets.sweep.options import net_config
from otod.noise.options import noise_config, params_configs

FIXTURES = Path(__file__).parent.parent / "fixtures"
#: Each kind's config; the net's is made once (its target checked against the net's initial loss: a JAX program,
#: 0.7 s) and read back without that check (the kind's validate_stored), so it is in the fast suite.
KINDS = ("condition", "kronecker", "depth", "toy", "noise", "params", "net")


@functools.lru_cache(maxsize=None)
def config_of(name: str) -> SweepConfig:
    """A config of each sweep kind, with settings away from the defaults where it has them."""
    made = {
        "condition": lambda: condition_sweep((4.0, 9.0), methods=("gd", "heavy-ball"), lr="tuned", seeds=2,
                                             ladder=(1e-3,), lr_grid=(0.5, 1.0, 2.0), max_iters=5000,
                                             chunk_seconds=2.0),
        "kronecker": lambda: condition_sweep((4.0,), methods=("gd", "kfac"),
                                             problem=KroneckerSpec(perturbation=0.1)),
        "depth": lambda: depth_config_from_options(depth="2..3", init="identity,small", width="4,8",
                                                   method="gd,heavy-ball", seeds=2, d_out=2),
        "toy": lambda: toy_config_from_options(layers="1..2", method="gd,adam", seeds=2),
        "noise": lambda: noise_config(batch="1..64:4:log", mode="simulate", problem="isotropic", dim="30",
                                      seeds=2, schedule="cosine", max_iters="3000")[0],
        "params": lambda: params_configs(dim="10..100:3:log", batch_rule="fixed:4", seeds=2,
                                         max_iters="3000")[0][0][1],
        "net": lambda: net_config(batch="8,32", width="8", seeds=2, max_iters="300", target="0.1", stream=True,
                                  data="teacher"),
    }
    return made[name]()


def stored_form(config: SweepConfig) -> dict:
    """The config as a results file holds it: `SweepConfig.to_dict` through JSON."""
    return json.loads(json.dumps(config.to_dict()))


@pytest.mark.parametrize("name", KINDS)
def test_every_kind_round_trips_config_to_stored_dict_to_an_equal_typed_config(name):
    """config → stored dict → typed config: equal field by field (the problem spec, the target, the options
    and the grid), with the same digest, and what the run resolved to read back as stored."""
    config = config_of(name)
    back = SweepConfig.from_dict(stored_form(config))
    assert back == config
    assert type(back.problem) is type(config.problem) and back.problem == config.problem
    assert back.target == config.target and back.options == config.options
    assert back.digest() == config.digest() and back.to_dict() == config.to_dict()
    assert back.resolved == config.resolved == Resolved(config.resolved_max_iters, config.resolved_x64,
                                                        config.learning_rates)


def test_a_file_written_before_the_newer_keys_reads_back_with_their_defaults():
    """A stored config without the keys added since (chunk_seconds, lr_grid, x64, max_iters, the target's
    check_every and ladder, every options field, an optional problem field, resolved) reads back with each
    field's default, as a config made now without them."""
    config = config_of("depth")
    old = stored_form(config)
    for key in ("chunk_seconds", "lr_grid", "x64", "max_iters", "options", "resolved"):
        old.pop(key)
    old["target"] = {"tol": old["target"]["tol"], "kind": old["target"]["kind"]}
    old["problem"].pop("d_out")
    back = SweepConfig.from_dict(old)
    assert back.chunk_seconds == CHUNK_SECONDS and back.lr_grid == DEFAULT_LR_GRID and back.x64 is None
    assert back.max_iters is None and back.options == config.kind.options()
    assert back.target.check_every == 1 and back.target.ladder == (config.target.tol,)
    assert back.problem.d_out is None and back.problem.width == config.problem.width
    assert back.resolved.max_iters == back.resolved_max_iters  # no stored resolution: this version's rule


@pytest.mark.parametrize("fixture", ["condition-format2-lr_selected.json", "depth-format2-lr_selected.json",
                                     "net-batch-5seeds.parquet"])
def test_results_files_of_earlier_versions_read_back_typed(fixture):
    """The test fixtures (written by earlier otod versions) read back: the typed config says what the stored dict
    says, read key by key here (the one place besides `read_config` that may)."""
    meta = results_io.load(FIXTURES / fixture).meta
    stored, config = meta["config"], read_config(meta)
    assert config.sweep == stored["sweep"] == meta["sweep"]
    assert [n for n, _ in config.axes] == list(stored["axes"])
    assert config.target.tol == stored["target"]["tol"] and config.seeds == stored["seeds"]
    assert config.problem.kind == stored["problem"]["kind"] and config.lr == stored["lr"]
    assert config.resolved.max_iters == stored["resolved"]["max_iters"]


def test_the_stored_resolution_is_what_a_read_back_config_reports():
    """A file whose cap came from another version's rule: ``resolved`` is the file's (what its lanes ran with),
    ``resolved_max_iters`` this version's rule, and a config made from it by `dataclasses.replace` drops the
    file's (its own rule again)."""
    config = config_of("toy")
    stored = stored_form(config)
    stored["resolved"]["max_iters"] = config.resolved_max_iters + 123
    back = SweepConfig.from_dict(stored)
    assert back.resolved.max_iters == config.resolved_max_iters + 123
    assert back.resolved_max_iters == config.resolved_max_iters and back == config
    assert dataclasses.replace(back, seeds=3).resolved.max_iters == config.resolved_max_iters


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["problem"].update(colour="blue"), "stored condition problem with 'colour'"),
    (lambda d: d["options"].update(colour="blue"), "stored condition options with 'colour'"),
    (lambda d: d["problem"].update(kind="cube"), "problem 'cube': condition sweeps have quadratic, kronecker"),
    (lambda d: d.pop("methods"), "without methods"),
])
def test_a_stored_config_this_version_cannot_read_is_refused_in_one_line(edit, message):
    stored = stored_form(config_of("condition"))
    edit(stored)
    with pytest.raises(OtodError, match=message) as caught:
        SweepConfig.from_dict(stored)
    assert "\n" not in str(caught.value)


def test_read_config_builds_each_stored_config_once_and_refuses_a_file_without_one():
    config = config_of("depth")
    meta = {"kind": "sweep", "sweep": "depth", "config": stored_form(config)}
    first = read_config(meta)
    assert first == config and read_config({**meta, "config": stored_form(config)}) is first
    with pytest.raises(OtodError, match="kind 'curvature' without a sweep config"):
        read_config({"kind": "curvature"})
