import os
import subprocess
import sys

from otod.core import compilation_cache


def test_environment_chooses_or_disables_the_folder(monkeypatch, tmp_path):
    monkeypatch.setenv(compilation_cache.ENV, "off")
    assert compilation_cache.cache_dir() is None and compilation_cache.enable() is None
    monkeypatch.setenv(compilation_cache.ENV, str(tmp_path / "c"))
    assert compilation_cache.cache_dir() == tmp_path / "c"


def test_a_second_process_loads_the_program_from_the_cache_instead_of_compiling_it(tmp_path):
    """Run the same sweep twice in fresh processes sharing a cache folder. The first compiles the sweep's program
    and hits nothing; the second receives JAX's cache-hit event for it, compiles nothing, and reports the same
    counts. The folder is the bounded, locked kind: JAX's lock file and an access time per entry are in it (an
    unbounded cache has neither, and writes its entries unlocked)."""
    script = ("import json, sys; from otod.core import compilation_cache as cc; cc.enable(sys.argv[1]);"
              "import otod.condition; from otod.condition.options import condition_sweep;"
              "from otod.condition.quadratic import QuadraticSpec; from otod.core.sweep import run_sweep;"
              "config = condition_sweep((2.0, 20.0), methods=('gd',), problem=QuadraticSpec(dim=8), seeds=2);"
              "ctx = cc.count_cache_hits(); hits = ctx.__enter__();"
              "r = run_sweep(config, path=sys.argv[2]); ctx.__exit__(None, None, None);"
              "print(json.dumps({'hits': len(hits), 'compiles': r.meta['compile_count'], 'loads': r.meta['cache_loads'],"
              " 'its': [x['iterations'] for x in r.records]}))")
    env = dict(os.environ, OTOD_COMPILATION_CACHE="off")
    runs = [subprocess.run([sys.executable, "-c", script, str(tmp_path / "cache"), str(tmp_path / f"{i}.json")],
                           capture_output=True, text=True, env=env, timeout=300) for i in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr + runs[1].stderr
    import json

    first, second = (json.loads(r.stdout.strip().splitlines()[-1]) for r in runs)
    assert first["hits"] == 0 and first["compiles"] == 1
    assert second["hits"] >= 1 and second["compiles"] == 0 and second["loads"] == second["hits"]
    assert first["its"] == second["its"]
    entries = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert ".lockfile" in entries and any(n.endswith("-atime") for n in entries), entries
