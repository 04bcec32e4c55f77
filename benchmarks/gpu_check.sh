#!/usr/bin/env bash
# The GPU checks of issue 20, item 7, as one prepared script (a lent GPU's time is short: every step has its own
# timeout, and the log and results are written as they come, so a step cut off loses only itself).
#
#   bash benchmarks/gpu_check.sh engine DIR     # device, float32 matmul precision, whole sweeps, bench_accelerator
#   bash benchmarks/gpu_check.sh roofline DIR [ROWS] [REPEATS] [SECONDS]   # roofline.py's table, records kept
#   bash benchmarks/gpu_check.sh trip DIR      # issue 38: K steps a trip and GPU blocks, whole commands, workloads
#
# Run from the repository root, with a JAX that sees the GPU (no install needed: PYTHONPATH is the checkout).
# Records are compared with a CPU's afterwards (benchmarks/compare_records.py); nothing here needs this machine's
# CPU results.
set -u
TRIP_SETTINGS=${TRIP_SETTINGS:-1:128,16:128,1:cap,4:cap,16:cap,32:cap}
part=${1:?engine or roofline}
out=${2:?output folder}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
log=$out/log-$part.txt

step() {  # step SECONDS COMMAND...: run it with a timeout, its output and wall time into the log and stdout
    local limit=$1
    shift
    local start
    start=$(date +%s.%N)
    echo "=== $(date -u +%H:%M:%S) $*" | tee -a "$log"
    timeout "$limit" "$@" 2>&1 | tee -a "$log"
    local rc=${PIPESTATUS[0]}
    echo "=== exit $rc, wall $(python3 -c "print(f'{$(date +%s.%N) - $start:.2f}')") s" | tee -a "$log"
}

case $part in
engine)
    step 30 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    step 60 python3 -c "
import jax, jaxlib, optax, numpy, pandas, pyarrow, contextlib
print('jax', jax.__version__, 'jaxlib', jaxlib.__version__, 'optax', optax.__version__, 'numpy', numpy.__version__,
      'pandas', pandas.__version__, 'pyarrow', pyarrow.__version__)
print(jax.devices(), jax.devices()[0].device_kind, jax.default_backend())
a = numpy.random.default_rng(0).standard_normal((512, 512)).astype(numpy.float32)
exact = a.astype(numpy.float64) @ a.astype(numpy.float64)
for p in (None, 'high', 'highest'):
    with jax.default_matmul_precision(p) if p else contextlib.nullcontext():
        y = numpy.asarray(jax.jit(lambda x: x @ x)(a))
    print(f'float32 512x512 matmul, precision {p}: max relative error {abs(y - exact).max() / abs(exact).max():.2e}')
"
    step 200 python3 benchmarks/bench_accelerator.py --repeats 5 --json "$out/accelerator.json"
    for run in cold warm-fill warm; do
        dir=/tmp/eigen-$run
        [ "$run" = cold ] && dir=$out/eigen
        cache=/tmp/xla-cache
        [ "$run" = cold ] && cache=off
        OTOD_COMPILATION_CACHE=$cache step 90 python3 -m otod sweep condition --k 1..100 --no-plot --out "$dir"
    done
    OTOD_COMPILATION_CACHE=off step 90 python3 -m otod sweep condition --k 1..100 --basis rotated --no-plot \
        --out "$out/rotated"
    JAX_DEFAULT_MATMUL_PRECISION=highest OTOD_COMPILATION_CACHE=off step 90 python3 -m otod sweep condition \
        --k 1..100 --basis rotated --no-plot --out "$out/rotated-highest"
    OTOD_COMPILATION_CACHE=off step 120 python3 -m otod sweep depth --depth 4,8 --init xavier --seeds 8 --no-plot \
        --out "$out/depth"
    ;;
trip)
    step 30 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    step 60 python3 -c "import jax, optax; print('jax', jax.__version__, 'optax', optax.__version__, jax.devices())"
    # the default condition sweep, cold, the cost model's K and blocks (new) against the CPU's costs (old), alternated
    old='import sys, otod.core.device_costs as d; d.COSTS.update(gpu=d.CPU, cuda=d.CPU); from otod.cli import main; main()'
    for r in 1 2; do
        OTOD_COMPILATION_CACHE=off step 60 python3 -m otod sweep condition --k 1..100 --no-plot --out "$out/cond-new-$r"
        OTOD_COMPILATION_CACHE=off step 60 python3 -c "$old" sweep condition --k 1..100 --no-plot \
            --out "$out/cond-old-$r"
    done
    step 150 python3 benchmarks/bench_trip.py --rows condition-eigen,toy --settings "$TRIP_SETTINGS" --repeats 3 \
        --json "$out/trip-condition-toy.json"
    # the network workloads' default commands, timed (the compilation cache on, as a user has it; fresh machine)
    step 90 python3 -m otod sweep net --no-plot --out "$out/net"
    step 60 python3 -m otod noise-scale --model otod.nets.model.zoo:transformer --out "$out/transformer-noise"
    step 60 python3 -m otod curvature --model otod.nets.model.zoo:transformer --out "$out/transformer-curvature"
    step 90 python3 -m otod curvature --data teacher --width 1000 --depth 3 --examples 100000 --steps 0 --k 1 \
        --probes 1 --lanczos-steps 2 --yes --out "$out/teacher-1e6"
    step 150 python3 benchmarks/bench_trip.py --rows depth --settings "$TRIP_SETTINGS" --repeats 2 \
        --json "$out/trip-depth.json"
    ;;
roofline)
    rows=${3:-condition-eigen,condition-rotated,depth,toy,noise-simulate,regression,net}
    step "${5:-560}" python3 benchmarks/roofline.py --repeats "${4:-5}" --rows "$rows" --keep "$out/records" \
        --json "$out/roofline.json"
    tar czf "$out/records.tgz" -C "$out" records && rm -r "$out/records"  # one file back, not one per row
    ;;
*)
    echo "gpu_check.sh: the part is engine or roofline, not $part" >&2
    exit 2
    ;;
esac
