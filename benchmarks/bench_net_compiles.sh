#!/bin/bash
# Issue 53 item 3: the default `otod sweep net` cold (OTOD_COMPILATION_CACHE=off), alternated A/B.
# Usage: benchmarks/bench_net_compiles.sh BEFORE_COMMIT AFTER_COMMIT [PAIRS=5] [WORK=/tmp/bench_net_compiles]
# Each commit's otod/ is exported with `git archive` and run with PYTHONPATH pointing at it; one JSON line per run
# (command wall, the sweep's own wall, compile count and seconds from the results file, the 1-minute load before
# and after) goes to WORK/results.jsonl. Compare the records of a pair with the script's last step.
set -u
before=$1; after=$2; pairs=${3:-5}; work=${4:-/tmp/bench_net_compiles}
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
mkdir -p "$work"
for side in before after; do
  rm -rf "$work/$side"; mkdir -p "$work/$side"
  git -C "$repo" archive "$([ $side = before ] && echo "$before" || echo "$after")" otod | tar -x -C "$work/$side"
done
for i in $(seq 1 "$pairs"); do
  for side in before after; do
    out=$work/out-$side-$i; rm -rf "$out"
    load=$(cut -d' ' -f1 /proc/loadavg); s=$(date +%s.%N)
    PYTHONPATH=$work/$side OTOD_COMPILATION_CACHE=off timeout 1800 python3 -m otod sweep net --out "$out" > "$out.log" 2>&1
    rc=$?; e=$(date +%s.%N); load2=$(cut -d' ' -f1 /proc/loadavg)
    python3 - "$side" "$i" "$out" "$s" "$e" "$load" "$load2" "$rc" >> "$work/results.jsonl" <<'PY'
import sys, glob, json, pyarrow.parquet as pq
side, i, out, s, e, l1, l2, rc = sys.argv[1:]
f = glob.glob(out + "/*.parquet")
m = json.loads(pq.read_table(f[0]).schema.metadata[b"otod"])["meta"] if f else {}
print(json.dumps({"side": side, "pair": int(i), "rc": int(rc), "command_wall_s": float(e) - float(s),
                  "sweep_wall_s": m.get("wall_time_s"), "compile_count": m.get("compile_count"),
                  "compile_time_s": m.get("compile_time_s"), "load_before": float(l1), "load_after": float(l2)}))
PY
  done
done
python3 - "$work" "$pairs" <<'PY'
import sys, glob, pyarrow.parquet as pq
work, pairs = sys.argv[1], int(sys.argv[2])
for i in range(1, pairs + 1):  # the records of each pair, every column, compared as stored
    a, b = (pq.read_table(glob.glob(f"{work}/out-{s}-{i}/*.parquet")[0]).to_pandas() for s in ("before", "after"))
    key = ["batch", "method", "seed", "learning_rate", "beta"]
    a, b = (t.sort_values(key).reset_index(drop=True).astype(str) for t in (a, b))
    print(f"pair {i}: {len(a)} records, identical: {a.equals(b)}")
PY
