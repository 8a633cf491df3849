#!/bin/sh
# test_compare.sh SRC BUILD - bench/compare.sh --quick (2-rank shm allreduce) with 2 launches
# up to 4 KiB runs and fills its table: every size with positive median times and a ratio,
# each library's spread as "fastest-slowest", a verdict (ahead, overlap or behind) that agrees
# with the spreads, the close-runs-only cell ("-" or "RATIO (N/M)" with at most 2 runs each),
# and the count per transport and rank count after the table; with --recheck above every ratio,
# each cell measured again alone in one pair, in the second table with the first table's ratio
# and its own; bad --recheck and --recheck-pairs values are refused with their names. Speed is
# never judged.
# Exit 0 = pass, 1 = fail, 77 = skipped (no Open MPI: the comparison needs mpicc and mpirun).
set -u
SRC=$1 BUILD=$2
# shellcheck source=mpi_compare_lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/mpi_compare_lib.sh"
mpi_compare_setup compare_test

for bad in "--recheck abc" "--recheck .5" "--recheck-pairs 0" "--recheck-pairs x"; do
    # shellcheck disable=SC2086
    sh "$SRC/bench/compare.sh" --quick $bad --build "$BUILD" >"$tmp/bad" 2>&1
    rc=$?
    [ "$rc" = 2 ] || fail "compare.sh $bad exited $rc, not 2"
    opt=${bad%% *}
    grep -q -- "$opt" "$tmp/bad" || fail "compare.sh $bad: the error does not name $opt: $(cat "$tmp/bad")"
done
timeout 200 sh "$SRC/bench/compare.sh" --quick --launches 2 --max 4K --build "$BUILD" \
    --recheck 1000 --recheck-pairs 1 --out "$tmp/table.md" >"$tmp/out" 2>&1 ||
    fail "compare.sh --quick exited $?"
grep -q 'failed' "$tmp/out" && fail "a run failed"
python3 - "$tmp/table.md" <<'PY' || fail "the table is wrong"
import re, sys
lines = [l for l in open(sys.argv[1]) if l.startswith("|")]
tables = []
for i, l in enumerate(lines):
    if l.startswith("|---"):
        continue
    cells = [c.strip() for c in l.strip("|\n").split("|")]
    if i + 1 < len(lines) and lines[i + 1].startswith("|---"):  # a header
        tables.append([cells])
    else:
        tables[-1].append(cells)
assert len(tables) == 4, f"{len(tables)} tables"
head, rows = tables[0][0], tables[0][1:]
assert head[8] == "ratio" and head[9] == "ccomm spread (us)" and head[11] == "beyond spread" \
    and head[12] == "close runs only", head
# --quick: 2 ranks over shm, allreduce; 8 B (its own row) and 16 B .. 4 KiB by 4.
assert [int(r[3]) for r in rows] == [8, 16, 64, 256, 1024, 4096], [r[3] for r in rows]
count = {"ahead": 0, "overlap": 0, "behind": 0}
for r in rows:
    assert r[0] == "shm" and r[1] == "2" and r[2] == "allreduce", r
    for i in (4, 6, 8):
        v = float(r[i])
        assert v == v and v > 0, (r, i)
    lo_c, hi_c = map(float, r[9].split("-"))
    lo_o, hi_o = map(float, r[10].split("-"))
    assert 0 < lo_c <= float(r[4]) <= hi_c and 0 < lo_o <= float(r[6]) <= hi_o, r
    # The verdict follows from the spreads; they are printed to 2 decimals, so where two ends
    # print equal the unrounded ones may still have separated.
    if hi_c < lo_o:
        want = {"ahead"}
    elif lo_c > hi_o:
        want = {"behind"}
    else:
        want = {"overlap"} | ({"ahead"} if hi_c == lo_o else set()) | \
            ({"behind"} if lo_c == hi_o else set())
    assert r[11] in want, (r, want)
    count[r[11]] += 1
    m = re.fullmatch(r"-|(\d+\.\d\d) \(([12])/([12])\)", r[12])
    assert m, r
    assert m.group(1) is None or float(m.group(1)) > 0, r
sh, = tables[1][1:]
assert sh[:3] == ["shm", "2", "6"], sh
assert [int(sh[5]), int(sh[6]), int(sh[7])] == [count["ahead"], count["overlap"], count["behind"]], sh
# --recheck 1000: every cell again, one pair, with the table's ratio beside its own.
head2, again = tables[2][0], tables[2][1:]
assert head2[4] == "table ratio" and head2[7] == "ratio" and head2[11] == "close runs only" \
    and head2[12] == "far runs only", head2
assert [r[:4] for r in again] == [r[:4] for r in rows], (again, rows)
for r, t in zip(again, rows):
    assert r[4] == t[8], (r, t)
    for i in (5, 6, 7):
        v = float(r[i])
        assert v == v and v > 0, (r, i)
    assert r[10] == "-", r  # one pair: no verdict
    for i in (11, 12):
        assert re.fullmatch(r"-|\d+\.\d\d \(1/1\)", r[i]), (r, i)
rc, = tables[3][1:]
assert int(rc[0]) == len(rows) and int(rc[1]) <= int(rc[2]) <= len(rows), rc
assert sum(int(x) for x in rc[3:6]) == 0, rc  # verdicts need two runs of each
print(f"{len(rows)} rows; verdicts {count}; summary {sh}; measured again {rc}")
PY
exit 0
