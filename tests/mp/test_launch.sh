#!/bin/sh
# test_launch.sh CASE HELLO - examples/hello started the way other launchers
# start programs (torchrun, srun, mpirun): only the variables each launcher
# sets, nothing set by hand. Checks rank, size, who hosts the store, and the
# time from the last rank's output to the end of the job.
# Exit 0 = pass, 1 = fail, 77 = skipped (with the reason).
set -u
case=$1 HELLO=$2
tmp=$(mktemp -d /tmp/ccomm_launch.XXXXXX)
nsA= nsB=
cleanup() {
    [ -n "$nsA" ] && ip netns del "$nsA" 2>/dev/null # deleting a namespace removes its veth end
    [ -n "$nsB" ] && ip netns del "$nsB" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL ($case): $*"; for f in "$tmp"/out.* "$tmp"/err.*; do [ -e "$f" ] && { echo "--- $f"; cat "$f"; }; done; exit 1; }
# A port pair per run (PORT, and PORT + 1 where ccomm's store goes under torchrun), so that
# parallel runs of this test do not meet. Below the kernel's ephemeral range: a port in that range
# can be taken at any moment by another process's outgoing connection (CI saw "cannot listen on
# 0.0.0.0:33914: address already in use"). A pair that ss shows in use is skipped.
eph=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
case $eph in '' | *[!0-9]*) eph=32768 ;; esac
if [ "$eph" -gt 12000 ]; then base=10000 span=$((eph - 10002)); else base=61000 span=4000; fi
PORT=$((base + $$ % span))
tries=0
while [ $tries -lt 100 ] && ss -Htan "( sport = :$PORT or sport = :$((PORT + 1)) )" 2>/dev/null | grep -q .; do
    PORT=$((base + (PORT - base + 2) % span)) tries=$((tries + 1))
done
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# start R N VAR=VALUE... : start rank R of N in the background with only these variables
# (plus PATH and HOME), its output in out.R and err.R; its pid in pid.R.
WRAP=
start() {
    r=$1; shift 2
    $WRAP env -i PATH="$PATH" HOME="${HOME:-/}" CCOMM_LOG_LEVEL=INFO "$@" "$HELLO" >"$tmp/out.$r" 2>"$tmp/err.$r" &
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
twohost)
    # Two "hosts": network namespaces joined by a veth pair, each with its own host name
    # (a UTS namespace) and a local-only interface (a veth pair inside it), dum0, that peers
    # cannot reach. srun-style, 2 ranks on each:
    # shm inside a host, TCP across, the store on the first node of the step.
    [ "$(id -u)" = 0 ] || { echo "skipped: network namespaces need root"; exit 77; }
    command -v ip >/dev/null 2>&1 && command -v unshare >/dev/null 2>&1 ||
        { echo "skipped: ip (iproute2) or unshare missing"; exit 77; }
    nsA=ccLA$$ nsB=ccLB$$
    ip netns add "$nsA" 2>"$tmp/ip.err" || { echo "skipped: ip netns add: $(cat "$tmp/ip.err")"; nsA=; exit 77; }
    ip netns add "$nsB" && ip link add "v$nsA" type veth peer name "v$nsB" &&
        ip link set "v$nsA" netns "$nsA" && ip link set "v$nsB" netns "$nsB" &&
        ip -n "$nsA" addr add 10.78.0.1/24 dev "v$nsA" && ip -n "$nsB" addr add 10.78.0.2/24 dev "v$nsB" &&
        ip -n "$nsA" link add dum0 type veth peer name dum1 &&
        ip -n "$nsB" link add dum0 type veth peer name dum1 &&
        ip -n "$nsA" addr add 10.79.0.1/24 dev dum0 && ip -n "$nsB" addr add 10.79.1.1/24 dev dum0 &&
        for ns in "$nsA" "$nsB"; do
            ip -n "$ns" link set lo up && ip -n "$ns" link set dum0 up && ip -n "$ns" link set dum1 up &&
                ip -n "$ns" link set "v$ns" up || exit 1
        done || { echo "skipped: cannot build the veth pair"; exit 77; }
    printf 'hostname "$1" || exit 1\nshift\nexec "$@"\n' >"$tmp/onhost.sh"
    run_two() { # IFNAME: four ranks, 0-1 on nodeA, 2-3 on nodeB
        r=0
        while [ $r -lt 4 ]; do
            ns=$nsA node=nodeA; [ $r -ge 2 ] && ns=$nsB node=nodeB
            WRAP="ip netns exec $ns unshare --uts sh $tmp/onhost.sh $node"
            start $r 4 SLURM_JOB_ID=$$ SLURM_STEP_ID=1 SLURM_PROCID=$r SLURM_NTASKS=4 \
                SLURM_LOCALID=$((r % 2)) SLURM_STEP_NODELIST='10.78.0.[1-2]' \
                CCOMM_SOCKET_IFNAME="$1" CCOMM_CONNECT_TIMEOUT=5
            r=$((r + 1))
        done
        WRAP=
    }
    run_two '^lo,dum'
    finish 4
    has err.0 "launched by slurm: rank 0 of 4, store 10.78.0.1:[0-9]* (hosted by this rank)"
    has err.0 "rank 0 of 4 connected: 1 peers over shm, 2 over tcp"
    has err.3 "rank 3 of 4 connected: 1 peers over shm, 2 over tcp"
    has err.2 "net: rank 2 listens on 10.78.0.2 (interface v$nsB"
    # The interface decides the address peers dial: the dum0 ones cannot reach each other.
    rm -f "$tmp"/out.* "$tmp"/err.*
    run_two '=dum0'
    r=0 bad=0
    while [ $r -lt 4 ]; do wait "$(cat "$tmp/pid.$r")" || bad=$((bad + 1)); r=$((r + 1)); done
    [ $bad -gt 0 ] || fail "ranks whose peers dial unreachable dum0 addresses formed a job"
    grep -q "listens on 10.79" "$tmp"/err.* || fail "CCOMM_SOCKET_IFNAME=dum0 did not choose dum0"
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
