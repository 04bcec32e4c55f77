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


#: A process that runs ``ROUNDS`` small condition sweeps, each at its own dimension (so each is a program no process
#: has compiled yet), with the cache in folder argv[1], its results in argv[2] and its index in argv[3]: before each
#: round it waits until every process (argv[4] of them) has reached that round (a file each in argv[2]), so that
#: every round's compile starts in all the processes at once; it prints, per round, the compile count, cache loads
#: and counts.
ROUNDS = 3
AT_ONCE = ("import json, os, sys, time; from otod.core import compilation_cache as cc; cc.enable(sys.argv[1]);"
           "import otod.condition; from otod.condition.options import condition_sweep;"
           "from otod.condition.quadratic import QuadraticSpec; from otod.core.sweep import run_sweep;"
           "out, me, count = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]); got = []\n"
           f"for r in range({ROUNDS}):\n"
           "    open(os.path.join(out, f'ready-{r}-{me}'), 'w').close()\n"
           "    while not all(os.path.exists(os.path.join(out, f'ready-{r}-{i}')) for i in range(count)):\n"
           "        time.sleep(0.005)\n"
           "    config = condition_sweep((2.0, 20.0), methods=('gd',), problem=QuadraticSpec(dim=8 + r), seeds=2)\n"
           "    res = run_sweep(config, path=os.path.join(out, f'{r}-{me}.json'))\n"
           "    got.append({'compiles': res.meta['compile_count'], 'loads': res.meta['cache_loads'],"
           " 'its': [x['iterations'] for x in res.records]})\n"
           "print(json.dumps(got))")


def test_processes_that_share_a_cache_at_once_never_hang_or_warn(tmp_path):
    """Two processes on a fresh cache folder compile the same program at once (a file barrier starts each round's
    sweep in both together; 3 rounds, each a program of its own, 120 s in all at most): both end with exit 0 and
    nothing on stderr (no JAX warning of a cache entry read half written), in every round each obtains the program
    once (compiled or loaded), and their counts are equal. One pair of processes for the 3 rounds, not a pair per
    round: a process's start (Python, JAX and otod imported) costs 2.5-4 s of CPU on the 2-core machine, the
    round's compile a fraction of it."""
    import json

    env = dict(os.environ, OTOD_COMPILATION_CACHE="off")
    folder = tmp_path / "cache"
    procs = [subprocess.Popen([sys.executable, "-c", AT_ONCE, str(folder), str(tmp_path), str(i), "2"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for i in range(2)]
    try:
        outs = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            p.kill()
    assert [p.returncode for p in procs] == [0, 0] and [e for _, e in outs] == ["", ""], outs
    got = [json.loads(o.strip().splitlines()[-1]) for o, _ in outs]
    assert all(len(g) == ROUNDS for g in got), got
    for first, second in zip(*got):
        assert first["compiles"] + first["loads"] == 1 and second["compiles"] + second["loads"] == 1, got
        assert first["its"] == second["its"], got


def test_a_second_process_loads_the_program_from_a_folder_whose_old_entries_were_stamped(tmp_path):
    """Run the same sweep twice in fresh processes sharing a cache folder. The first compiles the sweep's program
    and hits nothing; the second receives JAX's cache-hit event for it, compiles nothing, and reports the same
    counts. The folder is the bounded, locked kind: JAX's lock file and an access time per entry are in it (an
    unbounded cache has neither, and writes its entries unlocked).

    The folder starts as one an unbounded cache (otod before the bound) left: an entry without JAX's ``-atime``
    stamp. The bounded cache's eviction reads every stamp before it stores a program: unstamped, every store
    failed with a warning ("Error writing persistent compilation cache entry") and nothing was kept. `enable`
    stamps such entries with their modification time; the first process then stores its program without a warning
    (and the second loads it). One test for both, so that the two runs are the only processes started."""
    import json

    folder = tmp_path / "cache"
    folder.mkdir()
    old = folder / "jit_old-0123-cache"
    old.write_bytes(b"an entry of the unbounded cache")
    os.utime(old, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    env = dict(os.environ, OTOD_COMPILATION_CACHE="off")
    runs = []
    for i in range(2):
        runs.append(subprocess.run([sys.executable, "-c", SCRIPT, str(folder), str(tmp_path / f"{i}.json")],
                                   capture_output=True, text=True, env=env, timeout=300))
        assert runs[-1].returncode == 0 and "compilation cache" not in runs[-1].stderr, runs[-1].stderr
        if i == 0:  # the old entry stamped with its modification time, the new one stamped as JAX stamps it
            stamp = folder / "jit_old-0123-atime"
            assert int.from_bytes(stamp.read_bytes(), "little") == 1_700_000_000_000_000_000
            stored = [p.name for p in folder.iterdir() if p.name.endswith("-cache") and p != old]
            assert stored and all((folder / (n[:-len("-cache")] + "-atime")).exists() for n in stored)
    first, second = (json.loads(r.stdout.strip().splitlines()[-1]) for r in runs)
    assert first["hits"] == 0 and first["compiles"] == 1
    assert second["hits"] >= 1 and second["compiles"] == 0 and second["loads"] == second["hits"]
    assert first["its"] == second["its"]
    entries = sorted(p.name for p in folder.iterdir())
    assert ".lockfile" in entries and any(n.endswith("-atime") for n in entries), entries
