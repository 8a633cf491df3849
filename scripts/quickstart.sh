#!/usr/bin/env bash
# quickstart.sh - install what ccomm needs, build it, and run the demo or the tests.
#
#   scripts/quickstart.sh demo    install, build, run the 4-rank demo with a diagnosed hang
#   scripts/quickstart.sh test    install, build, run the whole test suite (+ ASan/UBSan, TSan)
#
# Run as root on Debian 12 (it uses apt-get). Build directories: build/ (release
# with debug info), build-asan/, build-tsan/. Set JOBS to limit parallelism.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
JOBS=${JOBS:-$(nproc)}

PACKAGES=(build-essential cmake pkg-config python3 iproute2 procps psmisc
          libssl-dev libjansson-dev libcmocka-dev
          liblttng-ust-dev lttng-tools babeltrace2
          openmpi-bin libopenmpi-dev clang-14 libclang-rt-14-dev
          python3-dev python3-torch libtorch-dev pybind11-dev)

say() { printf '\n== [%4d s] %s\n' "$SECONDS" "$*"; }

install_deps() {
    local missing=()
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if ((${#missing[@]})); then
        say "installing: ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
    fi
}

# build DIR [cmake args...]
# QUIET=1: the compiler's lines go to DIR/build.log (shown only if the build fails).
build() {
    local dir=$1; shift
    say "building $dir"
    cmake -S "$ROOT" -B "$ROOT/$dir" -DCCOMM_WERROR=ON "$@" >/dev/null
    if [ "${QUIET:-0}" = 1 ]; then
        if ! cmake --build "$ROOT/$dir" -j "$JOBS" >"$ROOT/$dir/build.log" 2>&1; then
            tail -n 40 "$ROOT/$dir/build.log"
            echo "build failed: the whole log is $dir/build.log" >&2
            return 1
        fi
        echo "built (log: $dir/build.log)"
    else
        cmake --build "$ROOT/$dir" -j "$JOBS"
    fi
}

run_demo() {
    QUIET=1 build build
    "$ROOT/scripts/demo.sh" "$ROOT/build"
}

run_tests() {
    local t0=$SECONDS failed=0
    build build
    say "tests (release build)"
    (cd build && ctest -j "$JOBS" --output-on-failure --timeout 600) || failed=1
    # What a packager builds (-O3, NDEBUG): the unit and multi-process tests again (~3 min),
    # a quarter of the collective matrices' sample (CCOMM_TEST_THIN: the first build ran all
    # of it; halved, this phase took 200 s of a 1596 s clean-clone run on 2026-12-05).
    # Without link-time optimization: the tests link without it anyway (CMakeLists.txt,
    # CCOMM_LTO), and the first build already linked libccomm.so and ccperf with it.
    # Without the torch backend: no unit or multi-process test loads it, and its four C++
    # files take about a minute of the 25 that CI allows. Without the benchmarks (bench/): no
    # test of this phase or of the ASan one runs them, and the first build built them.
    build build-rel -DCMAKE_BUILD_TYPE=Release -DCCOMM_WITH_CUDA=OFF -DCCOMM_LTO=OFF \
        -DCCOMM_WITH_TORCH=OFF -DCCOMM_TEST_THIN=4 -DCCOMM_BUILD_BENCH=OFF
    say "unit and multi-process tests (Release build)"
    (cd build-rel && ctest -j "$JOBS" --output-on-failure --timeout 600 -L "unit|mp") || failed=1
    build build-asan -DCCOMM_SANITIZE=address -DCMAKE_BUILD_TYPE=Debug -DCCOMM_WITH_CUDA=OFF \
        -DCCOMM_BUILD_BENCH=OFF
    say "tests under ASan+UBSan"
    (cd build-asan && ctest -j "$JOBS" --output-on-failure --timeout 900 -LE "nosan|bench") || failed=1
    # TSan: only the concurrency tests run, so only their programs are built.
    cmake -S "$ROOT" -B "$ROOT/build-tsan" -DCCOMM_WERROR=ON -DCCOMM_SANITIZE=thread \
        -DCMAKE_BUILD_TYPE=Debug -DCCOMM_WITH_CUDA=OFF >/dev/null
    local tsan_targets
    tsan_targets=$(cd build-tsan && ctest -N -L tsan | sed -n 's/^ *Test *#[0-9]*: //p')
    say "building build-tsan: $(echo $tsan_targets)"
    cmake --build "$ROOT/build-tsan" -j "$JOBS" --target $tsan_targets
    say "concurrency tests under TSan"
    (cd build-tsan && ctest -j "$JOBS" --output-on-failure --timeout 900 -L tsan) || failed=1
    say "done in $((SECONDS - t0)) s: $([ $failed = 0 ] && echo 'all passed' || echo 'FAILURES above')"
    return $failed
}

case "${1:-}" in
demo) install_deps; run_demo ;;
test) install_deps; run_tests ;;
*) echo "usage: $0 demo|test" >&2; exit 2 ;;
esac
