"""Regenerate the paper's figures from the specs in ``experiments/``.

Each ``experiments/<group>.toml`` holds one table per figure::

    [iterations_vs_kappa]
    maker = "condition-iterations"   # a key of MAKERS
    k = "1..1000:25:log"             # the maker's own options
    ...

``otod figures <group>`` runs every figure of that group; ``otod figures <group>/<figure>`` runs one (its table's
name); ``otod figures`` runs all groups. A maker is a function
``maker(spec: dict, out_dir: Path) -> list[Path]`` that runs what it needs and writes PNG and PDF files.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Callable

from otod.core.errors import OtodError

Maker = Callable[[dict[str, Any], Path], list[Path]]


def checkout_root() -> Path:
    """The otod checkout to work in: the current folder if it holds ``experiments/``, else the one the package was
    installed from in editable mode."""
    here = Path.cwd()
    return here if (here / "experiments").is_dir() else Path(__file__).resolve().parents[2]


EXPERIMENTS_DIR = checkout_root() / "experiments"
FIGURES_DIR = checkout_root() / "figures"


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
                 experiments_dir: Path = EXPERIMENTS_DIR, log: Callable[[str], None] = print) -> list[Path]:
    """Run the figure specs of ``groups`` (all groups when None; ``group/figure`` names one figure of a group) and
    return the files written."""
    specs = load_specs(experiments_dir)
    wanted = [(g, None) if "/" not in g else tuple(g.split("/", 1)) for g in (groups or list(specs))]
    for group, name in wanted:
        if group not in specs:
            raise OtodError(f"unknown figure group {group!r}; known: {', '.join(specs) or 'none'}")
        if name is not None and name not in specs[group]:
            raise OtodError(f"unknown figure {group}/{name}; known in {group}: {', '.join(specs[group])}")
    table = makers()
    written: list[Path] = []
    for group, only in wanted:
        for name, spec in specs[group].items():
            if only is not None and name != only:
                continue
            maker = table.get(spec.get("maker", ""))
            if maker is None:
                raise OtodError(f"experiments/{group}.toml [{name}]: unknown maker {spec.get('maker')!r}; "
                                f"known: {', '.join(sorted(table))}")
            log(f"figure {group}/{name} ...")
            files = maker({**spec, "name": name}, out_dir)
            written.extend(files)
            for f in files:
                log(f"  wrote {f}")
    return written
