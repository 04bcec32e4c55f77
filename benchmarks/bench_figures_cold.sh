#!/bin/bash
# Issue 53 item 4: `otod figures` from nothing, the protocol of benchmarks/RESULTS.md's row "4b".
# Usage: benchmarks/bench_figures_cold.sh [FIGURES...]      (no argument: every figure, as `otod figures`)
#        KEEP=1 ...   keeps the work folder;  SECOND=0 ...   skips the plain second run;  WORK=DIR  where to work
#
# "From nothing": a clean clone of HEAD (committed files only: no untracked results, no local edits), with the
# results of every figure that is not `committed = true` removed, and an empty compilation cache. Kept: the files
# experiments/figure-results.json records for the committed figures (the real-net, deep-linear and NQM sweeps too
# heavy for the budget, docs/figures.md), which those figures read instead of sweeping. The figures' seconds file is
# a fresh one (the ETA falls back on the shipped experiments/figure-seconds.json). The run is timed by
# /usr/bin/time -v: wall, user and system CPU, peak memory; then, unless SECOND=0, the same command again (a plain
# second run: every sweep reads its file back) and its wall. Prints the CPU model, the 1-minute load before and
# after, the exit codes, each figure's seconds, the points a sweep reused from another file in results/, and the
# PNGs whose bytes differ from the committed ones (git diff).
# Run it on a quiet machine; one run is one sample.
set -u
source "$(dirname "$0")/fresh_clone.sh"
fresh_clone bench_figures_cold || exit 1

# the committed figures' files stay; every other file in results/ goes
python3 - "$clone" <<'PY' || exit 1
import json, pathlib, sys, tomllib
root = pathlib.Path(sys.argv[1])
recorded = json.loads((root / "experiments" / "figure-results.json").read_text())
committed = [f"{p.stem}/{n}" for p in sorted((root / "experiments").glob("*.toml"))
             for n, t in tomllib.loads(p.read_text()).items() if t.get("committed")]
keep = {name for figure in committed for name in recorded.get(figure, [])}
gone = [p for p in (root / "results").iterdir() if p.name not in keep]
for p in gone:
    p.unlink()
print(f"results/: kept {len(keep)} files of {len(committed)} committed figures, removed {len(gone)}")
PY

export PYTHONPATH=$clone OTOD_COMPILATION_CACHE=$work/xla OTOD_FIGURE_SECONDS=$work/figure-seconds.json
echo "commit $commit; CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
cd "$clone" || exit 1
started=$(date +%s)
/usr/bin/time -v -o "$work/time.txt" python3 -m otod figures "$@" > "$work/cold.log" 2>&1
rc=$?
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work/time.txt" "$rc" "$work/figure-seconds.json" <<'PY'
import json, re, sys
text = open(sys.argv[1]).read()
field = lambda name: re.search(re.escape(name) + r":\s*(.+)", text).group(1).strip()
user, system = float(field("User time (seconds)")), float(field("System time (seconds)"))
print(f"cold: exit {sys.argv[2]}, wall {field('Elapsed (wall clock) time (h:mm:ss or m:ss)')}, "
      f"CPU {user:.0f} user-s + {system:.0f} system-s ({field('Percent of CPU this job got')}), "
      f"peak {int(field('Maximum resident set size (kbytes)')) / 1024 ** 2:.2f} GB")
try:
    seconds = json.load(open(sys.argv[3]))
    print("per figure (s): " + ", ".join(f"{k} {v:.0f}" for k, v in sorted(seconds.items())))
except (OSError, ValueError):
    print("per figure: no seconds file")
PY
# points a sweep of the run took from a file already in results/ (otod.core.reuse): from nothing, only from files
# this run wrote or the committed figures' files
PYTHONPATH=$clone python3 - "$clone/results" "$started" <<'PY'
import pathlib, sys
from otod.core.results import load
for f in sorted(pathlib.Path(sys.argv[1]).glob("*.parquet")):
    reused = f.stat().st_mtime >= float(sys.argv[2]) and load(f).meta.get("reused")  # written by the cold run
    if reused:
        print(f"reused by {f.name}: {reused}")
PY
if [ "${SECOND:-1}" != 0 ]; then
  s=$(date +%s.%N)
  python3 -m otod figures "$@" > "$work/second.log" 2>&1
  rc2=$?; e=$(date +%s.%N)
  echo "plain second run: exit $rc2, wall $(python3 -c "print(f'{$e - $s:.0f} s')")"
fi
echo "PNGs that differ from the committed ones: $(git -C "$clone" diff --name-only -- 'figures/*.png' | xargs)"
if [ "${KEEP:-0}" = 1 ]; then echo "work folder kept: $work"; else rm -rf "$work"; fi
exit $rc
