"""The figure being drawn, as the store sees it (`otod.core.figure_sources` sets it): the results files it loads
or saves are noted (`note`, called by `otod.core.results`), and where it reads committed results a measurement
that would start is refused (`refuse_to_measure`, called by `otod.core.sweep.run_sweep` and the obstacles' own
measurements). A leaf of the core, so that the store may call it without an import cycle."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from pathlib import Path
from typing import Iterator

from otod.core.errors import OtodError

#: The flag of ``otod figures`` that re-measures.
REMEASURE_FLAG = "--remeasure"


@dataclasses.dataclass(frozen=True, eq=False)
class Drawing:
    """The figure being drawn: ``figure`` ("group/name"), ``committed`` (its sweeps may only read back), and
    ``seen``, the resolved paths of the results files loaded or saved while it draws (`note`)."""

    figure: str
    committed: bool
    seen: set[str] = dataclasses.field(default_factory=set)


#: The figures being drawn, innermost last (a stack, as `otod.core.distributed.running_share` keeps its share: the
#: store reads it while a figure draws, and it is empty outside `drawing`).
_drawing: list[Drawing] = []


@contextlib.contextmanager
def drawing(figure: str, committed: bool) -> Iterator[Drawing]:
    """While the block runs, ``figure`` is the figure drawn: `note` collects its files, and when ``committed``
    `refuse_to_measure` refuses a sweep that would run."""
    current = Drawing(figure, committed)
    _drawing.append(current)
    try:
        yield current
    finally:
        _drawing.remove(current)


def note(path: str | os.PathLike) -> None:
    """A results file was loaded or saved (`otod.core.results`): the figures being drawn record it."""
    for d in _drawing:
        d.seen.add(str(Path(path).resolve()))


def refuse_to_measure(path: Path) -> None:
    """Called where a sweep would start measuring into ``path``: raises `OtodError` when the figure being drawn
    reads committed results (its file is missing, or its config changed since the files were committed)."""
    committed = [d for d in _drawing if d.committed]
    if committed:
        raise OtodError(missing_line(committed[-1].figure, str(path)))


def missing_line(figure: str, path: str) -> str:
    """The one line for a committed figure whose results file is not there."""
    return (f"{figure} reads its committed results and {path} is not there (deleted, or the figure's settings "
            f"changed since they were measured); restore it with git checkout -- {path}, or measure it again from "
            f"nothing with: otod figures {REMEASURE_FLAG} {figure}")
