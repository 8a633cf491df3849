#!/usr/bin/env bash
# check_torch2.sh - compile-check the PyTorch backend (python/csrc/*.cpp) against torch 2.x.
#
#   scripts/check_torch2.sh [--debs DIR] [--cache DIR] [--mirror URL] [BUILD_DIR]
#
# Debian 12 ships torch 1.13, which is what the backend is built, run and tested with. This
# script checks that the torch 2.x branches of the adapter (TORCH_VERSION_MAJOR >= 2, and the
# CUDA-tensor path) compile too, against Debian trixie's torch 2.6 headers in two flavours:
#   cpu26   libtorch-dev        (a CPU-only torch: the CUDA path must stay out)
#   cuda26  libtorch-cuda-dev   (a CUDA torch: the CUDA path is compiled, with CUDA's headers)
# Each python/csrc/*.cpp is compiled with g++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror
# per flavour (in parallel); a line "ok|FAILED <flavour> <file>" each. A file that picks a
# torch header from the system's torch 1.13 (/usr/include/{torch,ATen,c10}) instead of the
# flavour's tree fails too: that would check a mix of versions.
#
# The two .debs come from trixie with a private apt configuration (its own sources.list,
# lists and caches under the cache dir; the system's apt state is not touched, nothing is
# installed; --mirror: another Debian mirror, default http://deb.debian.org/debian), or from
# --debs DIR (a directory holding libtorch-dev_2.*.deb and libtorch-cuda-dev_2.*.deb). They
# are extracted once into the cache dir (default BUILD_DIR/torch2: ~100 MB of headers, and
# ~700 MB of precompiled torch headers that make a later run 5x faster), and reused.
#
# BUILD_DIR (default ./build) is a configured ccomm build: it holds build/include
# (ccomm/version.h). Exit status: 0 all compiled; 1 a file failed; 2 usage or setup error;
# 77 (ctest's SKIP_RETURN_CODE) when the packages cannot be had (no network, no apt): the
# script then prints "skipped: ..." and checks nothing.
set -uo pipefail

SKIP=77
SRC=$(cd "$(dirname "$0")/.." && pwd)
DEBS="" CACHE="" BUILD="" MIRROR=http://deb.debian.org/debian
while [ $# -gt 0 ]; do
    case $1 in
    --debs) DEBS=${2:?--debs needs a directory}; shift 2 ;;
    --cache) CACHE=${2:?--cache needs a directory}; shift 2 ;;
    --mirror) MIRROR=${2:?--mirror needs a URL}; shift 2 ;;
    -h | --help) sed -n '2,27p' "$0"; exit 0 ;;
    -*) echo "check_torch2: unknown option $1" >&2; exit 2 ;;
    *) BUILD=$1; shift ;;
    esac
done
BUILD=${BUILD:-$SRC/build}
CACHE=${CACHE:-$BUILD/torch2}
FLAVOURS="cpu26 cuda26"
deb_of() { [ "$1" = cpu26 ] && echo libtorch-dev || echo libtorch-cuda-dev; }

die() { echo "check_torch2: $*" >&2; exit 2; }
skip() { echo "skipped: $*"; exit $SKIP; }

[ -f "$BUILD/include/ccomm/version.h" ] ||
    die "build dir $BUILD has no include/ccomm/version.h: configure ccomm first (cmake -S . -B build)"
BUILD=$(cd "$BUILD" && pwd) # absolute: the flags (and so the precompiled header's key) stay one

# A directory of ours: made 0700 if missing; else a real directory (not a link) owned by us
# and writable by no one else, so no other user can plant headers or debs in it.
own_dir() {
    local d=$1
    if [ ! -e "$d" ] && [ ! -L "$d" ]; then
        (umask 077 && mkdir -p "$d") || die "cannot create $d"
    fi
    [ -d "$d" ] && [ ! -L "$d" ] || die "$d is not a directory (or is a symbolic link)"
    local owner mode
    owner=$(stat -c %u "$d") mode=$(stat -c %a "$d")
    [ "$owner" = "$(id -u)" ] || die "$d is owned by uid $owner, not by this user ($(id -u))"
    (( (8#$mode & 8#022) == 0 )) || die "$d has mode $mode: group or others may write to it"
}

# A directory we only read from: a real directory owned by us or root, writable by no one else.
trusted_dir() {
    local d=$1 owner mode
    [ -d "$d" ] && [ ! -L "$d" ] || die "--debs $d is not a directory (or is a symbolic link)"
    owner=$(stat -c %u "$d") mode=$(stat -c %a "$d")
    [ "$owner" = "$(id -u)" ] || [ "$owner" = 0 ] || die "--debs $d is owned by uid $owner"
    (( (8#$mode & 8#022) == 0 )) || die "--debs $d has mode $mode: group or others may write to it"
}

# Fetch both .debs from trixie into $CACHE/debs with apt's own download and verification
# (the Release file's signature, the packages' hashes), all state in $CACHE/apt.
fetch_debs() {
    local a=$CACHE/apt
    own_dir "$a"
    mkdir -p "$a/lists/partial" "$a/cache/archives/partial" "$CACHE/debs" || die "cannot create $a"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR trixie main contrib" \
        >"$a/sources.list"
    command -v apt-get >/dev/null || skip "no apt-get here to download trixie's libtorch-dev"
    [ -f /usr/share/keyrings/debian-archive-keyring.gpg ] ||
        skip "no /usr/share/keyrings/debian-archive-keyring.gpg to verify trixie's archive"
    local O=(-o "Dir::Etc::sourcelist=$a/sources.list" -o Dir::Etc::sourceparts=/nonexistent
        -o "Dir::State::Lists=$a/lists" -o "Dir::Cache=$a/cache"
        -o "Dir::Cache::archives=$a/cache/archives" -o Acquire::Retries=0
        -o Acquire::http::Timeout=20 -o APT::Sandbox::User=root -q)
    echo "fetching trixie's libtorch-dev and libtorch-cuda-dev (private apt state in $a)"
    if ! apt-get "${O[@]}" update >"$a/update.log" 2>&1 ||
        grep -q '^\(W\|E\): Failed to fetch\|^Err:' "$a/update.log"; then
        skip "cannot reach trixie's archive with apt: $(grep -m1 '^\(E\|W\): Failed' "$a/update.log" ||
            tail -1 "$a/update.log") (log: $a/update.log)"
    fi
    (cd "$CACHE/debs" && apt-get "${O[@]}" download libtorch-dev libtorch-cuda-dev) \
        >"$a/download.log" 2>&1 ||
        skip "apt-get download of trixie's libtorch-dev failed ($(tail -1 "$a/download.log"))"
    DEBS=$CACHE/debs
}

# Extract flavour $1's .deb into $CACHE/$1 (once: a .done file records which .deb).
extract() {
    local fl=$1 pkg deb
    pkg=$(deb_of "$fl")
    deb=$(ls "$DEBS/${pkg}"_2.*_amd64.deb 2>/dev/null | head -1)
    [ -n "$deb" ] || die "no ${pkg}_2.*_amd64.deb in $DEBS"
    if [ -f "$CACHE/$fl/.done" ] && [ "$(cat "$CACHE/$fl/.done")" = "$(basename "$deb")" ]; then
        return 0
    fi
    rm -rf "$CACHE/$fl.tmp" && mkdir "$CACHE/$fl.tmp" || die "cannot create $CACHE/$fl.tmp"
    dpkg-deb -x "$deb" "$CACHE/$fl.tmp" || die "dpkg-deb -x $deb failed"
    [ -f "$CACHE/$fl.tmp/usr/include/torch/csrc/api/include/torch/version.h" ] ||
        die "$deb holds no torch/version.h: not a libtorch dev package"
    basename "$deb" >"$CACHE/$fl.tmp/.done"
    rm -rf "${CACHE:?}/$fl" && mv "$CACHE/$fl.tmp" "$CACHE/$fl" || die "cannot move $CACHE/$fl into place"
}

own_dir "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
need_debs=0
for fl in $FLAVOURS; do [ -f "$CACHE/$fl/.done" ] || need_debs=1; done
if [ -n "$DEBS" ]; then
    trusted_dir "$DEBS"
elif [ $need_debs = 1 ]; then
    fetch_debs
fi
for fl in $FLAVOURS; do [ -n "$DEBS" ] && extract "$fl"; done

# The headers of the Python the backend is built for (Debian's, with torch), not of whatever
# python3 comes first on PATH.
PYINC=$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null ||
    echo /usr/include/python3.11)

# The flags of every compile of flavour $1 (the files' own, as python/CMakeLists.txt builds them).
flags() {
    local T=$CACHE/$1/usr/include
    printf '%s\n' -std=c++17 -Wall -Wextra -Wno-unused-parameter -Werror -isystem "$T" \
        -isystem "$T/torch/csrc/api/include" -isystem "$PYINC" -I "$SRC/include" \
        -I "$BUILD/include" -DTORCH_EXTENSION_NAME=_C
    [ -d /usr/local/cuda/include ] && printf '%s\n' -isystem /usr/local/cuda/include
}

# Torch's headers take most of each compile: they are parsed once per flavour into a
# precompiled header (kept while the flavour, the compiler and the flags stay the same),
# which every file of the flavour then pre-includes. The list only saves time: a header the
# sources need that is missing here is parsed by the file itself.
PCH_HEADERS="torch/csrc/distributed/c10d/Backend.hpp
torch/csrc/distributed/c10d/Types.hpp torch/csrc/distributed/c10d/Work.hpp"
pch() {
    local fl=$1 d=$CACHE/pch/$1 key
    mapfile -t F < <(flags "$fl")
    key=$(printf '%s\n' "$(g++ --version | head -1)" "${F[@]}" "$PCH_HEADERS" "$(cat "$CACHE/$fl/.done")" | md5sum)
    [ -f "$d/key" ] && [ "$(cat "$d/key")" = "$key" ] && [ -f "$d/torch_pch.h.gch" ] && return 0
    rm -rf "$d" && mkdir -p "$d" || return 1
    for h in $PCH_HEADERS; do echo "#include <$h>"; done >"$d/torch_pch.h"
    g++ "${F[@]}" -x c++-header "$d/torch_pch.h" -o "$d/torch_pch.h.gch" -MD -MF "$d/deps.d" \
        >"$d/log" 2>&1 || { echo "FAILED $fl precompiled torch headers (log: $d/log)"; return 1; }
    echo "$key" >"$d/key"
}

# A dependency file naming a torch header of the system's torch 1.13 (/usr/include/...).
mixed() { grep -oE '(^| )/usr/include/(torch|ATen|c10|caffe2)/[^ ]*' "$@" | head -3; }

# compile FLAVOUR FILE: one line, ok or FAILED with the compiler's first error lines.
compile() {
    local fl=$1 f=$2 log deps m
    log=$CACHE/logs/$fl.$(basename "$f" .cpp).log deps=${log%.log}.d
    mapfile -t F < <(flags "$fl")
    if ! g++ "${F[@]}" -include "$CACHE/pch/$fl/torch_pch.h" -fsyntax-only -MD -MF "$deps" \
        "$f" >"$log" 2>&1; then
        echo "FAILED $fl $(basename "$f") (log: $log):"
        grep -m5 'error' "$log" | sed 's/^/    /'
        return 1
    fi
    m=$(mixed "$deps" "$CACHE/pch/$fl/deps.d")
    if [ -n "$m" ]; then
        echo "FAILED $fl $(basename "$f"): took torch 1.13's headers from /usr/include:" $m
        return 1
    fi
    echo "ok     $fl $(basename "$f")"
}
export -f compile flags mixed
export CACHE SRC BUILD PYINC

mkdir -p "$CACHE/logs" || die "cannot create $CACHE/logs"
for fl in $FLAVOURS; do
    v=$CACHE/$fl/usr/include/torch/csrc/api/include/torch/version.h
    echo "$fl: torch $(awk '/define TORCH_VERSION_(MAJOR|MINOR|PATCH)/ {printf "%s%s", s, $3; s="."}' "$v")" \
        "($(cat "$CACHE/$fl/.done"))"
done
t0=$SECONDS
rm -f "$CACHE"/logs/*.res
for fl in $FLAVOURS; do pch "$fl" & done
wait
for fl in $FLAVOURS; do for f in "$SRC"/python/csrc/*.cpp; do echo "$fl $f"; done; done |
    xargs -P "$(nproc)" -n 2 bash -c 'compile "$0" "$1" >"$CACHE/logs/$0.$(basename "$1" .cpp).res"'
n=0 fails=0
for fl in $FLAVOURS; do
    for f in "$SRC"/python/csrc/*.cpp; do
        r=$CACHE/logs/$fl.$(basename "$f" .cpp).res
        n=$((n + 1))
        if [ -s "$r" ]; then cat "$r"; else echo "FAILED $fl $(basename "$f"): no result"; fi
        grep -q '^ok ' "$r" 2>/dev/null || fails=$((fails + 1))
    done
done
echo "torch 2.6 compile check: $((n - fails)) of $n compiled in $((SECONDS - t0)) s"
[ "$fails" = 0 ]
