# shellcheck shell=sh
# bench/bench_lib.sh - what the scripts in bench/ share (sourced, POSIX sh):
# the --plot check made before the run, the programs both sides need, the order
# of the two libraries in each launch (compare.sh, put_compare.sh), and the
# cache-line round trip that tells a launch's placement (those two, obs_modes.sh,
# obs_tax.sh, fresh_bcast.sh), and the check of numeric options (those and ab.sh,
# obs_instr.sh). NAME is the calling script's name, for its messages.

# bench_check_plot NAME FILE: checked before the run, not after an hour of it ("" = no plot).
bench_check_plot() {
    [ -n "$2" ] || return 0
    case "$2" in *.svg) ;; *) echo "$1: --plot \"$2\": the file must end in .svg" >&2; exit 2 ;; esac
    command -v gnuplot >/dev/null 2>&1 ||
        { echo "$1: --plot needs gnuplot: install it (apt-get install gnuplot-nox)" >&2; exit 2; }
}

# bench_need_tools NAME SRC BUILD: Open MPI (apt-get installs it when mpicc is missing), and
# ccperf and ccrun in BUILD (configured and built there when one is missing).
bench_need_tools() {
    if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then
        echo "$1: installing Open MPI (openmpi-bin libopenmpi-dev)" >&2
        apt-get update -qq && apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null
    fi
    if [ ! -x "$3/bin/ccperf" ] || [ ! -x "$3/bin/ccrun" ]; then
        cmake -S "$2" -B "$3" >/dev/null
        cmake --build "$3" -j2 --target ccperf ccrun >/dev/null
    fi
}

# bench_mpi_prog SRC BUILD TMP PROG [LIBS...]: prints the path of the MPI side, BUILD/bin/PROG
# (bench/CMakeLists.txt builds it when CMake found MPI), else compiled into TMP with mpicc.
bench_mpi_prog() {
    src=$1 build=$2 tmp=$3 prog=$4
    shift 4
    if [ -x "$build/bin/$prog" ]; then
        echo "$build/bin/$prog"
    else
        mpicc -O2 -o "$tmp/$prog" "$src/bench/$prog.c" "$@" >&2 && echo "$tmp/$prog"
    fi
}

# bench_both LAUNCH ARGS...: the caller's run_ccomm and run_ompi with ARGS, ccomm first in odd
# launches and Open MPI first in even ones (so neither always runs on the warmer machine).
bench_both() {
    l=$1
    shift
    if [ $((l % 2)) = 1 ]; then
        run_ccomm "$@"
        run_ompi "$@"
    else
        run_ompi "$@"
        run_ccomm "$@"
    fi
}

# bench_rtt LINE_RTT: the median cache-line round trip between CPUs 0 and 1 in ns by
# bench/line_rtt (the program's path), or "?" when it is missing, fails or prints no number.
# On a VM whose vCPUs the hypervisor moves, it says in which placement a launch ran
# (docs/performance.md, "Evening of 2026-12-03").
bench_rtt() {
    _bl_r=$("$1" 5 2>/dev/null | awk '{print $5}') || _bl_r=""
    case "$_bl_r" in '' | *[!0-9]*) echo "?" ;; *) echo "$_bl_r" ;; esac
}

# bench_place BEFORE AFTER [FAR_NS]: the placement of what ran between two bench_rtt figures:
# close (both under FAR_NS, default 250), far (both at or over it), moved, or unknown ("?").
bench_place() {
    _bl_far=${3:-250}
    case "$1/$2" in *"?"*) echo unknown; return 0 ;; esac
    if [ "$1" -lt "$_bl_far" ] && [ "$2" -lt "$_bl_far" ]; then echo close
    elif [ "$1" -ge "$_bl_far" ] && [ "$2" -ge "$_bl_far" ]; then echo far
    else echo moved; fi
}

# bench_posint NAME OPTION VALUE: exit 2, naming the option and the value, unless VALUE is a
# positive integer (the counts and sizes of the scripts' options).
bench_posint() {
    case "$3" in '' | *[!0-9]* | 0 | 0*)
        echo "$1: $2 \"$3\" is not a positive integer (digits, no leading zero)" >&2
        exit 2 ;;
    esac
}
