#!/bin/sh
# bench/put_compare.sh - ccomm's window puts (ccperf put) and Open MPI's MPI_Put
# (mpi_put) side by side, in the same patterns (docs/windows.md, "Speed against
# Open MPI"):
#
#   flush 1->1    rank 0 puts into rank 1, then flushes (osu_put_latency, -s flush), 8 B .. 2 MiB
#   flush ring    every rank puts into rank + 1, then flushes
#   signal 1->1   rank 0 puts and signals, rank 1 waits for the signal (MPI: put,
#   signal ring   flush, an accumulate on a counter, flush; the target polls it)
#   bw 1->1       a window of 64 puts, then one flush (osu_put_bw, -s flush), 16 B .. 64 MiB
#
# Both run alternately in the same run (the order flips every launch), several
# launches each; the summary gives per size the median time of each and the ratio
# Open MPI time / ccomm time (> 1: ccomm is faster). Only figures from one run
# are comparable: the machine is shared.
#
#   bench/put_compare.sh                  2 and 4 ranks, shm and tcp, 3 launches
#   bench/put_compare.sh --quick          1 launch, 2 ranks, shm, 8 B .. 4 KiB, few iterations
#   bench/put_compare.sh --ranks 2 --transports shm --launches 5 --out table.md --plot put.svg
#
# Options: --build DIR (default build), --launches N, --ranks LIST, --transports
# LIST (shm tcp), --patterns LIST (flush1 flushring signal1 signalring bw1),
# --max BYTES (largest bandwidth size, default 64M; the latency sizes stop at 4M or there),
# --win allocate|create (MPI's window, default allocate), --budget BYTES (per
# size, default 256M), --mpiargs "ARGS" (more for mpirun, e.g. "--mca osc sm"),
# --out FILE (also write the table there), --plot FILE.svg (time and bandwidth
# against size, from the same medians; needs gnuplot), --keep.
# Over tcp ccomm refuses windows today: the script says so instead of a number.
set -eu

SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=build
LAUNCHES=3
RANKS="2 4"
TRANSPORTS="shm tcp"
PATTERNS="flush1 flushring signal1 signalring bw1"
MAX=64M
LATMAX=4M
WIN=allocate
BUDGET=256M
ITERS=1000 WARMUP=100   # latency patterns (fewer for large sizes through the budget)
BWITERS=100 BWWARMUP=5  # the bandwidth pattern: each call is 64 puts
OUT="" PLOT="" KEEP=0 MPIARGS=""

while [ $# -gt 0 ]; do
    case "$1" in
    --quick) LAUNCHES=1; RANKS=2; TRANSPORTS=shm; MAX=4K; LATMAX=4K; ITERS=20; WARMUP=2
             BWITERS=5; BWWARMUP=1 ;;
    --build) BUILD=$2; shift ;;
    --launches) LAUNCHES=$2; shift ;;
    --ranks) RANKS=$2; shift ;;
    --transports) TRANSPORTS=$2; shift ;;
    --patterns) PATTERNS=$2; shift ;;
    --max) MAX=$2; shift ;;
    --win) WIN=$2; shift ;;
    --mpiargs) MPIARGS=$2; shift ;;
    --budget) BUDGET=$2; shift ;;
    --out) OUT=$2; shift ;;
    --plot) PLOT=$2; shift ;;
    --keep) KEEP=1 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "put_compare.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
case "$BUILD" in /*) ;; *) BUILD="$SRC/$BUILD" ;; esac
case "$WIN" in allocate|create) ;; *) echo "put_compare.sh: --win \"$WIN\": allocate or create" >&2; exit 2 ;; esac
for p in $PATTERNS; do
    case "$p" in flush1|flushring|signal1|signalring|bw1) ;;
    *) echo "put_compare.sh: unknown pattern \"$p\" (flush1 flushring signal1 signalring bw1)" >&2; exit 2 ;;
    esac
done
for tp in $TRANSPORTS; do
    case "$tp" in shm|tcp) ;; *) echo "put_compare.sh: unknown transport \"$tp\" (shm tcp)" >&2; exit 2 ;; esac
done
# The latency sweep stops at 4 MiB (osu_put_latency's largest), or at --max below it.
[ "$(numfmt --from=iec "$MAX")" -lt "$(numfmt --from=iec "$LATMAX")" ] && LATMAX=$MAX
. "$SRC/bench/bench_lib.sh"
bench_check_plot put_compare.sh "$PLOT"

# ---- build ---------------------------------------------------------------------------------
bench_need_tools put_compare.sh "$SRC" "$BUILD"
TMP=$(mktemp -d /tmp/ccomm-putcmp.XXXXXX)
trap '[ "$KEEP" = 1 ] || rm -rf "$TMP"' EXIT
MPIP=$(bench_mpi_prog "$SRC" "$BUILD" "$TMP" mpi_put)
RES="$TMP/results.tsv"
: >"$RES"

# Pattern name -> the options both programs take, and its sizes.
args_of() { # pattern
    case "$1" in
    flush1) echo "--mode flush --window 1 --origins one -b 8 -e $LATMAX -n $ITERS -w $WARMUP" ;;
    flushring) echo "--mode flush --window 1 --origins ring -b 8 -e $LATMAX -n $ITERS -w $WARMUP" ;;
    signal1) echo "--mode signal --window 1 --origins one -b 8 -e $LATMAX -n $ITERS -w $WARMUP" ;;
    signalring) echo "--mode signal --window 1 --origins ring -b 8 -e $LATMAX -n $ITERS -w $WARMUP" ;;
    bw1) echo "--mode flush --window 64 --origins one -b 16 -e $MAX -n $BWITERS -w $BWWARMUP" ;;
    esac
}

# ---- one launch of each ----------------------------------------------------------------------
# Rows "lib transport ranks pattern size time_us algbw" go to $RES; a ccomm that refuses
# windows leaves "ccomm TRANSPORT RANKS PATTERN - refused -".
run_ccomm() { # transport ranks pattern
    json="$TMP/cc.json"
    rm -f "$json"
    # shellcheck disable=SC2046
    if ! CCOMM_TRANSPORT=$([ "$1" = tcp ] && echo tcp || echo auto) CCOMM_LOG_LEVEL=ERROR \
        timeout 900 "$BUILD/bin/ccrun" --no-prefix -n "$2" "$BUILD/bin/ccperf" put -d uint8 \
        -f 4 -c 1 --budget "$BUDGET" -J "$json" $(args_of "$3") >"$TMP/cc.out" 2>&1; then
        if grep -q 'ERR_NOT_SUPPORTED' "$TMP/cc.out"; then
            if ! grep -qx "$1" "$TMP/refused" 2>/dev/null; then
                echo "$1" >>"$TMP/refused"
                echo "ccomm: windows over $1 not supported by this build" >&2
            fi
            echo "ccomm $1 $2 $3 - refused -" >>"$RES"
        else
            echo "ccperf put failed ($1, $2 ranks, $3):" >&2
            tail -5 "$TMP/cc.out" >&2
        fi
        return 0
    fi
    python3 - "$json" "$1" "$2" "$3" >>"$RES" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["results"]:
    o = r["out_of_place"]
    if o["wrong"] == 0:
        print("ccomm", *sys.argv[2:5], r["size"], o["time_us"], o["algbw"])
EOF
}

run_ompi() { # transport ranks pattern
    mca=""
    # Over tcp: btl tcp, and osc pt2pt (RMA as messages through ob1); Open MPI would otherwise
    # pick osc sm or ucx, which move the bytes through shared memory whatever the btl.
    [ "$1" = tcp ] && mca="--mca btl self,tcp --mca pml ob1 --mca osc pt2pt"
    # shellcheck disable=SC2046,SC2086
    timeout 900 mpirun --allow-run-as-root --oversubscribe -n "$2" $mca $MPIARGS "$MPIP" -f 4 \
        --budget "$BUDGET" --win "$WIN" $(args_of "$3") >"$TMP/mpi.out" 2>&1 ||
        { echo "mpi_put failed ($1, $2 ranks, $3):" >&2; tail -5 "$TMP/mpi.out" >&2; return 0; }
    awk -v t="$1" -v n="$2" -v p="$3" '!/^#/ && NF == 3 { print "ompi", t, n, p, $1, $2, $3 }' \
        "$TMP/mpi.out" >>"$RES"
}

START=$(date -u '+%Y-%m-%d %H:%M UTC')
echo "# put_compare.sh: $LAUNCHES launches; patterns: $PATTERNS; ranks: $RANKS; transports: $TRANSPORTS; MPI window: $WIN${MPIARGS:+ ($MPIARGS)}; budget $BUDGET" >&2
for l in $(seq 1 "$LAUNCHES"); do
    for tp in $TRANSPORTS; do
        for n in $RANKS; do
            echo "# launch $l/$LAUNCHES: $tp, $n ranks (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
            for p in $PATTERNS; do bench_both "$l" "$tp" "$n" "$p"; done
        done
    done
done

# ---- summary -------------------------------------------------------------------------------
python3 - "$RES" "$START" "$LAUNCHES" "MPI_Win_$WIN${MPIARGS:+, mpirun $MPIARGS}" >"$TMP/table.md" <<'EOF'
import collections, statistics, sys
NAMES = {"flush1": "put + flush, 1→1", "flushring": "put + flush, ring",
         "signal1": "put + signal + wait, 1→1", "signalring": "put + signal + wait, ring",
         "bw1": "64 puts + flush, 1→1"}
ORDER = list(NAMES)
rows, refused = collections.defaultdict(list), set()
for line in open(sys.argv[1]):
    lib, tp, n, pat, size, t, bw = line.split()
    if t == "refused":
        refused.add((tp, int(n), pat))
        continue
    rows[(tp, int(n), pat, int(size), lib)].append((float(t), float(bw)))
keys = {k[:4] for k in rows}
keys = sorted(keys, key=lambda k: (k[0] != "shm", k[1], ORDER.index(k[2]), k[3]))
print(f"Run of {sys.argv[2]}, {sys.argv[3]} launch(es) each; medians; Open MPI's window from "
      f"{sys.argv[4]}. ratio = Open MPI time / ccomm time (> 1: ccomm faster); "
      "GB/s = puts x size / time.\n")
print("| transport | ranks | pattern | size (B) | ccomm time (us) | ccomm GB/s "
      "| Open MPI time (us) | Open MPI GB/s | ratio |")
print("|---|---|---|---|---|---|---|---|---|")
def med(v, i):
    return statistics.median(x[i] for x in v) if v else float("nan")
for k in keys:
    cc, om = rows.get(k + ("ccomm",), []), rows.get(k + ("ompi",), [])
    # GB/s from the median time, for both (mpi_put prints three decimals: 0.000 for tiny puts).
    puts = 64 if k[2] == "bw1" else 1
    gbs = lambda t: puts * k[3] / t / 1e3 if t > 0 else float("nan")
    ot = med(om, 0)
    ob = gbs(ot)
    if not cc and k[:3] in refused:
        cells = "not supported | — "
        ratio = "—"
    else:
        ct = med(cc, 0)
        cb = gbs(ct)
        cells = f"{ct:.2f} | {cb:.3g} "
        ratio = f"{ot / ct:.3g}" if ct > 0 else "nan"
    print(f"| {k[0]} | {k[1]} | {NAMES[k[2]]} | {k[3]} | {cells}| {ot:.2f} | {ob:.3g} | {ratio} |")
EOF
cat "$TMP/table.md"
[ -z "$OUT" ] || cp "$TMP/table.md" "$OUT"
[ -z "$PLOT" ] || "$SRC/bench/put_plot.sh" "$RES" "$PLOT" "$START, $LAUNCHES launch(es), medians"
[ "$KEEP" = 0 ] || echo "# raw results kept in $TMP" >&2
