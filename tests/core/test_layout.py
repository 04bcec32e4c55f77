"""The layout the brief promises: the core imports no obstacle, no obstacle imports another, and no module imports
another in a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import otod

ROOT = Path(otod.__file__).parent
OBSTACLES = ("otod.condition", "otod.cost", "otod.depth", "otod.noise")


def is_module(name: str) -> bool:
    path = ROOT.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def imports_of(path: Path) -> set[str]:
    """Every otod module a file imports (at module level or inside functions); ``from pkg import submodule``
    counts as importing the submodule (the package itself is always initialised first)."""
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("otod"):
            subs = {f"{node.module}.{a.name}" for a in node.names if is_module(f"{node.module}.{a.name}")}
            found.update(subs)
            if len(subs) < len(node.names):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("otod"))
    return found


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_core_imports_no_obstacle():
    offenders = {module_name(p): sorted(i for i in imports_of(p) if i.startswith(OBSTACLES))
                 for p in (ROOT / "core").glob("*.py")}
    assert {m: i for m, i in offenders.items() if i} == {}


def test_no_obstacle_imports_another():
    """Each obstacle stands on the core alone, so it can be read (and removed) in one folder."""
    offenders = {}
    for package in OBSTACLES:
        for p in (ROOT / package.split(".")[1]).glob("*.py"):
            others = sorted(i for i in imports_of(p) if i.startswith(OBSTACLES) and not i.startswith(package))
            if others:
                offenders[module_name(p)] = others
    assert offenders == {}


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
