# bench/bench_lib.sh - what bench/compare.sh and bench/put_compare.sh share
# (sourced, POSIX sh): the --plot check made before the run, the programs both
# sides need, and the order of the two libraries in each launch. NAME is the
# calling script's name, for its messages.

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
