#!/bin/sh
# test_launch.sh CASE HELLO - examples/hello started the way other launchers
# start programs (torchrun, srun, mpirun): only the variables each launcher
# sets, nothing set by hand. Checks rank, size, who hosts the store, and the
# time from the last rank's output to the end of the job.
# Exit 0 = pass, 1 = fail, 77 = skipped (with the reason).
set -u
case=$1 HELLO=$2
tmp=$(mktemp -d /tmp/ccomm_launch.XXXXXX)
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL ($case): $*"; for f in "$tmp"/out.* "$tmp"/err.*; do [ -e "$f" ] && { echo "--- $f"; cat "$f"; }; done; exit 1; }
# A port per run, so that parallel runs of this test do not meet.
PORT=$((20000 + $$ % 20000))
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# start R N VAR=VALUE... : start rank R of N in the background with only these variables
# (plus PATH and HOME), its output (line-buffered: its time stamps when the line was written) in out.R and err.R; its pid in pid.R.
start() {
    r=$1; shift 2
    env -i PATH="$PATH" HOME="${HOME:-/}" CCOMM_LOG_LEVEL=INFO "$@" stdbuf -oL "$HELLO" >"$tmp/out.$r" 2>"$tmp/err.$r" &
    echo $! >"$tmp/pid.$r"
}
# finish N : wait for ranks 0..N-1; each must exit 0 and print "rank r of N"; the job must end
# within 5 s of the last collective's output (the store's linger used to add 10 s).
finish() {
    n=$1 r=0 bad=
    while [ $r -lt "$n" ]; do
        wait "$(cat "$tmp/pid.$r")" || bad="$bad $r"
        r=$((r + 1))
    done
    end=$(now_ms)
    [ -z "$bad" ] || fail "rank(s)$bad exited non-zero"
    r=0
    while [ $r -lt "$n" ]; do
        grep -q "^rank $r of $n: sum of ranks" "$tmp/out.$r" || fail "rank $r did not report rank $r of $n"
        r=$((r + 1))
    done
    last=$(for f in "$tmp"/out.*; do stat -c %Y "$f"; done | sort -n | tail -1)
    took=$(( end / 1000 - last ))
    [ "$took" -lt 5 ] || fail "the job ended $took s after the last rank's output (limit 5 s)"
    ! grep -q "still connected" "$tmp"/err.* || fail "the store waited for connections"
}
has() { grep -q -- "$2" "$tmp/$1" || fail "$1 lacks: $2"; }

case $case in
torchrun)
    n=4 r=0
    while [ $r -lt $n ]; do
        start $r $n RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 \
            MASTER_PORT=$PORT TORCHELASTIC_RUN_ID=t$$
        r=$((r + 1))
    done
    finish $n
    has err.0 "launched by torchrun: rank 0 of 4"
    # One warning about the missing job key per job, from rank 0 (there were 5).
    [ "$(cat "$tmp"/err.* | grep -c 'WARN.*job key\|WARN.*JOB_KEY')" = 1 ] || fail "not one job-key warning"
    has err.0 "WARN INIT: CCOMM_JOB_KEY is not set"
    ;;
*) echo "unknown case $case"; exit 2 ;;
esac
echo "PASS ($case)"
