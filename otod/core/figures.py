"""Regenerate the paper's figures from the specs in ``experiments/``.

Each ``experiments/<group>.toml`` holds one table per figure::

    [iterations_vs_kappa]
    maker = "condition-iterations"   # a key of MAKERS
    k = "1..1000:25:log"             # the maker's own options
    ...

``otod figures <group>`` runs every figure of that group; ``otod figures`` runs all groups. A maker is a function
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
    """Run the figure specs of ``groups`` (all groups when None) and return the files written."""
    specs = load_specs(experiments_dir)
    groups = list(specs) if not groups else groups
    unknown = [g for g in groups if g not in specs]
    if unknown:
        raise OtodError(f"unknown figure group {unknown[0]!r}; known: {', '.join(specs) or 'none'}")
    table = makers()
    written: list[Path] = []
    for group in groups:
        for name, spec in specs[group].items():
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
