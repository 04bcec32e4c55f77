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


#: ``OTOD_TEST_CPU_LOG=path python3 -m pytest ...`` appends each test's CPU seconds (setup, call and teardown; this
#: process's threads and the processes it waited for) to ``path``, one tab-separated line per test, with the wall
#: seconds this process spent tracing, lowering and compiling JAX programs in it (JAX's monitoring events): what a
#: test costs on a loaded machine, where its wall time says little (`benchmarks/suite_cpu.py` sums the lines).
_CPU_LOG = os.environ.get("OTOD_TEST_CPU_LOG")


if _CPU_LOG:
    import resource

    def _cpu_seconds() -> float:
        own, waited = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime

    _COMPILE_EVENTS = {"/jax/core/compile/jaxpr_trace_duration": "trace",
                       "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
                       "/jax/core/compile/backend_compile_duration": "compile"}
    _spent = dict.fromkeys(_COMPILE_EVENTS.values(), 0.0)

    def _on_duration(event: str, seconds: float, **_) -> None:
        if event in _COMPILE_EVENTS:
            _spent[_COMPILE_EVENTS[event]] += seconds

    jax.monitoring.register_event_duration_secs_listener(_on_duration)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        start, before = _cpu_seconds(), dict(_spent)
        yield
        spent = "\t".join(f"{k}={_spent[k] - before[k]:.3f}" for k in _spent)
        with open(_CPU_LOG, "a") as log:
            log.write(f"{_cpu_seconds() - start:.3f}\t{item.nodeid}\t{spent}\n")

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

#: The first-order methods of `spectrum_sweep`.
SPECTRUM_METHODS = ("gd", "gd-opt", "heavy-ball", "nesterov")
#: The (spectrum, start) pairs of `spectrum_sweep`.
SPECTRA = [("two-point", "equal-loss"), ("uniform", "random"), ("log-uniform", "equal-mass")]


def spectrum_sweep(spectrum: str, start: str):
    """The float64 sweep of one (spectrum, start) pair: κ = 1 … 1000 (7 log-spaced), the 4 first-order methods at
    their own steps, 4 seeds, d = 24. test_predictions runs it; test_theory_exact's lane counts and the
    condition_iterations smoke test read the same lanes, so the suite compiles its program once for all three (the
    run-wide compilation cache)."""
    import numpy as np

    from otod.condition.options import condition_sweep

    return condition_sweep(tuple(np.geomspace(1, 1000, 7)), methods=SPECTRUM_METHODS, seeds=4, x64=True,
                           problem=QuadraticSpec(dim=24, spectrum=spectrum, start=start))


@pytest.fixture
def x64():
    with jax.enable_x64(True):
        yield


@pytest.fixture
def saved(monkeypatch):
    """Every figure the makers save (`otod.core.plotting.save`), kept open with the path and pdf flag it was saved
    under instead of written, so a test reads what was drawn; closed after the test."""
    from otod.core.plotting import plt

    kept = []

    def keep(fig, base, pdf=True, caption=None):
        fig.otod_caption = caption
        kept.append((fig, base, pdf))
        return [base.with_name(base.name + ".png")]

    monkeypatch.setattr("otod.core.plotting.save", keep)
    yield kept
    for fig, _, _ in kept:
        plt.close(fig)


def drawn_line(ax, label: str):
    """The one line of ``ax`` with this legend label."""
    (line,) = [line for line in ax.get_lines() if line.get_label() == label]
    return line


def legend_texts(ax) -> list[str]:
    """The texts of ``ax``'s legend, or, where the paper style put the legend under the panels
    (`otod.core.plotting.legend_below`), of its figure's legends, with the wrapping of long labels undone."""
    return list(legend_entries(ax))


def legend_entries(ax) -> dict:
    """{label: handle} of ``ax``'s legend, or of its figure's legends where the paper style put them under the
    panels (`otod.core.plotting.legend_below`), with the labels as given (before wrapping)."""
    legends = [ax.get_legend()] if ax.get_legend() is not None else list(ax.figure.legends)
    out = {}
    for legend in legends:
        labels = getattr(legend, "otod_labels", None) or [t.get_text() for t in legend.get_texts()]
        out.update(zip(labels, legend.legend_handles))
    return out


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


def _checkout_first() -> dict:
    """The environment of an otod process that imports this checkout's otod first."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}


def run_otod(args, cwd, timeout: float = 120):
    """``python -m otod ARGS`` as a real process in ``cwd``, importing this checkout's otod first, as a user runs
    it; returns (the completed process, its wall seconds)."""
    import subprocess
    import sys
    import time

    env = _checkout_first()
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "otod", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout, env=env)
    return proc, time.perf_counter() - start


#: The body of `run_otod_cases`' process: the otod command line called once per case, each in its own folder with
#: file descriptors 1 and 2 sent to files of its own (so output written below Python, by XLA, is caught too), and
#: with the case's own environment variables set (None: removed) for that case only, the others' restored after.
_CASES_DRIVER = r"""
import json, os, sys, time, traceback
cases, first, captures = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3]
from otod.cli import main


def set_environment(env):  # set (a value) or remove (None) each variable of env; return what they were
    before = {name: os.environ.get(name) for name in env}
    for name, value in env.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    return before


for i in range(first, len(cases)):
    args, cwd, env = cases[i]
    with open(os.path.join(captures, "running"), "w") as f:
        f.write(str(i))
    os.chdir(cwd)
    before = set_environment(env)
    sys.stdout.flush(); sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    out, err = (open(os.path.join(captures, f"{i}.{n}"), "wb") for n in ("out", "err"))
    os.dup2(out.fileno(), 1); os.dup2(err.fileno(), 2)
    start, cpu_start = time.perf_counter(), time.process_time()
    try:
        main(args, prog_name="otod")
        code = 0
    except SystemExit as e:  # as the interpreter ends a process: None is 0, a message is printed and 1
        code = e.code if isinstance(e.code, int) else 0 if e.code is None else (print(e.code, file=sys.stderr), 1)[1]
    except BaseException:
        traceback.print_exc()
        code = 1
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    set_environment(before)
    sys.stdout.flush(); sys.stderr.flush()
    os.dup2(saved[0], 1); os.dup2(saved[1], 2)
    for f in (out, err):
        f.close()
    with open(os.path.join(captures, f"{i}.json"), "w") as f:
        json.dump({"returncode": code, "seconds": seconds, "cpu_seconds": cpu_seconds}, f)
"""


def _case_entry(case) -> list:
    """A case as the driver reads it: ``[args, cwd, env]``, from ``(args, cwd)`` or ``(args, cwd, env)``."""
    args, cwd, *env = case
    return [list(args), str(cwd), dict(env[0]) if env else {}]


def is_one_line_refusal(proc, cpu_seconds: float, fragment: str, quick_cpu_seconds: float,
                        stdout_empty: bool = True) -> bool:
    """Whether a case ended as the brief asks of bad input: exit code 2, one line on stderr starting
    ``otod: error: `` and holding ``fragment``, no traceback, having used under ``quick_cpu_seconds`` of the
    process's CPU time (and, with ``stdout_empty``, nothing on stdout). CPU time, not wall time: a refusal that
    starts no sweep uses the same CPU seconds on a quiet machine and on one shared with other jobs, where its wall
    time may be several times longer (issue 49: 11.8 and 14.8 s of wall for refusals of ~2 CPU s). Each bad-input
    table adds its own check of what was written."""
    lines = proc.stderr.strip().splitlines()
    return (proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("otod: error: ")
            and fragment in lines[0] and "Traceback" not in proc.stderr and cpu_seconds < quick_cpu_seconds
            and not (stdout_empty and proc.stdout.strip()))


def _wait_for_cases(proc, captures, timeout: float) -> bool:
    """Wait for the cases' process to end; kill it when one case (the index it last wrote to ``running``) has
    run for ``timeout`` seconds of wall time: a hang guard, not a speed check. Returns whether it was killed."""
    import time

    running, case, since = captures / "running", None, time.monotonic()
    while proc.poll() is None:
        now = running.read_text() if running.exists() else None
        if now != case:
            case, since = now, time.monotonic()
        elif time.monotonic() - since > timeout:
            proc.kill()
            proc.wait()
            return True
        time.sleep(0.1)
    return False


def run_otod_cases(cases, captures, timeout: float = 120):
    """Run many otod command lines, each ``(args, cwd)`` or ``(args, cwd, env)``, as `run_otod` runs one, but in
    one process: every case calls the command line afresh in its own ``cwd``, with its stdout and stderr caught at
    the file descriptors, and with ``env`` (a dict of environment variables: a string sets one, None removes it)
    in ``os.environ`` for that case only: each is restored when the case ends, so the next case runs in the
    environment it would have met.
    One process instead of one per case saves the interpreter's and the imports' 0.5 s a case (about 80 s of the
    suite's worker time for its two lists of bad input). A case that ends the process (a C++ abort) is recorded
    with the process's exit code and stderr, and the cases after it run in a new process. Returns, per case, a
    `subprocess.CompletedProcess`-like namespace (returncode, stdout, stderr, and the case's ``wall_seconds`` for
    messages) and the CPU seconds the process spent in it, in order. A case still running after ``timeout``
    seconds of wall time (its own, or the process's start for the first) is killed and recorded with returncode
    None: a hang guard only, so it is generous."""
    import json
    import subprocess
    import sys
    from pathlib import Path
    from types import SimpleNamespace

    captures = Path(captures)
    captures.mkdir(parents=True, exist_ok=True)
    (captures / "cases.json").write_text(json.dumps([_case_entry(case) for case in cases]))
    env = _checkout_first()
    results, first = [], 0
    while first < len(cases):
        (captures / "running").unlink(missing_ok=True)
        with open(captures / "driver.out", "w") as out, open(captures / "driver.err", "w") as err:
            proc = subprocess.Popen([sys.executable, "-c", _CASES_DRIVER, str(captures / "cases.json"), str(first),
                                     str(captures)], stdout=out, stderr=err, text=True, env=env)
            killed = _wait_for_cases(proc, captures, timeout)
        stderr = (f"otod-cases: no answer within {timeout:g} s" if killed
                  else (captures / "driver.err").read_text(errors="replace"))
        while first < len(cases) and (captures / f"{first}.json").exists():
            done = json.loads((captures / f"{first}.json").read_text())
            text = {n: (captures / f"{first}.{n}").read_text(errors="replace") for n in ("out", "err")}
            results.append((SimpleNamespace(returncode=done["returncode"], stdout=text["out"], stderr=text["err"],
                                            wall_seconds=done["seconds"]), done["cpu_seconds"]))
            first += 1
        if first < len(cases):  # the process ended inside this case
            err = captures / f"{first}.err"
            text = err.read_text(errors="replace") if err.exists() else ""
            results.append((SimpleNamespace(returncode=None if killed else proc.returncode, stdout="",
                                            stderr=text + stderr, wall_seconds=float("nan")), float("nan")))
            first += 1
    return results
