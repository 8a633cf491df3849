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
# (plus PATH and HOME), its output in out.R and err.R; its pid in pid.R.
start() {
    r=$1; shift 2
    env -i PATH="$PATH" HOME="${HOME:-/}" CCOMM_LOG_LEVEL=INFO "$@" "$HELLO" >"$tmp/out.$r" 2>"$tmp/err.$r" &
    echo $! >"$tmp/pid.$r"
}
# finish N : wait for ranks 0..N-1 (each must exit 0), then check N.
finish() {
    n=$1 r=0 bad=
    while [ $r -lt "$n" ]; do
        wait "$(cat "$tmp/pid.$r")" || bad="$bad $r"
        r=$((r + 1))
    done
    end=$(now_ms)
    [ -z "$bad" ] || fail "rank(s)$bad exited non-zero"
    check "$n"
}
# check N : each rank printed "rank r of N"; the job ended (at $end) within 5 s of the moment
# its last rank's world was ready (one allreduce, destroy and exit; the store's linger used to
# add 10 s). The time comes from the log line, stderr being unbuffered.
check() {
    n=$1 r=0 last=0
    while [ $r -lt "$n" ]; do
        grep -q "^rank $r of $n: sum of ranks" "$tmp/out.$r" || fail "rank $r did not report rank $r of $n"
        ts=$(sed -n 's/^\([^ ]*\) .*communicator world (id [0-9a-f]*) ready.*/\1/p' "$tmp/err.$r")
        [ -n "$ts" ] || fail "rank $r logged no 'communicator world ... ready' line"
        t=$(( $(date -d "$ts" +%s%N) / 1000000 ))
        [ "$t" -gt "$last" ] && last=$t
        r=$((r + 1))
    done
    took=$(( end - last ))
    [ "$took" -lt 5000 ] || fail "the job ended $took ms after its last rank was ready (limit 5000 ms)"
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
    has err.0 "WARN BOOTSTRAP: store 0.0.0.0:$((PORT + 1)): no job key"
    ;;
srun)
    # A task of srun: a step id, the step's node list in Slurm's bracket form.
    n=4 r=0
    while [ $r -lt $n ]; do
        start $r $n SLURM_JOB_ID=$$ SLURM_JOBID=$$ SLURM_STEP_ID=0 SLURM_STEPID=0 SLURM_PROCID=$r \
            SLURM_NTASKS=$n SLURM_STEP_NUM_TASKS=$n SLURM_LOCALID=$r \
            SLURM_STEP_NODELIST='127.0.0.[1-4]' SLURM_JOB_NODELIST='127.0.0.[1-4]'
        r=$((r + 1))
    done
    finish $n
    has err.0 "launched by slurm: rank 0 of 4, store 127.0.0.1:[0-9]* (hosted by this rank)"
    has err.3 "launched by slurm: rank 3 of 4, store 127.0.0.1:"
    ;;
batch_mpirun)
    # mpirun inside a batch script: the script's SLURM_PROCID=0 SLURM_NTASKS=1 (no step id)
    # are inherited by every rank; Open MPI's variables describe the process.
    n=3 r=0
    while [ $r -lt $n ]; do
        start $r $n SLURM_JOB_ID=$$ SLURM_PROCID=0 SLURM_NTASKS=1 SLURM_LOCALID=0 \
            SLURM_JOB_NODELIST=localhost OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=$n \
            OMPI_COMM_WORLD_LOCAL_RANK=$r OMPI_COMM_WORLD_LOCAL_SIZE=$n OMPI_MCA_ess_base_jobid=$$ \
            OMPI_MCA_orte_hnp_uri="$$.0;tcp://127.0.0.1:1;tcp6://[::1]:2"
        r=$((r + 1))
    done
    finish $n
    has err.1 "launched by open mpi: rank 1 of 3"
    has err.0 "(hosted by this rank)"
    ;;
ompi_pmix)
    # Open MPI 5 (PMIx, no HNP URI in the environment), all ranks on one host.
    n=2 r=0
    while [ $r -lt $n ]; do
        start $r $n PMIX_NAMESPACE=prterun-vm-$$@1 PMIX_RANK=$r OMPI_COMM_WORLD_RANK=$r \
            OMPI_COMM_WORLD_SIZE=$n OMPI_COMM_WORLD_LOCAL_RANK=$r OMPI_COMM_WORLD_LOCAL_SIZE=$n
        r=$((r + 1))
    done
    finish $n
    has err.0 "launched by open mpi: rank 0 of 2, store 127.0.0.1:"
    ;;
store_addr)
    # CCOMM_STORE_ADDR alone: rank 0, on that host, starts the store.
    n=3 r=0
    while [ $r -lt $n ]; do
        start $r $n RANK=$r WORLD_SIZE=$n CCOMM_STORE_ADDR=127.0.0.1:$PORT CCOMM_CONNECT_TIMEOUT=10
        r=$((r + 1))
    done
    finish $n
    has err.0 "store 127.0.0.1:$PORT (hosted by this rank)"
    ;;
batch_only)
    # A batch script that runs the program itself (no srun): a job of one, at once.
    start 0 1 SLURM_JOB_ID=$$ SLURM_PROCID=0 SLURM_NTASKS=4 SLURM_JOB_NODELIST='n[1-4]'
    finish 1
    has err.0 "without a step id: a batch script"
    ;;
disagree)
    start 0 1 OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 PMI_RANK=1 PMI_SIZE=4
    wait "$(cat "$tmp/pid.0")" && fail "a process with two disagreeing MPI runtimes ran"
    has err.0 "launchers disagree: open mpi says rank 0 of 2, pmi says rank 1 of 4"
    ;;
mpirun)
    command -v mpirun >/dev/null 2>&1 || { echo "skipped: no mpirun"; exit 77; }
    # Real Open MPI, also under a batch script's inherited Slurm rank (no SLURM_JOB_ID: that
    # would make mpirun itself look for srun).
    for slurm in "" "SLURM_PROCID=0 SLURM_NTASKS=1"; do
        rm -f "$tmp"/out.* "$tmp"/err.*
        env -u MASTER_ADDR -u MASTER_PORT -u RANK -u WORLD_SIZE $slurm CCOMM_LOG_LEVEL=INFO \
            mpirun --allow-run-as-root --oversubscribe -n 2 \
            sh -c "'$HELLO' >$tmp/out.\$OMPI_COMM_WORLD_RANK 2>$tmp/err.\$OMPI_COMM_WORLD_RANK" &
        wait $! || fail "mpirun ($slurm) exited non-zero"
        end=$(now_ms)
        check 2
        has err.0 "launched by open mpi: rank 0 of 2"
    done
    ;;
*) echo "unknown case $case"; exit 2 ;;
esac
echo "PASS ($case)"
