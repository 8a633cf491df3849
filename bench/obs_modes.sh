#!/bin/bash
# bench/obs_modes.sh - the observability tax of several builds and settings
# side by side: bench/obs_tax.c's 8-byte allreduce under each MODE in turn,
# launch after launch (the modes alternate, so all see the same load), and
# per mode the median over launches of each launch's median round and of its
# fastest round, in ns per op, and the share of clog's records its writer
# dropped (a full ring): a mode that dropped some did not log everything, and
# its time is not clog's full cost. Only figures of one run compare.
#
#   bench/obs_modes.sh "off:build:CCOMM_RECORDER_ENTRIES=0 CCOMM_LTTNG=0" "on:build:CLOG" \
#                      "on_old:/tmp/old/build:CLOG"
#
# A MODE is NAME:BUILD:SETTINGS; SETTINGS are VAR=value words for that
# mode's runs, and the word CLOG attaches clog (CCOMM_CLOG to a file of this
# run, all events). The recorder and its 4096 entries are on unless the
# settings turn them off. OBS_TAX_COLL=broadcast in a mode's settings times
# the 8-byte broadcast from rank 0 instead (bench/obs_tax.c). The word MPI
# runs the same loop over Open MPI instead (BUILD/bin/mpi_obs_tax under
# mpirun, shared memory; add btl=tcp for its TCP transport), the peer's
# figure in ns, where ccperf and mpi_bench print 10 ns steps:
#
#   bench/obs_modes.sh --close-only "ccomm:build:OBS_TAX_COLL=broadcast" \
#                      "ompi:build:MPI OBS_TAX_COLL=broadcast"
# Options before the modes: --launches N (9), --ranks N (2), --close-only (below), --rounds N (21), --ops N (5000 per round, after 10000 warm-up
# calls; obs_tax waits 30 ms after init first, so that every round is timed
# with the TSC stamps of a running job, not the clock_gettime ones of the first
# 20 ms, lib/base/clock.c).
#
# The placement: on a VM whose two vCPUs the hypervisor moves (docs/performance.md,
# "Evening of 2026-12-03"), a 2-rank launch in the far placement is slower by more than the
# tax. bench/line_rtt (from the first mode's build) times a cache line's round trip between
# CPUs 0 and 1 before and after each round of launches (one launch of every mode), and the
# summary says how many rounds ran close (both under 250 ns), far (both over) or moved.
# --close-only keeps only the rounds that ran close, and runs more rounds (at most three
# times --launches in all) until --launches of them did; the medians are of those.
set -eu
. "$(dirname "$0")/bench_lib.sh"
LAUNCHES=9 RANKS=2 ROUNDS=21 OPS=5000 CLOSE_ONLY=0 FAR_NS=250
while [ $# -gt 0 ]; do
    case "$1" in
    --launches) LAUNCHES=$2; shift 2 ;;
    --ranks) RANKS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --ops) OPS=$2; shift 2 ;;
    --close-only) CLOSE_ONLY=1; shift ;;
    -h|--help) sed -n '2,/^[^#]/p' "$0" | sed -n 's/^# \{0,1\}//p'; exit 0 ;;
    --*) echo "obs_modes.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
    esac
done
bench_posint obs_modes.sh --launches "$LAUNCHES"
bench_posint obs_modes.sh --ranks "$RANKS"
bench_posint obs_modes.sh --rounds "$ROUNDS"
bench_posint obs_modes.sh --ops "$OPS"
[ $# -gt 0 ] || { echo "obs_modes.sh: no MODE given (see --help)" >&2; exit 2; }
# The program a mode runs: "mpi" for a mode whose settings hold the word MPI, else "ccomm".
lib_of() { case " $1 " in *" MPI "*) echo mpi ;; *) echo ccomm ;; esac; }
for m in "$@"; do
    IFS=: read -r name b settings <<<"$m"
    if [ "$(lib_of "$settings")" = mpi ]; then
        [ -n "$name" ] && [ -x "$b/bin/mpi_obs_tax" ] && command -v mpirun >/dev/null || {
            echo "obs_modes.sh: mode \"$m\": MPI needs mpirun and BUILD/bin/mpi_obs_tax (built where an MPI C library is found)" >&2
            exit 2
        }
        continue
    fi
    [ -n "$name" ] && [ -x "$b/bin/obs_tax" ] && [ -x "$b/bin/ccrun" ] || {
        echo "obs_modes.sh: mode \"$m\": NAME:BUILD:SETTINGS with BUILD holding bin/obs_tax and bin/ccrun" >&2
        exit 2
    }
done
FR=$(mktemp -d /dev/shm/ccomm-obsmodes.XXXXXX)
T=$(mktemp -d /tmp/ccomm-obsmodes.XXXXXX)
trap 'rm -rf "$FR" "$T"' EXIT
first=${1#*:}
RTT_BIN=${first%%:*}/bin/line_rtt
if [ "$CLOSE_ONLY" = 1 ] && [ ! -x "$RTT_BIN" ]; then
    echo "obs_modes.sh: --close-only needs $RTT_BIN (cmake --build BUILD --target line_rtt)" >&2
    exit 2
fi
rtt() { bench_rtt "$RTT_BIN"; }
close=0 far=0 moved=0 unknown=0 kept=0 l=0
tries=$LAUNCHES
[ "$CLOSE_ONLY" = 1 ] && tries=$((3 * LAUNCHES))
while [ "$l" -lt "$tries" ] && [ "$kept" -lt "$LAUNCHES" ]; do
    l=$((l + 1))
    before=$(rtt)
    : >"$T/round"
    for m in "$@"; do
        IFS=: read -r name b settings <<<"$m"
        envs=() mca=()
        for w in $settings; do
            case "$w" in
            CLOG) envs+=("CCOMM_CLOG=$T/clog.$l.%r.%p") ;;
            MPI) ;;
            btl=*) mca=(--mca btl "${w#btl=},self" --mca pml ob1) ;;
            *) envs+=("$w") ;;
            esac
        done
        if [ "$(lib_of "$settings")" = mpi ]; then
            launch=(mpirun --allow-run-as-root --oversubscribe ${mca[@]+"${mca[@]}"} -n "$RANKS"
                    "$b/bin/mpi_obs_tax")
        else
            launch=("$b/bin/ccrun" --no-prefix -n "$RANKS" "$b/bin/obs_tax")
        fi
        r=$(env -u CCOMM_CLOG -u CCOMM_RECORDER_ENTRIES -u CCOMM_LTTNG ${envs[@]+"${envs[@]}"} \
            CCOMM_RECORDER_DIR="$FR" CCOMM_LOG_LEVEL=ERROR \
            timeout 600 "${launch[@]}" "$ROUNDS" "$OPS" 2>&1 |
            awk '$1 == "obs_tax" && $NF != "WRONG" { print $3, $5 }')
        [ -n "$r" ] || { echo "obs_modes.sh: mode $name, launch $l printed no time" >&2; exit 1; }
        # clog's records this launch: written (event lines) and dropped (END's count), every
        # rank's file together. A launch that dropped some measured less than everything.
        w=0 d=0
        for f in "$T"/clog."$l".*; do
            [ -e "$f" ] || continue
            w=$((w + $(grep -c '^C[0-9]*|[QSEWA]|' "$f" || true)))
            d=$((d + $(sed -n 's/^END|dropped=\([0-9]*\)|.*/\1/p' "$f" | tail -n 1 | grep . || echo 0)))
            rm -f "$f"
        done
        echo "$name $r $w $d" >>"$T/round"
    done
    after=$(rtt)
    place=$(bench_place "$before" "$after" "$FAR_NS")
    case "$place" in
    close) close=$((close + 1)) ;; far) far=$((far + 1)) ;;
    moved) moved=$((moved + 1)) ;; *) unknown=$((unknown + 1)) ;;
    esac
    echo "$before/$after" >>"$T/rtts"
    if [ "$CLOSE_ONLY" = 0 ] || [ "$place" = close ]; then
        cat "$T/round" >>"$T/res"
        kept=$((kept + 1))
    fi
done
if [ "$kept" = 0 ]; then
    echo "obs_modes.sh: no round ran close in $l (line_rtt before/after: $(paste -sd' ' "$T/rtts"))" >&2
    exit 1
fi
echo "obs_modes: ns per 8-byte op (allreduce; broadcast where a mode says OBS_TAX_COLL=broadcast), $RANKS ranks, $kept launches alternating; medians over launches"
kept_txt=""
[ "$CLOSE_ONLY" = 1 ] && kept_txt="; kept the $kept close rounds of $l"
echo "  placement (line_rtt before/after each round, ns): $close close, $far far, $moved moved, $unknown unknown$kept_txt"
echo "  $(paste -sd' ' "$T/rtts")"
printf '  %-16s %14s %14s %16s\n' mode "median round" "fastest round" "clog dropped"
drops=0
for m in "$@"; do
    name=${m%%:*}
    med() { awk -v n="$name" -v c="$1" '$1 == n { print $c }' "$T/res" | sort -g |
            awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
    # Dropped records over all of the mode's launches, as a share of what its ops made.
    dr=$(awk -v n="$name" '$1 == n { w += $4; d += $5 }
                           END { if (w + d == 0) print "-"; else printf "%.1f %%", 100 * d / (w + d) }' "$T/res")
    case "$dr" in - | "0.0 %") ;; *) drops=1 ;; esac
    printf '  %-16s %14s %14s %16s\n' "$name" "$(med 2)" "$(med 3)" "$dr"
done
if [ "$drops" = 1 ]; then
    echo "obs_modes: clog dropped records in a mode above: its writer fell behind (its ring was full), so"
    echo "           that mode's time is of less than everything logged, not of clog at full cost"
fi
