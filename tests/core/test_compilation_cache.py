import os
import subprocess
import sys

from otod.core import compilation_cache


def test_environment_chooses_or_disables_the_folder(monkeypatch, tmp_path):
    monkeypatch.setenv(compilation_cache.ENV, "off")
    assert compilation_cache.cache_dir() is None and compilation_cache.enable() is None
    monkeypatch.setenv(compilation_cache.ENV, str(tmp_path / "c"))
    assert compilation_cache.cache_dir() == tmp_path / "c"


#: A process that compiles one small condition sweep's program into the cache folder argv[1], runs the sweep into
#: argv[2] and prints its compile count, cache loads and counts (the cache's own hit events beside them).
SCRIPT = ("import json, sys; from otod.core import compilation_cache as cc; cc.enable(sys.argv[1]);"
          "import otod.condition; from otod.condition.options import condition_sweep;"
          "from otod.condition.quadratic import QuadraticSpec; from otod.core.sweep import run_sweep;"
          "config = condition_sweep((2.0, 20.0), methods=('gd',), problem=QuadraticSpec(dim=8), seeds=2);"
          "ctx = cc.count_cache_hits(); hits = ctx.__enter__();"
          "r = run_sweep(config, path=sys.argv[2]); ctx.__exit__(None, None, None);"
          "print(json.dumps({'hits': len(hits), 'compiles': r.meta['compile_count'], 'loads': r.meta['cache_loads'],"
          " 'its': [x['iterations'] for x in r.records]}))")


def test_processes_that_share_a_cache_at_once_never_hang_or_warn(tmp_path):
    """Two processes start at once on a fresh cache folder and compile the same program (each round a new
    folder, 3 rounds, 120 s each at most): both end with exit 0 and nothing on stderr (no JAX warning of a cache
    entry read half written), each obtains the program once (compiled or loaded), and their counts are equal."""
    import json

    env = dict(os.environ, OTOD_COMPILATION_CACHE="off")
    for round_ in range(3):
        folder = tmp_path / f"cache{round_}"
        procs = [subprocess.Popen([sys.executable, "-c", SCRIPT, str(folder), str(tmp_path / f"{round_}-{i}.json")],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                 for i in range(2)]
        outs = [p.communicate(timeout=120) for p in procs]
        assert [p.returncode for p in procs] == [0, 0] and [e for _, e in outs] == ["", ""], outs
        got = [json.loads(o.strip().splitlines()[-1]) for o, _ in outs]
        assert all(g["compiles"] + g["loads"] == 1 for g in got) and got[0]["its"] == got[1]["its"], got


def test_a_second_process_loads_the_program_from_the_cache_instead_of_compiling_it(tmp_path):
    """Run the same sweep twice in fresh processes sharing a cache folder. The first compiles the sweep's program
    and hits nothing; the second receives JAX's cache-hit event for it, compiles nothing, and reports the same
    counts. The folder is the bounded, locked kind: JAX's lock file and an access time per entry are in it (an
    unbounded cache has neither, and writes its entries unlocked)."""
    env = dict(os.environ, OTOD_COMPILATION_CACHE="off")
    runs = [subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "cache"), str(tmp_path / f"{i}.json")],
                           capture_output=True, text=True, env=env, timeout=300) for i in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr + runs[1].stderr
    import json

    first, second = (json.loads(r.stdout.strip().splitlines()[-1]) for r in runs)
    assert first["hits"] == 0 and first["compiles"] == 1
    assert second["hits"] >= 1 and second["compiles"] == 0 and second["loads"] == second["hits"]
    assert first["its"] == second["its"]
    entries = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert ".lockfile" in entries and any(n.endswith("-atime") for n in entries), entries


def test_a_folder_written_before_the_bound_is_stamped_so_programs_are_still_stored(tmp_path):
    """A cache folder from an unbounded cache (otod before the bound) has entries without JAX's ``-atime``
    stamp, and the bounded cache's eviction reads every stamp before it stores a program: unstamped, every store
    failed with a warning ("Error writing persistent compilation cache entry") and nothing was kept. `enable`
    stamps such entries with their modification time; a process then stores its program without a warning."""
    import json

    folder = tmp_path / "cache"
    folder.mkdir()
    old = folder / "jit_old-0123-cache"
    old.write_bytes(b"an entry of the unbounded cache")
    os.utime(old, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    env = dict(os.environ, OTOD_COMPILATION_CACHE="off")
    run = subprocess.run([sys.executable, "-c", SCRIPT, str(folder), str(tmp_path / "r.json")], capture_output=True,
                         text=True, env=env, timeout=300)
    assert run.returncode == 0 and "compilation cache" not in run.stderr, run.stderr
    assert json.loads(run.stdout.strip().splitlines()[-1])["compiles"] == 1
    stamp = folder / "jit_old-0123-atime"
    assert int.from_bytes(stamp.read_bytes(), "little") == 1_700_000_000_000_000_000
    stored = [p.name for p in folder.iterdir() if p.name.endswith("-cache") and p != old]
    assert stored and all((folder / (n[:-len("-cache")] + "-atime")).exists() for n in stored)
