#!/bin/sh
# test_guards.sh SRC - no two headers of the tree share an include guard. Two
# headers under one guard (tests/unit/transport/mp.h and tests/common/mp.h
# were) compile until one file includes both: then the second is silently
# empty, and what it declares is "undeclared" far from the cause.
set -u
src=$1
dups=$(cd "$src" && find include lib tests tools bench tracepoints python -name '*.h' 2>/dev/null |
       sort | while read -r h; do
           g=$(sed -n 's/^#ifndef[[:space:]]\{1,\}\([A-Za-z_][A-Za-z0-9_]*\).*/\1/p' "$h" | head -n 1)
           [ -n "$g" ] && echo "$g $h"
       done | sort | awk '{ if ($1 == prev) { print prevline; print } prev = $1; prevline = $0 }' | uniq)
if [ -n "$dups" ]; then
    echo "FAIL: headers that share an include guard (guard, file):"
    echo "$dups"
    exit 1
fi
echo "ok: every header's include guard is its own"
