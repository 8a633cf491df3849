#!/bin/sh
# check_vectorized.sh - compiles a kernel variant of lib/kernels with
# -fopt-info-vec-optimized and fails unless GCC reports every generated
# element loop vectorized.
#
#   check_vectorized.sh VARIANT CC KERNELS_DIR FLAGS...
#
# VARIANT is generic, avx2 or avx512 (lib/kernels/kernels_VARIANT.c).
# CC is the compiler CMake builds with; FLAGS are the include paths and
# CCOMM_KERNEL_FLAGS. The loops to check are the CC__KV_ lines of the
# kernels_*.h files each variant includes (one generated loop per line, and
# GCC reports a macro's loop at the line of the macro call). Known scalar
# loops, below, are the only exceptions.
set -u
v=$1
cc=$2
dir=$3
shift 3

if "$cc" -dM -E -x c /dev/null 2>/dev/null | grep -q __clang__; then
    echo "skipped: $cc is clang; -fopt-info-vec is a GCC option"
    exit 77
fi
if ! "$cc" -dM -E -x c /dev/null 2>/dev/null | grep -q __x86_64__; then
    echo "skipped: not x86-64; only the generic variant is built and its baseline differs"
    exit 77
fi

# Loops that stay scalar, by variant, as an extended regex on the line:
# SSE2 has no 64-bit integer compare or multiply and no double <-> int64
# conversion; AVX2 lacks the conversion too (AVX-512DQ brings it).
known_scalar() {
    case $1 in
    generic) echo '\((u64|i64), (PROD|MIN|MAX)\)|SCALE_I\((u64|i64),' ;;
    avx2) echo 'SCALE_I\((u64|i64),' ;;
    *) echo '^$' ;;
    esac
}

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
checked=0
src=$dir/kernels_$v.c
if ! "$cc" "$@" -fopt-info-vec-optimized -c "$src" -o "$tmp/$v.o" 2>"$tmp/$v.txt"; then
    echo "FAIL: $src does not compile:"
    cat "$tmp/$v.txt"
    exit 1
fi
skip=$(known_scalar "$v")
headers=$(sed -n 's/^#include "\(kernels\/\)\{0,1\}\(kernels_[a-z0-9_]*\.h\)"$/\2/p' "$src")
for h in $headers; do
    grep -n '^CC__KV_' "$dir/$h" >"$tmp/lines" || continue
    while IFS=: read -r ln text; do
        if printf '%s\n' "$text" | grep -Eq "$skip"; then
            continue
        fi
        checked=$((checked + 1))
        if ! grep -q "$h:$ln:[0-9]*: optimized: loop vectorized" "$tmp/$v.txt"; then
            echo "FAIL: $v: $h:$ln $text is not vectorized"
            fail=1
        fi
    done <"$tmp/lines"
done
if [ "$checked" -lt 100 ]; then
    echo "FAIL: only $checked loops found to check; the file layout changed?"
    exit 1
fi
[ $fail -eq 0 ] && echo "ok: $v: $checked loops vectorized"
exit $fail
