#!/bin/sh
# bench/compare.sh - ccomm (ccperf) and Open MPI (mpi_bench) side by side.
#
# Both run alternately in the same run (the order flips every launch), for
# each collective, rank count and transport, several launches each; the
# summary gives per size the median time and bus bandwidth of each, and the
# ratio Open MPI time / ccomm time, i.e. ccomm/Open MPI busbw (> 1: ccomm is
# faster), each library's fastest and slowest launch, and whether every
# ccomm launch beat every Open MPI launch ("ahead"), lost to every one
# ("behind"), or the two interleave ("overlap": this run does not settle
# on which side of 1 the cell lies; with 3 launches each, equal libraries
# land "ahead" or "behind" by chance in one cell of twenty each), and the
# ratio of the runs that stayed in the close placement only (line_rtt
# before and after each library's run, below); a count per transport and
# rank count follows the table. The machine is noisy: only figures from one run are
# comparable.
#
#   bench/compare.sh                 full run (about 90 minutes on 2 busy cores)
#   bench/compare.sh --quick         1 launch, allreduce only, shm, 2 ranks
#   bench/compare.sh --colls "allreduce broadcast" --ranks 2 --transports shm --launches 5
#   bench/compare.sh --quick --plot docs/img/compare.svg
#   bench/compare.sh --launches 3 --recheck 1 --out table.md   the table, then every cell
#                                    below 1 again, alone, in 5 pairs
#
# Options: --build DIR (default build), --launches N, --colls LIST, --ranks LIST,
# --transports LIST (shm tcp), --max BYTES (largest size, default 64M),
# --out FILE (also write the markdown table there), --keep (keep raw results),
# --budget BYTES (per size and placement, default 256M; 64M quarters a run),
# --iters N and --warmup N (per size, default 1000 and 10000, the warm-up
# capped by --budget as the iterations are; the 8-byte allreduce row always
# runs 2000 after 5000),
# --plot FILE.svg (also draw busbw against size, log-log, one panel per
# collective and transport, ccomm and Open MPI per rank count, from the
# same run's medians; needs gnuplot: apt-get install gnuplot-nox),
# --bind core|none (both launchers bind their ranks so: ccrun --bind-to,
# mpirun --bind-to; by default each does as it does by default: ccrun does
# not bind, mpirun binds each rank to a core up to 2 ranks, and not at all
# when the ranks outnumber the cores),
# --recheck BELOW (after the table, measure again each cell whose ratio came out below
# BELOW, alone: one size per launch, --recheck-pairs N alternating pairs, default 5, each
# library's runs with their placement; a second table gives per cell the ratio of those
# pairs, their spread and verdict, and the ratios of the close runs and of the far runs
# apart, which say whether the cell is slower or only ran in a worse placement).
# ccomm's times are its out-of-place column, except broadcast's: MPI_Bcast
# works on one buffer, which is ccomm's in-place broadcast (out of place the
# root also copies its input, which Open MPI's run does not; tables before
# 2026-12-02 compared that column, copy included).
# Before and after each launch's runs bench/line_rtt times a cache line's round trip between
# CPUs 0 and 1; the log and the table's header give it (about 100 ns close, about 500 far
# apart on this project's VM, whose hypervisor moves its vCPUs: a launch in the far placement
# halves the cells that hand lines between ranks, for both libraries or for one).
# Needs Open MPI (mpicc, mpirun); installs openmpi-bin and libopenmpi-dev
# with apt-get when mpicc is missing.
set -eu

SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=build
LAUNCHES=3
COLLS="allreduce broadcast allgather reduce_scatter alltoall"
RANKS="2 4"
TRANSPORTS="shm tcp"
MAX=64M
OUT=""
PLOT=""
KEEP=0
BIND="" # empty: each launcher's default (ccrun: none; mpirun: core up to 2 ranks)
RECHECK=""     # --recheck BELOW: cells to measure again after the table (empty: none)
RECHECK_PAIRS=5
# Iterations per size, at most (--budget caps large sizes): small ops take well under a
# microsecond, and 100 of them (the old default) were 50 us of work, which one timer tick or
# a cold line shifted by 20-50 %; 1000 settle them.
# Warm-up: what a running job sees, not a process's first milliseconds. ccperf and mpi_bench
# both wait 30 ms after init (--settle: ccomm's op stamps read clock_gettime until the TSC
# line is drawn, 20 ms after init), and 10000 calls of the first size cover the flight
# recorder's first lap (4096 entries, its lines cold from memory). With 100 warm-up calls
# (until 2026-12-03) the small cells timed that start: ccomm's 16-byte shm broadcast at
# 2 ranks took 0.43 us with neither, 0.32 with the wait, 0.18 with both; Open MPI's
# 0.17-0.18 either way (docs/performance.md, "Morning of 2026-12-03").
ITERS=1000
WARMUP=10000
BUDGET=256M # bytes per size: 64 MiB runs 5 iterations, 1 MiB 257, 256 KiB and smaller 1000

while [ $# -gt 0 ]; do
    case "$1" in
    --quick) LAUNCHES=1; COLLS=allreduce; RANKS=2; TRANSPORTS=shm; BUDGET=128M; ITERS=10 ;;
    --build) BUILD=$2; shift ;;
    --launches) LAUNCHES=$2; shift ;;
    --colls) COLLS=$2; shift ;;
    --ranks) RANKS=$2; shift ;;
    --transports) TRANSPORTS=$2; shift ;;
    --max) MAX=$2; shift ;;
    --budget) BUDGET=$2; shift ;;
    --iters) ITERS=$2; shift ;;
    --warmup) WARMUP=$2; shift ;;
    --out) OUT=$2; shift ;;
    --plot) PLOT=$2; shift ;;
    --keep) KEEP=1 ;;
    --bind) BIND=$2; shift ;;
    --recheck) RECHECK=$2; shift ;;
    --recheck-pairs) RECHECK_PAIRS=$2; shift ;;
    -h|--help) sed -n '2,/^[^#]/p' "$0" | sed -n 's/^# \{0,1\}//p'; exit 0 ;;
    *) echo "compare.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
for v in "$ITERS" "$WARMUP" "$LAUNCHES" "$RECHECK_PAIRS"; do
    case "$v" in '' | *[!0-9]*)
        echo "compare.sh: \"$v\" is not a whole number (--iters, --warmup, --launches, --recheck-pairs)" >&2
        exit 2 ;;
    esac
done
[ "$RECHECK_PAIRS" -ge 1 ] || { echo "compare.sh: --recheck-pairs \"$RECHECK_PAIRS\": at least 1" >&2; exit 2; }
case "$RECHECK" in
'') ;;
*[!0-9.]* | .* | *.*.* | *.)
    echo "compare.sh: --recheck \"$RECHECK\": expected a ratio such as 1 or 0.9" >&2; exit 2 ;;
esac
case "$BIND" in '' | core | none) ;;
*) echo "compare.sh: --bind \"$BIND\": expected core or none" >&2; exit 2 ;;
esac
case "$BUILD" in /*) ;; *) BUILD="$SRC/$BUILD" ;; esac
. "$SRC/bench/bench_lib.sh"
bench_check_plot compare.sh "$PLOT"

# ---- build ---------------------------------------------------------------------------------
bench_need_tools compare.sh "$SRC" "$BUILD"
TMP=$(mktemp -d /tmp/ccomm-compare.XXXXXX)
trap '[ "$KEEP" = 1 ] || rm -rf "$TMP"' EXIT
MPIB=$(bench_mpi_prog "$SRC" "$BUILD" "$TMP" mpi_bench -lm)
RES="$TMP/results.tsv"
: >"$RES"

# ---- one launch of each ----------------------------------------------------------------------
# Rows "lib transport ranks coll size time_us busbw placement" go to $RES; the placement
# (close, far, moved or unknown) is that of the one run, from line_rtt just before and after.
run_ccomm() { # transport ranks coll -b -e -f iters warmup
    json="$TMP/cc.json"
    rm -f "$json"
    pb=$(rtt)
    CCOMM_TRANSPORT=$([ "$1" = tcp ] && echo tcp || echo auto) CCOMM_LOG_LEVEL=ERROR \
        timeout 900 "$BUILD/bin/ccrun" --no-prefix ${BIND:+--bind-to "$BIND"} -n "$2" "$BUILD/bin/ccperf" "$3" \
        -b "$4" -e "$5" -f "$6" -n "$7" -w "$8" -c 0 --budget "$BUDGET" -J "$json" \
        >"$TMP/cc.out" 2>&1 || { echo "ccperf failed:" >&2; tail -5 "$TMP/cc.out" >&2; return 0; }
    place=$(bench_place "$pb" "$(rtt)")
    python3 - "$json" "$1" "$2" "$3" "$place" >>"$RES" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
# MPI_Bcast has one buffer: ccomm's in-place broadcast is the same call. Out of place its root
# also copies sendbuf to recvbuf, work Open MPI's run does not do.
col = "in_place" if sys.argv[4] == "broadcast" else "out_of_place"
for r in d["results"]:
    o = r[col]
    print("ccomm", sys.argv[2], sys.argv[3], sys.argv[4], r["size"], o["time_us"], o["busbw"],
          sys.argv[5])
EOF
}

run_ompi() { # transport ranks coll -b -e -f iters warmup
    mca=""
    [ "$1" = tcp ] && mca="--mca btl tcp,self --mca pml ob1"
    pb=$(rtt)
    # shellcheck disable=SC2086
    timeout 900 mpirun --allow-run-as-root --oversubscribe ${BIND:+--bind-to "$BIND"} -n "$2" $mca "$MPIB" "$3" \
        -b "$4" -e "$5" -f "$6" -n "$7" -w "$8" --budget "$BUDGET" >"$TMP/mpi.out" 2>&1 ||
        { echo "mpi_bench failed:" >&2; tail -5 "$TMP/mpi.out" >&2; return 0; }
    place=$(bench_place "$pb" "$(rtt)")
    awk -v t="$1" -v n="$2" -v c="$3" -v p="$place" '!/^#/ && NF >= 5 && $NF != "WRONG" {
        print "ompi", t, n, c, $1, $3, $5, p }' "$TMP/mpi.out" >>"$RES"
}

# The cache-line round trip between the first two CPUs, in ns ("?" without bench/line_rtt).
rtt() { bench_rtt "$BUILD/bin/line_rtt"; }
: >"$TMP/rtt.tsv"

START=$(date -u '+%Y-%m-%d %H:%M UTC')
echo "# compare.sh: $LAUNCHES launches; colls: $COLLS; ranks: $RANKS; transports: $TRANSPORTS; budget $BUDGET" >&2
for l in $(seq 1 "$LAUNCHES"); do
    for tp in $TRANSPORTS; do
        for n in $RANKS; do
            before=$(rtt)
            echo "# launch $l/$LAUNCHES: $tp, $n ranks (load: $(cut -d' ' -f1-3 /proc/loadavg);" \
                "cache-line round trip cpu 0-1: $before ns)" >&2
            # 8-byte latency: many iterations of one size.
            # 5000 warm-up calls: the flight recorder's ring (4096 entries) is first written then
            # (its pages are mapped populated, but its lines come cold from memory on the first lap).
            case " $COLLS " in *" allreduce "*) bench_both "$l" "$tp" "$n" allreduce 8 8 2 2000 5000 ;; esac
            for c in $COLLS; do
                bench_both "$l" "$tp" "$n" "$c" 16 "$MAX" 4 "$ITERS" "$WARMUP"
            done
            echo "$tp $n $l $before $(rtt)" >>"$TMP/rtt.tsv"
        done
    done
done

# ---- summary -------------------------------------------------------------------------------
# One program for the table and for the cells measured again (the same medians, verdicts and
# placement rules); its first argument says which.
SUMMARY_PY=$(cat <<'EOF'
import collections, statistics, sys
# table RES START LAUNCHES RTT BIND [BELOW CELLS]: the table; with BELOW, the cells whose ratio
#   is below it go to the file CELLS, one "transport ranks collective size" a line.
# recheck RES RECHECK_RES BELOW PAIRS: the table of the cells measured again (RECHECK_RES).
def load(path):
    rows = collections.defaultdict(list)
    for line in open(path):
        lib, tp, n, coll, size, t, bw, place = line.split()
        rows[(tp, int(n), coll, int(size), lib)].append((float(t), float(bw), place))
    return rows
def cell_keys(rows):
    return sorted({k[:4] for k in rows}, key=lambda k: (k[0] != "shm", k[1], k[2], k[3]))
def med(v, i):
    return statistics.median(x[i] for x in v) if v else float("nan")
def ratio_of(cc, om):
    # Same size, same bus factor: the time ratio is the busbw ratio, without the rounding of
    # mpi_bench's two-decimal busbw (0.00 below about 10 KB).
    ct, ot = med(cc, 0), med(om, 0)
    return ot / ct if ct > 0 else float("nan")
def verdict(cc, om):
    """Which side every launch fell on, or "overlap"; "-" without two launches of each."""
    if len(cc) < 2 or len(om) < 2:
        return "-"
    if max(x[0] for x in cc) < min(x[0] for x in om):
        return "ahead"
    if min(x[0] for x in cc) > max(x[0] for x in om):
        return "behind"
    return "overlap"
def placed_only(cc, om, place):
    """Ratio of the medians of the runs in `place` and their counts, or None without one of each."""
    c = [x[0] for x in cc if x[2] == place]
    o = [x[0] for x in om if x[2] == place]
    if not c or not o:
        return None
    return statistics.median(o) / statistics.median(c), len(c), len(o)
def placed_cell(cc, om, place):
    co = placed_only(cc, om, place)
    return f"{co[0]:.2f} ({co[1]}/{co[2]})" if co else "-"
def spread(v):
    return f"{min(x[0] for x in v):.2f}-{max(x[0] for x in v):.2f}" if v else "-"

if sys.argv[1] == "recheck":
    main, again = load(sys.argv[2]), load(sys.argv[3])
    below, pairs = sys.argv[4], sys.argv[5]
    print(f"\n## Cells measured again: every cell of the table above with a ratio below {below}, "
          f"alone (one size per launch, the table's iterations and warm-up), in {pairs} pair(s) "
          "of launches, the order flipping every pair. Each run's placement is line_rtt's just "
          "before and after it. Close and far runs only: the ratio of the medians of the runs of "
          "each library in that placement, with their counts (\"-\": none of one library). A "
          "cell at or above 1 in both was not slower than Open MPI in either placement: its "
          "table ratio compared runs in different ones.\n")
    print("| transport | ranks | collective | size (B) | table ratio | ccomm time (us) "
          "| Open MPI time (us) | ratio | ccomm spread (us) | Open MPI spread (us) "
          "| beyond spread | close runs only | far runs only |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    count = collections.Counter()
    for k in cell_keys(again):
        cc, om = again.get(k + ("ccomm",), []), again.get(k + ("ompi",), [])
        r = ratio_of(cc, om)
        t = ratio_of(main.get(k + ("ccomm",), []), main.get(k + ("ompi",), []))
        v = verdict(cc, om)
        count["cells"] += 1
        count["ratio >= 1"] += r >= 1
        count["ratio >= 0.9"] += r >= 0.9
        count[v] += 1
        co = placed_only(cc, om, "close")
        if co:
            count["close cells"] += 1
            count["close >= 1"] += co[0] >= 1
        print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {t:.2f} | {med(cc, 0):.2f} "
              f"| {med(om, 0):.2f} | {r:.2f} | {spread(cc)} | {spread(om)} | {v} "
              f"| {placed_cell(cc, om, 'close')} | {placed_cell(cc, om, 'far')} |")
    print("\n| cells measured again | ratio >= 1 | ratio >= 0.9 | ahead | overlap | behind "
          "| cells with close runs of both | of those, close ratio >= 1 |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| {count['cells']} | {count['ratio >= 1']} | {count['ratio >= 0.9']} "
          f"| {count['ahead']} | {count['overlap']} | {count['behind']} "
          f"| {count['close cells']} | {count['close >= 1']} |")
    sys.exit(0)

rows = load(sys.argv[2])
rtt = collections.defaultdict(list)
for line in open(sys.argv[5]):
    tp, n, l, before, after = line.split()
    rtt[(tp, n)].append(f"{before}/{after}")
keys = cell_keys(rows)
below = float(sys.argv[7]) if len(sys.argv) > 7 and sys.argv[7] else None
cells = open(sys.argv[8], "w") if below is not None else None
print(f"Run of {sys.argv[3]}, {sys.argv[4]} launch(es) each; medians. "
      "ratio = Open MPI time / ccomm time = ccomm busbw / Open MPI busbw "
      "(> 1: ccomm faster). CPU binding: "
      + (f"both launchers --bind-to {sys.argv[6]}" if sys.argv[6] else
         "each launcher's default (ccrun: none; mpirun: a core per rank up to 2 ranks)")
      + ".\n")
if rtt:
    print("Cache-line round trip between CPUs 0 and 1 (bench/line_rtt, ns) before/after each "
          "launch: " + "; ".join(f"{tp} {n} ranks {', '.join(v)}" for (tp, n), v in rtt.items())
          + ". About 100 ns: the CPUs sit close; about 500: far apart, and every hand-over "
          "of a line between ranks costs several times more.\n")
print("The spread columns give each library's fastest and slowest launch. Beyond spread: "
      "\"ahead\" when every ccomm launch was faster than every Open MPI launch, \"behind\" "
      "when every one was slower, \"overlap\" otherwise (the two sets of launches interleave: "
      "the median ratio's side of 1 is not settled by this run); \"-\" with one launch. Where "
      "the two libraries are equal, three launches each fall all on one side by chance one time "
      "in ten (one in twenty for each side): in a table of 244 cells a dozen of each is "
      "chance, so a single cell's verdict is a lead to measure again, not a finding.\n")
print("Close runs only: the ratio of the medians of the runs that began and ended in the close "
      "placement (line_rtt under 250 ns just before and just after that library's run), with "
      "how many of each library's runs that was; \"-\" when one library had none. On this "
      "project's VM a far run of either library moves a small cell by more than the two differ.\n")
print("| transport | ranks | collective | size (B) | ccomm time (us) | ccomm busbw (GB/s) "
      "| Open MPI time (us) | Open MPI busbw (GB/s) | ratio | ccomm spread (us) "
      "| Open MPI spread (us) | beyond spread | close runs only |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
groups = collections.defaultdict(collections.Counter)
for k in keys:
    cc, om = rows.get(k + ("ccomm",), []), rows.get(k + ("ompi",), [])
    ct, cb, ot, ob = med(cc, 0), med(cc, 1), med(om, 0), med(om, 1)
    ratio = ratio_of(cc, om)
    if cells and ratio < below:
        print(*k, file=cells)
    v = verdict(cc, om)
    g = groups[(k[0], k[1])]
    g["cells"] += 1
    g["ratio >= 1"] += ratio >= 1
    g["ratio < 0.9"] += ratio < 0.9
    g[v] += 1
    co = placed_only(cc, om, "close")
    if co:
        g["close cells"] += 1
        g["close >= 1"] += co[0] >= 1
    cs = placed_cell(cc, om, "close")
    print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {ct:.2f} | {cb:.3f} | {ot:.2f} | {ob:.3f} "
          f"| {ratio:.2f} | {spread(cc)} | {spread(om)} | {v} | {cs} |")
print("\n| transport | ranks | cells | ratio >= 1 | ratio < 0.9 | ahead | overlap | behind "
      "| cells with close runs of both | of those, close ratio >= 1 |")
print("|---|---|---|---|---|---|---|---|---|---|")
for (tp, n), g in sorted(groups.items(), key=lambda kv: (kv[0][0] != "shm", kv[0][1])):
    print(f"| {tp} | {n} | {g['cells']} | {g['ratio >= 1']} | {g['ratio < 0.9']} | {g['ahead']} "
          f"| {g['overlap']} | {g['behind']} | {g['close cells']} | {g['close >= 1']} |")
EOF
)
python3 -c "$SUMMARY_PY" table "$RES" "$START" "$LAUNCHES" "$TMP/rtt.tsv" "$BIND" "$RECHECK" \
    "$TMP/cells.txt" >"$TMP/table.md"

# ---- the cells measured again (--recheck) ------------------------------------------------------
# One size per launch, the table's iterations and warm-up (the 8-byte allreduce: its own row's),
# pairs alternating as the launches do. The runners read no input: the cell list stays on fd 3.
if [ -n "$RECHECK" ]; then
    RES="$TMP/recheck.tsv"
    : >"$RES"
    ncells=$(wc -l <"$TMP/cells.txt")
    echo "# recheck: $ncells cell(s) with a ratio below $RECHECK, $RECHECK_PAIRS pair(s) each" >&2
    i=0
    exec 3<"$TMP/cells.txt"
    while read -r tp n c size <&3; do
        i=$((i + 1))
        echo "# recheck $i/$ncells: $tp, $n ranks, $c, $size B (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
        for p in $(seq 1 "$RECHECK_PAIRS"); do
            if [ "$c" = allreduce ] && [ "$size" = 8 ]; then
                bench_both "$p" "$tp" "$n" allreduce 8 8 2 2000 5000 </dev/null
            else
                bench_both "$p" "$tp" "$n" "$c" "$size" "$size" 2 "$ITERS" "$WARMUP" </dev/null
            fi
        done
    done
    exec 3<&-
    python3 -c "$SUMMARY_PY" recheck "$TMP/results.tsv" "$RES" "$RECHECK" "$RECHECK_PAIRS" \
        >>"$TMP/table.md"
fi
cat "$TMP/table.md"
[ -z "$OUT" ] || cp "$TMP/table.md" "$OUT"
[ -z "$PLOT" ] || "$SRC/bench/compare_plot.sh" "$TMP/results.tsv" "$PLOT" "$START, $LAUNCHES launch(es), medians"
[ "$KEEP" = 0 ] || echo "# raw results kept in $TMP" >&2
