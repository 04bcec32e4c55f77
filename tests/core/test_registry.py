"""The registry: every obstacle's sweeps, and their method tables, as the engine needs them."""

import pytest

from otod import obstacles
from otod.core import registry

obstacles.load_all()
KINDS = [kind for obstacle in registry.obstacles() for kind in obstacle.sweeps()]


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


def test_a_comparison_is_found_through_the_registry_and_an_unknown_one_is_named_with_the_known():
    """An obstacle's figure reads another obstacle's series through the core (`registry.comparison`), not an
    import: the depth obstacle offers its deep-linear series; an unknown name is one clear error naming it."""
    import pytest

    import otod.depth  # noqa: F401  (registers the depth obstacle)
    from otod.core.errors import OtodError
    from otod.core.registry import comparison
    from otod.depth.figures import deep_linear_series

    assert comparison("deep_linear_series") is deep_linear_series
    with pytest.raises(OtodError, match="no obstacle offers the comparison 'nothing'; known: .*deep_linear_series"):
        comparison("nothing")
