"""Shared test problems and helpers (one place, so tests across modules use the same instances). The one reference
loop lives in the package (`otod.core.reference`)."""

from __future__ import annotations

import os
import shutil
import tempfile

#: One persistent compilation cache for the whole run, in a fresh folder (never the user's ~/.cache): made by the
#: first process to import this file (pytest itself, before it starts its xdist workers), inherited through the
#: environment by the workers and by the otod processes tests start, so a program two tests need is compiled once.
#: Tests that count compilations count compiled + loaded programs; tests of the cache itself use their own folder.
#: ``OTOD_COMPILATION_CACHE=off python3 -m pytest`` runs the suite without it.
_MADE_CACHE = None
if "OTOD_COMPILATION_CACHE" not in os.environ:
    _MADE_CACHE = tempfile.mkdtemp(prefix="otod-tests-")
    os.environ["OTOD_COMPILATION_CACHE"] = os.path.join(_MADE_CACHE, "xla")

import jax  # noqa: E402
import pytest  # noqa: E402

from otod.core import compilation_cache  # noqa: E402

compilation_cache.enable()


def pytest_unconfigure(config):
    if _MADE_CACHE is not None:
        shutil.rmtree(_MADE_CACHE, ignore_errors=True)

import otod.condition  # noqa: E402,F401  (registers the condition sweep)
from otod.condition.kronecker import KroneckerSpec  # noqa: E402
from otod.condition.quadratic import QuadraticSpec  # noqa: E402

#: The worst case for first-order methods, with every eigendirection holding the same share of the loss:
#: the measured exponents approach theory fastest here.
TWO_POINT = QuadraticSpec(dim=20, spectrum="two-point", start="equal-loss")
SMALL_RANDOM = QuadraticSpec(dim=16, spectrum="log-uniform", start="random")
SMALL_ROTATED = QuadraticSpec(dim=16, spectrum="log-uniform", start="random", basis="rotated")
KRONECKER_EXACT = KroneckerSpec(rows=4, cols=5, perturbation=0.0)
KRONECKER_PERTURBED = KroneckerSpec(rows=3, cols=4, perturbation=0.2)


@pytest.fixture
def x64():
    with jax.enable_x64(True):
        yield


def run_shares_in_turn(config, path, count: int = 2) -> None:
    """Run every share of a ``count``-process sweep in this process, one after another, as separate hosts would
    run them at once. Share 0 runs first, so its merge finds the others' chunks missing and says so (OtodError);
    every other share writes its part file and ends with ShareDone. Leaves the part files for the test to merge."""
    from otod.core.errors import OtodError, ShareDone
    from otod.core.sweep import run_sweep

    with pytest.raises(OtodError, match="in no journal or part file"):
        run_sweep(config, path=path, processes=(0, count))
    for index in range(1, count):
        with pytest.raises(ShareDone):
            run_sweep(config, path=path, processes=(index, count))


def run_otod(args, cwd, timeout: float = 60):
    """``python -m otod ARGS`` as a real process in ``cwd``, importing this checkout's otod first, as a user runs
    it; returns (the completed process, its wall seconds)."""
    import subprocess
    import sys
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "otod", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout, env=env)
    return proc, time.perf_counter() - start
