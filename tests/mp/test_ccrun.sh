#!/bin/sh
# test_ccrun.sh CASE CCRUN RANKPROG SRCDIR - one test of ccrun, the launcher.
# Each case runs real ranks (forked processes) and checks what ccrun says and
# returns. Exit 0 = pass, 1 = fail, 77 = skipped (with the reason).
set -u
case=$1 CCRUN=$2 RANKPROG=$3 SRC=$4
tmp=$(mktemp -d /tmp/ccrun_test.XXXXXX)
# The rings of every case land here and go with it: a case whose ranks fail or are killed
# keeps them (as it should), and they would pile up in /dev/shm/ccomm-$UID run after run.
export CCOMM_RECORDER_DIR="$tmp/rings"
pid=
# A ccrun left in the background by a failed case dies here; its ranks follow (PDEATHSIG).
cleanup() { [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL ($case): $*"; echo "--- stdout"; cat "$tmp/out" 2>/dev/null; echo "--- stderr"; cat "$tmp/err" 2>/dev/null; exit 1; }
# run EXPECTED_RC ccrun-args... : run ccrun, capture output, check the exit status
run() {
    want=$1; shift
    start=$(date +%s)
    "$CCRUN" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    elapsed=$(( $(date +%s) - start ))
    [ "$rc" = "$want" ] || fail "ccrun $* exited $rc, expected $want"
}
has() { grep -q -- "$2" "$tmp/$1" || fail "$1 lacks: $2"; }
# wait_files PREFIX N: until N files PREFIX.* exist in $tmp (10 s at most)
wait_files() {
    i=0
    while [ "$(ls "$tmp" | grep -c "^$1\.")" != "$2" ]; do
        i=$((i + 1)); [ $i -lt 200 ] || fail "no $2 $1 files"; sleep 0.05
    done
}
hasnt() { ! grep -q -- "$2" "$tmp/$1" || fail "$1 should not have: $2"; }

env_case() {
    n=$1
    run 0 -n "$n" -- "$RANKPROG" env "$n"
    r=0
    while [ $r -lt "$n" ]; do has out "^\[$r\] rank $r ok\$"; r=$((r + 1)); done
    [ "$(grep -c ' ok$' "$tmp/out")" = "$n" ] || fail "expected $n ok lines"
}

case $case in
env1) env_case 1 ;;
env3) env_case 3 ;;
env8) env_case 8 ;;
prefix)
    run 0 -n 2 -- sh -c 'echo "out$RANK"; echo "err$RANK" >&2; printf "tail$RANK"'
    has out '^\[0\] out0$'; has out '^\[1\] out1$'
    has out '^\[0\] tail0$'; has out '^\[1\] tail1$'   # partial last lines flushed
    has err '^\[0\] err0$'; has err '^\[1\] err1$'
    hasnt out 'err0'; hasnt err 'out0'
    # Many lines from two ranks at once: every line whole, prefixed, none lost.
    run 0 -n 2 -- sh -c 'i=0; while [ $i -lt 2000 ]; do echo "line $RANK $i"; i=$((i+1)); done'
    [ "$(grep -c '^\[0\] line 0 [0-9]*$' "$tmp/out")" = 2000 ] || fail "rank 0 lines mangled"
    [ "$(grep -c '^\[1\] line 1 [0-9]*$' "$tmp/out")" = 2000 ] || fail "rank 1 lines mangled"
    [ "$(wc -l <"$tmp/out")" = 4000 ] || fail "expected 4000 lines"
    run 0 -n 2 --no-prefix -- sh -c 'echo "plain$RANK"'
    has out '^plain0$'; has out '^plain1$'; hasnt out '^\['
    ;;
exit_status)
    run 3 -n 4 -- "$RANKPROG" exit 2 3
    has err 'ccrun: rank 2 (pid [0-9]*) exited with status 3'
    run 0 -n 4 -- "$RANKPROG" exit 9 3
    ;;
sigkill)
    run 137 -n 3 --grace 1 --term-grace 1 -- sh -c 'if [ "$RANK" = 1 ]; then kill -9 $$; fi; exec sleep 100'
    has err 'ccrun: rank 1 (pid [0-9]*) killed by signal 9 (SIGKILL)'
    has err 'sending SIGTERM'
    [ "$elapsed" -lt 20 ] || fail "took $elapsed s: the others were not ended"
    ;;
timeout)
    run 124 -n 2 --timeout 1 -- sleep 100
    has err 'job timed out after 1 s'
    [ "$elapsed" -lt 20 ] || fail "took $elapsed s"
    # Ranks that ignore SIGTERM get SIGKILL after --term-grace.
    # --timeout 3: the ranks must have set SIG_IGN before the SIGTERM comes (slow starts under ASan).
    run 124 -n 2 --timeout 3 --term-grace 1 -- "$RANKPROG" stubborn
    has err 'still running 1 s after SIGTERM; sending SIGKILL'
    [ "$elapsed" -lt 20 ] || fail "took $elapsed s"
    ;;
sigterm | sigint)
    # --grace 60: only a forwarded signal ends the ranks before the test's own timeout.
    sig=TERM want=143
    [ "$case" = sigint ] && sig=INT want=130
    "$CCRUN" -n 3 --grace 60 -- "$RANKPROG" trap "$tmp" >"$tmp/out" 2>"$tmp/err" &
    pid=$!
    wait_files ready 3
    kill -USR2 $pid          # forwarded as is (ccomm's dump signal); the ranks keep running
    wait_files USR2 3
    kill -$sig $pid
    wait $pid
    rc=$?
    [ "$rc" = "$want" ] || fail "ccrun exited $rc after SIG$sig, expected $want"
    for r in 0 1 2; do [ -e "$tmp/$sig.$r" ] || fail "rank $r did not get SIG$sig"; done
    has err "received SIG$sig; forwarding it to 3 ranks"
    hasnt err 'grace period'
    ;;
leftovers)
    # What a rank started and left behind, ignoring SIGINT and SIGTERM (a shell's `sleep 300 &`),
    # dies with the job: SIGKILL to the job's process group after --term-grace.
    "$CCRUN" -n 2 --grace 1 --term-grace 1 -- sh -c "sh -c 'trap \"\" INT TERM HUP; exec sleep 300' &
        echo \$! >$tmp/bg.\$RANK; touch $tmp/ready.\$RANK; wait" >"$tmp/out" 2>"$tmp/err" &
    pid=$!
    wait_files ready 2
    start=$(date +%s)
    kill -INT $pid
    wait $pid
    rc=$?
    pid=
    [ "$rc" = 130 ] || fail "ccrun exited $rc after SIGINT, expected 130"
    [ $(( $(date +%s) - start )) -lt 10 ] || fail "ccrun took too long to end the job"
    for r in 0 1; do
        bg=$(cat "$tmp/bg.$r") i=0
        # gone, or a zombie that init has yet to reap
        while kill -0 "$bg" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$bg/status" 2>/dev/null; do
            i=$((i + 1)); [ $i -lt 40 ] || { kill -KILL "$bg"; fail "rank $r's background process $bg survived ccrun"; }
            sleep 0.05
        done
    done
    has err 'sending SIGKILL'
    ;;
fd_limit)
    # soft == hard == 64: 16 ranks need 96 descriptors in ccrun; refused before any rank starts.
    (ulimit -n 64 && exec "$CCRUN" -n 16 -- "$RANKPROG" env 16) >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ "$rc" = 1 ] || fail "ccrun exited $rc under ulimit -n 64, expected 1"
    has err 'the open-file limit is 64 (hard limit 64), but 16 ranks need 96 descriptors'
    has err 'ulimit -n 96'
    hasnt out 'ok$'
    hasnt err 'Operation now in progress'
    # Enough descriptors: the same job runs.
    (ulimit -n 200 && exec "$CCRUN" -n 16 -- "$RANKPROG" env 16) >"$tmp/out" 2>"$tmp/err" ||
        fail "16 ranks under ulimit -n 200 failed"
    [ "$(grep -c ' ok$' "$tmp/out")" = 16 ] || fail "expected 16 ok lines"
    hasnt err 'cannot accept'
    ;;
wrong_key)
    run 0 -n 2 -- "$RANKPROG" wrongkey
    [ "$(grep -c 'other keys refused' "$tmp/out")" = 2 ] || fail "both ranks must be refused"
    has err 'failed authentication: wrong job key'
    has err 'failed authentication: it sent no proof of the job key'
    ;;
launch_errors)
    run 127 -n 2 -- no_such_program_xyz
    has err 'no_such_program_xyz: command not found'
    run 127 -n 2 -- /no/such/dir/prog
    has err 'cannot execute /no/such/dir/prog'
    run 2; has err 'no program to run'
    run 2 -n 0 true; has err 'expected a number of ranks'
    run 2 true; has err 'the number of ranks is required'
    run 2 -n 2 --bogus true; has err 'unknown option --bogus'
    run 2 -n 2 --netns a,b true; has err 'needs --store-host'
    run 0 --help; has out 'usage: ccrun -n N'; has out 'MASTER_ADDR'
    run 0 --version; has out '^ccrun (ccomm) '
    ;;
env_list)
    export CCOMM_TIMEOUT=33 CCOMM_JOB_KEY=s3kr1t-value
    run 0 --env
    unset CCOMM_TIMEOUT CCOMM_JOB_KEY
    has out '^CCOMM_TIMEOUT = 33$'
    has out '^CCOMM_JOB_KEY = <set>$'
    hasnt out "s3kr1t-value"
    ;;
env_doc)
    # docs/env.md must be exactly what ccrun prints from the table (target docs-env).
    "$CCRUN" --env --markdown >"$tmp/env.md" || fail "ccrun --env --markdown failed"
    diff -u "$SRC/docs/env.md" "$tmp/env.md" >"$tmp/out" ||
        fail "docs/env.md is stale: run 'cmake --build <build> --target docs-env' and commit it"
    ;;
rings)
    # A successful job's rings are removed; --keep-rings keeps them; a failed job's stay.
    run 0 -n 2 -- "$RANKPROG" comm 0
    [ "$(find "$tmp/rings" -name '*.ccfr' | wc -l)" = 0 ] || fail "rings of a successful job left"
    run 0 -n 2 --keep-rings -- "$RANKPROG" comm 0
    [ "$(find "$tmp/rings" -name '*.ccfr' | wc -l)" = 2 ] || fail "--keep-rings lost rings"
    rm -rf "$tmp/rings"
    run 4 -n 2 -- "$RANKPROG" comm 4
    [ "$(find "$tmp/rings" -name '*.ccfr' | wc -l)" = 2 ] || fail "a failed job's rings were removed"
    rm -rf "$tmp/rings"
    # Every rank exits 0, but rank 0's barrier timed out (the watchdog dumped): keep every ring.
    CCOMM_TIMEOUT=1 CCOMM_DUMP_DIR="$tmp/dumps" run 0 -n 2 -- "$RANKPROG" timeout0
    has out 'rank 0 barrier: timed out'
    has err 'keeping the job.s rings: .*ccfr: '
    [ "$(find "$tmp/rings" -name '*.ccfr' | wc -l)" = 2 ] || fail "rings of a job that timed out were removed"
    ;;
bind)
    # --bind-to: what each rank's kernel mask says (Cpus_allowed_list), against ccrun's own.
    own=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)
    first=$(echo "$own" | sed 's/[-,].*//')
    ncpu=$(nproc)
    show='awk "/^Cpus_allowed_list/ {print \"cpus \" \$2}" /proc/self/status'
    run 0 -n 2 --report-bindings -- sh -c "$show"      # the default: no binding
    has out "^\[0\] cpus $own\$"; has out "^\[1\] cpus $own\$"
    has err 'rank 1 not bound (--bind-to none)'
    # One CPU for ccrun: core puts every rank on it, auto binds nobody (more ranks than CPUs).
    taskset -c "$first" "$CCRUN" -n 2 --bind-to core --report-bindings -- sh -c "$show" \
        >"$tmp/out" 2>"$tmp/err" || fail "taskset ccrun --bind-to core failed"
    has out "^\[0\] cpus $first\$"; has out "^\[1\] cpus $first\$"
    has err "rank 1 bound to CPU $first\$"
    run 0 -n $((ncpu + 1)) --bind-to auto --report-bindings -- true
    has err "rank 0 not bound (--bind-to auto: $ncpu CPUs for $((ncpu + 1)) ranks)"
    # One rank under auto gets all of ccrun's CPUs; under core, one.
    run 0 -n 1 --bind-to auto -- sh -c "$show"; has out "^\[0\] cpus $own\$"
    run 0 -n 1 --bind-to core -- sh -c "$show"; has out "^\[0\] cpus $first\$"
    if [ "$ncpu" -ge 2 ]; then
        # Two ranks under core and under auto: different CPUs, each in ccrun's set.
        for how in core auto; do
            run 0 -n 2 --bind-to $how --report-bindings -- sh -c "$show"
            c0=$(sed -n 's/^\[0\] cpus //p' "$tmp/out"); c1=$(sed -n 's/^\[1\] cpus //p' "$tmp/out")
            [ -n "$c0" ] && [ -n "$c1" ] && [ "$c0" != "$c1" ] || fail "--bind-to $how: ranks on $c0 and $c1"
            has err "rank 0 bound to CPUs\{0,1\} $c0\$"
        done
    fi
    # ccomm's waits spin only where each rank of the host has a CPU: bound one to a CPU each,
    # they do (the masks are compared, not one rank's CPU count with the host's ranks); two
    # ranks confined to one CPU do not.
    if [ "$ncpu" -ge 2 ]; then
        CCOMM_LOG_LEVEL=INFO run 0 -n 2 --bind-to core -- "$RANKPROG" comm 0
        hasnt err 'waiting ranks yield and sleep'
    fi
    CCOMM_LOG_LEVEL=INFO taskset -c "$first" "$CCRUN" -n 2 -- "$RANKPROG" comm 0 \
        >"$tmp/out" 2>"$tmp/err" || fail "taskset ccrun comm failed"
    has err 'net: 2 ranks on this host share its cpus (1 among them, 1 for this rank)'
    run 2 -n 2 --bind-to sockets true; has err '\-\-bind-to "sockets": expected auto, core or none'
    ;;
netns) sh "$SRC/tests/mp/netns_test.sh" "$CCRUN" "$RANKPROG"; exit $? ;;
*) echo "unknown case $case"; exit 2 ;;
esac
echo "PASS ($case)"
