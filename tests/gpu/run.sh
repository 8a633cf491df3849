#!/bin/sh
# tests/gpu/run.sh - every GPU test and the GPU benchmarks, on a machine with an NVIDIA GPU.
#
#   tests/gpu/run.sh [--case NAME] [BUILD_DIR]
#
# BUILD_DIR (default ./build) must hold a build with the CUDA plugin; when the programs are
# missing it is configured and built first (CCOMM_WITH_CUDA=ON, all cores). Results (logs,
# dumps, benchmark JSON, summary.txt) go to $OUT when set, else BUILD_DIR/gpu-results.
# Without a usable CUDA device it prints "skipped: no CUDA device" and exits 77.
#
# Cases (all by default, in this order; each under its own time limit, ~5 min in all on one
# H200 plus the build). NCCL cases run one rank per GPU (NCCL refuses two ranks on one GPU):
# world size 1 on a one-GPU machine. Paths must not contain spaces.
#   math       the device arithmetic vs the host kernels (CPU)
#   nccl       one rank, engine nccl (real NCCL): every dtype x op, every collective row
#   timing     the same with CCOMM_GPU_TIMING=cupti and =nccl-profiler: kernel times and
#              NCCL's algorithm/protocol in the recorder dump
#   hang       an op held past its deadline on the GPU times out, fails the comm, is dumped
#   native2    engine native, 2 ranks sharing the GPU: one-shot, two-shot, ring
#   native4    the same with 4 ranks
#   window2    RMA windows over CUDA IPC (tests/gpu/gpu_window.cu), 2 ranks sharing the GPUs:
#              puts of 1 B..1 MiB at odd offsets checked after their signals, many-to-one,
#              get, flush, bad input, destroy with ops pending; then a wait for a signal
#              never sent times out and fails the comm
#   window4    the same checks with 4 ranks
#   bench      kernel bandwidth vs cudaMemcpy; host overhead per GPU op (recorder on/off,
#              tracker polls 1 ms apart) against NCCL alone and NCCL between two events
#   torch      the PyTorch backend on CUDA tensors vs CPU (tests/gpu/torch_cuda.py): needs a
#              CUDA build of torch and the backend built against it; skipped (77 when it is
#              the only case) where torch has no CUDA
# Exit status: 0 when every case passed, 1 otherwise; summary.txt says which.
# A machine that cannot build ccomm (no jansson or OpenSSL headers): tests/gpu/kit.sh.
set -u

CASE=all
if [ "${1:-}" = "--case" ]; then
    CASE=$2
    shift 2
fi
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-$SRC/build}" 2>/dev/null && pwd || echo "${1:-$SRC/build}")
case "$BUILD" in
*[[:space:]]*) echo "run.sh: the build directory '$BUILD' holds a space; use one without" >&2; exit 2 ;;
esac
RES=${OUT:-$BUILD/gpu-results}
mkdir -p "$RES" || exit 1
SUMMARY=$RES/summary.txt
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:$BUILD/lib:${LD_LIBRARY_PATH:-}"
export CCOMM_CUDA_PLUGIN="$BUILD/lib/libccomm-cuda.so"
export CCOMM_RECORDER_DIR="$RES/rings" CCOMM_DUMP_DIR="$RES/dumps"
export CCOMM_LOG_LEVEL=${CCOMM_LOG_LEVEL:-WARN}
APP=$BUILD/tests/gpu_app
WIN=$BUILD/tests/gpu_window
CCRUN=$BUILD/bin/ccrun
FAILED=0
SKIPPED=0

say() { echo "$*" | tee -a "$SUMMARY"; }

build_if_needed() {
    [ -x "$APP" ] && [ -x "$WIN" ] && [ -x "$CCRUN" ] && [ -f "$CCOMM_CUDA_PLUGIN" ] && return 0
    say "building $BUILD (CUDA plugin and GPU tests)"
    t0=$(date +%s)
    cmake -S "$SRC" -B "$BUILD" -DCCOMM_WITH_CUDA=ON >"$RES/build.log" 2>&1 &&
        cmake --build "$BUILD" -j"$(nproc)" --target ccomm ccomm_cuda gpu_app gpu_window ccrun \
            test_cuda_math cuda_kernels_bench >>"$RES/build.log" 2>&1
    rc=$?
    say "build: rc $rc in $(( $(date +%s) - t0 )) s (log: build.log)"
    [ $rc -eq 0 ] || { tail -30 "$RES/build.log"; exit 1; }
}

# run NAME LIMIT_S COMMAND...: log to NAME.log, record pass/fail with the time taken.
run() {
    name=$1 limit=$2
    shift 2
    t0=$(date +%s)
    timeout -k 10 "$limit" "$@" >"$RES/$name.log" 2>&1
    rc=$?
    dt=$(( $(date +%s) - t0 ))
    if [ $rc -eq 0 ]; then
        say "PASS $name (${dt} s)"
    else
        FAILED=1
        say "FAIL $name (rc $rc after ${dt} s; last lines of $name.log:)"
        tail -15 "$RES/$name.log" | sed 's/^/    /' | tee -a "$SUMMARY"
    fi
    return $rc
}

# check NAME FUNCTION ARGS...: a quick check of a case's output (no time limit needed).
check() {
    name=$1
    shift
    if "$@" >"$RES/$name.log" 2>&1; then
        say "PASS $name: $(tail -1 "$RES/$name.log")"
    else
        FAILED=1
        say "FAIL $name:"
        sed 's/^/    /' "$RES/$name.log" | tail -15 | tee -a "$SUMMARY"
    fi
}

# The recorder dump's entries of the nccl engine must carry GPU kernel times (and a detail).
check_gpu_times() {
    python3 - "$1" "$2" "$3" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
want = sys.argv[2]
ops = [e for e in d.get("entries", []) if e["ccomm"]["engine"] == "nccl"
       and e["ccomm"]["state"] == "completed"]
timed = [e for e in ops if e["ccomm"].get("gpu_end_ns", 0) >= e["ccomm"].get("gpu_start_ns", 0) > 0]
kinds = sorted({e["ccomm"].get("gpu_kernel", "") for e in timed})
print("%d completed nccl ops, %d with kernel times; details %s" % (len(ops), len(timed), kinds))
# With one rank NCCL launches kernels only for AVG and PREMUL_SUM (the rest are copies or
# nothing): some ops must be timed; with several ranks every collective launches kernels.
nranks = int(sys.argv[3])
need = 1 if nranks == 1 else len(ops) // 2
ok = len(ops) > 0 and len(timed) >= need
ok = ok and (want != "cupti" or "cupti" in kinds)
ok = ok and (want != "nccl-profiler" or any("/" in k for k in kinds))
sys.exit(0 if ok else 1)
EOF
}

check_hang_dump() {
    python3 - "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
st = [e["ccomm"]["state"] for e in d.get("entries", []) if e["profiling_name"] == "ccomm:all_reduce"]
print("all_reduce states:", st)
sys.exit(0 if "timed_out" in st else 1)
EOF
}

case_math() { run math 120 "$BUILD/tests/test_cuda_math"; }

# NCCL needs one GPU per rank: the NCCL cases run one rank per GPU (one H200: one process).
# The launcher's words are split on purpose (nothing at one GPU); CCRUN is a path without spaces
# (the build's bin/; a build path with a space is refused above).
nccl_launcher() {
    [ "$NGPU" -gt 1 ] && echo "$CCRUN -n $NGPU --timeout 170"
}

# shellcheck disable=SC2046
case_nccl() { run nccl 180 $(nccl_launcher) "$APP" nccl "$RES/nccl-events.json"; }

case_timing() {
    for t in cupti nccl-profiler; do
        # shellcheck disable=SC2046
        run "timing-$t" 180 env CCOMM_GPU_TIMING=$t $(nccl_launcher) "$APP" nccl \
            "$RES/nccl-$t.json" gpu || continue
        if [ "$t" = nccl-profiler ] && [ "$NGPU" -lt 2 ]; then
            # NCCL runs a one-rank collective without its profiled kernels: nothing to time.
            say "SKIP timing-$t-check: one GPU (NCCL's one-rank path makes no profiler events)"
            continue
        fi
        check "timing-$t-check" check_gpu_times "$RES/nccl-$t.json" "$t" "$NGPU"
    done
}

case_hang() {
    run hang 120 "$APP" hang "$RES/hang.json" && check hang-check check_hang_dump "$RES/hang.json"
}

case_native() {
    n=$1
    for algo in oneshot twoshot ring; do
        run "native$n-$algo" 240 env CCOMM_CUDA_ALLREDUCE_ALGO=$algo \
            "$CCRUN" -n "$n" --timeout 230 "$APP" native
    done
}

case_window() {
    n=$1
    run "window$n" 240 "$CCRUN" -n "$n" --timeout 230 "$WIN"
    if [ "$n" = 2 ]; then
        run window-timeout 120 "$CCRUN" -n 2 --timeout 110 "$WIN" timeout
    fi
}

# The backend's ranks are torch processes: the Python with torch, and the built package.
case_torch() {
    py=${CCOMM_TEST_PYTHON:-/usr/bin/python3}
    if ! ls "$BUILD"/python/ccomm/_C*.so >/dev/null 2>&1; then
        cmake --build "$BUILD" --target ccomm_torch >>"$RES/build.log" 2>&1 || {
            say "SKIP torch: no PyTorch backend in $BUILD (torch's CMake package not found; build.log)"
            SKIPPED=1
            return 0
        }
    fi
    t0=$(date +%s)
    PYTHONPATH="$BUILD/python" CCTEST_BUILD_DIR="$BUILD" timeout -k 10 600 "$py" \
        "$SRC/tests/gpu/torch_cuda.py" >"$RES/torch.log" 2>&1
    rc=$? dt=$(( $(date +%s) - t0 ))
    if [ $rc -eq 77 ]; then
        say "SKIP torch: $(grep -m1 '^skipped' "$RES/torch.log")"
        SKIPPED=1
    elif [ $rc -eq 0 ]; then
        say "PASS torch (${dt} s): $(grep -c '^PASS' "$RES/torch.log") runs"
    else
        FAILED=1
        say "FAIL torch (rc $rc after ${dt} s; last lines of torch.log:)"
        tail -15 "$RES/torch.log" | sed 's/^/    /' | tee -a "$SUMMARY"
    fi
}

case_bench() {
    run bench-kernels 120 "$BUILD/bin/cuda_kernels_bench" 1024 && cp "$RES/bench-kernels.log" "$RES/bench-kernels.json"
    run bench-overhead-recorder-on 120 "$APP" overhead
    run bench-overhead-recorder-off 120 env CCOMM_RECORDER_ENTRIES=0 "$APP" overhead
    # The tracker's event polls share the CUDA runtime with the issuing thread: 1 ms apart.
    run bench-overhead-poll-1ms 120 env CCOMM_GPU_POLL_US=1000 "$APP" overhead
}

: >"$SUMMARY"
say "ccomm GPU tests: $(date -u +%Y-%m-%dT%H:%M:%SZ), case $CASE, build $BUILD"
build_if_needed
"$APP" probe >"$RES/probe.log" 2>&1
if [ $? -eq 77 ]; then
    if nvidia-smi -L >/dev/null 2>&1; then
        # A GPU is here but the CUDA runtime cannot use it (e.g. a driver older than CUDA 13).
        say "FAIL: nvidia-smi lists a GPU but the CUDA runtime cannot use it: $(cat "$RES/probe.log")"
        nvidia-smi >>"$SUMMARY" 2>&1
        exit 1
    fi
    # The probe's own line already reads "skipped: no CUDA device (why)".
    say "$(head -n 1 "$RES/probe.log")"
    exit 77
fi
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$NGPU" -ge 1 ] || NGPU=1
nvidia-smi -L >>"$SUMMARY" 2>&1
nvidia-smi --query-gpu=name,driver_version,memory.total,compute_mode --format=csv >>"$SUMMARY" 2>&1
T0=$(date +%s)
case $CASE in
all)
    case_math
    case_nccl
    case_timing
    case_hang
    case_native 2
    case_native 4
    case_window 2
    case_window 4
    case_bench
    case_torch
    ;;
math | nccl | timing | hang | bench | torch) "case_$CASE" ;;
native2) case_native 2 ;;
native4) case_native 4 ;;
window2) case_window 2 ;;
window4) case_window 4 ;;
*)
    echo "unknown case $CASE" >&2
    exit 2
    ;;
esac
say "done in $(( $(date +%s) - T0 )) s: $([ $FAILED -eq 0 ] && echo 'all passed' || echo 'FAILURES')"
# A single case that was skipped is reported as skipped (ctest's SKIP_RETURN_CODE), not passed.
[ $FAILED -eq 0 ] && [ $SKIPPED -eq 1 ] && [ "$CASE" != all ] && exit 77
exit $FAILED
