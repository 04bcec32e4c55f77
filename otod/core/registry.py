"""Where obstacles register themselves with the core, and where the core finds them.

An obstacle is a package (``otod.condition``, ``otod.cost``, ...) whose ``__init__`` calls `register` with an
`Obstacle`: its name, its sweeps (`SweepKind`: axes, problem families, methods, theory, precision rule, report
and figure), its command-line commands and its figure makers. The core looks sweeps up by name here and never
imports an obstacle; `otod.obstacles` lists the packages the command line loads.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, NamedTuple, Protocol

from otod.core.errors import OtodError

if TYPE_CHECKING:  # the registry itself stays free of JAX, so `otod --help` is fast
    from otod.core.axes import Axis
    from otod.core.methods import Method

# The hooks below are typed with "SweepConfig" (`otod.core.config.SweepConfig`), "Results"
# (`otod.core.results.Results`), "Analysis" (`otod.core.analysis.Analysis`, or a subclass such as
# `otod.core.critical_batch.BatchAnalysis`) and "Placed" (`otod.core.analysis.Placed`). Those names are not
# imported, not even for a type checker: the config module imports this one, and the layout test counts every
# import statement as an edge of the import graph.

#: A point of a sweep: axis name → value (traced and static axes by name, as the records hold them).
Point = Mapping[str, float]


class Theory(NamedTuple):
    """What an obstacle's theory says about a sweep, computed independently of the engine.

    ``iterations(config, point, method)``: the predicted count at one point (None without a closed form);
    ``exponent(method)``: the asymptotic exponent of the count against the sweep's main axis;
    ``exponent_on_grid(config, method, xs)``: the slope the closed form itself has on these axis values;
    ``applies(config)``: whether the closed forms describe this sweep at all."""

    iterations: Callable[["SweepConfig", Point, str], float | None]
    exponent: Callable[[str], float | None]
    exponent_on_grid: Callable[["SweepConfig", str, Any], float | None]
    applies: Callable[["SweepConfig"], bool]


class Analyse(Protocol):
    """``analyse(results, tol)`` → the sweep's one analysis at ``tol`` (None: the sweep's own target); called
    once per command by `otod.core.pipeline.present` (a sweep, ``otod fit``, ``otod plot``)."""

    def __call__(self, results: "Results", tol: float | None = None) -> "Analysis": ...


class ReportText(Protocol):
    """``report(results, full=, tol=, analysis=)`` → the report's text (no trailing file lines), read from
    ``analysis`` (the one `Analyse` made); ``full``: every row of the table."""

    def __call__(self, results: "Results", *, full: bool = False, tol: float | None = None,
                 analysis: "Analysis | None" = None) -> str: ...


class DrawFigure(Protocol):
    """``figure(results, base, quantity=, pdf=, analysis=)`` → the files written: ``base`` + ``.png`` (and
    ``.pdf`` with ``pdf``), drawing ``quantity`` ("iterations", or "flops" where the records hold FLOPs) from
    ``analysis``; it never re-runs a search."""

    def __call__(self, results: "Results", base: Path, *, quantity: str = "iterations", pdf: bool = False,
                 analysis: "Analysis | None" = None) -> list[Path]: ...


class Place(Protocol):
    """``place(results)`` → the choices the kind's `Analyse` makes on ``results`` at the sweep's own target, on
    the point estimates alone (`otod.core.analysis.placements`: the same records, fields and rule, without the
    bootstrap and fits): what the bracket's rounds read (`otod.core.bracket.bracketed`), so a sweep that brackets
    over several rounds is analysed in full once, after the last."""

    def __call__(self, results: "Results") -> tuple["Placed", ...]: ...


@dataclass(frozen=True)
class Presentation:
    """How a sweep's results are shown, the three together (`otod.core.pipeline.present` runs analyse, then report
    and figure on that one analysis): a kind has all three or none (a test-only kind, whose results are read as
    records only); and ``place``, the analysis's choices alone (`Place`), which a kind that brackets
    (`Bracketing`) must give."""

    analyse: Analyse
    report: ReportText
    figure: DrawFigure
    place: Place | None = None


class RecordFields(Protocol):
    """``record_fields(config, point=)`` → the named fields every record at ``point`` (traced and static axis
    values, by name) carries besides its axes (a schedule's name, a batch computed from B/d), so a reader of the
    bare JSON sees them by name; called by the scheduler once per point of each chunk it writes. With
    ``point`` None: the fields that do not depend on the point."""

    def __call__(self, config: "SweepConfig", point: Point | None = None) -> dict[str, Any]: ...


def no_record_fields(config: "SweepConfig", point: Point | None = None) -> dict[str, Any]:
    """The default `RecordFields`: a kind whose records carry only their axes."""
    return {}


def no_annotation(config: "SweepConfig", static_point: Point, rows: list[dict[str, Any]]) -> None:
    """The default ``annotate``: no fields of the kind's own."""


def unit_lr_scale(config: "SweepConfig", method: str, point: Point) -> float:
    """The default ``lr_scale``: a grid value is the multiplier (or the step) itself."""
    return 1.0


def reads_every_axis(method: str) -> tuple[str, ...]:
    """The default ``ignores``: every method reads every traced axis."""
    return ()


def no_checks(config: "SweepConfig") -> None:
    """The default ``validate``: the core's checks (`otod.core.config.SweepConfig`) are all there is."""


def no_betas(config: "SweepConfig") -> tuple[float, ...]:
    """The default ``Bracketing.betas``: β tried as listed, none beyond."""
    return ()


@dataclass(frozen=True)
class Bracketing:
    """A stage of the pipeline (`otod.core.pipeline.made`) for a kind whose grid is bracketed after the core's run
    (`otod.core.bracket.bracketed`), read off the choices of the sweep's analysis on the point estimates (the
    kind's `Presentation.place`): ``lr`` its tuned rate beyond the grid's ends (``--lr-extend`` steps; default
    `otod.core.bracket.default_steps`), ``betas(config)`` the β tried beyond the list's largest towards 1
    (`otod.core.bracket.default_beta_ladder`; empty: the list as given)."""

    lr: bool = True
    betas: Callable[["SweepConfig"], tuple[float, ...]] = no_betas


@dataclass(frozen=True)
class SweepKind:
    """One kind of sweep an obstacle offers (``otod sweep <name>``). The core calls each hook with the typed
    config (`otod.core.config.SweepConfig`) and never with the stored dict.

    - axes: every axis it may vary (the first is the main one, the x of fits and figures); methods: its method
      table; problems: problem kind → spec class (``problems[kind](**stored fields)`` rebuilds a config's problem
      from a results file: `otod.core.config.SweepConfig.from_dict`); options: the class of the method options
      (``options(**stored)``, ``options()`` the defaults).
    - max_iters(config) → the automatic cap and x64(config) → the automatic precision, where the user gave none;
      called on every ``config.resolved_max_iters`` / ``resolved_x64`` of a config built in this version.
    - validate(config): the obstacle's own checks, called last in the config's construction; raises
      `OtodError` (one line) or returns None.
    - validate_stored(config): the checks a config read back from a results file or journal gets instead
      (`otod.core.config.SweepConfig.from_dict`): those of ``validate`` that refuse a stored config this version
      cannot use, without those that only say whether a run would make sense and cost a computation (the net's
      target against its start's loss, a compiled program per net), which the run that wrote the file passed
      with the same config. None: ``validate``'s.
    - theory: the closed forms (`Theory`), or None where the obstacle has none.
    - presentation: analyse, report and figure (`Presentation`), or None (a kind that is only run).
    - migrate(payload) → payload: a results file of format 1 as format 2 (None: the kind has no format-1 files);
      called by `otod.core.results.load`.
    - record_fields(config, point=) → the named fields of each record (`RecordFields`).
    - annotate(config, static_point, rows): adds fields of its own to each lane's record in place, after the
      scheduler built ``rows`` (the toy: which minimum a lane that did not converge sits in).
    - lr_scale(config, method, point) → the factor a method's grid value is multiplied by at a traced point
      (the noise sweeps' grid holds fractions of a stability limit that depends on β); called only for a
      relative lr (theory or tuned).
    - ignores(method) → the traced axes a method does not read (it runs only at their first value instead of
      once per value: SGD has no β).
    - smaller: what shrinks this sweep, in its own command's options: the core's refusal of a sweep too large
      for memory or an hour names it (`otod.core.plan.check_estimate`), so a message names only options
      ``otod sweep <name>`` has.
    - bracket: the pipeline's bracket stage (`Bracketing`), or None (the grid is tried as given)."""

    name: str
    axes: tuple[Axis, ...]
    methods: Mapping[str, Method]
    problems: Mapping[str, type]
    options: type
    max_iters: Callable[["SweepConfig"], int]
    x64: Callable[["SweepConfig"], bool]
    validate: Callable[["SweepConfig"], None] = no_checks
    validate_stored: Callable[["SweepConfig"], None] | None = None
    theory: Theory | None = None
    presentation: Presentation | None = None
    migrate: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    record_fields: RecordFields = no_record_fields
    annotate: Callable[["SweepConfig", Point, list[dict[str, Any]]], None] = no_annotation
    lr_scale: Callable[["SweepConfig", str, Point], float] = unit_lr_scale
    ignores: Callable[[str], tuple[str, ...]] = reads_every_axis
    smaller: str = "fewer points or fewer --seeds"
    bracket: Bracketing | None = None

    @property
    def presented(self) -> Presentation:
        """The kind's `Presentation`; a kind registered without one is refused in one line."""
        if self.presentation is None:
            raise OtodError(f"{self.name} sweeps register no analysis, report or figure; read their records with "
                            "otod.load(path)")
        return self.presentation

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


_OBSTACLES: dict[str, Obstacle] = {}


def register_lazily(name: str, summary: str, *, kinds: Callable[[], tuple[SweepKind, ...]] | None = None,
                    presentation: Callable[[], Presentation] | None = None,
                    commands: Callable[[], Mapping[str, list]] | None = None,
                    figure_makers: Callable[[], Mapping[str, Callable]] | None = None,
                    measurements: Callable[[], Mapping[str, Callable]] | None = None) -> Obstacle:
    """Register an obstacle whose parts are functions that import them when first called, so that registering
    (and ``otod --help``) imports none of them: ``kinds`` → its `SweepKind`s; ``presentation`` → the
    `Presentation` every kind analyses, reports and draws with (`otod.core.pipeline`), attached to each kind and
    imported only when a kind first presents (reading a results file's config does not import matplotlib);
    ``commands`` → ``{group: [click commands]}``; ``figure_makers`` → the figure makers by name; ``measurements``
    → results kind → the presenter of such a file (`Obstacle`). Each part is referenced by an import inside its
    function, which editors and type checkers follow, not by a ``"module:attr"`` string."""
    import dataclasses
    import functools

    attached = {}
    if presentation is not None:
        shown = functools.lru_cache(maxsize=1)(presentation)

        def analyse(results, tol=None):
            return shown().analyse(results, tol=tol)

        def report(results, **kwargs) -> str:
            return shown().report(results, **kwargs)

        def figure(results, base, **kwargs) -> list:
            return shown().figure(results, base, **kwargs)

        def place(results) -> tuple:
            if shown().place is None:
                raise OtodError(f"{name} sweeps register no read of their choices (Presentation.place), which "
                                "their bracket stage needs")
            return shown().place(results)

        attached = {"presentation": Presentation(analyse, report, figure, place)}

    @functools.lru_cache(maxsize=1)
    def sweeps() -> tuple:
        return tuple(dataclasses.replace(k, **attached) for k in (kinds() if kinds else ()))

    return register(Obstacle(name=name, summary=summary, sweeps=sweeps, commands=commands or (lambda: {}),
                             figure_makers=figure_makers or (lambda: {}), measurements=measurements or (lambda: {})))


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
