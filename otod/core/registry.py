"""Where obstacles register themselves with the core, and where the core finds them.

An obstacle is a package (``otod.condition``, ``otod.cost``, ...) whose ``__init__`` calls `register` with an
`Obstacle`: its name, its sweeps (`SweepKind`: axes, problem families, methods, theory, precision rule, report
and figure), its command-line commands and its figure makers. The core looks sweeps up by name here and never
imports an obstacle; `otod.obstacles` lists the packages the command line loads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, NamedTuple

from otod.core.errors import OtodError

if TYPE_CHECKING:  # the registry itself stays free of JAX, so `otod --help` is fast
    from otod.core.axes import Axis
    from otod.core.methods import Method


class Theory(NamedTuple):
    """What an obstacle's theory says about a sweep, computed independently of the engine.

    ``iterations(config, point, method)``: the predicted count at one point (None without a closed form);
    ``exponent(method)``: the asymptotic exponent of the count against the sweep's main axis;
    ``exponent_on_grid(config, method, xs)``: the slope the closed form itself has on these axis values;
    ``applies(config)``: whether the closed forms describe this sweep at all."""

    iterations: Callable[..., float | None]
    exponent: Callable[[str], float | None]
    exponent_on_grid: Callable[..., float | None]
    applies: Callable[[Any], bool]


@dataclass(frozen=True)
class SweepKind:
    """One kind of sweep an obstacle offers (``otod sweep <name>``).

    axes: every axis it may vary (the first is the main one, the x of fits and figures); methods: its method
    table; problems: problem kind → spec class (to rebuild a config from a results file); options: the class of
    the method options; validate(config): the obstacle's own checks; max_iters(config): the automatic cap;
    x64(config): the automatic precision; theory; analyse(results, tol) → the sweep's one analysis
    (`otod.core.pipeline`), which report(results, full=, tol=, analysis=) → text and figure(results, base,
    quantity=, pdf=, analysis=) → files read; migrate(payload) → payload, for results files of format 1; record_fields(config, point=) → the
    fields every record of the sweep carries besides its axes (a schedule's name), so a reader of the bare JSON
    sees them by name; annotate(config, static_point, rows) adds fields of its own to each lane's record (the
    toy: which minimum a lane that did not converge sits in); lr_scale(config, method, point) → the factor by which a
    method's grid value is multiplied at a traced point (the noise sweeps' grid holds fractions of a stability
    limit that depends on β); ignores(method) → the traced axes a method does not read (it runs only at their
    first value instead of once per value)."""

    name: str
    axes: tuple[Axis, ...]
    methods: Mapping[str, Method]
    problems: Mapping[str, type]
    options: type
    max_iters: Callable[[Any], int]
    x64: Callable[[Any], bool]
    validate: Callable[[Any], None] = lambda config: None
    theory: Theory | None = None
    analyse: Callable[..., Any] | None = None
    report: Callable[..., str] | None = None
    figure: Callable[..., list] | None = None
    migrate: Callable[[dict], dict] | None = None
    record_fields: Callable[[Any], dict] | None = None
    annotate: Callable[[Any, dict, list], None] | None = None
    lr_scale: Callable[[Any, str, dict], float] | None = None
    ignores: Callable[[str], tuple[str, ...]] | None = None

    def axis(self, name: str) -> Axis:
        for a in self.axes:
            if a.name == name:
                return a
        raise OtodError(f"{self.name} sweeps have no axis {name!r}; axes: {', '.join(a.name for a in self.axes)}")


@dataclass(frozen=True)
class Obstacle:
    """An obstacle package: its sweeps (a function returning them), commands (a function returning click commands),
    figure makers (name → ``maker(spec, out_dir) -> [paths]``) and the presenters of its results files that are not
    sweeps (results kind → ``present(results, *, text, figure_base, pdf) -> (text, files)``, what ``otod fit`` and
    ``otod plot`` show of them), all imported lazily so that ``otod --help`` imports no JAX."""

    name: str
    summary: str
    sweeps: Callable[[], tuple[SweepKind, ...]] = lambda: ()
    commands: Callable[[], Mapping[str, list]] = lambda: {}
    figure_makers: Callable[[], Mapping[str, Callable]] = lambda: {}
    measurements: Callable[[], Mapping[str, Callable]] = lambda: {}
    comparisons: Callable[[], Mapping[str, Callable]] = lambda: {}


_OBSTACLES: dict[str, Obstacle] = {}


def _resolve(path: str) -> Any:
    """``"package.module:name"`` → that object, importing the module now."""
    import importlib

    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def register_lazily(name: str, summary: str, *, kinds: tuple[str, ...] = (), analyse: str | None = None,
                    report: str | None = None, figure: str | None = None, commands: str | None = None,
                    figure_makers: str | None = None, measurements: str | None = None,
                    comparisons: str | None = None) -> Obstacle:
    """Register an obstacle whose parts are named ``"module:attribute"`` and imported on first use, so that
    registering (and ``otod --help``) imports none of them: ``kinds``, its `SweepKind`s; ``analyse``, ``report``
    and ``figure``, the functions the kinds analyse, report and draw with (`otod.core.pipeline`); ``commands``, a function returning ``{group: [click
    commands]}``; ``figure_makers``, a mapping of figure makers; ``measurements``, a mapping of results kind to the
    presenter of such a file; ``comparisons``, a mapping of name to a function another obstacle's figure draws
    beside its own (`comparison`) (`Obstacle`)."""
    import dataclasses
    import functools

    def analyse_fn(results, tol=None):
        return _resolve(analyse)(results, tol=tol)

    def report_fn(results, **kwargs) -> str:
        return _resolve(report)(results, **kwargs)

    def figure_fn(results, base, **kwargs) -> list:
        return _resolve(figure)(results, base, **kwargs)

    attached = {**({"analyse": analyse_fn} if analyse else {}), **({"report": report_fn} if report else {}),
                **({"figure": figure_fn} if figure else {})}

    @functools.lru_cache(maxsize=1)
    def sweeps() -> tuple:
        return tuple(dataclasses.replace(_resolve(k), **attached) for k in kinds)

    return register(Obstacle(name=name, summary=summary, sweeps=sweeps,
                             commands=(lambda: _resolve(commands)()) if commands else (lambda: {}),
                             figure_makers=(lambda: _resolve(figure_makers)) if figure_makers else (lambda: {}),
                             measurements=(lambda: _resolve(measurements)) if measurements else (lambda: {}),
                             comparisons=(lambda: _resolve(comparisons)) if comparisons else (lambda: {})))


def register(obstacle: Obstacle) -> Obstacle:
    """Add (or replace, on re-import) an obstacle."""
    _OBSTACLES[obstacle.name] = obstacle
    return obstacle


def obstacles() -> list[Obstacle]:
    return list(_OBSTACLES.values())


def sweep_kind(name: str) -> SweepKind:
    """The registered sweep of that name; an unknown one raises `OtodError` naming the known ones."""
    for o in list(_OBSTACLES.values()):  # a snapshot: resolving a kind may import, and so register, another obstacle
        for s in o.sweeps():
            if s.name == name:
                return s
    known = ", ".join(s.name for o in list(_OBSTACLES.values()) for s in o.sweeps()) or "none registered"
    raise OtodError(f"unknown sweep {name!r}; known: {known} (a notebook imports the obstacle first, "
                    f"e.g. import otod.{name})")


def figure_makers() -> dict[str, Callable]:
    table: dict[str, Callable] = {}
    for o in list(_OBSTACLES.values()):
        table.update(o.figure_makers())
    return table


def measurement_presenter(kind: str) -> Callable | None:
    """The presenter an obstacle registered for results files of ``kind`` (not sweeps), or None."""
    for obstacle in obstacles():
        found = obstacle.measurements().get(kind)
        if found is not None:
            return found
    return None


def comparison(name: str) -> Callable:
    """The comparison an obstacle registered under ``name`` (a registered obstacle's measured series that another
    obstacle's figure draws beside its own, read through the core instead of an import between obstacles); an
    unknown one raises `OtodError` naming the known ones."""
    for obstacle in obstacles():
        found = obstacle.comparisons().get(name)
        if found is not None:
            return found
    known = ", ".join(n for o in obstacles() for n in o.comparisons()) or "none registered"
    raise OtodError(f"no obstacle offers the comparison {name!r}; known: {known}")
