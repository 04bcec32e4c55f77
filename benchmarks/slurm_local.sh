#!/bin/bash
# benchmarks/slurm_local.sh: the README's job array and its `srun ... --distributed` line on a real SLURM (issue 49,
# item 4).
#
# Run as root on a Debian machine:   bash benchmarks/slurm_local.sh
#
# Installs SLURM and munge from Debian's packages (slurm-wlm, munge) if missing, starts a one-node cluster on
# localhost (munged, slurmctld and slurmd as root, every file under one temporary folder: no systemd, no cgroups),
# waits for `sinfo` to show the node idle, then runs the README's two job-array paths and its srun line, taken from
# docs/running.md (where the README's section on shares and SLURM moved, issue 51) as written:
#   1. the sbatch file `condition.sbatch` (`--share $SLURM_ARRAY_TASK_ID/4`), submitted with `sbatch --wait`,
#      then the README's `otod merge runs/condition.parquet.part-*-of-4`;
#   2. `share_sweep.py`, submitit's AutoExecutor, which must pick its SLURM executor (sbatch + srun) here;
#   3. the README's `srun otod sweep condition --k 1..1e4:25:log --distributed` with `-n 2` added: 2 SLURM tasks,
#      2 processes that join JAX's distributed runtime from SLURM's environment (JAX's SlurmCluster: coordinator
#      = the step's first node, port from the job id; count = SLURM_NTASKS; id = SLURM_PROCID), each running its
#      share, process 0 merging into results/condition-<hash>.parquet;
# and the same sweep in one process without SLURM. It compares the four results files' records with pandas
# (every column, every row, in file order, exactly), and the sweep's identity in the files' metadata (digest,
# config, the chunks and their digests, the record count); run metadata (times, hosts, command lines, compile
# counts) is ignored. Prints `slurm_local: PASS ...` and exits 0, or `slurm_local: FAIL ...` and exits 1.
# The daemons are stopped on exit (trap), by the ids this script started them with.
#
# Options (environment): SLURM_LOCAL_DIR=DIR keeps everything in DIR (default: a new mktemp folder, kept after the
# run for its logs); SLURM_LOCAL_TIMEOUT=SECONDS bounds each array and the srun step (default 1800: `timeout`
# kills a hung one, and the script fails with exit 2).
# The README's files ask for --cpus-per-task=8; a node with fewer CPUs could never run them, so there the sbatch
# file is submitted with `--cpus-per-task=<the node's CPUs>` on the command line (which overrides its #SBATCH line)
# and share_sweep.py's `cpus_per_task=8` is replaced by the node's CPUs; the script says when it does so.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"   # otod from this checkout, in the jobs too (sbatch exports all)
SWEEP=(sweep condition --k 1..1e4:25:log --out runs/condition.parquet --no-plot)   # the README's sweep
TIMEOUT=${SLURM_LOCAL_TIMEOUT:-1800}
say() { echo "slurm_local: $*"; }
die() { echo "slurm_local: error: $*" >&2; exit 2; }

[ "$(id -u)" = 0 ] || die "run as root (it installs packages and starts SLURM's daemons)"
command -v apt-get >/dev/null || die "needs a Debian machine (apt-get)"
[ -f "$REPO/docs/running.md" ] || die "no docs/running.md in $REPO"

WORK=${SLURM_LOCAL_DIR:-$(mktemp -d /tmp/otod-slurm.XXXXXX)}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
chmod 755 "$WORK"   # munge's socket needs every directory above it searchable by all
say "started $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(hostname -s); folder $WORK; otod from $REPO"

install_packages() {
    if dpkg -s slurm-wlm munge >/dev/null 2>&1; then
        say "slurm-wlm and munge already installed"
    else
        say "apt-get install slurm-wlm munge"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
    fi
    python3 -c 'import submitit' 2>/dev/null || python3 -m pip install -q submitit
    python3 -c 'import pandas, pyarrow' || die "needs pandas and pyarrow (otod's results files)"
    say "$(slurmctld -V), $(munged -V 2>&1 | head -1), submitit $(python3 -c 'import submitit; print(submitit.__version__)')"
}

PIDS=()
stop_daemons() {
    local pid
    [ -n "${SLURM_CONF:-}" ] && scontrol shutdown >/dev/null 2>&1 || true
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -0 "$pid" 2>/dev/null && { kill -9 "$pid" 2>/dev/null || true; }
    done
    [ ${#PIDS[@]} -gt 0 ] && say "stopped the daemons (pids ${PIDS[*]})"
    PIDS=()
}
trap stop_daemons EXIT
trap 'exit 130' INT TERM

start_munge() {
    mkdir -p "$WORK/munge"
    chmod 755 "$WORK/munge"
    install -m 400 -o root -g root /etc/munge/munge.key "$WORK/munge/munge.key"
    munged -F --socket="$WORK/munge/munge.socket" --key-file="$WORK/munge/munge.key" \
        --pid-file="$WORK/munge/munged.pid" --log-file="$WORK/munge/munged.log" \
        --seed-file="$WORK/munge/munged.seed" >"$WORK/munge/munged.out" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 50); do [ -S "$WORK/munge/munge.socket" ] && break; sleep 0.2; done
    munge -n -S "$WORK/munge/munge.socket" | unmunge -S "$WORK/munge/munge.socket" >/dev/null \
        || { cat "$WORK/munge/munged.out" >&2; die "munged does not answer (log: $WORK/munge/munged.out)"; }
}

write_slurm_conf() {
    local host=$1 node
    node=$(slurmd -C | head -1)   # NodeName=... CPUs=... Boards=... RealMemory=...: what this machine has
    mkdir -p "$WORK/etc" "$WORK/state/ctld" "$WORK/state/d" "$WORK/log"
    cat >"$WORK/etc/slurm.conf" <<EOF
# one node on localhost for benchmarks/slurm_local.sh: daemons as root, no cgroups, no accounting
ClusterName=otodlocal
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$WORK/munge/munge.socket
StateSaveLocation=$WORK/state/ctld
SlurmdSpoolDir=$WORK/state/d
SlurmctldPidFile=$WORK/state/slurmctld.pid
SlurmdPidFile=$WORK/state/slurmd.pid
SlurmctldLogFile=$WORK/log/slurmctld.log
SlurmdLogFile=$WORK/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    export SLURM_CONF="$WORK/etc/slurm.conf"
}

start_slurm() {
    local host state=""
    host=$(hostname -s)
    write_slurm_conf "$host"
    slurmctld -D -f "$SLURM_CONF" >"$WORK/log/slurmctld.out" 2>&1 &
    PIDS+=($!)
    slurmd -D -f "$SLURM_CONF" >"$WORK/log/slurmd.out" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 120); do
        state=$(sinfo -h -N -n "$host" -o '%T' 2>/dev/null || true)
        [ "$state" = idle ] && break
        sleep 0.5
    done
    if [ "$state" != idle ]; then
        tail -n 20 "$WORK/log/slurmctld.log" "$WORK/log/slurmd.log" "$WORK/log/"*.out >&2 || true
        die "node $host is '${state:-not listed}' after 60 s, not idle (logs in $WORK/log)"
    fi
    say "SLURM up: $(sinfo -h -N -o 'node %N %T, %c CPUs, %m MB, partition %P')"
}

readme_block() {   # the fenced block of docs/running.md whose first lines include the marker $1
    python3 - "$REPO/docs/running.md" "$1" <<'EOF'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
blocks = [b for b in re.findall(r"^```[a-z]*\n(.*?)^```", text, re.S | re.M) if sys.argv[2] in b[:200]]
if len(blocks) != 1:
    sys.exit(f"slurm_local: error: docs/running.md has {len(blocks)} blocks that start with {sys.argv[2]!r}, not 1")
sys.stdout.write(blocks[0])
EOF
}

CPUS=8
node_cpus() {
    CPUS=$(sinfo -h -N -o '%c' | head -1)
    if [ "$CPUS" -lt 8 ]; then
        say "this node has $CPUS CPUs; the README's files ask for 8 per task, so they run with $CPUS"
    fi
}

job_summary() {   # one line per array task of job $1, from slurmctld (kept MinJobAge = 300 s after the end)
    python3 - "$(scontrol -o show job "$1")" <<'EOF'
import sys
for line in sys.argv[1].splitlines():
    f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
    print(f"  job {f.get('JobId')} array task {f.get('ArrayTaskId', '-')}: {f.get('JobState')} exit "
          f"{f.get('ExitCode')} on {f.get('NodeList')}, {f.get('NumTasks')} task(s), {f.get('NumCPUs')} CPUs, "
          f"run time {f.get('RunTime')}")
EOF
}

run_sbatch_array() {
    local dir="$WORK/sbatch" job args=()
    mkdir -p "$dir"
    readme_block "# condition.sbatch" >"$dir/condition.sbatch"
    [ "$CPUS" -lt 8 ] && args=(--cpus-per-task="$CPUS")
    say "1. sbatch: README's condition.sbatch ($(grep -c . "$dir/condition.sbatch") lines), sbatch ${args[*]} --wait"
    cd "$dir"
    job=$(timeout "$TIMEOUT" sbatch --parsable --wait "${args[@]}" condition.sbatch) \
        || { job_summary "${job%%;*}" || true; die "the sbatch array failed (outputs in $dir)"; }
    job=${job%%;*}
    job_summary "$job"
    for out in slurm-"$job"_*.out; do sed "s/^/  $out: /" "$out"; done
    readme_block "# once the array has finished" | grep '^otod merge' | sed 's/ *#.*//' >"$dir/merge.sh"
    say "   $(cat "$dir/merge.sh")"
    bash "$dir/merge.sh" | sed 's/^/  /'
}

run_submitit_array() {
    local dir="$WORK/submitit" which
    mkdir -p "$dir"
    readme_block "# share_sweep.py" >"$dir/share_sweep.py"
    [ "$CPUS" -lt 8 ] && sed -i "s/cpus_per_task=8/cpus_per_task=$CPUS/" "$dir/share_sweep.py"
    cd "$dir"
    which=$(python3 -c 'import submitit; print(submitit.AutoExecutor.which())')
    [ "$which" = slurm ] || die "submitit's AutoExecutor picks '$which' here, not slurm (is srun on PATH?)"
    say "2. submitit: README's share_sweep.py, AutoExecutor -> $which executor"
    timeout "$TIMEOUT" python3 share_sweep.py >share_sweep.log 2>&1 \
        || { cat share_sweep.log >&2; die "share_sweep.py failed (folder $dir/runs/submitit)"; }
    grep -v 'Bypassing sacct error\|accounting storage is disabled' share_sweep.log | sed 's/^/  /' || true
    say "   (submitit polled sacct $(grep -c 'Bypassing sacct error' share_sweep.log) times: with no accounting" \
        "storage each call fails, and submitit waits on its result files instead; those warnings are elided)"
    local sub
    sub=$(ls runs/submitit/*_submission.sh 2>/dev/null | head -1)
    [ -n "$sub" ] || die "submitit wrote no sbatch submission file: it did not submit to SLURM"
    say "   submitted $(basename "$sub"): $(grep -c '^#SBATCH' "$sub") #SBATCH lines, $(grep '^#SBATCH --array' "$sub")"
    job_summary "$(basename "$sub" _submission.sh)"
}

SRUN_TASKS=2
run_srun_distributed() {   # the README's `srun otod sweep ... --distributed`: one JAX process per SLURM task
    local dir="$WORK/srun" line job rc=0 cmd
    mkdir -p "$dir"
    line=$(readme_block "# two processes on one host" | grep '^srun ' | sed 's/ *#.*//')
    read -ra cmd <<<"$line"
    [ "${cmd[0]:-}" = srun ] || die "docs/running.md's distributed block has no srun line"
    cmd=(srun -n "$SRUN_TASKS" "${cmd[@]:1}")
    say "3. srun: README's '$line' as '${cmd[*]}', within timeout ${TIMEOUT} s (outside an allocation srun" \
        "starts 1 task, one process; -n $SRUN_TASKS gives the $SRUN_TASKS processes the README's line is for)"
    cd "$dir"
    timeout -k 30 "$TIMEOUT" "${cmd[@]}" </dev/null >out.txt 2>err.txt || rc=$?
    job=$(scontrol -o show job | grep -o '^JobId=[0-9]*' | cut -d= -f2 | sort -n | tail -1)
    job_summary "$job"
    sed 's/^/  err: /' err.txt
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then die "srun did not finish within $TIMEOUT s: killed (outputs in $dir)"; fi
    [ "$rc" = 0 ] || { cat out.txt >&2; die "srun exited $rc (outputs in $dir)"; }
    grep '^otod: process\|^results: \|^condition sweep: ' out.txt | sed 's/^/  /'
    grep -q "in $SRUN_TASKS processes" out.txt || die "process 0's report does not say $SRUN_TASKS processes ran"
    FILES[srun]=$(sed -n 's/^results: //p' out.txt)
    [ -f "${FILES[srun]}" ] || die "srun's run wrote no results file (outputs in $dir)"
    RUNS+=(srun)
}

run_one_process() {
    local dir="$WORK/single"
    mkdir -p "$dir"
    cd "$dir"
    say "4. one process, no SLURM: otod ${SWEEP[*]}"
    otod "${SWEEP[@]}" >"$dir/report.txt"
    tail -n 1 "$dir/report.txt" | sed 's/^/  /'
}

declare -A FILES=([single]=runs/condition.parquet [sbatch]=runs/condition.parquet
                  [submitit]=runs/condition.parquet)   # each run's results file, under $WORK/<run>
declare -A LABEL=([sbatch]="sbatch array" [submitit]="submitit array" [srun]="srun --distributed")
RUNS=(sbatch submitit)   # the runs compared with the one-process run (run_srun_distributed adds srun)

compare() {
    local name args=()
    for name in "${RUNS[@]}"; do args+=("${LABEL[$name]}=$WORK/$name/${FILES[$name]}"); done
    python3 - "$WORK/single/${FILES[single]}" "${args[@]}" <<'EOF'
import json, sys
import pandas as pd
import pyarrow.parquet as pq

SWEEP_IDENTITY = ("digest", "config", "chunks", "record_count", "precision", "matmul_precision")
DERIVED = ("exact_medians", "flops_per_iteration", "setup_flops")   # a sweep's report stores them; fit recomputes

def load(path):
    table = pq.read_table(path)
    meta = json.loads(table.schema.metadata[b"otod"])["meta"]
    return table.to_pandas(), {key: meta.get(key) for key in SWEEP_IDENTITY + DERIVED}

reference, reference_meta = load(sys.argv[1])
failures = []
for name, path in (arg.split("=", 1) for arg in sys.argv[2:]):
    frame, meta = load(path)
    try:
        pd.testing.assert_frame_equal(frame, reference, check_exact=True)
        same = "records identical"
    except AssertionError as error:
        same = "records DIFFER: " + " ".join(str(error).split())[:160]
        if frame.shape == reference.shape and list(frame.columns) == list(reference.columns):
            cells = ~((frame == reference) | (frame.isna() & reference.isna()))
            same += f" ({int(cells.values.sum())} cells in {int(cells.any(axis=1).sum())} records)"
        failures.append(name)
    differ = [key for key in SWEEP_IDENTITY if meta[key] != reference_meta[key]]
    if differ:
        failures.append(name)
    print(f"slurm_local:   {name}: {len(frame)} records x {frame.shape[1]} columns vs one process "
          f"{len(reference)} x {reference.shape[1]}: {same}; sweep metadata "
          + (f"DIFFERS in {differ}" if differ else f"identical ({', '.join(SWEEP_IDENTITY)})"))
    for key in DERIVED:
        if meta[key] is not None and meta[key] != reference_meta[key]:
            failures.append(name)
            print(f"slurm_local:   {name}: stored {key} DIFFERS from the one-process run's")
    absent = [key for key in DERIVED if meta[key] is None and reference_meta[key] is not None]
    if absent:
        print(f"slurm_local:   {name}: the merged file does not store {', '.join(absent)} (the one-process run's "
              "report stores them; otod fit recomputes them, compared below)")
if failures:
    print(f"slurm_local:   {', '.join(sorted(set(failures)))} differ from the one-process run")
    sys.exit(1)
EOF
}

install_packages
start_munge
start_slurm
node_cpus
run_sbatch_array
run_submitit_array
run_srun_distributed
run_one_process
compare_fits() {   # the README's next line, otod fit, on each file: the same report but for its name and run summary
    local name status=0
    for name in single "${RUNS[@]}"; do
        (cd "$WORK/$name" && otod fit "${FILES[$name]}" >fit.txt)
        grep -vxF "${FILES[$name]}" "$WORK/$name/fit.txt" | grep -v '^[a-z]* sweep: [0-9]* lanes' \
            >"$WORK/$name/fit.tables.txt"   # the file's name (first line) and its run summary aside
    done
    for name in "${RUNS[@]}"; do
        if cmp -s "$WORK/single/fit.tables.txt" "$WORK/$name/fit.tables.txt"; then
            say "  otod fit on the ${LABEL[$name]}'s file: $(wc -l <"$WORK/$name/fit.tables.txt") lines identical" \
                "to the one-process file's (its name and run-summary line aside)"
        else
            say "  otod fit on the ${LABEL[$name]}'s file DIFFERS from the one-process file's:"
            diff "$WORK/single/fit.tables.txt" "$WORK/$name/fit.tables.txt" | head -20 | sed 's/^/    /'
            status=1
        fi
    done
    return "$status"
}

say "5. compare (pandas, exact; run metadata ignored), then otod fit on each"
status=0
compare || status=$?
compare_fits || status=1
if [ "$status" = 0 ]; then
    say "PASS: the sbatch array, the submitit array and srun --distributed on SLURM each gave the one-process" \
        "run's records, identical (and the same otod fit report)"
else
    say "FAIL: a SLURM run's file differs from the one-process run (lines above; files in $WORK)"
fi
stop_daemons
say "finished $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
exit "$status"
