#!/bin/sh
# netns_test.sh CCRUN RANKPROG - ranks in two network namespaces joined by a
# veth pair (10.77.0.1/24 in the first, 10.77.0.2/24 in the second); ccrun
# hosts the store inside the first. Each rank checks that it reaches the store
# from its own namespace's address. Skipped (77) without root or `ip netns`.
set -u
CCRUN=$1 RANKPROG=$2
if [ "$(id -u)" != 0 ]; then echo "skipped: network namespaces need root"; exit 77; fi
if ! command -v ip >/dev/null 2>&1; then echo "skipped: the ip command (iproute2) is missing"; exit 77; fi
a=ccA$$ b=ccB$$   # names unique per run: parallel builds may run this test at once
tmp=$(mktemp -d /tmp/ccrun_netns.XXXXXX)
cleanup() {
    ip netns del "$a" 2>/dev/null   # deleting a namespace also removes its veth end
    ip netns del "$b" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
if ! ip netns add "$a" 2>"$tmp/ipErr"; then
    echo "skipped: 'ip netns add' failed: $(cat "$tmp/ipErr")"; exit 77
fi
ip netns add "$b" &&
ip link add "v$a" type veth peer name "v$b" &&
ip link set "v$a" netns "$a" && ip link set "v$b" netns "$b" &&
ip -n "$a" addr add 10.77.0.1/24 dev "v$a" && ip -n "$b" addr add 10.77.0.2/24 dev "v$b" &&
ip -n "$a" link set "v$a" up && ip -n "$b" link set "v$b" up &&
ip -n "$a" link set lo up && ip -n "$b" link set lo up || {
    echo "skipped: cannot build the veth pair between namespaces"; exit 77; }

# 4 ranks alternate between the namespaces; the store listens on 10.77.0.1 in the first.
"$CCRUN" -n 4 --netns "$a,$b" --store-host 10.77.0.1 -- "$RANKPROG" netns 10.77.0.1,10.77.0.2 \
    >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc != 0 ] || [ "$(grep -c 'ok in its namespace' "$tmp/out")" != 4 ]; then
    echo "FAIL (netns): ccrun exited $rc"; cat "$tmp/out" "$tmp/err"; exit 1
fi
# A namespace that does not exist is named in the error.
"$CCRUN" -n 2 --netns "$a,nosuch$$" --store-host 10.77.0.1 -- true >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc = 0 ] || ! grep -q "cannot open network namespace nosuch$$" "$tmp/err"; then
    echo "FAIL (netns): a missing namespace was not reported (rc $rc)"; cat "$tmp/err"; exit 1
fi
echo "PASS (netns)"
