#!/bin/bash
# bench/fresh_bcast.sh - does Open MPI's single-copy broadcast hold when the data changes?
#
# A shm broadcast loop (bench/fresh_bcast.c; 2 ranks unless --ranks says more) over an
# unchanged buffer, as every benchmark times it, and over one the root writes before each
# call, as a training step does; ccomm and Open MPI, each both ways, in rounds of four
# launches with bench/line_rtt before and after each round (the VM's two placements,
# docs/performance.md). The summary gives per placement (close: both line_rtt figures under
# 250 ns; far: both over; rounds that moved, or whose line_rtt gave no figure, are listed,
# not summed) the median µs per call of each series and the ratio
# Open MPI / ccomm (> 1: ccomm faster). The root's writes are in both libraries' times.
#
#   bench/fresh_bcast.sh                         1 MiB, 400 calls a launch, 20 rounds
#   bench/fresh_bcast.sh --bytes 4194304 --rounds 40 --iters 200
#   bench/fresh_bcast.sh --ranks 4 --rounds 10     4 ranks (on 2 CPUs: two ranks a CPU)
#
# Options: --build DIR (build), --bytes N (1048576), --iters N (400), --rounds N (20),
# --ranks N (2).
set -eu
. "$(dirname "$0")/bench_lib.sh"
BUILD=build BYTES=1048576 ITERS=400 ROUNDS=20 RANKS=2 FAR_NS=250
while [ $# -gt 0 ]; do
    case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --bytes) BYTES=$2; shift 2 ;;
    --iters) ITERS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --ranks) RANKS=$2; shift 2 ;;
    -h|--help) sed -n '2,/^[^#]/p' "$0" | sed -n 's/^# \{0,1\}//p'; exit 0 ;;
    *) echo "fresh_bcast.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
bench_posint fresh_bcast.sh --bytes "$BYTES"
bench_posint fresh_bcast.sh --iters "$ITERS"
bench_posint fresh_bcast.sh --rounds "$ROUNDS"
bench_posint fresh_bcast.sh --ranks "$RANKS"
for b in fresh_bcast mpi_fresh_bcast ccrun line_rtt; do
    [ -x "$BUILD/bin/$b" ] || {
        echo "fresh_bcast.sh: $BUILD/bin/$b is missing (cmake --build $BUILD --target $b;" \
             "mpi_fresh_bcast needs libopenmpi-dev)" >&2
        exit 2
    }
done
FR=$(mktemp -d /dev/shm/ccomm-freshbcast.XXXXXX)
T=$(mktemp -d /tmp/ccomm-freshbcast.XXXXXX)
trap 'rm -rf "$FR" "$T"' EXIT

rtt() { bench_rtt "$BUILD/bin/line_rtt"; }
ompi() { # fresh
    mpirun --allow-run-as-root --oversubscribe -n "$RANKS" "$BUILD/bin/mpi_fresh_bcast" \
        "$BYTES" "$1" "$ITERS" 2>"$T/err" ||
        { echo "fresh_bcast.sh: mpirun failed:" >&2; tail -3 "$T/err" >&2; exit 1; }
}
ccomm() { # fresh
    CCOMM_LOG_LEVEL=ERROR CCOMM_RECORDER_DIR="$FR" "$BUILD/bin/ccrun" --no-prefix -n "$RANKS" \
        "$BUILD/bin/fresh_bcast" "$BYTES" "$1" "$ITERS" 2>"$T/err" ||
        { echo "fresh_bcast.sh: ccrun failed:" >&2; tail -3 "$T/err" >&2; exit 1; }
}

echo "# fresh_bcast.sh: $BYTES bytes, $RANKS ranks, $ITERS calls a launch, $ROUNDS rounds;" \
    "$(uptime)"
echo "# round  line_rtt before/after  place  ompi same  ompi fresh  ccomm same  ccomm fresh (us)"
for r in $(seq "$ROUNDS"); do
    a=$(rtt)
    if [ $((r % 2)) = 1 ]; then
        os=$(ompi 0) of=$(ompi 1) cs=$(ccomm 0) cf=$(ccomm 1)
    else
        cf=$(ccomm 1) cs=$(ccomm 0) of=$(ompi 1) os=$(ompi 0)
    fi
    b=$(rtt)
    p=$(bench_place "$a" "$b" "$FAR_NS")
    printf '%6d  %10s  %-6s %10s %11s %11s %12s\n' "$r" "$a/$b" "$p" "$os" "$of" "$cs" "$cf" |
        tee -a "$T/rows"
done
python3 - "$T/rows" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for place in ("close", "far"):
    sel = [r for r in rows if r[2] == place]
    if not sel:
        print(f"{place}: no round")
        continue
    m = [statistics.median(float(r[i]) for r in sel) for i in (3, 4, 5, 6)]
    print(f"{place} ({len(sel)} rounds): median us  ompi same {m[0]:.1f}  fresh {m[1]:.1f};  "
          f"ccomm same {m[2]:.1f}  fresh {m[3]:.1f};  ompi/ccomm same {m[0] / m[2]:.2f}, "
          f"fresh {m[1] / m[3]:.2f}")
other = sum(1 for r in rows if r[2] not in ("close", "far"))
print(f"moved or unknown: {other} rounds (listed above, not summed)")
PY
