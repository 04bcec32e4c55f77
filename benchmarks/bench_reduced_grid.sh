#!/bin/bash
# Issue 52: the README's reduced joint grid, pasted on a fresh clone, finishes within 30 minutes on 2 cores.
# Usage: benchmarks/bench_reduced_grid.sh [stream|finite]      (default stream: the README's command)
#        WORK=DIR  where to work (default a new folder in /tmp);  KEEP=1 keeps it
#
# "Fresh": a clean clone of HEAD with an empty results/ (the committed files removed, so nothing is read back) and
# an empty compilation cache. The command is the README's, run by /usr/bin/time -v (wall, user and system CPU, peak
# memory). Prints the CPU model, the 1-minute load before and after (a loaded machine makes the time an upper
# bound), the exit code, and the new results file's records against the committed one of the same grid
# (benchmarks/compare_records.py: the same command and seeds give the same numbers). One run is one sample.
set -u
regime=${1:-stream}
case $regime in
  stream) batch=8,32,128,512; committed=results/net-e3b5a4303c.parquet ;;
  finite) batch=8,32,128,256; committed=results/net-fde1740835.parquet ;;
  *) echo "usage: $0 [stream|finite]" >&2; exit 2 ;;
esac
source "$(dirname "$0")/fresh_clone.sh"
fresh_clone bench_reduced_grid || exit 1
cp "$clone/$committed" "$work/committed.parquet" && rm -f "$clone"/results/*
export PYTHONPATH=$clone OTOD_COMPILATION_CACHE=$work/xla
echo "commit $commit; CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
cd "$clone" || exit 1
/usr/bin/time -v -o "$work/time.txt" python3 -m otod sweep net --data teacher --regime "$regime" \
  --examples 256,1024,4096,16384 --width 4,12,40,128 --batch "$batch" --lr-grid 0.03..3:9:log --max-iters 4096 \
  --seeds 5 --no-plot > "$work/out.txt" 2>&1
rc=$?
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "exit code $rc"
grep -E "Elapsed|User time|System time|Maximum resident" "$work/time.txt"
tail -8 "$work/out.txt"
new=$(ls "$clone"/results/net-*.parquet 2>/dev/null | head -1)
[ -n "$new" ] && python3 "$repo/benchmarks/compare_records.py" "$work/committed.parquet" "$new" | tail -6
[ "${KEEP:-0}" = 1 ] && echo "kept $work" || rm -rf "$work"
exit $rc
