#!/bin/sh
# check_needed.sh READELF LIBCCOMM [PROVIDER]
# Fails when libccomm.so lists liblttng-ust among its NEEDED libraries; when
# the provider is built, also checks that it needs liblttng-ust (so the
# pattern is known to match) and does not need libccomm (the core lends it
# the hook calls at attach time instead).
readelf="$1" lib="$2" provider="$3"
if [ -z "$readelf" ]; then
    echo "skipped: readelf (binutils) not found"
    exit 77
fi
needed() { "$readelf" -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
core=$(needed "$lib") || { echo "FAIL: readelf -d $lib failed"; exit 1; }
echo "$lib needs:" $core
if echo "$core" | grep -q '^liblttng'; then
    echo "FAIL: $lib needs $(echo "$core" | grep '^liblttng' | tr '\n' ' ')(LTTng must stay in the plugin)"
    exit 1
fi
if [ -n "$provider" ]; then
    prov=$(needed "$provider") || { echo "FAIL: readelf -d $provider failed"; exit 1; }
    echo "$provider needs:" $prov
    echo "$prov" | grep -q '^liblttng-ust\.so' || { echo "FAIL: $provider does not need liblttng-ust"; exit 1; }
    if echo "$prov" | grep -q '^libccomm'; then
        echo "FAIL: $provider needs libccomm (it must take the core's calls at attach)"
        exit 1
    fi
fi
echo "ok"
