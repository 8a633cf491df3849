#!/bin/sh
# test_install_cmake.sh BUILD SRC - the installed CMake package and plugins, as a user meets
# them: find_package(ccomm) in a project of its own, linking ccomm::ccomm and ccomm::ccomm_static
# (whose dependencies, OpenSSL::Crypto and jansson, the package must find itself), and the
# installed libccomm-nccl.so loaded with LD_PRELOAD (it finds libccomm.so.0 beside it).
set -eu
BUILD=$1 SRC=$2
command -v cmake >/dev/null || { echo "skipped: cmake not found"; exit 77; }
T=$(mktemp -d /tmp/ccomm-install-cmake-XXXXXX)
trap 'rm -rf "$T"' EXIT
cmake --install "$BUILD" --prefix "$T/prefix" >"$T/install.log" 2>&1 || { cat "$T/install.log"; exit 1; }
mkdir -p "$T/app"
cp "$SRC/examples/hello.c" "$T/app/hello.c"
cat >"$T/app/CMakeLists.txt" <<'CMK'
cmake_minimum_required(VERSION 3.16)
project(uses_ccomm C)
find_package(ccomm REQUIRED)
add_executable(hello_shared hello.c)
target_link_libraries(hello_shared PRIVATE ccomm::ccomm)
add_executable(hello_static hello.c)
target_link_libraries(hello_static PRIVATE ccomm::ccomm_static)
CMK
cmake -S "$T/app" -B "$T/app/build" -DCMAKE_PREFIX_PATH="$T/prefix" >"$T/cfg.log" 2>&1 ||
    { cat "$T/cfg.log"; echo "FAIL: find_package(ccomm) failed"; exit 1; }
cmake --build "$T/app/build" >"$T/build.log" 2>&1 ||
    { cat "$T/build.log"; echo "FAIL: a project linking ccomm::ccomm and ccomm::ccomm_static does not build"; exit 1; }
for prog in hello_shared hello_static; do
    OUT=$(CCOMM_LOG_LEVEL=WARN CCOMM_RECORDER_DIR="$T/rings" timeout 60 "$T/app/build/$prog" 2>&1) ||
        { echo "$OUT"; echo "FAIL: $prog did not run"; exit 1; }
    echo "$OUT" | grep -q 'rank 0 of 1: sum of ranks = 0 (expected 0)' || { echo "$OUT"; echo "FAIL: $prog: wrong output"; exit 1; }
done
# The installed archive carries machine code only: GCC's IR in it (the build's fat objects)
# would send every user's link through the LTO plugin (25 s for hello.c instead of 0.3).
A=$(find "$T/prefix" -name libccomm.a | head -n 1)
[ -n "$A" ] || { echo "FAIL: no libccomm.a installed"; exit 1; }
if command -v objdump >/dev/null && objdump -h "$A" | grep -q '\.gnu\.lto_'; then
    echo "FAIL: the installed $A holds GCC's LTO sections (.gnu.lto_*)"; exit 1
fi
NCCL=$(find "$T/prefix" -name libccomm-nccl.so | head -n 1)
if [ -n "$NCCL" ]; then
    # ld.so reports a preload it cannot load on stderr and runs the program anyway.
    rc=0
    ERR=$(LD_PRELOAD="$NCCL" /bin/true 2>&1) || rc=$?
    [ "$rc" = 0 ] && [ -z "$ERR" ] ||
        { echo "$ERR"; echo "FAIL: the installed libccomm-nccl.so cannot be preloaded (status $rc)"; exit 1; }
    readelf -d "$NCCL" | grep -q 'RUNPATH.*\$ORIGIN' || { readelf -d "$NCCL"; echo "FAIL: no RUNPATH \$ORIGIN"; exit 1; }
fi
echo "ok: find_package(ccomm) with both targets; libccomm.a without LTO sections; libccomm-nccl.so preloads from the prefix"
