#!/bin/sh
# test_put_compare.sh SRC BUILD - bench/put_compare.sh --quick runs and fills its table:
# every pattern (puts then a flush or a signal, one origin or a ring, a window of 64 puts) at
# every size of the quick sweep, with a positive median time and bandwidth in both the ccomm
# and the Open MPI columns, and a ratio; over tcp, where this build's ccomm refuses windows, the
# refusal said once and "not supported" in ccomm's cells instead of a number. Speed is never
# judged (the machine is shared).
# Exit 0 = pass, 1 = fail, 77 = skipped (no Open MPI: the comparison needs mpicc and mpirun).
set -u
SRC=$1 BUILD=$2
# shellcheck source=mpi_compare_lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/mpi_compare_lib.sh"
mpi_compare_setup put_compare_test

timeout 120 sh "$SRC/bench/put_compare.sh" --quick --build "$BUILD" --out "$tmp/table.md" \
    >"$tmp/out" 2>&1 || fail "put_compare.sh --quick exited $?"
grep -q 'not supported' "$tmp/out" && fail "ccomm refused windows over shm"
grep -q 'failed' "$tmp/out" && fail "a run failed"
python3 - "$tmp/table.md" <<'PY' || fail "the table is incomplete"
import sys
lines = [l for l in open(sys.argv[1]) if l.startswith("| ")]
head = [c.strip() for c in lines[0].strip("|\n").split("|")]
assert head[4] == "ccomm time (us)" and head[6] == "Open MPI time (us)" and head[8] == "ratio", head
rows = [[c.strip() for c in l.strip("|\n").split("|")] for l in lines[1:] if not l.startswith("|---")]
# --quick: 2 ranks over shm, 5 patterns, sizes 8 B .. 2 KiB by 4 (5 sizes).
patterns = {r[2] for r in rows}
assert len(patterns) == 5, patterns
assert len(rows) == 25, len(rows)
for r in rows:
    assert r[0] == "shm" and r[1] == "2", r
    for i in (4, 5, 6, 7, 8):
        v = float(r[i])  # "nan" or "not supported" fail here or below
        assert v == v and v > 0, (r, i)
print(f"{len(rows)} rows, both columns filled")
PY

# Over TCP: a ccomm that refuses windows (this build) is said so, once, and its cells say
# "not supported"; one that has them fills the cells with numbers. Never a bogus number.
timeout 60 sh "$SRC/bench/put_compare.sh" --quick --transports tcp --patterns flush1 \
    --build "$BUILD" --out "$tmp/tcp.md" >"$tmp/out" 2>&1 || fail "--transports tcp exited $?"
refused=$(grep -c '^ccomm: windows over tcp not supported by this build$' "$tmp/out")
python3 - "$tmp/tcp.md" "$refused" <<'PY' || fail "the tcp table is wrong"
import sys
refused = int(sys.argv[2])
assert refused in (0, 1), f"the refusal said {refused} times"
rows = [[c.strip() for c in l.strip("|\n").split("|")] for l in open(sys.argv[1])
        if l.startswith("| tcp ")]
assert len(rows) == 5, len(rows)
for r in rows:
    assert float(r[6]) > 0, r  # Open MPI over btl tcp always runs
    if refused:
        assert r[4] == "not supported" and r[8] == "—", r
    else:
        assert float(r[4]) > 0 and float(r[8]) > 0, r
print("tcp:", "ccomm refused, said so" if refused else "both columns filled")
PY
exit 0
