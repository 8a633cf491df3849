#!/bin/sh
# test_install.sh BUILD SRC - what issue "Foundation" promises a user: install ccomm into a
# prefix, compile examples/hello.c with `pkg-config --cflags --libs ccomm`, run it on 2 ranks
# with the installed ccrun, and find the installed tools and plugins.
set -eu
BUILD=$1 SRC=$2
command -v pkg-config >/dev/null || { echo "skipped: pkg-config not found"; exit 77; }
command -v cc >/dev/null || { echo "skipped: no C compiler"; exit 77; }
T=$(mktemp -d /tmp/ccomm-install-XXXXXX)
trap 'rm -rf "$T"' EXIT
cmake --install "$BUILD" --prefix "$T/prefix" >"$T/install.log" 2>&1 || { cat "$T/install.log"; exit 1; }
PC=$(find "$T/prefix" -name ccomm.pc | head -n 1)
[ -n "$PC" ] || { echo "FAIL: no ccomm.pc installed"; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$PC")
LIBDIR=$(pkg-config --variable=libdir ccomm)
[ -e "$LIBDIR/libccomm.so" ] || { echo "FAIL: pkg-config libdir $LIBDIR has no libccomm.so"; exit 1; }
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror -o "$T/hello" "$SRC/examples/hello.c" $(pkg-config --cflags --libs ccomm) \
    -Wl,-rpath,"$LIBDIR" || { echo "FAIL: hello does not build with pkg-config's flags"; exit 1; }
for tool in ccrun ccdump cclog ccperf; do
    [ -x "$T/prefix/bin/$tool" ] || { echo "FAIL: $tool not installed"; exit 1; }
done
OUT=$(CCOMM_LOG_LEVEL=WARN CCOMM_RECORDER_DIR="$T/rings" CCOMM_DUMP_DIR="$T/dumps" timeout 60 "$T/prefix/bin/ccrun" -n 2 "$T/hello" 2>&1) ||
    { echo "$OUT"; echo "FAIL: the installed hello did not run"; exit 1; }
echo "$OUT"
[ "$(echo "$OUT" | grep -c 'sum of ranks = 1 (expected 1)')" = 2 ] || { echo "FAIL: wrong output"; exit 1; }
echo "ok: installed, built with pkg-config, ran on 2 ranks"
