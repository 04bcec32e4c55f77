"""The layout the brief promises: the core imports no obstacle, no obstacle imports another, and no module imports
another in a cycle."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import otod

ROOT = Path(otod.__file__).parent
#: Every obstacle package under otod/ (the layout test finds them: `test_every_obstacle_package_is_listed`).
OBSTACLES = ("otod.condition", "otod.cost", "otod.depth", "otod.nets", "otod.noise")
#: The packages above every obstacle: they may import any obstacle, and no obstacle imports them (the paper's
#: figures that draw one obstacle beside another).
ABOVE = ("otod.paper",)

#: The only imports allowed from one obstacle into another, each with its reason: (importing package, imported
#: module or package) → why. Anything else fails `test_obstacles_import_each_other_only_as_allowed`.
ALLOWED = {
    # The nets measure the gradient-noise obstacle on real nets: they build the NQM from a net's spectrum and
    # noise and predict with its theory, exact search and recursions (the NQM library) and nothing else of it.
    ("otod.nets", "otod.noise.theory"): "the NQM's theory (recursions, critical batch)",
    ("otod.nets", "otod.noise.exact"): "the NQM's exact recursions and reference step",
    ("otod.nets", "otod.noise.search"): "the NQM's exact search, its β lattice and the words for where a chosen lr "
                                         "or β lies among those tried (the stability limit, a list's end)",
    ("otod.nets", "otod.noise.schedule_search"): "the NQM's exact batch-schedule search, run on the NQM built for a "
                                                 "net (what a batch schedule on that net should save)",
    ("otod.nets", "otod.cost.flops"): "the FLOP counter (a net's bill)",
}


def is_module(name: str) -> bool:
    path = ROOT.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def imports_of(path: Path) -> set[str]:
    """Every otod module a file imports (at module level or inside functions); ``from pkg import submodule``
    counts as importing the submodule (the package itself is always initialised first)."""
    return set(_imports_in(path.read_text()))


@functools.lru_cache(maxsize=None)
def _imports_in(text: str) -> frozenset[str]:
    """`imports_of` a module's source text, kept per text: the checks read the package's ~180 modules again and
    again (each test, and each scratch copy, where all but one module are unchanged), and parsing and walking
    them was 20 of this file's 23 CPU-s. Whether a name is a module is read off the checkout (`is_module`), which
    the tests never change."""
    tree = ast.parse(text)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("otod"):
            subs = {f"{node.module}.{a.name}" for a in node.names if is_module(f"{node.module}.{a.name}")}
            found.update(subs)
            if len(subs) < len(node.names):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("otod"))
    return frozenset(found)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_core_imports_no_obstacle():
    offenders = {module_name(p): sorted(i for i in imports_of(p) if i.startswith(OBSTACLES))
                 for p in (ROOT / "core").glob("*.py")}
    assert {m: i for m, i in offenders.items() if i} == {}


def obstacle_of(name: str) -> str | None:
    """The obstacle package a module belongs to, or None (the core, the CLI)."""
    return next((o for o in OBSTACLES if name == o or name.startswith(o + ".")), None)


def allowed(importer: str, imported: str) -> bool:
    """Whether an obstacle module may import another obstacle's module: by `ALLOWED`, keyed on the importing
    package and the imported module (or a package above it)."""
    package = obstacle_of(importer)
    return any((package, prefix) in ALLOWED for prefix in
               (".".join(imported.split(".")[:i]) for i in range(2, imported.count(".") + 2)))


def module_under(path: Path, root: Path) -> str:
    """The dotted name of the module at ``path`` in the package folder ``root`` (otod/ or a scratch copy)."""
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def offending_imports(root: Path) -> dict[str, list[str]]:
    """Per obstacle module under ``root`` (the otod package folder; its subpackages included), its imports of
    another obstacle that `ALLOWED` does not list."""
    offenders = {}
    for package in OBSTACLES:
        for p in sorted((root / package.split(".")[1]).rglob("*.py")):
            name = module_under(p, root)
            others = sorted(i for i in imports_of(p) if (obstacle_of(i) not in (None, package)
                            and not allowed(name, i)) or i.startswith(tuple(a + "." for a in ABOVE) + ABOVE))
            if others:
                offenders[name] = others
    return offenders


def test_obstacles_import_each_other_only_as_allowed():
    """Each obstacle stands on the core, and on another obstacle only where `ALLOWED` says why."""
    assert offending_imports(ROOT) == {}


def test_every_allowed_import_is_still_made():
    """An allow-list entry nothing uses any more is removed, so the list stays what the code does."""
    made = {(obstacle_of(module_name(p)), i) for p in ROOT.rglob("*.py") for i in imports_of(p)}
    unused = [key for key in ALLOWED if not any(pkg == key[0] and (i == key[1] or i.startswith(key[1] + "."))
                                                for pkg, i in made)]
    assert unused == []


def test_every_obstacle_package_is_listed():
    """A new obstacle package is covered by these checks as soon as it exists."""
    packages = {f"otod.{p.name}" for p in ROOT.iterdir() if (p / "__init__.py").exists() and p.name != "core"}
    assert packages == set(OBSTACLES) | set(ABOVE)


def test_the_check_fails_on_an_import_it_does_not_allow(tmp_path):
    """A scratch copy of the package where noise imports the nets (a lower obstacle reaching up), and where the
    nets import depth: both are named."""
    import shutil

    copy = tmp_path / "otod"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns("__pycache__", "data"))
    (copy / "noise" / "scratch.py").write_text("from otod.nets.measure import noise_scale\n")
    (copy / "nets" / "scratch.py").write_text("def f():\n    from otod.depth.linear import DeepLinearSpec\n")
    (copy / "depth" / "scratch.py").write_text("from otod.paper.figures import MAKERS\n")
    (copy / "paper" / "scratch.py").write_text("from otod.depth.linear import DeepLinearSpec\n")  # allowed above
    assert offending_imports(copy) == {"otod.noise.scratch": ["otod.nets.measure.noise_scale"],
                                       "otod.nets.scratch": ["otod.depth.linear"],
                                       "otod.depth.scratch": ["otod.paper.figures"]}



#: The core's public face (issue 51 item 3): the one core module an obstacle, or a package above them, imports.
FACE = "otod.core.api"


def past_the_face(root: Path) -> dict[str, list[str]]:
    """Per module of an obstacle or of a package above them under ``root`` (the otod package folder), its imports
    of a core module other than the face (`FACE`)."""
    offenders = {}
    for package in OBSTACLES + ABOVE:
        for p in sorted((root / package.split(".")[1]).rglob("*.py")):
            inner = sorted(i for i in imports_of(p) if i.startswith("otod.core") and i != FACE)
            if inner:
                offenders[module_under(p, root)] = inner
    return offenders


def test_obstacles_import_the_core_through_its_face_only():
    """Every obstacle (and the paper above them) reaches the core through `otod.core.api` alone."""
    assert past_the_face(ROOT) == {}


def test_the_face_check_names_an_import_past_the_face(tmp_path):
    """A scratch copy where the noise imports the core's analysis module, a nets module imports a name from it inside
    a function and the paper imports the core package's results module: all named; an import of the face is not."""
    import shutil

    copy = tmp_path / "otod"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns("__pycache__", "data"))
    (copy / "noise" / "scratch.py").write_text("from otod.core import analysis\nfrom otod.core.api import chosen\n")
    (copy / "nets" / "scratch.py").write_text("def f():\n    from otod.core.analysis import chosen\n")
    (copy / "paper" / "scratch.py").write_text("import otod.core.results\n")
    assert past_the_face(copy) == {"otod.noise.scratch": ["otod.core.analysis"],
                                   "otod.nets.scratch": ["otod.core.analysis"],
                                   "otod.paper.scratch": ["otod.core.results"]}


def test_every_name_of_the_face_is_its_modules_own():
    """Each name the face offers is the object its defining module holds (read when asked, `otod.core.api`), and
    an unknown name is an AttributeError naming the face's table."""
    import importlib

    import pytest

    from otod.core import api

    assert {name: getattr(api, name) is getattr(importlib.import_module(module), own)
            for name, (module, own) in api.WHERE.items()} == dict.fromkeys(api.WHERE, True)
    with pytest.raises(AttributeError, match="otod.core.api.PARTS"):
        api.no_such_name  # noqa: B018


#: The design's never-rules inside the core (issue 51 item 3): the engine returns data only, and selection belongs
#: to the analysis, so neither the engine's modules nor the runner's reach the analysis, through any chain of imports.
ENGINE = tuple(f"otod.core.{m}" for m in ("engine", "dynamics", "stopping", "family", "methods", "branch", "lanes",
                                          "stochastic", "traces"))
RUNNER = tuple(f"otod.core.{m}" for m in ("sweep", "config", "plan", "scheduler", "journal", "finish", "reuse",
                                          "distributed", "preflight"))
ANALYSIS = tuple(f"otod.core.{m}" for m in ("analysis", "fit", "laws", "bracket", "critical_batch", "retarget",
                                            "resample"))


def reaching(root: Path, sources: tuple[str, ...], targets: tuple[str, ...]) -> dict[str, list[str]]:
    """Per module of ``sources`` under ``root`` (the otod package folder), the modules of ``targets`` it reaches
    through any chain of imports (at module level or in functions)."""
    modules = {module_under(p, root): p for p in root.rglob("*.py")}
    graph = {m: {i for i in imports_of(p) if i in modules} for m, p in modules.items()}
    found = {}
    for source in sources:
        seen, todo = set(), [source]
        while todo:
            for n in graph.get(todo.pop(), ()):
                if n not in seen:
                    seen.add(n)
                    todo.append(n)
        if seen & set(targets):
            found[source] = sorted(seen & set(targets))
    return found


def test_the_engine_and_the_runner_never_reach_the_analysis():
    assert reaching(ROOT, ENGINE, ANALYSIS) == {}
    assert reaching(ROOT, RUNNER, ANALYSIS) == {}


def test_the_never_rule_check_names_an_engine_or_runner_module_reaching_the_analysis(tmp_path):
    """A scratch copy where the engine's traces import the analysis inside a function (the chain engine → traces →
    analysis, as it was) and the plan imports the critical batch: each reaching module is named."""
    import shutil

    copy = tmp_path / "otod"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns("__pycache__", "data"))
    with open(copy / "core" / "traces.py", "a") as f:
        f.write("\n\ndef scratch():\n    from otod.core.analysis import rates_of\n")
    with open(copy / "core" / "plan.py", "a") as f:
        f.write("\n\nfrom otod.core.critical_batch import mccandlish_fit\n")
    engine = reaching(copy, ENGINE, ANALYSIS)
    assert {"otod.core.engine", "otod.core.traces"} <= set(engine) and "otod.core.analysis" in engine["otod.core.engine"]
    runner = reaching(copy, RUNNER, ANALYSIS)
    assert "otod.core.plan" in runner and "otod.core.critical_batch" in runner["otod.core.plan"]

#: The nets obstacle's floors, bottom to top (issue 51 item 1): its subpackages, each with one job, then the front.
#: A module imports only modules of its own floor and of floors below it; the floors on one rung (along, schedule)
#: do not import each other. The front, on top, is the modules directly in otod/nets (the commands, the Python API,
#: the measurement files' display) and its figure makers (otod/nets/figures).
NETS_FLOORS = (("model",), ("measure",), ("sweep",), ("along", "schedule"), ("front",))
#: The subpackages of otod/nets that are part of the front (one floor with the modules directly in otod/nets).
NETS_FRONT = ("figures",)


def nets_floor(name: str) -> tuple[int, str]:
    """(rung, floor) of a module of the nets obstacle: the subpackage of otod.nets it sits in, or "front" for the
    package itself and the modules directly in it."""
    parts = name.split(".")
    floor = parts[2] if len(parts) > 3 and parts[2] not in NETS_FRONT else "front"
    return next((rung, floor) for rung, floors in enumerate(NETS_FLOORS) if floor in floors)


def upward_imports(root: Path) -> dict[str, list[str]]:
    """Per nets module under ``root`` (the otod package folder), its imports of a nets module on a higher floor,
    or on another floor of its own rung."""
    offenders = {}
    for p in sorted((root / "nets").rglob("*.py")):
        name = module_under(p, root)
        rung, floor = nets_floor(name)
        above = sorted(i for i in imports_of(p) if i.startswith("otod.nets.") and
                       (nets_floor(i)[0] > rung or (nets_floor(i)[0] == rung and nets_floor(i)[1] != floor)))
        if above:
            offenders[name] = above
    return offenders


def test_every_nets_subpackage_is_a_floor():
    """A new subpackage of otod/nets is placed among the floors as soon as it exists."""
    subpackages = {p.name for p in (ROOT / "nets").iterdir() if (p / "__init__.py").exists()}
    assert subpackages == {f for floors in NETS_FLOORS for f in floors} - {"front"} | set(NETS_FRONT)


def test_no_nets_floor_imports_one_above_it():
    """model < measure < sweep < {along, schedule} < the front: no module of the nets imports upward or across."""
    assert upward_imports(ROOT) == {}


def test_the_floor_check_fails_on_an_import_upward_or_across(tmp_path):
    """A scratch copy of the package where the model imports the sweep's options (upward, inside a function),
    along imports the schedule (across its rung), and the schedule imports the model and the front's figures
    import the schedule (both allowed): the first two are named, the others not."""
    import shutil

    copy = tmp_path / "otod"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns("__pycache__", "data"))
    upward = "def f():\n    from otod.nets.sweep.options import net_config\n"
    (copy / "nets" / "model" / "scratch.py").write_text(upward)
    (copy / "nets" / "along" / "scratch.py").write_text("from otod.nets.schedule import stats\n")
    (copy / "nets" / "schedule" / "scratch.py").write_text("from otod.nets.model import contract\n")
    (copy / "nets" / "figures" / "scratch.py").write_text("from otod.nets.schedule.stats import compare\n")
    assert upward_imports(copy) == {"otod.nets.model.scratch": ["otod.nets.sweep.options"],
                                    "otod.nets.along.scratch": ["otod.nets.schedule.stats"]}


def test_no_import_cycles_between_modules():
    modules = {module_name(p): p for p in ROOT.rglob("*.py")}
    graph = {m: {i for i in imports_of(p) if i in modules and i != m} for m, p in modules.items()}
    state: dict[str, int] = {}

    def visit(m, stack):
        state[m] = 1
        for n in graph[m]:
            if state.get(n) == 1:
                raise AssertionError("import cycle: " + " → ".join(stack + [m, n]))
            if n not in state:
                visit(n, stack + [m])
        state[m] = 2

    for m in graph:
        if m not in state:
            visit(m, [])


def test_the_command_line_loads_without_jax():
    """`otod --help`, `--version` and option errors never compile, so importing the CLI (and registering every
    obstacle) must not import JAX or matplotlib, nor NumPy (~0.09 s: `otod --help` takes 0.12 s without it on the
    development VM, where the interpreter alone starts in 0.06 s), pandas or pyarrow."""
    import subprocess
    import sys

    probe = ("import sys, otod.cli; print(sorted(m for m in ('jax', 'matplotlib', 'numpy', 'pandas', 'pyarrow') "
             "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout


def test_otod_load_is_there_without_importing_numpy_pandas_or_jax():
    """``otod.load`` (the notebook's one call) is on the package itself, and imports the results module only when
    called."""
    import subprocess
    import sys

    probe = ("import sys, otod; print(callable(otod.load), sorted(m for m in ('jax', 'numpy', 'pandas', 'pyarrow', "
             "'otod.core.results') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True []", out.stdout


def test_checking_a_condition_sweeps_options_does_not_import_jax():
    """Bad input is refused before anything computes: building and validating a config imports no JAX."""
    import subprocess
    import sys

    probe = ("import sys\nfrom otod.condition.options import sweep_config_from_options\n"
             "from otod.core.errors import OtodError\n"
             "sweep_config_from_options(k='1..10', method='gd,heavy-ball,kfac', problem='kronecker')\n"
             "try:\n    sweep_config_from_options(method='kfac')\nexcept OtodError as e:\n    print('refused:', e)\n"
             "print('jax' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "refused: --method kfac: needs kronecker" in out.stdout and out.stdout.strip().endswith("False")


#: The house limits (issue 34 item 3): lines per module, and lines per function (from its ``def`` to its last
#: line, decorators left out; a nested function counts on its own and within the one around it).
MODULE_LINES, FUNCTION_LINES = 700, 100

#: Functions allowed over `FUNCTION_LINES` for now, as ``path:qualified name``, each with its reason. The list can
#: only shrink: an entry whose function is split (or gone) fails `test_every_long_function_allowed_is_still_long`.
LONG_FUNCTIONS: set[str] = set()  # run_sweep (239 lines) was the last: split into otod.core.scheduler's steps


def functions_of(tree: ast.AST, prefix: str = ""):
    """(qualified name, lines) of every function under ``tree``, nested ones and methods included."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = prefix + node.name
            if not isinstance(node, ast.ClassDef):
                yield name, node.end_lineno - node.lineno + 1
            yield from functions_of(node, name + ".")
        else:
            yield from functions_of(node, prefix)


def too_long(root: Path) -> tuple[dict[str, int], dict[str, int]]:
    """({module path: lines} over `MODULE_LINES`, {"path:function": lines} over `FUNCTION_LINES`) for the package
    folder ``root``, paths as ``otod/...``."""
    modules, functions = {}, {}
    for p in sorted(root.rglob("*.py")):
        text, name = p.read_text(), p.relative_to(root.parent).as_posix()
        if len(text.splitlines()) > MODULE_LINES:
            modules[name] = len(text.splitlines())
        functions.update({f"{name}:{f}": n for f, n in _functions_in(text) if n > FUNCTION_LINES})
    return modules, functions


@functools.lru_cache(maxsize=None)
def _functions_in(text: str) -> tuple[tuple[str, int], ...]:
    """`functions_of` a module's source text, kept per text (the real tree and its scratch copy share all but
    one module)."""
    return tuple(functions_of(ast.parse(text)))


#: The folders beside the package the same limits hold in (in a checkout; an installed package has none).
BESIDE = ("benchmarks", "tests")


def test_no_module_or_function_is_too_long():
    """No module over 700 lines, no function over 100 (small functions that each do one job; issue 34 item 3),
    but those `LONG_FUNCTIONS` lists: in the package, its benchmarks and its tests."""
    modules, functions = too_long(ROOT)
    for folder in (ROOT.parent / name for name in BESIDE):
        if folder.is_dir():
            more_modules, more_functions = too_long(folder)
            modules.update(more_modules)
            functions.update(more_functions)
    assert modules == {}
    assert {f: n for f, n in functions.items() if f not in LONG_FUNCTIONS} == {}


def test_every_long_function_allowed_is_still_long():
    """The allow-list only shrinks: an entry whose function is now short (or gone) is removed."""
    assert LONG_FUNCTIONS - set(too_long(ROOT)[1]) == set()


def test_the_length_check_names_a_long_module_and_function(tmp_path):
    """A scratch copy of the package with a 101-line method in a new class and a 701-line module: both named."""
    import shutil

    copy = tmp_path / "otod"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns("__pycache__", "data"))
    body = "".join(f"        x = {i}\n" for i in range(99))
    (copy / "core" / "scratch.py").write_text(f"class A:\n    def long(self):\n{body}        return x\n")
    (copy / "core" / "big.py").write_text("x = 1\n" * 701)
    modules, functions = too_long(copy)
    assert modules == {"otod/core/big.py": 701}
    assert {f: n for f, n in functions.items() if f not in LONG_FUNCTIONS} == {"otod/core/scratch.py:A.long": 101}


#: The modules that may read the ``config`` a results file (or a journal) stores by its keys, each with its reason.
#: Everything else reads the typed config, `otod.core.config.read_config` (attributes, not string keys; issue 34
#: Deliver 3). `test_the_stored_config_is_read_by_key_only_where_allowed` fails on any other such read.
CONFIG_READERS = {
    "otod/core/config.py": "read_config: the one reading of a sweep's stored config into its typed SweepConfig",
    "otod/core/finish.py": "otod merge checks that each part's stored config hashes to its digest: the dict as written",
    "otod/core/reuse.py": "a sweep compares other files' stored settings with its own as the digest does, by footer, "
                          "before it reads any of them",
    "otod/condition/kind.py": "the format-1 migration rewrites the stored payload itself, before any config is read",
    "otod/nets/measurements.py": "curvature and noise-scale files are measurements, not sweeps: their config is the "
                                 "measuring command's own settings, which has no typed config",
}

#: A read of the stored config by key: ``meta["config"]`` (any quotes) or ``meta.get("config")``.
STORED_CONFIG = re.compile(r"""\[\s*["']config["']\s*\]|\.get\(\s*["']config["']""")


def stored_config_reads(root: Path) -> dict[str, list[int]]:
    """{module path, as ``otod/...``: line numbers} of every read of the stored config by key under ``root``."""
    found = {}
    for p in sorted(root.rglob("*.py")):
        lines = [i for i, line in enumerate(p.read_text().splitlines(), 1) if STORED_CONFIG.search(line)]
        if lines:
            found[p.relative_to(root.parent).as_posix()] = lines
    return found


def test_the_stored_config_is_read_by_key_only_where_allowed():
    """Outside `CONFIG_READERS` no module reads ``meta["config"]`` by key; and each of those still does (the list
    only shrinks)."""
    assert sorted(stored_config_reads(ROOT)) == sorted(CONFIG_READERS)


def test_the_config_read_check_names_a_new_read_by_key(tmp_path):
    """A scratch module under an obstacle reading the stored config by key, both ways: named with its lines."""
    scratch = tmp_path / "otod" / "noise" / "scratch.py"
    scratch.parent.mkdir(parents=True)
    scratch.write_text("def f(results):\n    tol = results.meta['config']['target']['tol']\n"
                       "    return tol, results.meta.get(\"config\")\n")
    assert stored_config_reads(tmp_path / "otod") == {"otod/noise/scratch.py": [2, 3]}


# -- typed all the way (issue 51 item 4) ----------------------------------------------------------------------------

#: A ``"package.module:attr"`` string: how hooks were wired before they were imported (`otod.core.registry`).
HOOK_STRING = re.compile(r"^otod(\.\w+)+:\w+$")

#: The modules that may hold such a string, each with its reason; a hook is referenced by an import (inside a
#: function of the obstacle's ``__init__`` where it must load lazily), never by a string.
HOOK_STRINGS_ALLOWED = {
    "otod/nets/figures/workloads.py": "not a hook: the label the transformer's checks start their one line with, "
                                      "the --model value a user writes for it",
}


def hook_strings(root: Path, toml_root: Path | None = None) -> dict[str, list[int]]:
    """{path: line numbers} of every string constant under ``root`` (and value in ``toml_root``'s TOML files) that
    is a ``"module:attr"`` reference (`HOOK_STRING`); docstrings and prose that mention one are not."""
    found: dict[str, list[int]] = {}
    for p in sorted(root.rglob("*.py")):
        lines = sorted({node.lineno for node in ast.walk(ast.parse(p.read_text()))
                        if isinstance(node, ast.Constant) and isinstance(node.value, str)
                        and HOOK_STRING.match(node.value)})
        if lines:
            found[p.relative_to(root.parent).as_posix()] = lines
    for p in sorted(toml_root.glob("*.toml")) if toml_root else []:
        lines = [i for i, line in enumerate(p.read_text().splitlines(), 1)
                 if re.search(r"""=\s*["']otod(\.\w+)+:\w+["']""", line)]
        if lines:
            found[p.relative_to(toml_root.parent).as_posix()] = lines
    return found


def test_hooks_are_imported_not_named_by_module_attr_strings():
    """No ``"otod.x.y:z"`` string in otod/ or experiments/ outside `HOOK_STRINGS_ALLOWED` (30 wired the hooks
    before issue 51); and each allowed one is still there (the list only shrinks)."""
    assert sorted(hook_strings(ROOT, ROOT.parent / "experiments")) == sorted(HOOK_STRINGS_ALLOWED)


def test_the_hook_string_check_names_a_new_one(tmp_path):
    """A scratch obstacle registering a part by string is named with its line; its docstring naming one is not."""
    scratch = tmp_path / "otod" / "noise" / "__init__.py"
    scratch.parent.mkdir(parents=True)
    scratch.write_text('"""Registered as otod.noise.kind:NOISE."""\nregister(kinds=("otod.noise.kind:NOISE",))\n')
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "g.toml").write_text('[a]\nmaker = "otod.noise.figures:make"\n')
    assert hook_strings(tmp_path / "otod", tmp_path / "experiments") == {"otod/noise/__init__.py": [2],
                                                                         "experiments/g.toml": [2]}


def string_key_reads(path: Path, names: set[str]) -> list[tuple[int, str]]:
    """(line, enclosing function) of every read by a string key, ``x["key"]`` or ``x.get("key")``, of a name or
    attribute ``x`` in ``names`` in the module at ``path``."""
    tree = ast.parse(path.read_text())
    where: dict[int, str] = {}
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                where.setdefault(id(node), fn.name)  # outermost function first (ast.walk is breadth-first)

    def named(node) -> bool:
        return (isinstance(node, ast.Name) and node.id in names) or (isinstance(node, ast.Attribute)
                                                                     and node.attr in names)

    def text(node) -> bool:
        return isinstance(node, ast.Constant) and isinstance(node.value, str)

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and named(node.value) \
                and text(node.slice):
            found.append((node.lineno, where.get(id(node), "<module>")))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                and named(node.func.value) and node.args and text(node.args[0]):
            found.append((node.lineno, where.get(id(node), "<module>")))
    return sorted(found)


#: The modules of the curvature and noise-scale measurements: their settings are `CurvatureConfig` and
#: `NoiseScaleConfig` (`otod.nets.measure.settings`), read by attribute (23 string-key reads before issue 51).
MEASUREMENT_MODULES = ("nets/curvature_cli.py", "noise_scale_cli.py", "nets/contract_cli.py", "nets/api.py",
                       "nets/measure/curvature.py", "nets/measure/noise_scale.py", "nets/measure/settings.py")
#: The names a measurement's settings go by in those modules.
SETTINGS_NAMES = {"config", "options", "settings", "c"}


def test_measurement_settings_are_read_by_attribute():
    """No read of a measurement's settings by a string key in `MEASUREMENT_MODULES`."""
    reads = {m: string_key_reads(ROOT / m, SETTINGS_NAMES) for m in MEASUREMENT_MODULES}
    assert {m: r for m, r in reads.items() if r} == {}


#: Where a figure's TOML table is read by its keys: the parse (`otod.core.figures.parse_figure`, `parsed`, and
#: `TypedMaker.__call__` naming the table in its error; a table inside a table, `otod.nets.figures.tables.parse_table`,
#: by its fields' keys, no string key). Every obstacle's makers are typed (the nets' since issue 51 item 4).
FIGURE_PARSERS = {"otod/core/figures.py": {"parse_figure", "parsed", "draw", "__call__"}}

#: The names a figure's table goes by in the figure modules.
SPEC_NAMES = {"spec", "table"}


def figure_spec_reads(root: Path) -> dict[str, list[tuple[int, str]]]:
    """{module: reads} of a figure's table by a string key, outside the parse functions (`FIGURE_PARSERS`), in the
    figure modules under ``root`` (the makers and the core's loader)."""
    modules = [root / "core" / "figures.py", root / "condition" / "figures.py", root / "cost" / "plots.py",
               root / "depth" / "figures.py", root / "noise" / "figures.py", root / "noise" / "schedule_figure.py",
               *sorted((root / "nets" / "figures").glob("*.py")), root / "paper" / "figures.py"]
    found = {}
    for p in modules:
        if not p.exists():
            continue
        name = p.relative_to(root.parent).as_posix()
        reads = [r for r in string_key_reads(p, SPEC_NAMES) if r[1] not in FIGURE_PARSERS.get(name, set())]
        if reads:
            found[name] = reads
    return found


def test_figure_specs_are_read_by_attribute_outside_the_parse():
    """No figure module reads its table by a string key outside `FIGURE_PARSERS`: every maker takes its typed spec."""
    assert figure_spec_reads(ROOT) == {}


def test_every_registered_figure_maker_is_typed():
    """Every maker ``otod figures`` finds (each obstacle's and the paper's) is a `TypedMaker`, so its table is parsed
    into its spec, an unknown key refused, before any figure runs (a plain function would get the table itself)."""
    from otod.core.figures import TypedMaker, makers
    from otod.obstacles import load_all

    load_all()
    table = makers()
    assert len(table) > 20 and sorted(name for name, m in table.items() if not isinstance(m, TypedMaker)) == []


def test_the_typed_reads_checks_name_a_new_read_by_key(tmp_path):
    """Scratch copies: a measurement module reading ``config["lr"]``, typed figure modules reading
    ``spec.get("kappa")``, a nets figure module reading ``spec["width"]`` and the paper's reading ``table["from"]``
    are named with their lines; the core's parse reading the table is not."""
    for rel in ("nets/curvature_cli.py", "condition/figures.py", "core/figures.py", "nets/figures/scratch.py",
                "paper/figures.py"):
        (tmp_path / "otod" / rel).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "otod" / "nets" / "curvature_cli.py").write_text("def f(config):\n    return config['lr']\n")
    (tmp_path / "otod" / "condition" / "figures.py").write_text("def make(spec, out):\n    return spec.get('kappa')\n")
    (tmp_path / "otod" / "core" / "figures.py").write_text("def parse_figure(m, table, w):\n    return table['maker']\n"
                                                             "def other(table):\n    return table['maker']\n")
    (tmp_path / "otod" / "nets" / "figures" / "scratch.py").write_text("def make(spec, out):\n    x = spec.width\n"
                                                                         "    return spec['width']\n")
    (tmp_path / "otod" / "paper" / "figures.py").write_text("def deep(table):\n    return table['from']\n")
    assert string_key_reads(tmp_path / "otod" / "nets" / "curvature_cli.py", SETTINGS_NAMES) == [(2, "f")]
    assert figure_spec_reads(tmp_path / "otod") == {"otod/core/figures.py": [(4, "other")],
                                                    "otod/condition/figures.py": [(2, "make")],
                                                    "otod/nets/figures/scratch.py": [(3, "make")],
                                                    "otod/paper/figures.py": [(2, "deep")]}
