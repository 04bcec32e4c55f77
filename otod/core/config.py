"""A sweep's config: the declared grid (axis values × seeds × learning rates × methods) as one frozen
`SweepConfig`, what it resolves to (cap, precision, rates), and its digest, which names its results file."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import math
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from otod.core import journal as journal_io
from otod.core import results as results_io
from otod.core.errors import OtodError
from otod.core.methods import check_admits, lookup
from otod.core.registry import SweepKind, sweep_kind
from otod.core.stopping import Target


#: The default multipliers of the reference step for ``--lr tuned``: 12 log-spaced from 0.1 to 3, and 1 itself,
#: so tuned is never worse than the reference step.
DEFAULT_LR_GRID = tuple(sorted({float(v) for v in np.geomspace(0.1, 3.0, 12)} | {1.0}))


#: The iteration cap's upper limit (an int32 counter; ~10⁸ iterations would run for hours anyway).
MAX_ITERS_LIMIT = 100_000_000


CHUNK_SECONDS = 5.0


@dataclass(frozen=True)
class Resolved:
    """What a config resolved to where the user left it to the kind (``SweepConfig.to_dict``'s ``resolved``): the
    iteration cap, the precision (float64 or not) and the per-lane lr values."""

    max_iters: int
    x64: bool
    learning_rates: tuple[float, ...]

    @classmethod
    def from_dict(cls, d: dict) -> "Resolved":
        return cls(max_iters=int(d["max_iters"]), x64=bool(d["x64"]),
                   learning_rates=tuple(float(v) for v in d["learning_rates"]))


@dataclass(frozen=True)
class SweepConfig:
    """Everything that determines a sweep's numbers (and so its results file name).

    sweep: the registered sweep kind ("condition"); axes: (axis name, values) pairs, traced or static as the kind
    declares; problem: the problem spec (a static axis replaces the spec field of its name); methods; target (tol,
    ladder, check_every); max_iters None: the kind's automatic cap; lr: "theory" (each method's reference step),
    "tuned" (one multiplier of it per point from ``lr_grid``, by the median over seeds) or a number (one absolute
    step); x64 None: the kind's precision rule; options: the method options; chunk_seconds: planned work per
    chunk; read_back: the config is one read back from a results file or journal (`from_dict`), checked by the
    kind's ``validate_stored`` (`otod.core.registry.SweepKind`) instead of ``validate``: not a field (no part of
    its identity, and `dataclasses.replace` makes a config checked in full).
    """

    sweep: str
    axes: tuple
    problem: Any
    methods: tuple[str, ...]
    target: Target = field(default_factory=Target)
    max_iters: int | None = None
    seeds: int = 8
    seed: int = 0
    lr: str | float = "theory"
    lr_grid: tuple[float, ...] = DEFAULT_LR_GRID
    x64: bool | None = None
    options: Any = None
    chunk_seconds: float = CHUNK_SECONDS
    #: What the run resolved to, as its results file stores it (`from_dict`; None for a config made here): see
    #: `resolved`. Not part of the config's identity (equality, digest), and `dataclasses.replace` drops it.
    stored: Resolved | None = field(default=None, init=False, compare=False, repr=False)
    read_back: InitVar[bool] = False

    def __post_init__(self, read_back: bool):
        kind = self.kind
        axes = dict(self.axes)
        checked = tuple((a.name, a.check(axes.pop(a.name))) for a in kind.axes if a.name in axes)
        if axes:
            raise OtodError(f"{self.sweep} sweeps have no axis {next(iter(axes))!r}; axes: "
                            f"{', '.join(a.name for a in kind.axes)}")
        if not any(kind.axis(n).traced for n, _ in checked):
            raise OtodError(f"a {self.sweep} sweep needs values for {kind.axes[0].option}, e.g. "
                            f"{kind.axes[0].option} {kind.axes[0].example}")
        object.__setattr__(self, "axes", checked)
        object.__setattr__(self, "methods", tuple(self.methods))
        object.__setattr__(self, "lr_grid", tuple(float(v) for v in self.lr_grid))
        if self.options is None:
            object.__setattr__(self, "options", kind.options())
        if not isinstance(self.seeds, int) or self.seeds < 1:
            raise OtodError(f"--seeds {self.seeds}: need an integer ≥ 1, e.g. --seeds 8")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise OtodError(f"--seed {self.seed}: need an integer ≥ 0, e.g. --seed 1")
        if self.max_iters is not None and (not isinstance(self.max_iters, int)
                                           or not 1 <= self.max_iters <= MAX_ITERS_LIMIT):
            raise OtodError(f"--max-iters {self.max_iters}: need an integer from 1 to {MAX_ITERS_LIMIT:.0e}, "
                            "e.g. --max-iters 10000")
        if not self.methods:
            raise OtodError("--method: no methods given, e.g. --method gd,heavy-ball")
        for spec in self.specs():
            family = spec.family()
            for name in self.methods:
                check_admits(family.provides, lookup(kind.methods, name, self.sweep), name, spec.kind)
        if isinstance(self.lr, str) and self.lr not in ("theory", "tuned"):
            raise OtodError(f"--lr {self.lr}: use theory, tuned or a positive number, e.g. --lr 0.01")
        if not isinstance(self.lr, str) and not (self.lr > 0 and math.isfinite(self.lr)):
            raise OtodError(f"--lr {self.lr}: a learning rate must be a positive number, e.g. --lr 0.01")
        if not self.lr_grid or min(self.lr_grid) <= 0:
            raise OtodError("--lr-grid: multipliers must be positive, e.g. --lr-grid 0.1..3:12:log")
        if not self.chunk_seconds > 0:
            raise OtodError(f"--chunk-seconds {self.chunk_seconds}: must be positive, e.g. --chunk-seconds 5")
        (kind.validate_stored or kind.validate)(self) if read_back else kind.validate(self)

    @property
    def kind(self) -> SweepKind:
        return sweep_kind(self.sweep)

    def values(self, name: str) -> tuple[float, ...]:
        return dict(self.axes)[name]

    @property
    def main_axis(self) -> str:
        """The axis fits and figures put on x: the kind's first axis that this sweep varies."""
        names = dict(self.axes)
        return next(a.name for a in self.kind.axes if a.name in names)

    @property
    def traced_axes(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.axes if self.kind.axis(n).traced)

    @property
    def static_axes(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.axes if not self.kind.axis(n).traced)

    def traced_points(self) -> list[dict[str, float]]:
        names = self.traced_axes
        return [dict(zip(names, combo)) for combo in itertools.product(*(self.values(n) for n in names))]

    def static_points(self) -> list[dict[str, float]]:
        names = self.static_axes
        return [dict(zip(names, combo)) for combo in itertools.product(*(self.values(n) for n in names))]

    def spec_at(self, static_point: dict[str, float]):
        """The problem spec at one static point (its fields replaced by the static axis values)."""
        return dataclasses.replace(self.problem, **{k: int(v) for k, v in static_point.items()})

    def specs(self) -> list:
        return [self.spec_at(p) for p in self.static_points()]

    @property
    def resolved_max_iters(self) -> int:
        return self.max_iters if self.max_iters is not None else int(self.kind.max_iters(self))

    @property
    def resolved_x64(self) -> bool:
        return bool(self.x64) if self.x64 is not None else bool(self.kind.x64(self))

    @property
    def resolved(self) -> Resolved:
        """The cap, precision and rates the sweep's lanes ran with: as its results file stores them, for a config
        read back (`from_dict`: the values the run used, even where this version's automatic rule would give
        others), else as resolved now (`resolved_max_iters`, `resolved_x64`, `learning_rates`)."""
        if self.stored is not None:
            return self.stored
        return Resolved(self.resolved_max_iters, self.resolved_x64, self.learning_rates)

    @property
    def relative_lr(self) -> bool:
        return isinstance(self.lr, str)

    def tuned(self, method: str) -> bool:
        """Whether a method's learning rate is tuned: under ``--lr tuned``, and under ``--lr theory`` for a method
        whose reference step is no theory (``Method.tuned_by_default``: Adam's 1e-2 is scale-dependent)."""
        return self.lr == "tuned" or (self.lr == "theory" and self.kind.methods[method].tuned_by_default)

    def rates_for(self, method: str) -> tuple[float, ...]:
        """The per-lane lr values of one method: the grid where it is tuned, else `learning_rates`."""
        return self.lr_grid if self.tuned(method) else self.learning_rates

    @property
    def learning_rates(self) -> tuple[float, ...]:
        """The per-lane lr values: multipliers of the reference step (theory, tuned) or the absolute step."""
        if self.lr == "theory":
            return (1.0,)
        if self.lr == "tuned":
            return self.lr_grid
        return (float(self.lr),)

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}
        d["axes"] = {n: list(v) for n, v in self.axes}
        d["problem"] = self.problem_fields()
        d["target"] = dataclasses.asdict(self.target)
        d["options"] = dataclasses.asdict(self.options)
        d["resolved"] = {"max_iters": self.resolved_max_iters, "x64": self.resolved_x64,
                         "learning_rates": list(self.learning_rates)}
        return results_io.jsonable(d)

    def problem_fields(self) -> dict[str, Any]:
        """The problem as its results file stores it: ``kind`` first, then each field that is set, in the spec's
        order, as plain JSON values (what a report that lists the problem's settings prints).

        A spec field left at None (an optional setting not given) is left out, so adding such a field to a
        problem keeps the digests, and so the results files, of the configs written before it. A problem that
        holds what is not a setting (a user's loaded model) says what it stores (``record()``)."""
        stored = self.problem.record() if hasattr(self.problem, "record") else dataclasses.asdict(self.problem)
        return results_io.jsonable({"kind": self.problem.kind, **{k: v for k, v in stored.items() if v is not None}})

    def digest(self) -> str:
        """A short hash of the config: the results file's name and the key for resuming (`config_digest`)."""
        return config_digest(self.to_dict())

    def legacy_digest(self) -> str:
        """The digest otod wrote before `config_digest` left out what does not change the records: a finished
        file of that version still reads back."""
        return results_io.digest(self.to_dict())

    def rung(self, tol: float | None) -> int | None:
        """The ladder rung a report at ``tol`` reads (None: the sweep's own tol, whose counts the records hold);
        a tol the run did not record raises `OtodError` listing the recorded ones."""
        if tol is None or tol == self.target.tol:
            return None
        return self.target.index(tol)

    @classmethod
    def from_dict(cls, d: dict) -> "SweepConfig":
        """Rebuild a config stored in a results file (or a journal): `SweepConfig.to_dict` read back, each part
        into its typed object (the kind's problem spec and options, the `Target`, the run's `Resolved`). A key a
        file written before it was added lacks takes the field's default (as a config made now without it
        would); a stored problem or options field this version does not know, a problem kind the sweep does not
        have, or a missing sweep, axes, problem or methods is refused in one line."""
        missing = [k for k in ("sweep", "axes", "problem", "methods") if k not in d]
        if missing:
            raise OtodError(f"a stored sweep config without {', '.join(missing)}: not a sweep otod wrote")
        kind = sweep_kind(d["sweep"])
        p = dict(d["problem"])
        problem = p.pop("kind", None)
        if problem not in kind.problems:
            raise OtodError(f"a stored {d['sweep']} config with problem {problem!r}: {d['sweep']} sweeps have "
                            f"{', '.join(kind.problems)}")
        defaults = {f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}
        given = {**defaults, **{k: v for k, v in d.items() if k in defaults}}
        config = cls(sweep=d["sweep"], axes=tuple((n, tuple(v)) for n, v in d["axes"].items()),
                     problem=_stored(kind.problems[problem], p, f"{d['sweep']} problem"),
                     methods=tuple(d["methods"]), target=_stored(Target, d.get("target", {}), "target"),
                     max_iters=given["max_iters"], seeds=given["seeds"], seed=given["seed"], lr=given["lr"],
                     lr_grid=tuple(given["lr_grid"]), x64=given["x64"],
                     options=_stored(kind.options, d.get("options", {}), f"{d['sweep']} options"),
                     chunk_seconds=given["chunk_seconds"], read_back=True)
        if "resolved" in d:
            object.__setattr__(config, "stored", Resolved.from_dict(d["resolved"]))
        return config


def _stored(cls: type, fields: dict, what: str):
    """``cls(**fields)``, from a stored dict: a field ``cls`` (a dataclass) does not have is refused in one line;
    one it has that the dict lacks takes its default."""
    known = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set(fields)
    unknown = sorted(set(fields) - known)
    if unknown:
        raise OtodError(f"a stored {what} with {', '.join(map(repr, unknown))}, which this otod version does not "
                        "know: read it with the version that wrote it")
    if cls is Target and "ladder" in fields:
        fields = {**fields, "ladder": tuple(fields["ladder"])}
    return cls(**fields)


def read_config(meta: dict) -> SweepConfig:
    """The typed config of a sweep's results file (its ``meta``) or journal header: the one place otod reads the
    stored ``config`` (`SweepConfig.from_dict`); everything else reads the attributes of what this returns. The
    same stored config gives the same (frozen) object, built once (a net's spec takes ~40 ms to check)."""
    stored = meta.get("config")
    if not isinstance(stored, dict):
        raise OtodError(f"a results file of kind {meta.get('kind')!r} without a sweep config: not a sweep")
    return _read(json.dumps(stored, sort_keys=True))


@functools.lru_cache(maxsize=64)
def _read(text: str) -> SweepConfig:
    return SweepConfig.from_dict(json.loads(text))


def lane_count(config: SweepConfig) -> int:
    """The sweep's lanes (records), from the grid's sizes alone: static points × the method's traced points ×
    seeds × rates, summed over methods."""
    statics = math.prod(len(config.values(n)) for n in config.static_axes)
    return statics * config.seeds * sum(len(method_points(config, m)) * len(config.rates_for(m))
                                        for m in config.methods)


def method_points(config: SweepConfig, method: str) -> list[int]:
    """Indices (into `SweepConfig.traced_points`) of the traced points a method runs at: all of them, except that
    a method which ignores an axis (``SweepKind.ignores``: SGD has no momentum β) runs only at its first value."""
    points = config.traced_points()
    ignored = [a for a in config.kind.ignores(method) if a in config.traced_axes]
    if not ignored:
        return list(range(len(points)))
    first = {a: config.values(a)[0] for a in ignored}
    return [i for i, p in enumerate(points) if all(p[a] == v for a, v in first.items())]


def lane_rates(config: SweepConfig, method: str, points: list[dict], point_indices, rate_indices) -> np.ndarray:
    """Each lane's lr value: the method's grid value (`SweepConfig.rates_for`) times the kind's ``lr_scale`` at the
    lane's traced point (1 without one, and for an absolute --lr)."""
    rates = np.asarray(config.rates_for(method), float)[np.asarray(rate_indices, int)]
    if not config.relative_lr:
        return rates
    scale = {i: float(config.kind.lr_scale(config, method, points[i])) for i in set(int(i) for i in point_indices)}
    return rates * np.asarray([scale[int(i)] for i in point_indices])


#: Config fields that do not change a single record (tested): left out of the digest, so changing them neither
#: renames the results file nor orphans a journal.
NOT_IN_DIGEST = ("chunk_seconds",)


def config_digest(config: dict) -> str:
    """A short hash of a config dict without `NOT_IN_DIGEST`: two configs share it exactly when their records
    are the same."""
    return results_io.digest({k: v for k, v in config.items() if k not in NOT_IN_DIGEST})


#: Two stored configs whose numbers differ by at most this relative amount are the same settings (`same_settings`):
#: a setting computed on the machine can differ in its last bits between CPUs. NumPy's SIMD exp and log are chosen
#: per CPU (0.0168702..3:10:log's eighth point reads 0.9486828012438605 on one AMD EPYC and …606 on another), and
#: a target read off a compiled float32 run (a branch's loss at its checkpoint) follows XLA's vector code for the CPU
#: (0.841132226133371 against 0.8411322269681512); with them the digest moves, and the same command would not find
#: its own file. 1e-7 is a float32 rounding (2⁻²⁴ ≈ 6e-8): settings closer than that are one setting to the lanes.
SAME_SETTINGS_RTOL = 1e-7


def same_settings(a: Any, b: Any, rtol: float = SAME_SETTINGS_RTOL) -> bool:
    """Whether two stored configs (`SweepConfig.to_dict`, or any JSON values) are equal, but for floats within
    ``rtol`` of each other (relative); whole numbers stored as ints (seeds, caps, sizes) must be equal."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = set(a) | set(b)
        return all(k in a and k in b and same_settings(a[k], b[k], rtol) for k in keys)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_settings(x, y, rtol) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):  # counts (ints: seeds, caps, sizes) compare exactly
        numbers = (int, float)
        return (isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool)
                and not isinstance(b, bool) and (a == b or math.isclose(a, b, rel_tol=rtol, abs_tol=0.0)))
    return a == b


def same_stored_settings(config: SweepConfig, meta: dict) -> bool:
    """Whether a results file's metadata ``meta`` stores this config's settings (`same_settings`, `NOT_IN_DIGEST`'s
    fields aside): a twin whose digest moved with a computed setting's last bits (`twin_file`)."""
    stored = meta.get("config")
    return isinstance(stored, dict) and same_settings(
        {k: v for k, v in config.to_dict().items() if k not in NOT_IN_DIGEST},
        {k: v for k, v in stored.items() if k not in NOT_IN_DIGEST})


def twin_file(config: SweepConfig, folder: Path) -> Path | None:
    """A finished Parquet results file in ``folder`` whose stored config is this one's to `SAME_SETTINGS_RTOL`
    (`same_settings`) though its digest, the file's name, is not: the file this config's command wrote on a CPU
    that rounded a computed setting's last bits the other way. Only the files' footers are read."""
    from otod.core.parquet import read_header

    for path in sorted(folder.glob(f"{config.sweep}-*{results_io.SUFFIXES[0]}")):
        try:
            meta = (read_header(path) or {}).get("meta", {})
        except Exception:  # a damaged or foreign file is not a twin; loading it later says what is wrong
            continue
        if same_stored_settings(config, meta):
            return path
    return None


def default_path(config: SweepConfig, out_dir: str | Path = "results") -> Path:
    """``<out>/<sweep>-<digest>.parquet``: one file per distinct config, so the same command resumes the same
    file. A file of the same name in a format otod wrote by default before (``.json``, ``.npz``) is kept, where it
    or its journal exists: the same command reads it back or resumes it (`existing_default`). Where none is there,
    a finished file of the same settings written where a computed number rounded its last bit the other way
    (`twin_file`) is read back instead of measuring again."""
    path = existing_default(Path(out_dir) / f"{config.sweep}-{config.digest()}")
    if path.exists() or journal_io.journals(path) or not Path(out_dir).is_dir():
        return path
    return twin_file(config, Path(out_dir)) or path


def existing_default(stem: Path) -> Path:
    """``stem`` with the first results suffix (`otod.core.results.SUFFIXES`, the default first) whose file or
    journal exists beside it, else with the default ``.parquet``."""
    for suffix in results_io.SUFFIXES:
        path = stem.with_name(stem.name + suffix)
        if path.exists() or journal_io.journals(path):
            return path
    return stem.with_name(stem.name + results_io.SUFFIXES[0])
