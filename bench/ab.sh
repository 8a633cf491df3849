#!/bin/sh
# bench/ab.sh - two builds of ccomm side by side: is a change slower?
#
# ccperf of build A and of build B run alternately (the order flips every
# launch), the same collective, sizes, ranks and transport; the summary
# gives per size the median time of each over the launches and the ratio
# A time / B time (> 1: B is faster). Only figures of one run compare: the
# machine is noisy, alternation is what makes the ratio mean something.
#
#   bench/ab.sh --a /tmp/old/build --b build
#   bench/ab.sh --a OLD --b NEW --coll broadcast --sizes "8 1M 64M" --ranks 4 --launches 9
#   bench/ab.sh --a build --a-env CCOMM_TCP_SPIN_US=0 --b-env CCOMM_TCP_SPIN_US=200 --transport tcp
#
# Options: --a DIR, --b DIR (builds with bin/ccrun and bin/ccperf; B defaults
# to build), --coll NAME (allreduce), --sizes LIST (8 1M 64M), --ranks N (2),
# --transport auto|tcp (auto), --launches N (7), --iters N (ccperf -n for
# sizes up to 1 MiB; larger sizes run fewer, as --budget 256M does),
# --a-env "VAR=value ...", --b-env "..." (settings for A's or B's runs only:
# one build under two settings), --in-place (time ccperf's in-place column
# instead of the out-of-place one: compare.sh's broadcast column, since
# MPI_Bcast works on one buffer).
set -eu

SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$SRC/bench/bench_lib.sh"
A=""
B=build
COLL=allreduce
SIZES="8 1M 64M"
RANKS=2
A_ENV=""
B_ENV=""
TRANSPORT=auto
LAUNCHES=7
ITERS=200
COL=7
COLNAME=out-of-place
while [ $# -gt 0 ]; do
    case "$1" in
    --a) A=$2; shift ;;
    --b) B=$2; shift ;;
    --coll) COLL=$2; shift ;;
    --sizes) SIZES=$2; shift ;;
    --ranks) RANKS=$2; shift ;;
    --in-place) COL=11; COLNAME=in-place; shift; continue ;;
    --transport) TRANSPORT=$2; shift ;;
    --launches) LAUNCHES=$2; shift ;;
    --iters) ITERS=$2; shift ;;
    --a-env) A_ENV=$2; shift ;;
    --b-env) B_ENV=$2; shift ;;
    -h|--help) sed -n '2,/^[^#]/p' "$0" | sed -n 's/^# \{0,1\}//p'; exit 0 ;;
    *) echo "ab.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[ -n "$A" ] || { echo "ab.sh: --a DIR is required (the build to compare against)" >&2; exit 2; }
bench_posint ab.sh --ranks "$RANKS"
bench_posint ab.sh --launches "$LAUNCHES"
bench_posint ab.sh --iters "$ITERS"
case "$TRANSPORT" in auto | tcp) ;; *) echo "ab.sh: --transport \"$TRANSPORT\": auto or tcp" >&2; exit 2 ;; esac
for e in $A_ENV $B_ENV; do
    case "$e" in [A-Z_]*=*) ;; *) echo "ab.sh: --a-env/--b-env \"$e\" is not VAR=value" >&2; exit 2 ;; esac
done
for d in A B; do
    eval "dir=\$$d"
    case "$dir" in /*) ;; *) dir="$SRC/$dir" ;; esac
    for t in ccrun ccperf; do
        [ -x "$dir/bin/$t" ] || { echo "ab.sh: --$(echo $d | tr AB ab) $dir has no bin/$t (build it: cmake --build $dir --target ccrun ccperf)" >&2; exit 2; }
    done
    eval "$d=\$dir"
done
TMP=$(mktemp -d /tmp/ccomm-ab.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

one() { # build label size
    if [ "$2" = a ]; then envs=$A_ENV; else envs=$B_ENV; fi
    # $envs unquoted on purpose: a list of VAR=value words
    env CCOMM_LOG_LEVEL=ERROR CCOMM_TRANSPORT="$TRANSPORT" $envs timeout 600 "$1/bin/ccrun" -n "$RANKS" \
        "$1/bin/ccperf" "$COLL" -b "$3" -e "$3" -n "$ITERS" -w 10 -c 0 --budget 256M 2>&1 |
        awk -v l="$2" -v s="$3" -v c="$COL" '$1 == "[0]" && $2 ~ /^[0-9]+$/ { print l, s, $c; exit }'
}

l=0
while [ "$l" -lt "$LAUNCHES" ]; do
    for s in $SIZES; do
        if [ $((l % 2)) -eq 0 ]; then
            one "$A" a "$s"; one "$B" b "$s"
        else
            one "$B" b "$s"; one "$A" a "$s"
        fi
    done >>"$TMP/res"
    l=$((l + 1))
done

echo "ab: $COLL, $RANKS ranks, transport $TRANSPORT, $LAUNCHES launches alternating; median time (us) of rank 0's $COLNAME column"
echo "  a = $A${A_ENV:+ ($A_ENV)}"
echo "  b = $B${B_ENV:+ ($B_ENV)}"
printf "  %8s %12s %12s %10s\n" size "a (us)" "b (us)" "a/b"
for s in $SIZES; do
    ma=$(awk -v s="$s" '$1 == "a" && $2 == s { print $3 }' "$TMP/res" | sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }')
    mb=$(awk -v s="$s" '$1 == "b" && $2 == s { print $3 }' "$TMP/res" | sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }')
    if [ -z "$ma" ] || [ -z "$mb" ]; then
        echo "ab.sh: size $s gave no time (see a ccperf run by hand)" >&2; exit 1
    fi
    awk -v s="$s" -v a="$ma" -v b="$mb" 'BEGIN { printf "  %8s %12.2f %12.2f %10.2f\n", s, a, b, a / b }'
done
