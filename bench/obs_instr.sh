#!/bin/sh
# bench/obs_instr.sh - the observability tax in instructions, which a busy
# machine does not blur: an 8-byte allreduce at one rank under callgrind,
# with everything on (recorder of 4096 entries, clog attached with all its
# events: the defaults of obs_tax.sh) and with all of it off. Each mode runs
# twice, with N and 5N ops, and the difference of the two runs divided by 4N
# is the cost of one op, so init and teardown cancel out. The op's own
# thread (the hot path) and the other threads (clog's writer, which formats
# off the path) are counted apart, and the functions that cost the most per
# op on the hot path, and on the other threads, are listed.
#
#   bench/obs_instr.sh                 N = 1000
#   bench/obs_instr.sh --ops 2000 --top 20 --build build-rel
#   bench/obs_instr.sh --shared        obs_tax_so: linked with libccomm.so
#
# Needs valgrind (apt-get install valgrind). Instructions are not time: an
# instruction that misses the cache costs more than one that hits, so this
# complements bench/obs_tax.sh (time, alternating launches) and does not
# replace it; its figures are stable from run to run on any machine.
# shellcheck disable=SC2046
set -eu

SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/bench/bench_lib.sh"
BUILD=build
OPS=1000
TOP=15
BIN=obs_tax
while [ $# -gt 0 ]; do
    case "$1" in
    --build) BUILD=$2; shift ;;
    --ops) OPS=$2; shift ;;
    --top) TOP=$2; shift ;;
    --shared) BIN=obs_tax_so ;;
    -h|--help) sed -n '2,/^[^#]/p' "$0" | sed -n 's/^# \{0,1\}//p'; exit 0 ;;
    *) echo "obs_instr.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
bench_posint obs_instr.sh --ops "$OPS"
bench_posint obs_instr.sh --top "$TOP"
command -v valgrind >/dev/null || { echo "obs_instr.sh: valgrind not found (apt-get install valgrind)" >&2; exit 2; }
case "$BUILD" in /*) ;; *) BUILD="$SRC/$BUILD" ;; esac
if [ ! -x "$BUILD/bin/$BIN" ] || [ ! -x "$BUILD/bin/ccrun" ]; then
    cmake -S "$SRC" -B "$BUILD" >/dev/null
    cmake --build "$BUILD" -j2 --target "$BIN" ccrun >/dev/null
fi
TMP=$(mktemp -d /tmp/ccomm-obsinstr.XXXXXX)
FR=$(mktemp -d /dev/shm/ccomm-obsinstr.XXXXXX)
trap 'rm -rf "$FR" "$TMP"' EXIT

run() { # mode ops
    if [ "$1" = on ]; then
        set -- "$1" "$2" env -u CCOMM_RECORDER_ENTRIES -u CCOMM_LTTNG -u CCOMM_CLOG_EVENTS \
            CCOMM_CLOG="$TMP/clog.%r.%p"
    else
        set -- "$1" "$2" env -u CCOMM_CLOG CCOMM_RECORDER_ENTRIES=0 CCOMM_LTTNG=0
    fi
    m=$1 n=$2
    shift 2
    mkdir -p "$TMP/$m.$n"
    # ccrun starts the rank as its child: callgrind follows it (--trace-children)
    # and writes one file per thread of each process; the rank's are the ones
    # whose command line names obs_tax.
    "$@" CCOMM_RECORDER_DIR="$FR" CCOMM_LOG_LEVEL=ERROR CCOMM_TIMEOUT=600 \
        valgrind --tool=callgrind --fair-sched=yes --trace-children=yes --separate-threads=yes \
        --callgrind-out-file="$TMP/$m.$n/cg.%p" \
        "$BUILD/bin/ccrun" --no-prefix -n 1 "$BUILD/bin/$BIN" 1 "$n" >"$TMP/$m.$n.log" 2>&1 ||
        { echo "obs_instr.sh: the $m run of $n ops failed:" >&2; tail -5 "$TMP/$m.$n.log" >&2; exit 1; }
    # valgrind runs one thread at a time: without --fair-sched the op thread may fill clog's
    # ring before the writer runs, and the dropped events would vanish from the writer's count.
    if [ "$m" = on ] && grep -q '^DROP|' "$TMP"/clog.* 2>/dev/null; then
        echo "obs_instr.sh: clog dropped events in the $m run of $n ops; the writer's count would be low" >&2
        exit 1
    fi
    rm -f "$TMP"/clog.*
}

# Per function, inclusive of nothing (self cost), summed over the files given.
self_costs() { # files...
    for f in "$@"; do callgrind_annotate --auto=no --threshold=100 "$f" 2>/dev/null; done |
        awk 'match($0, /^ *[0-9,]+ \(/) {
                 n = $1; gsub(",", "", n)
                 fn = $0; sub(/^ *[0-9,]+ \([^)]*\) +/, "", fn); sub(/ \[.*$/, "", fn); sub(/^.*:/, "", fn)
                 c[fn] += n
             }
             END { for (k in c) print k, c[k] }'
}

# Prints one callgrind file per line; callers split that list into arguments on purpose
# (the paths are mktemp -d names, without spaces), hence SC2046 off in this file.
rank_files() { # dir thread(main|other)
    for f in "$1"/cg.*; do
        grep -q "^cmd: *[^ ]*/$BIN " "$f" || continue
        case "$f" in
        *-01) [ "$2" = main ] && echo "$f" ;;
        *) [ "$2" = other ] && echo "$f" ;;
        esac
    done
}

total() { # files...
    t=0
    for f in "$@"; do
        v=$(sed -n 's/^summary: *//p' "$f" | head -n 1)
        t=$((t + ${v:-0}))
    done
    echo "$t"
}

BIG=$((OPS * 5))
for m in on off; do run "$m" "$OPS"; run "$m" "$BIG"; done

echo "obs_instr: instructions per 8-byte allreduce, 1 rank, ops $OPS vs $BIG (difference / $((BIG - OPS)))"
for m in on off; do
    for th in main other; do
        a=$(total $(rank_files "$TMP/$m.$OPS" "$th"))
        b=$(total $(rank_files "$TMP/$m.$BIG" "$th"))
        echo "$m $th $(( (b - a) / (BIG - OPS) ))"
    done
done | awk '{ v[$1 " " $2] = $3 }
    END {
        printf "  %-4s %12s %14s\n", "", "op thread", "other threads"
        printf "  %-4s %12d %14d\n", "on", v["on main"], v["on other"]
        printf "  %-4s %12d %14d\n", "off", v["off main"], v["off other"]
        printf "  tax  %12d %14d   (on - off)\n", v["on main"] - v["off main"], v["on other"] - v["off other"]
    }'

echo "obs_instr: on the op thread, the functions whose cost per op grew most with everything on"
self_costs $(rank_files "$TMP/on.$OPS" main) >"$TMP/on.a"
self_costs $(rank_files "$TMP/on.$BIG" main) >"$TMP/on.b"
self_costs $(rank_files "$TMP/off.$OPS" main) >"$TMP/off.a"
self_costs $(rank_files "$TMP/off.$BIG" main) >"$TMP/off.b"
awk -v d=$((BIG - OPS)) '
    FILENAME ~ /on\.a$/ { oa[$1] = $2; k[$1] = 1 }
    FILENAME ~ /on\.b$/ { ob[$1] = $2; k[$1] = 1 }
    FILENAME ~ /off\.a$/ { fa[$1] = $2; k[$1] = 1 }
    FILENAME ~ /off\.b$/ { fb[$1] = $2; k[$1] = 1 }
    END { for (f in k) { x = ((ob[f] - oa[f]) - (fb[f] - fa[f])) / d; if (x >= 1) printf "  %7.0f  %s\n", x, f } }' \
    "$TMP/on.a" "$TMP/on.b" "$TMP/off.a" "$TMP/off.b" | sort -rn | head -n "$TOP"

# The writer (and any other thread of the rank): what clog's formatting costs, per op.
echo "obs_instr: on the other threads (clog's writer), the functions that cost the most per op"
self_costs $(rank_files "$TMP/on.$OPS" other) >"$TMP/other.a"
self_costs $(rank_files "$TMP/on.$BIG" other) >"$TMP/other.b"
awk -v d=$((BIG - OPS)) '
    FILENAME ~ /other\.a$/ { a[$1] = $2; k[$1] = 1 }
    FILENAME ~ /other\.b$/ { b[$1] = $2; k[$1] = 1 }
    END { for (f in k) { x = (b[f] - a[f]) / d; if (x >= 1) printf "  %7.0f  %s\n", x, f } }' \
    "$TMP/other.a" "$TMP/other.b" | sort -rn | head -n "$TOP"
