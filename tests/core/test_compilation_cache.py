import os
import subprocess
import sys

from otod.core import compilation_cache


def test_environment_chooses_or_disables_the_folder(monkeypatch, tmp_path):
    monkeypatch.setenv(compilation_cache.ENV, "off")
    assert compilation_cache.cache_dir() is None and compilation_cache.enable() is None
    monkeypatch.setenv(compilation_cache.ENV, str(tmp_path / "c"))
    assert compilation_cache.cache_dir() == tmp_path / "c"


def test_a_second_process_loads_the_program_instead_of_compiling_it(tmp_path):
    """Run the same sweep twice in fresh processes sharing a cache folder: the first writes entries, the second
    reports the same iteration counts."""
    script = ("import json, sys; from otod.core import compilation_cache; compilation_cache.enable(sys.argv[1]);"
              "from otod.sweep import SweepConfig, run_sweep; from otod.problems import QuadraticSpec;"
              "r = run_sweep(SweepConfig(values=(2.0, 20.0), methods=('gd',), problem=QuadraticSpec(dim=8),"
              " seeds=2), path=sys.argv[2]); print(json.dumps([x['iterations'] for x in r.records]))")
    env = dict(os.environ, OTOD_COMPILATION_CACHE="off")
    runs = [subprocess.run([sys.executable, "-c", script, str(tmp_path / "cache"), str(tmp_path / f"{i}.json")],
                           capture_output=True, text=True, env=env, timeout=300) for i in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr
    assert any((tmp_path / "cache").iterdir())
    assert runs[0].stdout == runs[1].stdout
