#!/bin/sh
# check_deps.sh LIB [forbidden regex] - LIB's dynamic dependencies (readelf -d NEEDED) must not
# match the regex: libccomm.so links no CUDA, NCCL or CUPTI (a CPU-only machine runs it); the
# plugins never link libcuda (the driver stub would stop a program from starting).
lib=$1
re=${2:-'cuda|nccl|cupti'}
[ -f "$lib" ] || { echo "no such library: $lib"; exit 1; }
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "$lib needs: $(echo $needed)"
bad=$(echo "$needed" | grep -Ei "$re")
if [ -n "$bad" ]; then
    echo "forbidden dependencies: $bad"
    exit 1
fi
exit 0
