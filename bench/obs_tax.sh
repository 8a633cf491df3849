#!/bin/sh
# bench/obs_tax.sh - the observability tax: an 8-byte allreduce at 2 ranks
# with everything on (the defaults: recorder of 4096 entries, and clog
# attached with all its events) and with all of it off (CCOMM_RECORDER_ENTRIES=0,
# no clog, CCOMM_LTTNG=0; bench/obs_tax.c adds no hook of its own), the two
# alternating in one run (the order flips every launch). Each launch prints
# the median per-op time over its rounds; the summary gives the median over
# launches of each, and the median of the per-launch differences (on - off),
# in ns per op, of the median round and of the fastest round of each launch
# (on a loaded machine the fastest round is the one least disturbed by
# others), and of rank 0's process CPU time per op (all its threads: clog's
# writer too; at 1 rank, --ranks 1, the path's cost without waits). The machine is noisy: only figures of one run compare.
#
#   bench/obs_tax.sh                    7 launches of each, 21 rounds of 2000 ops
#   bench/obs_tax.sh --launches 11 --rounds 31 --ops 5000
#
# Options: --build DIR (default build), --launches N, --rounds N, --ops N,
# --ranks N (default 2), --transport T (default auto), --keep (keep the raw
# results and the clog files), --close-only (below).
#
# The placement: bench/line_rtt times a cache line's round trip between CPUs 0
# and 1 before and after each pair of launches; the summary counts the pairs
# that ran close (both under 250 ns), far (both over) or moved. On a VM whose
# vCPUs the hypervisor moves, a far or moved pair at 2 ranks differs by more
# than the tax (docs/performance.md, "Evening of 2026-12-03"). --close-only
# counts only the pairs that ran close, and runs more (at most three times
# --launches in all) until --launches of them did.
set -eu

SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/bench/bench_lib.sh"
BUILD=build
LAUNCHES=7
ROUNDS=21
OPS=2000
RANKS=2
TRANSPORT=auto
KEEP=0
CLOSE_ONLY=0
FAR_NS=250
while [ $# -gt 0 ]; do
    case "$1" in
    --build) BUILD=$2; shift ;;
    --launches) LAUNCHES=$2; shift ;;
    --rounds) ROUNDS=$2; shift ;;
    --ops) OPS=$2; shift ;;
    --ranks) RANKS=$2; shift ;;
    --transport) TRANSPORT=$2; shift ;;
    --keep) KEEP=1 ;;
    --close-only) CLOSE_ONLY=1 ;;
    -h|--help) sed -n '2,/^[^#]/p' "$0" | sed -n 's/^# \{0,1\}//p'; exit 0 ;;
    *) echo "obs_tax.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
bench_posint obs_tax.sh --launches "$LAUNCHES"
bench_posint obs_tax.sh --rounds "$ROUNDS"
bench_posint obs_tax.sh --ops "$OPS"
bench_posint obs_tax.sh --ranks "$RANKS"
case "$BUILD" in /*) ;; *) BUILD="$SRC/$BUILD" ;; esac
if [ ! -x "$BUILD/bin/obs_tax" ] || [ ! -x "$BUILD/bin/ccrun" ] || [ ! -x "$BUILD/bin/line_rtt" ]; then
    cmake -S "$SRC" -B "$BUILD" >/dev/null
    cmake --build "$BUILD" -j2 --target obs_tax ccrun line_rtt >/dev/null
fi
TMP=$(mktemp -d /tmp/ccomm-obstax.XXXXXX)
# The rings go where they go by default (RAM-backed /dev/shm), in a directory of this run.
FR=$(mktemp -d /dev/shm/ccomm-obstax.XXXXXX)
trap 'rm -rf "$FR"; [ "$KEEP" = 1 ] || rm -rf "$TMP"' EXIT
RES="$TMP/results.tsv"
: >"$RES"

one() { # launch mode
    out="$TMP/$2.$1.out"
    if [ "$2" = on ]; then
        set -- "$1" "$2" env -u CCOMM_RECORDER_ENTRIES -u CCOMM_LTTNG -u CCOMM_CLOG_EVENTS \
            CCOMM_CLOG="$TMP/clog.$1.%r.%p"
    else
        set -- "$1" "$2" env -u CCOMM_CLOG CCOMM_RECORDER_ENTRIES=0 CCOMM_LTTNG=0
    fi
    l=$1 m=$2
    shift 2
    "$@" CCOMM_RECORDER_DIR="$FR" CCOMM_TRANSPORT="$TRANSPORT" CCOMM_LOG_LEVEL=ERROR \
        timeout 600 "$BUILD/bin/ccrun" --no-prefix -n "$RANKS" "$BUILD/bin/obs_tax" \
        "$ROUNDS" "$OPS" >"$out" 2>&1 || { echo "obs_tax.sh: $m launch $l failed:" >&2; tail -5 "$out" >&2; exit 1; }
    ns=$(awk '$1 == "obs_tax" && $NF != "WRONG" { print $3, $5, $7 }' "$out")
    [ -n "$ns" ] || { echo "obs_tax.sh: $m launch $l printed no time:" >&2; tail -5 "$out" >&2; exit 1; }
    echo "$l $m $ns" >>"$RES"
    # clog's records of an "on" launch: written (event lines) and dropped (END's count).
    if [ "$m" = on ]; then
        for f in "$TMP"/clog."$l".*; do
            [ -e "$f" ] || continue
            echo "$(grep -c '^C[0-9]*|[QSEWA]|' "$f" || true)" \
                "$(sed -n 's/^END|dropped=\([0-9]*\)|.*/\1/p' "$f" | tail -n 1 | grep . || echo 0)" >>"$TMP/clog.counts"
        done
    fi
    echo "# launch $l: $m median/min $ns ns/op (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
}

rtt() { bench_rtt "$BUILD/bin/line_rtt"; }

echo "# obs_tax.sh: $LAUNCHES launches of each, $ROUNDS rounds of $OPS ops, $RANKS ranks, transport $TRANSPORT; $(uptime)" >&2
tries=$LAUNCHES
[ "$CLOSE_ONLY" = 1 ] && tries=$((3 * LAUNCHES))
: >"$TMP/place"
l=0 kept=0
while [ "$l" -lt "$tries" ] && [ "$kept" -lt "$LAUNCHES" ]; do
    l=$((l + 1))
    before=$(rtt)
    if [ $((l % 2)) = 1 ]; then one "$l" on; one "$l" off; else one "$l" off; one "$l" on; fi
    after=$(rtt)
    place=$(bench_place "$before" "$after" "$FAR_NS")
    keep=1
    [ "$CLOSE_ONLY" = 1 ] && [ "$place" != close ] && keep=0
    kept=$((kept + keep))
    echo "$l $place $before/$after $keep" >>"$TMP/place"
    echo "# launch $l: line_rtt $before/$after ns ($place)$([ "$keep" = 1 ] || echo ", not counted")" >&2
done
if [ "$kept" = 0 ]; then
    echo "obs_tax.sh: no pair of launches ran close in $l" >&2
    exit 1
fi

python3 - "$RES" "$TMP/place" <<'EOF'
import collections, statistics, sys
keep, places = set(), collections.Counter()
for line in open(sys.argv[2]):
    l, place, rtts, k = line.split()
    places[place] += 1
    if k == "1":
        keep.add(int(l))
by = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    l, mode, med, low, cpu = line.split()
    if int(l) in keep:
        by[int(l)][mode] = (float(med), float(low), float(cpu))
print(f"# placement of the pairs of launches (line_rtt before/after): {places['close']} close, "
      f"{places['far']} far, {places['moved']} moved, {places['unknown']} unknown; "
      f"{len(by)} counted")
def show(what, i):
    on = [v["on"][i] for v in by.values()]
    off = [v["off"][i] for v in by.values()]
    diff = [v["on"][i] - v["off"][i] for v in by.values()]
    print(f"{what}: on {statistics.median(on):.1f}  off {statistics.median(off):.1f}  "
          f"tax {statistics.median(diff):+.1f} ns/op  (per-launch taxes: "
          f"{' '.join(f'{x:.0f}' for x in diff)})")
print("# medians over launches of each launch's figure over its rounds")
show("median round", 0)
show("fastest round", 1)
show("cpu of rank 0", 2)
EOF
awk '{ w += $1; d += $2 }
     END { if (w + d == 0) exit
           printf "clog: %d records written, %d dropped (%.1f %%)\n", w, d, 100 * d / (w + d)
           if (d) print "obs_tax.sh: clog dropped records (its ring was full): \"on\" logged less than everything, and its tax is not clog'"'"'s full cost" }' \
    "$TMP/clog.counts" 2>/dev/null || true
