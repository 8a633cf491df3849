#!/bin/sh
# test_ccperf.sh CASE CCRUN CCPERF - one test of ccperf (correctness only, never speed).
#   sweep1           every collective on 1 rank (rooted trees with no child to wait for)
#   sweep2, sweep4   every collective over a short sweep on 2 / 4 ranks (shm, and TCP for a
#                    few): exit status 0, the table's footer, and the JSON (-J): every row has
#                    zero wrong values, positive times, the sizes asked for, ok true; put over
#                    TCP ends without a peer's "without a bye" error
#   usage            --help, bad options (put's --mode, --window, --origins too) and unknown
#                    collectives: exit 0 / 2 and a message
# Exit 0 = pass, 1 = fail, 77 = skipped (with the reason).
set -u
case=$1 CCRUN=$2 CCPERF=$3
command -v python3 >/dev/null 2>&1 || { echo "skipped: python3 is needed to read the JSON"; exit 77; }
tmp=$(mktemp -d /tmp/ccperf_test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL ($case): $*"; echo "--- out"; cat "$tmp/out" 2>/dev/null; exit 1; }

# sweep N TRANSPORT COLL EXTRA...: run, then check the table and the JSON.
sweep() {
    n=$1 tp=$2 coll=$3
    shift 3
    CCOMM_TRANSPORT=$tp timeout 120 "$CCRUN" --no-prefix -n "$n" "$CCPERF" "$coll" -b 8 -e 256K -f 8 \
        -n 2 -w 1 -c 1 -A 1 -J "$tmp/r.json" "$@" >"$tmp/out" 2>&1
    rc=$?
    [ $rc = 0 ] || fail "ccperf $coll on $n ranks ($tp) exited $rc"
    grep -q '^# Out of bounds values : 0 OK' "$tmp/out" || fail "$coll: no OK footer"
    grep -q '^# Avg bus bandwidth' "$tmp/out" || fail "$coll: no bandwidth footer"
    python3 - "$tmp/r.json" "$coll" "$n" <<'PY' || fail "$coll: bad JSON"
import json, sys
d = json.load(open(sys.argv[1]))
coll, n = sys.argv[2], int(sys.argv[3])
assert d["collective"] == coll and d["ranks"] == n, (d["collective"], d["ranks"])
assert d["ok"] is True and d["out_of_bounds"] == 0
assert d["options"]["settle_ms"] == 30, d["options"]  # the default wait after init
rows = d["results"]
want = 1 if coll == "barrier" else 6  # 8 B to 256 KiB by 8: 8, 64, ..., 256K
assert len(rows) == want, len(rows)
for r in rows:
    for k in ("out_of_place", "in_place"):
        m = r[k]
        if m is None:
            assert coll in ("sendrecv", "put", "barrier") and k == "in_place", (coll, k)
            continue
        assert m["wrong"] == 0 and m["time_us"] > 0, m
        assert m["algorithm"], m
PY
}

# put_opts MODE WINDOW ORIGINS: the last sweep's JSON and header name the put pattern that ran,
# and its algbw counts every put of the window (size x window / time).
put_opts() {
    grep -q "mode: $1 window: $2 origins: $3\$" "$tmp/out" || fail "put $*: header lacks the pattern"
    python3 - "$tmp/r.json" "$1" "$2" "$3" <<'PY' || fail "put $*: bad JSON options"
import json, sys
d = json.load(open(sys.argv[1]))
p = d["options"]["put"]
assert p == {"mode": sys.argv[2], "window": int(sys.argv[3]), "origins": sys.argv[4]}, p
w = int(sys.argv[3])
for r in d["results"]:
    m = r["out_of_place"]
    want = r["size"] * w / m["time_us"] / 1e3
    assert abs(m["algbw"] - want) <= 0.01 + 0.02 * want, (r["size"], m, want)
PY
}

case $case in
sweep1)
    for c in allreduce broadcast reduce allgather reduce_scatter alltoall gather scatter sendrecv \
        barrier; do
        sweep 1 auto "$c"
    done
    ;;
sweep2 | sweep4)
    n=${case#sweep}
    for c in allreduce broadcast reduce allgather reduce_scatter alltoall gather scatter sendrecv \
        barrier; do
        sweep "$n" auto "$c"
    done
    sweep "$n" auto put # one-sided: windows on shared memory (docs/windows.md)
    # bench/put_compare.sh's patterns: puts then a flush, a window of puts, one origin.
    sweep "$n" auto put --mode flush
    put_opts flush 1 ring
    sweep "$n" auto put --mode flush --window 5 --origins one
    put_opts flush 5 one
    sweep "$n" auto put --mode signal --window 3 --origins one -d uint8
    put_opts signal 3 one
    sweep "$n" auto put --window 4
    put_opts signal 4 ring
    for c in allreduce reduce_scatter alltoall; do sweep "$n" tcp "$c" -d int32; done
    # Over TCP a window left to the comm's destroy ends its connections without the goodbye,
    # which the peers log as an error (it happened in about half the runs): ccperf destroys it.
    for i in 1 2 3; do
        sweep "$n" tcp put
        ! grep -q "without a bye" "$tmp/out" || fail "put over tcp: a window was not destroyed"
    done
    sweep "$n" auto allreduce -d bfloat16 -o max -r 1
    sweep "$n" auto reduce -d uint8 -o bxor -r 1
    sweep "$n" auto allreduce -d float16 -o avg -a 3
    ;;
usage)
    "$CCPERF" --help >"$tmp/out" 2>&1 || fail "--help exited $?"
    grep -q -- '-b,--minbytes' "$tmp/out" || fail "--help lacks -b"
    grep -q 'alltoall' "$tmp/out" || fail "--help lacks the collectives"
    "$CCPERF" nosuchcoll >"$tmp/out" 2>&1
    [ $? = 2 ] || fail "unknown collective: exit $?"
    grep -q 'unknown collective "nosuchcoll"' "$tmp/out" || fail "no message for the collective"
    "$CCPERF" allreduce -d nosuchtype >"$tmp/out" 2>&1
    [ $? = 2 ] || fail "bad -d: exit $?"
    grep -q 'bad value "nosuchtype" for -d' "$tmp/out" || fail "no message for -d"
    "$CCPERF" allreduce --settle -1 >"$tmp/out" 2>&1
    [ $? = 2 ] || fail "bad --settle: exit $?"
    grep -q 'bad value "-1" for --settle' "$tmp/out" || fail "no message for --settle"
    "$CCPERF" allreduce -b 1M -e 1K >"$tmp/out" 2>&1
    [ $? = 2 ] || fail "-e below -b: exit $?"
    "$CCPERF" allreduce -d float -o band >"$tmp/out" 2>&1
    [ $? = 2 ] || fail "bitwise op on floats: exit $?"
    "$CCPERF" put --mode fence >"$tmp/out" 2>&1
    [ $? = 2 ] || fail "bad --mode: exit $?"
    grep -q 'bad value "fence" for --mode' "$tmp/out" || fail "no message for --mode"
    "$CCPERF" put --window 0 >"$tmp/out" 2>&1
    [ $? = 2 ] || fail "--window 0: exit $?"
    grep -q 'bad value "0" for --window' "$tmp/out" || fail "no message for --window"
    "$CCPERF" put --origins all >"$tmp/out" 2>&1
    [ $? = 2 ] || fail "bad --origins: exit $?"
    "$CCPERF" allreduce --mode flush >"$tmp/out" 2>&1
    [ $? = 2 ] || fail "--mode with allreduce: exit $?"
    grep -q 'apply to put only, not allreduce' "$tmp/out" || fail "no message for --mode on allreduce"
    ;;
*) echo "unknown case $case"; exit 2 ;;
esac
exit 0
