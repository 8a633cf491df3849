#!/usr/bin/env bash
# demo.sh [BUILD_DIR] - the whole story in one run:
#   a 4-rank job (examples/train_demo.c under ccrun) trains for a few steps;
#   rank 2 gets stuck in its own compute at step 4; the other ranks time out;
#   every rank (the stuck one too) dumps its flight recorder; `ccdump diagnose`
#   names the culprit, `ccdump show` prints the recorder, `cclog check` reads
#   the clog logs, and `ccdump perfetto` writes a timeline for ui.perfetto.dev.
#
# Exit status: 0 when the story went as it should (the job failed and the
# diagnosis names rank 2); 1 when it did not; 2 when the build is incomplete.
# Every step is bounded by a timeout, and no rank is left running.
# DEMO_OUT sets the output directory (default ./ccomm-demo, emptied first).
set -uo pipefail
case "${1:-}" in
-h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
-*) echo "demo: unknown option $1 (usage: demo.sh [BUILD_DIR])" >&2; exit 2 ;;
esac
BUILD=$(cd "${1:-build}" 2>/dev/null && pwd) || { echo "demo: no build directory ${1:-build}" >&2; exit 2; }
OUT=${DEMO_OUT:-$PWD/ccomm-demo}
HANG_RANK=2 HANG_STEP=4
for f in bin/ccrun bin/ccdump bin/cclog examples/train_demo; do
    [ -x "$BUILD/$f" ] || { echo "demo: $BUILD/$f is missing: build first (cmake --build $BUILD)" >&2; exit 2; }
done
rm -rf "$OUT" && mkdir -p "$OUT" && cd "$OUT" || exit 2

if [ -t 1 ]; then B=$'\033[1m' N=$'\033[0m'; else B= N=; fi
say() { printf '\n%s== %s%s\n' "$B" "$*" "$N"; }
show() { printf '%s$ %s%s\n' "$B" "$*" "$N"; } # a command line as the user would type it
indent() { sed 's/^/   /'; }
fail() { printf '\ndemo FAILED: %s\n(everything is in %s)\n' "$*" "$OUT"; exit 1; }

# Ranks that outlive the job (they should not: ccrun ends them, and they die
# with ccrun) are ended here, by the pids their ring files name.
leftovers() {
    local f pid left=
    for f in rings/*/rank*.ccfr; do
        [ -e "$f" ] || continue
        pid=${f%.ccfr}; pid=${pid##*.}
        if [ -d "/proc/$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q train_demo; then
            kill -KILL "$pid" 2>/dev/null && left="$left $pid"
        fi
    done
    [ -z "$left" ] || echo "demo: ranks still running after the job were killed:$left" >&2
    [ -z "$left" ]
}

say "a 4-rank job over shared memory: 6 training steps, rank $HANG_RANK hangs at step $HANG_STEP"
show "CCOMM_TIMEOUT=5 ccrun -n 4 --grace 3 train_demo"
echo "   (clog logs in clog/, flight recorder rings in rings/, dumps in dumps/; all output: job.log)"
CCOMM_TIMEOUT=5 CCOMM_DUMP_DIR="$OUT/dumps" CCOMM_RECORDER_DIR="$OUT/rings" \
CCOMM_CLOG="$OUT/clog/rank%r.log" CCDEMO_HANG_RANK=$HANG_RANK CCDEMO_HANG_STEP=$HANG_STEP \
    timeout -k 5 100 "$BUILD/bin/ccrun" -n 4 --grace 3 --term-grace 2 --timeout 80 \
    "$BUILD/examples/train_demo" >job.log 2>&1
job=$?
# The story, not every line: rank 0's steps, the hang, each rank's timeout, ccrun.
grep -E "^\[0\] rank 0: step|stuck in compute|timed out on rank|^ccrun:" job.log |
    sed -E 's/^(\[[0-9]\]) [0-9T:.-]+Z [^ ]+ /\1 /' | indent
echo "   ccrun exited with status $job"
leftovers || fail "ranks outlived the job"
case $job in
0) fail "the job succeeded: rank $HANG_RANK did not hang (see job.log)" ;;
124 | 137) fail "the job did not end by itself within 80 s (see job.log)" ;;
esac
ls dumps/*/rank*.json >/dev/null 2>&1 || fail "no flight recorder dump in dumps/ (see job.log)"
echo "   on disk: $(ls dumps/*/*.json | wc -l) dumps, $(ls rings/*/*.ccfr | wc -l) rings, $(ls clog/*.log | wc -l) clog logs"

say "ccdump diagnose: which rank, which communicator, which operation"
show "ccdump diagnose dumps rings"
timeout -k 5 60 "$BUILD/bin/ccdump" diagnose dumps rings >diagnosis.txt 2>&1
diag=$?
indent <diagnosis.txt
echo "   (exit status $diag; 0 means no problem found, 1 a problem found)"
[ $diag = 1 ] || fail "ccdump diagnose exited $diag, expected 1"
grep -Eq "^verdict \([a-z]+\): rank $HANG_RANK [a-z]" diagnosis.txt ||
    fail "the verdict does not name rank $HANG_RANK"

say "ccdump show: the flight recorder of a waiting rank and of the culprit"
show "ccdump show dumps rings --rank 0,$HANG_RANK --last 3"
timeout -k 5 60 "$BUILD/bin/ccdump" show dumps rings --rank 0,$HANG_RANK --last 3 >show.txt 2>&1 ||
    fail "ccdump show failed: $(tail -1 show.txt)"
indent <show.txt

say "cclog check: what the clog logs say"
show "cclog check clog/*.log"
timeout -k 5 60 "$BUILD/bin/cclog" check clog/*.log >check.txt 2>&1
chk=$?
indent <check.txt
[ $chk = 1 ] || fail "cclog check exited $chk, expected 1 (problems found)"

say "ccdump perfetto: the timeline"
show "ccdump perfetto dumps rings -o trace.json"
timeout -k 5 60 "$BUILD/bin/ccdump" perfetto dumps rings -o trace.json >perfetto.txt 2>&1 ||
    fail "ccdump perfetto failed: $(tail -1 perfetto.txt)"
[ -s trace.json ] || fail "ccdump perfetto wrote no trace"
if command -v python3 >/dev/null; then
    python3 -c 'import json, sys; json.load(open(sys.argv[1]))' trace.json 2>/dev/null ||
        fail "trace.json is not valid JSON"
fi
echo "   wrote $OUT/trace.json ($(($(stat -c %s trace.json) / 1024)) KiB). To see it:"
echo "   open https://ui.perfetto.dev, click \"Open trace file\" and pick trace.json"
echo "   (or chrome://tracing -> Load). A process per rank: rank $HANG_RANK's track stops"
echo "   after its last barrier; the others' all_reduce runs 5 s into a timeout marker."

say "demo OK: ccdump named rank $HANG_RANK, the rank that hung; everything is in $OUT"
