#!/usr/bin/env bash
# demo.sh BUILD_DIR - the whole story in one run:
#   a 4-rank job trains for a few steps; rank 2 gets stuck in its own compute;
#   the other ranks time out; every rank (the stuck one too) dumps its flight
#   recorder; ccdump diagnoses the hang and writes a Perfetto timeline.
set -uo pipefail
BUILD=$(cd "${1:-build}" && pwd)
OUT=${DEMO_OUT:-$PWD/ccomm-demo}
rm -rf "$OUT"
mkdir -p "$OUT"
cd "$OUT"

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "a 4-rank job over shared memory: 6 training steps, rank 2 hangs at step 4"
echo "   CCOMM_TIMEOUT=5 ccrun -n 4 --grace 3 train_demo   (clog in clog/, dumps in dumps/)"
CCOMM_TIMEOUT=5 CCOMM_DUMP_DIR="$OUT/dumps" CCOMM_RECORDER_DIR="$OUT/rings" \
CCOMM_CLOG="$OUT/clog/rank%r.log" \
    "$BUILD/bin/ccrun" -n 4 --grace 3 "$BUILD/examples/train_demo"
echo "   (ccrun exited with status $?: the job failed, as it should)"

say "what ccomm left on disk"
find dumps rings clog -type f | sort | sed 's/^/   /'

say "ccdump diagnose: which rank, which communicator, which operation"
"$BUILD/bin/ccdump" diagnose dumps rings

say "cclog check: the ops each rank enqueued and never finished"
"$BUILD/bin/cclog" check clog/*.log

say "ccdump perfetto: the timeline"
"$BUILD/bin/ccdump" perfetto dumps rings -o "$OUT/trace.json" && \
    echo "   wrote $OUT/trace.json: open https://ui.perfetto.dev and drag the file in (Open trace file)"
echo
echo "Everything is in $OUT."
