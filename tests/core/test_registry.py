"""The registry: every obstacle's sweeps, and their method tables, as the engine needs them."""

import pytest

from otod import obstacles
from otod.core import registry

obstacles.load_all()
#: The obstacles' own sweep kinds: test-only kinds (tests/core/test_families.py registers "test-noisy" and
#: "test-two-layer", with no presentation) join the registry when that module is collected first in the same worker.
KINDS = [kind for obstacle in registry.obstacles() for kind in obstacle.sweeps() if not kind.name.startswith("test-")]


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_a_method_looked_up_twice_is_the_same_object(kind):
    """The engine's compiled program is keyed by its methods (jit's static arguments, compared by their functions),
    so a table that built a Method anew per lookup traced and compiled the program anew for every chunk, as the
    noise table did for precond:p (46 compiles where 2 do). Parameterised names are looked up too."""
    names = list(kind.methods)
    names += [f"{name.split(':')[0]}:0.25" for name in names if name.startswith("precond")]
    assert names
    for name in names:
        assert kind.methods[name] is kind.methods[name], name


def test_a_kind_that_registers_another_obstacle_while_it_resolves_is_found(monkeypatch):
    """Resolving an obstacle's sweeps imports its modules, and an import may register another obstacle (the nets'
    kind imports noise's): looking a sweep up then changed the registry under its own loop ("dictionary changed size
    during iteration", seen under xdist). The lookup and the figure makers walk a snapshot."""
    import dataclasses

    monkeypatch.setattr(registry, "_OBSTACLES", {})
    late = registry.Obstacle(name="late", summary="", sweeps=lambda: (dataclasses.replace(KINDS[0], name="late-kind"),))

    def first_sweeps():
        registry.register(late)
        return ()

    registry.register(registry.Obstacle(name="first", summary="", sweeps=first_sweeps))
    registry.register(registry.Obstacle(name="second", summary="",
                                        sweeps=lambda: (dataclasses.replace(KINDS[0], name="second-kind"),)))
    assert registry.sweep_kind("second-kind").name == "second-kind"
    assert registry.figure_makers() == {}


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_every_registered_kind_shows_its_results_through_one_presentation(kind):
    """Each sweep of an obstacle registers analyse, report and figure together (`registry.Presentation`): the
    pipeline reads them from one field, never one without the others."""
    shown = kind.presented
    assert all(callable(part) for part in (shown.analyse, shown.report, shown.figure))


def test_a_presentation_is_imported_when_a_kind_first_presents_and_a_kind_without_one_is_named():
    """``register_lazily``'s presentation is a function that imports analyse, report and figure: called once, when
    a kind first presents, not when the kind is looked up; a kind registered without a presentation (a test-only
    kind) refuses to present in one line, naming itself."""
    import dataclasses

    from otod.core.errors import OtodError

    calls = []

    def presentation():
        calls.append(1)
        return registry.Presentation(lambda results, tol=None: ("analysed", results, tol), None, None)

    obstacle = registry.Obstacle(name="lazy", summary="")
    try:
        own = dataclasses.replace(KINDS[0], name="lazy-kind")
        obstacle = registry.register_lazily("lazy", "", kinds=lambda: (own,), presentation=presentation)
        kind = registry.sweep_kind("lazy-kind")
        assert calls == []
        assert kind.presented.analyse("r", tol=0.5) == ("analysed", "r", 0.5)
        assert kind.presented.analyse("s") == ("analysed", "s", None)
        assert calls == [1]
    finally:
        registry._OBSTACLES.pop(obstacle.name, None)
    bare = dataclasses.replace(KINDS[0], name="bare", presentation=None)
    with pytest.raises(OtodError, match="^bare sweeps register no analysis, report or figure; read their records") \
            as caught:
        bare.presented
    assert "\n" not in str(caught.value)


def test_the_optional_hooks_default_to_what_a_kind_without_them_means():
    """The hooks a kind may leave out default to their neutral reading (no fields, no annotation, a scale of 1,
    no ignored axis), so the core calls them without a None check: a kind's lanes with the default ``lr_scale``
    run at exactly the grid's values."""
    import numpy as np

    from otod.condition.options import condition_sweep
    from otod.core.config import lane_rates

    condition = registry.sweep_kind("condition")
    assert condition.record_fields is registry.no_record_fields and condition.lr_scale is registry.unit_lr_scale
    assert condition.annotate is registry.no_annotation and condition.ignores is registry.reads_every_axis
    config = condition_sweep((4.0, 9.0), methods=("gd",), lr="tuned", lr_grid=(0.3, 0.7, 1.9), seeds=1)
    rows = [{"iterations": 1}]
    assert condition.record_fields(config, point={"kappa": 4.0}) == {} and condition.ignores("gd") == ()
    assert condition.annotate(config, {}, rows) is None and rows == [{"iterations": 1}]
    points = config.traced_points()
    rates = lane_rates(config, "gd", points, [0, 1, 1], [2, 0, 1])
    assert rates.tolist() == [1.9, 0.3, 0.7] and rates.dtype == np.float64


def test_each_sweeps_too_large_refusal_names_only_options_its_command_has():
    """The core's refusal of a sweep too large for memory or an hour names the kind's ``smaller`` options (issue
    49: ``sweep net`` was told to use --dim, --shape, --basis, the condition sweep's); each option named there is
    one of ``otod sweep <kind>``'s."""
    import re

    import click

    from otod.cli import main

    assert {kind.name for kind in KINDS} >= {"condition", "depth", "toy", "noise", "params", "net"}
    for kind in KINDS:
        command = main.commands["sweep"].commands[kind.name]
        options = {opt for p in command.params if isinstance(p, click.Option) for opt in p.opts}
        named = set(re.findall(r"--[a-z][a-z0-9-]*", kind.smaller))
        assert named and named <= options, (kind.name, named - options)
