#!/bin/sh
# test_cxx_header.sh SRC BUILD CXX - a C++ program includes <ccomm/ccomm.h>,
# builds with -Wall -Wextra -Werror -pedantic as C++11 and as C++17, links
# libccomm.so and runs (see cxx_header.cpp).
set -u
src=$1 build=$2 cxx=$3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
for std in c++11 c++17; do
    if ! "$cxx" -std=$std -Wall -Wextra -Werror -pedantic \
        -I"$src/include" -I"$build/include" "$src/tests/unit/abi/cxx_header.cpp" \
        -L"$build/lib" -Wl,-rpath,"$build/lib" -lccomm -o "$tmp/cxx_$std"; then
        echo "FAIL: <ccomm/ccomm.h> does not build as $std with $cxx"
        fail=1
        continue
    fi
    if ! "$tmp/cxx_$std"; then
        echo "FAIL: the $std program did not run cleanly"
        fail=1
    fi
done
[ $fail = 0 ] && echo "ok: <ccomm/ccomm.h> builds and links as C++11 and C++17"
exit $fail
