#!/bin/bash
# tests/gpu/kit.sh - the GPU tests on a machine that cannot build ccomm (no jansson or OpenSSL
# headers, no package registry), from binaries built here.
#
#   tests/gpu/kit.sh make [BUILD_DIR [KIT_DIR]]    here: copy the GPU programs, libccomm, its
#                                                  plugins and their non-system libraries into
#                                                  KIT_DIR (default .gpukit), stripped
#   tests/gpu/kit.sh run [KIT_DIR [SECONDS [CASES]]]
#                                                  there: run tests/gpu/run.sh case by case from
#                                                  the kit, within SECONDS in all (default 480);
#                                                  CASES: a comma list (default: every case)
#   tests/gpu/kit.sh ext [KIT_DIR]                 only build the PyTorch extension into the kit
#
# "run" finds NCCL and CUPTI where the machine has them (the CUDA toolkit, or the nvidia-*
# Python packages beside torch), builds the PyTorch backend's extension against that machine's
# torch (g++ and torch's headers; in the background while the first cases run), and runs each
# case of run.sh with its own results folder under a time share of what is left, so that one
# case that hangs cannot take the others' time. Results: $OUT/summary.txt (every case's summary
# lines) and $OUT/results.tgz (all logs, dumps and rings), or /tmp/gpu-kit-results without $OUT.
set -u

SRC=$(cd "$(dirname "$0")/../.." && pwd)

make_kit() {
    build=$(cd "${1:-$SRC/build}" && pwd) || exit 1
    kit=${2:-$SRC/.gpukit}
    rm -rf "$kit"
    mkdir -p "$kit/build/lib" "$kit/build/bin" "$kit/build/tests" "$kit/build/python/ccomm" \
        "$kit/deps" || exit 1
    for f in tests/gpu_app tests/gpu_window tests/test_cuda_math bin/ccrun bin/cuda_kernels_bench \
        lib/libccomm-cuda.so lib/libccomm-nccl.so lib/libccomm-lttng.so; do
        [ -f "$build/$f" ] || { echo "kit.sh: $build/$f is missing (build the GPU targets)" >&2; exit 1; }
        cp "$build/$f" "$kit/build/$f" && strip --strip-debug "$kit/build/$f" || exit 1
    done
    cp -P "$build"/lib/libccomm.so* "$kit/build/lib/" && strip --strip-debug "$kit"/build/lib/libccomm.so.*.*
    cp "$build"/python/ccomm/*.py "$kit/build/python/ccomm/"
    cp -r "$build/include" "$kit/include"   # the generated headers (build id, version)
    # CUPTI for CCOMM_GPU_TIMING=cupti, used there when the machine has none of its own.
    for c in /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib64 /usr/local/cuda/lib; do
        if [ -e "$c/libcupti.so" ]; then
            mkdir -p "$kit/cupti" && cp -L "$c/libcupti.so" "$kit/cupti/libcupti.so"
            break
        fi
    done
    # The libraries outside glibc and the CUDA runtime that the programs and plugins need.
    for f in "$kit"/build/lib/*.so "$kit"/build/tests/* "$kit"/build/bin/*; do
        ldd "$f" 2>/dev/null
    done | awk '$3 ~ /^\// {print $3}' | sort -u | grep -v -e "$build" -e "/libc\.so" -e "/libm\.so" \
        -e "/ld-linux" -e "/libgcc_s" -e "/libstdc++" -e "/libpthread" -e "/libdl\." -e "/librt\." |
        while read -r lib; do cp -L "$lib" "$kit/deps/"; done
    echo "kit: $kit ($(du -sh "$kit" | cut -f1)): $(cd "$kit" && find . -type f | wc -l) files"
    echo "deps: $(cd "$kit/deps" && echo *)"
}

# The PyTorch extension against this machine's torch: the same sources and flags as
# python/CMakeLists.txt, with torch's own include paths, C++ ABI and pybind11 ABI tags.
build_torch_ext() {
    kit=$1 py=$2
    flags=$("$py" - <<'EOF'
import sysconfig, torch, torch.utils.cpp_extension as ce
try:
    inc = ce.include_paths(device_type="cuda")
except TypeError:
    inc = ce.include_paths(cuda=True)
f = ["-I" + p for p in inc] + ["-I" + sysconfig.get_paths()["include"], "-I/usr/local/cuda/include"]
f += ["-L" + p for p in ce.library_paths()]
f.append("-D_GLIBCXX_USE_CXX11_ABI=%d" % int(torch._C._GLIBCXX_USE_CXX11_ABI))
for k in ("COMPILER_TYPE", "STDLIB", "BUILD_ABI"):
    v = getattr(torch._C, "_PYBIND11_" + k, None)
    if v:
        f.append('-DPYBIND11_%s="%s"' % (k, v))
print(" ".join(f))
print(sysconfig.get_config_var("EXT_SUFFIX"))
cuda = "-ltorch_cuda -lc10_cuda " if torch.version.cuda else ""
print("-ltorch_python -ltorch " + cuda + "-ltorch_cpu -lc10")
EOF
) || return 1
    suffix=$(echo "$flags" | sed -n 2p)
    libs=$(echo "$flags" | sed -n 3p)
    flags=$(echo "$flags" | head -1)
    obj=$(mktemp -d /tmp/gpu-kit-ext.XXXXXX) || return 1
    for std in c++17 c++20; do
        echo "== g++ -std=$std, each source in parallel"
        pids=
        for f in module pg_ccomm ops device; do
            # shellcheck disable=SC2086  # flags are words
            g++ -std=$std -O2 -fPIC -fvisibility=hidden -D_GNU_SOURCE -DTORCH_EXTENSION_NAME=_C \
                -DUSE_DISTRIBUTED -DUSE_C10D_GLOO -Wall -Wno-unused-parameter \
                -I"$SRC/include" -I"$kit/include" $flags -c "$SRC/python/csrc/$f.cpp" \
                -o "$obj/$f.o" &
            pids="$pids $!"
        done
        ok=1
        for p in $pids; do wait "$p" || ok=0; done
        [ $ok = 1 ] || continue
        # shellcheck disable=SC2086
        g++ -shared "$obj"/*.o $flags -L"$kit/build/lib" -lccomm $libs \
            -o "$kit/build/python/ccomm/_C$suffix" && return 0
    done
    return 1
}

run_kit() {
    kit=$(cd "${1:-$SRC/.gpukit}" && pwd) || exit 1
    budget=${2:-480}
    cases=$(echo "${3:-math,nccl,native2,hang,window2,torch,native4,window4,timing,bench}" | tr , ' ')
    t_end=$(( $(date +%s) + budget ))
    out=${OUT:-/tmp/gpu-kit-results}
    res=$(mktemp -d /tmp/gpu-kit.XXXXXX) || exit 1
    py=$(command -v python3)
    {
        date -u
        nvidia-smi 2>&1 | head -20
        "$py" -V
        "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available(), torch.cuda.device_count())'
        g++ --version | head -1
    } >"$res/env.txt" 2>&1
    nccl=$("$py" -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
    for d in /usr/local/cuda/lib64 /usr/lib/x86_64-linux-gnu; do
        [ -e "$d/libnccl.so.2" ] && nccl=$d
    done
    cupti=$(ls /usr/local/cuda/extras/CUPTI/lib64/libcupti.so* 2>/dev/null | head -1)
    [ -n "$cupti" ] || cupti=$(find /usr/local/cuda* /opt -name 'libcupti.so*' 2>/dev/null | head -1)
    [ -n "$cupti" ] || { [ -e "$kit/cupti/libcupti.so" ] && cupti=$kit/cupti/libcupti.so; }
    echo "nccl dir: ${nccl:-none}; cupti: ${cupti:-none}" >>"$res/env.txt"
    export LD_LIBRARY_PATH="$kit/build/lib:$kit/deps:${nccl:+$nccl:}${LD_LIBRARY_PATH:-}"
    [ -n "$cupti" ] && export CCOMM_CUPTI_LIB=$cupti
    # An op that hangs times out (and is dumped) well inside its case's share of the time.
    export CCOMM_TIMEOUT=${CCOMM_TIMEOUT:-45}
    ext=
    case " $cases " in
    *" torch "*)
        (build_torch_ext "$kit" "$py" >"$res/torch-ext-build.log" 2>&1; echo "rc $?" >>"$res/torch-ext-build.log") &
        ext=$!
        ;;
    esac
    for c in $cases; do
        if [ "$c" = torch ]; then
            # The extension's build gets at most two minutes more once its turn comes.
            w=0
            while [ -n "$ext" ] && kill -0 "$ext" 2>/dev/null && [ $w -lt 120 ]; do sleep 1; w=$((w + 1)); done
        fi
        left=$(( t_end - $(date +%s) ))
        if [ "$left" -lt 20 ]; then
            echo "NOT RUN $c: the time given is spent" >>"$res/summary-all.txt"
            continue
        fi
        case $c in
        native2 | native4 | torch) cap=150 ;;
        *) cap=100 ;;
        esac
        [ "$left" -lt "$cap" ] && cap=$left
        t0=$(date +%s)
        lvl=${CCOMM_LOG_LEVEL:-WARN}
        [ "$c" = timing ] && lvl=INFO   # CUPTI's and the profiler's own lines
        OUT=$res/$c CCOMM_TEST_PYTHON=$py CCOMM_LOG_LEVEL=$lvl timeout -k 5 "$cap" sh "$SRC/tests/gpu/run.sh" --case "$c" "$kit/build" \
            >"$res/$c.out" 2>&1
        rc=$?
        {
            echo "== $c: rc $rc in $(( $(date +%s) - t0 )) s (cap $cap s)"
            cat "$res/$c/summary.txt" 2>/dev/null | grep -v "^GPU \|^name,\|^NVIDIA"
        } >>"$res/summary-all.txt"
    done
    mkdir -p "$out"
    cp "$res/summary-all.txt" "$out/summary.txt"
    cp "$res/env.txt" "$out/env.txt"
    cp "$res/torch-ext-build.log" "$out/torch-ext-build.log" 2>/dev/null
    tar czf "$out/results.tgz" -C "$res" . 2>/dev/null
    cat "$out/summary.txt"
}

case ${1:-} in
make) shift; make_kit "$@" ;;
run) shift; run_kit "$@" ;;
ext) build_torch_ext "$(cd "${2:-$SRC/.gpukit}" && pwd)" "$(command -v python3)" ;;
*) sed -n '2,16p' "$0" >&2; exit 2 ;;
esac
