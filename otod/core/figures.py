"""Regenerate the paper's figures from the specs in ``experiments/``.

Each ``experiments/<group>.toml`` holds one table per figure::

    [iterations_vs_kappa]
    maker = "condition-iterations"   # a key of MAKERS
    k = "1..1000:25:log"             # the maker's own options
    ...

``otod figures <group>`` runs every figure of that group; ``otod figures <group>/<figure>`` runs one (its table's
name); ``otod figures`` runs all groups. A maker is a `TypedMaker`: the class of its spec (a `FigureSpec`, its keys
and their defaults) and ``draw(spec, out_dir) -> list[Path]``, which runs what it needs and writes PNG and PDF
files. Every table is parsed into its spec once, before any figure runs (`parse_figure`): an unknown key is refused
in one line. (A maker not yet typed is a plain ``maker(table: dict, out_dir) -> list[Path]``.)
"""

from __future__ import annotations

import gc
import json
import math
import os
import sys
import time
import tomllib
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Mapping

from otod.core.errors import OtodError


@dataclass(frozen=True)
class FigureSpec:
    """One figure's table of ``experiments/<group>.toml``, typed: ``name`` (the table's name, set by the loader)
    and ``maker`` (a key of the makers; "" where a caller runs a maker directly). A maker's own spec subclasses it
    with its keys and their defaults."""

    name: str
    maker: str = ""


@dataclass(frozen=True)
class SweepFigureSpec(FigureSpec):
    """A figure drawn from one sweep: ``results_dir`` (where its results file is written or resumed) and
    ``options``, every other key of the table: the sweep's options as ``otod sweep <kind>`` takes them (same names,
    same range syntax), checked against the keyword parameters of its maker's ``options_of``."""

    results_dir: str = "results"
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TypedMaker:
    """A figure maker: ``spec``, the class its table is parsed into (`parse_figure`); ``draw(spec, out_dir)``, the
    files written. For a `SweepFigureSpec`, ``options_of`` is the function that builds the sweep's config from
    options (its keyword parameters are the keys a table may add)."""

    spec: type
    draw: Callable[[Any, Path], list[Path]]
    options_of: Callable[..., Any] | None = None

    def __call__(self, table: dict[str, Any], out_dir: Path) -> list[Path]:
        """Parse ``table`` (with its ``name``) and draw: what a caller holding a plain table does."""
        return self.draw(parse_figure(self, table, f"[{table.get('name')}]"), out_dir)


Maker = TypedMaker | Callable[[dict[str, Any], Path], list[Path]]


def parse_figure(maker: TypedMaker, table: dict[str, Any], where: str) -> FigureSpec:
    """``table`` (a TOML table with its ``name``) as ``maker.spec``; a key the spec (or, for a sweep figure, the
    sweep's options) does not have, or a key it needs and the table lacks, raises `OtodError` in one line naming
    ``where``, the key and the keys known; so does a spec that refuses a table inside its table (its
    ``__post_init__`` raising `OtodError`, prefixed here with ``where``). The one place a figure's table is read by
    its keys."""
    own = {f.name: f for f in fields(maker.spec)}
    if maker.options_of is not None:
        import inspect

        allowed = {p for p in inspect.signature(maker.options_of).parameters if p != "given"}
        kwargs = {k: v for k, v in table.items() if k in own and k != "options"}
        options = {k: v for k, v in table.items() if k not in kwargs}
        unknown = sorted(set(options) - allowed)
        known = sorted((set(own) | allowed) - {"name", "options"})
        kwargs["options"] = options
    else:
        kwargs = dict(table)
        unknown = sorted(set(table) - set(own))
        known = sorted(set(own) - {"name"})
    if unknown:
        raise OtodError(f"{where}: unknown key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} for maker "
                        f"{table.get('maker')!r}; known: {', '.join(known)}")
    missing = [n for n, f in own.items() if n not in kwargs and f.default is MISSING and f.default_factory is MISSING]
    if missing:
        raise OtodError(f"{where}: missing key{'s' if len(missing) > 1 else ''} {', '.join(missing)} for maker "
                        f"{table.get('maker')!r}")
    try:
        return maker.spec(**kwargs)
    except OtodError as e:  # a table inside the table refused by the spec (its ``__post_init__``)
        raise OtodError(f"{where}: {e}") from None


def checkout_root() -> Path:
    """The otod checkout to work in: the current folder if it holds ``experiments/``, else the one the package was
    installed from in editable mode."""
    here = Path.cwd()
    return here if (here / "experiments").is_dir() else Path(__file__).resolve().parents[2]


EXPERIMENTS_DIR = checkout_root() / "experiments"
FIGURES_DIR = checkout_root() / "figures"


#: Where the seconds each figure took are kept (for the next run's ETA), unless ``OTOD_FIGURE_SECONDS`` names
#: another file (`figure_seconds_file`): beside the compilation cache.
SECONDS_FILE = Path.home() / ".cache" / "otod" / "figure-seconds.json"
SECONDS_ENV = "OTOD_FIGURE_SECONDS"


def figure_seconds_file() -> Path:
    """The file of figure seconds: ``OTOD_FIGURE_SECONDS`` when set, else `SECONDS_FILE`. Read at each call, not at
    import, so every command of a process sees the environment it runs in. A file the user named that cannot be
    used (`unusable_seconds_file`) raises `OtodError`: ignored, the ETA went unsaved without a word, and a file
    that was not one of figure seconds (a typo naming README.md) was overwritten."""
    value = os.environ.get(SECONDS_ENV, "").strip()
    if not value:
        return SECONDS_FILE
    path = Path(value).expanduser()
    problem = unusable_seconds_file(path)
    if problem is not None:
        raise OtodError(f"{SECONDS_ENV}={value}: {problem}; give a JSON file otod may write, e.g. "
                        f"{SECONDS_ENV}=~/.cache/otod/figure-seconds.json")
    return path


def unusable_seconds_file(path: Path) -> str | None:
    """Why ``path`` cannot keep the figure seconds (None when it can), without writing anything that stays: a
    folder; an existing file other than an empty one or a JSON object (it would be overwritten); a new file whose
    nearest existing folder is a file or cannot be written in (`otod.core.preflight.cannot_write_in`)."""
    from otod.core.preflight import cannot_write_in

    if path.is_dir():
        return "a folder, not a file"
    if path.exists():
        try:
            text = path.read_text()
            ok = not text.strip() or isinstance(json.loads(text), dict)
        except (OSError, ValueError):
            ok = False
        return None if ok else "not a file of figure seconds (a JSON object), and otod would overwrite it"
    folder = next(p for p in path.parents if p.exists())
    if not folder.is_dir():
        return f"{folder} is a file, not a folder"
    why = cannot_write_in(folder)
    return None if why is None else f"cannot be written in {folder} ({why})"


def seconds_history(path: Path | None) -> dict[str, float]:
    """The seconds each figure took when it last ran ({} without a readable file)."""
    path = figure_seconds_file() if path is None else path
    try:
        data = json.loads(Path(path).read_text())
        return {str(k): float(v) for k, v in data.items()}
    except (OSError, ValueError, AttributeError):
        return {}


#: The seconds each figure took on the development machine, cold (`benchmarks/RESULTS.md`), shipped beside the
#: specs: the ETA's prior for a figure this machine has not run yet, scaled as the run goes by how this machine
#: compares on the figures done (`eta_seconds`).
SHIPPED_SECONDS = "figure-seconds.json"


def shipped_seconds(experiments_dir: Path) -> dict[str, float]:
    """The development machine's seconds per figure (`SHIPPED_SECONDS` in ``experiments_dir``; {} without it)."""
    return seconds_history(experiments_dir / SHIPPED_SECONDS)


def save_seconds(path: Path | None, seconds: dict[str, float]) -> None:
    """Keep ``seconds``; a cache that cannot be written is skipped (it only feeds an ETA)."""
    path = Path(figure_seconds_file() if path is None else path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(seconds, indent=1, sort_keys=True))
    except OSError:
        pass


def eta_seconds(took: dict[str, float], left: list[str], history: dict[str, float]) -> float:
    """Seconds the figures ``left`` will take: each its last run's time scaled by how this run compares with the
    last on the figures done so far (this machine may be busier), or, without a last time, the mean of this run's
    figures so far; inf when neither is known."""
    shared = [k for k in took if k in history and history[k] > 0]
    scale = sum(took[k] for k in shared) / sum(history[k] for k in shared) if shared else 1.0
    mean = sum(took.values()) / len(took) if took else math.inf
    return float(sum(history[k] * scale if k in history else mean for k in left))


def format_eta(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def makers() -> dict[str, Maker]:
    """Every figure maker the registered obstacles offer, by name (`otod.core.registry.figure_makers`)."""
    from otod.core.registry import figure_makers

    return figure_makers()


def load_specs(experiments_dir: Path = EXPERIMENTS_DIR) -> dict[str, dict[str, dict[str, Any]]]:
    """All figure specs: ``{group: {figure_name: spec}}``, one group per ``.toml`` file."""
    if not experiments_dir.is_dir():
        raise OtodError(f"experiments folder {experiments_dir} not found (run from an otod checkout)")
    specs = {}
    for path in sorted(experiments_dir.glob("*.toml")):
        try:
            specs[path.stem] = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as e:
            raise OtodError(f"experiment spec {path}: not valid TOML ({e})") from None
    return specs


def make_figures(groups: list[str] | None = None, out_dir: Path = FIGURES_DIR,
                 experiments_dir: Path = EXPERIMENTS_DIR, log: Callable[[str], None] = print,
                 seconds_file: Path | None = None, remeasure: bool = False) -> list[Path]:
    """Run the figure specs of ``groups`` (all groups when None; ``group/figure`` names one figure of a group) and
    return the files written. Before each figure ``log`` gets a progress line with an ETA for the figures left
    (`eta_seconds`, from this machine's last times, else the shipped ones, `SHIPPED_SECONDS`), after it the
    seconds it took, which are kept in ``seconds_file`` (default `figure_seconds_file`) for the next run's ETA.
    Where each figure's results come from (`otod.core.figure_sources`): a table with ``committed = true`` reads its
    committed results and never sweeps, unless ``remeasure``, which runs every chosen figure's sweeps from nothing
    and replaces their files in ``results/`` as each figure ends."""
    from otod.core import figure_sources as src

    seconds_file = figure_seconds_file() if seconds_file is None else seconds_file  # refused before any figure
    specs = load_specs(experiments_dir)
    wanted = [(g, None) if "/" not in g else tuple(g.split("/", 1)) for g in (groups or list(specs))]
    for group, name in wanted:
        if group not in specs:
            raise OtodError(f"unknown figure group {group!r}; known: {', '.join(specs) or 'none'}")
        if name is not None and name not in specs[group]:
            raise OtodError(f"unknown figure {group}/{name}; known in {group}: {', '.join(specs[group])}")
    table = makers()
    todo = [(group, name, parsed(table, group, name, spec)) for group, only in wanted
            for name, spec in specs[group].items() if only is None or name == only]
    committed = {f"{group}/{name}" for group, name, _ in todo
                 if src.split_source(specs[group][name], f"experiments/{group}.toml [{name}]")[1]}
    out_dir, experiments_dir = Path(out_dir).resolve(), Path(experiments_dir).resolve()  # a re-measure moves the
    results_dir = Path("results").resolve()  # working folder (`otod.core.figure_sources.remeasuring`)
    if not remeasure:
        src.check_committed(sorted(committed), experiments_dir, results_dir)  # before any figure runs
    history = seconds_history(seconds_file)
    shipped = {k: v for k, v in shipped_seconds(experiments_dir).items() if remeasure or k not in committed}
    prior = {**shipped, **history}  # this machine's last times over the shipped ones (cold: not a committed figure's)
    written: list[Path] = []
    took: dict[str, float] = {}
    for i, (group, name, spec) in enumerate(todo):
        key = f"{group}/{name}"
        left = eta_seconds(took, [f"{g}/{n}" for g, n, _ in todo[i:]], prior)
        how = " re-measured" if remeasure else " from its committed results" if key in committed else ""
        log(f"figure {i + 1}/{len(todo)} {key}{how} ... (ETA {format_eta(left)} for the {len(todo) - i} left)")
        start = time.perf_counter()
        files = src.draw_from_sources(lambda: draw(table, spec, out_dir), src.Sources(
            key, key in committed, remeasure, experiments_dir, results_dir))
        took[key] = time.perf_counter() - start
        written.extend(files)
        for f in files:
            log(f"  wrote {f}")
        log(f"  {key}: {took[key]:.0f} s")
        save_seconds(seconds_file, {**history, **took})
        release_compiled()
    if remeasure:
        src.end_remeasure(results_dir)
    return written


def parsed(table: Mapping[str, Maker], group: str, name: str, spec: dict[str, Any]) -> FigureSpec | dict[str, Any]:
    """The table ``[name]`` of ``experiments/<group>.toml`` checked before any figure runs: its maker known, and
    parsed into the maker's spec (`parse_figure`; a maker not yet typed gets the table itself, with its name)."""
    maker = table.get(spec.get("maker", ""))
    if maker is None:
        raise OtodError(f"experiments/{group}.toml [{name}]: unknown maker {spec.get('maker')!r}; "
                        f"known: {', '.join(sorted(table))}")
    from otod.core.figure_sources import split_source

    where = f"experiments/{group}.toml [{name}]"
    full = {**split_source(spec, where)[0], "name": name}  # where its results come from is not the maker's
    return parse_figure(maker, full, where) if isinstance(maker, TypedMaker) else full


def draw(table: Mapping[str, Maker], spec: FigureSpec | dict[str, Any], out_dir: Path) -> list[Path]:
    """Run the maker of a parsed spec (`parsed`)."""
    if isinstance(spec, FigureSpec):
        return table[spec.maker].draw(spec, out_dir)
    return table[spec["maker"]](spec, out_dir)


def release_compiled() -> None:
    """Drop every compiled program JAX holds (its jit caches), so that their machine code is freed.

    Why: XLA:CPU maps each compiled program's code into the process, and the mappings of every figure's programs
    add up. Measured: `otod figures noise` alone reached 19,663 memory maps; all 24 figures in one process passed
    the kernel's limit (``vm.max_map_count`` = 65,530) in the 19th figure, where LLVM aborted the process with
    "Unable to allocate section memory". A figure's results are on disk by the time the next one starts, and a
    later figure that needs a program compiles it again (or loads it from the persistent compilation cache)."""
    jax = sys.modules.get("jax")
    if jax is not None:
        jax.clear_caches()
        gc.collect()
