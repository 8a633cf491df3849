#!/bin/sh
# test_layers.sh SRC DIRS CC - the layers of lib/ point down only, and the
# build enforces it.
#
# The table below is the design's (docs/architecture.md): for each layer,
# every folder of lib/ its sources may include from, transitively. For each
# layer and each folder the script asks the compiler, with exactly the
# include path CMake gives that layer, whether "<folder>/<a header>" can be
# found (__has_include); it must be found iff the table allows it. Then it
# checks that every internal include in lib/ names its folder and that none
# climbs out with "../".
set -u
src=$1 dirs=$2 cc=$3
allowed() {
    case $1 in
    base) echo "base" ;;
    kernels) echo "kernels base" ;;
    bootstrap) echo "bootstrap base" ;;
    hooks) echo "hooks base" ;;
    engine) echo "engine base hooks bootstrap" ;;
    transport) echo "transport base bootstrap" ;;
    clog) echo "clog base hooks" ;;
    recorder) echo "recorder base hooks" ;;
    native) echo "native base engine hooks bootstrap transport kernels" ;;
    core) echo "core native recorder clog transport engine hooks bootstrap kernels base" ;;
    esac
}
layers="base kernels bootstrap hooks engine transport clog recorder native core"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0 checked=0
for l in $layers; do
    [ -s "$dirs/$l.dirs" ] || { echo "FAIL: no include path written for layer $l ($dirs/$l.dirs)"; fail=1; continue; }
    flags=$(sed -e '/^$/d' -e 's/^/-I/' "$dirs/$l.dirs" | tr '\n' ' ')
    for f in $layers; do
        h=$(cd "$src/lib/$f" && ls *.h | head -n 1)
        printf '#if !__has_include("%s/%s")\n#error not visible\n#endif\n' "$f" "$h" > "$tmp/probe.c"
        # shellcheck disable=SC2086
        if "$cc" -fsyntax-only $flags "$tmp/probe.c" 2>/dev/null; then seen=1; else seen=0; fi
        case " $(allowed "$l") " in *" $f "*) want=1 ;; *) want=0 ;; esac
        checked=$((checked + 1))
        if [ "$seen" != "$want" ]; then
            if [ "$want" = 1 ]; then
                echo "FAIL: layer $l may use $f but cannot include $f/$h"
            else
                echo "FAIL: layer $l can include $f/$h: $l may not depend on $f"
            fi
            fail=1
        fi
    done
done
# Every include of an internal header names its folder; none climbs with "../".
bad=$(cd "$src" && grep -rnE '#[[:space:]]*include[[:space:]]+"(\.\./|[^"/]+")' lib \
      --include='*.c' --include='*.h' --include='*.cu' --include='*.cuh' | head -n 20)
if [ -n "$bad" ]; then
    echo "FAIL: includes in lib/ that do not name their folder (write \"folder/file.h\"):"
    echo "$bad"
    fail=1
fi
echo "layers: $checked layer/folder pairs checked"
[ "$fail" = 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $fail
