#!/bin/sh
# lttng_bench.sh [BUILD_DIR] - run BUILD_DIR/bin/lttng_bench twice: with no session
# (absent and idle figures), then while a session records ccomm:* in
# overwrite mode (per-event figures). Uses a private LTTNG_HOME; a session
# daemon started here is stopped by its PID afterwards.
set -eu
case "${1:-}" in
-h | --help) sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
-*) echo "lttng_bench.sh: unknown option $1 (usage: lttng_bench.sh [BUILD_DIR])" >&2; exit 2 ;;
esac
build=${1:-build}
bench="$build/bin/lttng_bench"
[ -x "$bench" ] || { echo "lttng_bench.sh: no $bench: build first (cmake --build $build)" >&2; exit 2; }
tmp=$(mktemp -d /tmp/ccomm-lttng-bench-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export LTTNG_HOME="$tmp"
export HOME="${HOME:-$tmp}"
echo "== no session"
"$bench"

if [ "$(id -u)" = 0 ]; then rundir=/var/run/lttng; else rundir="$tmp/.lttng"; fi
alive() { [ -n "$1" ] && grep -q '(lttng-sessiond) [^Z]' "/proc/$1/stat" 2>/dev/null; }
started=""
pid=$(cat "$rundir/lttng-sessiond.pid" 2>/dev/null || true)
if ! alive "$pid"; then
    lttng-sessiond --no-kernel --daemonize
    started=$(cat "$rundir/lttng-sessiond.pid")
fi
s="ccomm-bench-$$"
lttng create "$s" --output="$tmp/trace" >/dev/null
lttng enable-channel -u -s "$s" --overwrite --subbuf-size=8M --num-subbuf=4 bench >/dev/null
lttng enable-event -u -s "$s" -c bench 'ccomm:*' >/dev/null
lttng start "$s" >/dev/null
echo "== session recording ccomm:*"
rc=0
"$bench" || rc=$?
lttng stop "$s" >/dev/null
lttng destroy "$s" >/dev/null
if [ -n "$started" ]; then
    kill "$started"
    while alive "$started"; do sleep 0.1; done
fi
rm -rf "$tmp"
exit $rc
