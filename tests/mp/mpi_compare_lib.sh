# shellcheck shell=sh
# tests/mp/mpi_compare_lib.sh - sourced by the tests of bench/'s comparisons with Open MPI
# (test_compare.sh, test_put_compare.sh): `mpi_compare_setup NAME` exits 77 (skipped) without
# Open MPI's mpicc and mpirun, else makes the private directory $tmp (removed at exit), whose
# file "out" holds the script's output; fail MESSAGE prints it and exits 1.
mpi_compare_setup() {
    if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then
        echo "skipped: no Open MPI (mpicc, mpirun)"
        exit 77
    fi
    tmp=$(mktemp -d "/tmp/$1.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
}
fail() { echo "FAIL: $*"; echo "--- output"; cat "$tmp/out"; exit 1; }
