#!/usr/bin/env bash
# The cache belongs to its state (issue 50, part 1): two flakesock nodes, a
# and b (2 threads each), each with its own [state] file and the default
# [fleet] cache_file, on one registry. a is killed with SIGKILL and started
# again on its own state: it must take back its own worker IDs (on 1e8cbc3
# both wrote the one default cache /var/lib/flakewire/fleet, and a came back
# with new IDs: b's records were in it). A third process given a's cache
# file by hand refuses to start while a runs. The upgrade: a node whose old
# default cache (/var/lib/flakewire/fleet) was written on its state takes
# its IDs back from it on its first start with the new default.
# Every node runs in a mount namespace of its own with the test's directory
# bound over /var/lib, so that the old default path is the test's, shared
# by the nodes as on one host.
# usage: test_fleet_own_cache.sh FLAKESOCK FLAKECTL
set -u
FLAKESOCK=$1
FLAKECTL=$2
HERE=$(dirname "$0")
. "$HERE/../lib.sh"
. "$HERE/registry.sh"
. "$HERE/node.sh"
FP_ARGS=(--sockets 16 --worker-bits 4)

reg_test fleetoc KILL
# the root, made by an operator (issue 48): nodes never create one
reg_init "$FLAKECTL" /oc --set id.worker_bits=4 >/dev/null || { echo "FAIL: fleet init /oc"; exit 1; }

VARLIB=$SYS_TMP/varlib
mkdir -p "$VARLIB/flakewire"
COMMON=(--listen 127.0.0.1 --threads 2 --set id.worker_bits=4 --set fleet.root=/oc
	--set clock.calibrate_ms=200 --set stats.interval_s=0 --set "$REG_SET"
	--set fleet.lease_ms=600000 --set fleet.renew_ms=1000 --set fleet.session_timeout_ms=4000)
# node NAME PORT [--set ...]: starts flakesock NAME on its own state, /var/lib the test's
node() {
	local name=$1 port=$2
	shift 2
	sys_start "$SYS_TMP/$name.log" unshare -m --propagation private sh -c \
		'mount --bind "$0" /var/lib && exec "$@"' "$VARLIB" \
		"$FLAKESOCK" "${COMMON[@]}" --set net.udp_port="$port" \
		--set "state.file=$SYS_TMP/$name/mark" --set fleet.identity="$name" "$@"
}
two() { # PORT: waits until it serves two worker IDs; prints them
	local w
	for _ in $(seq 80); do
		w=$(workers "$1")
		case "$w" in *,*) echo "$w"; return 0 ;; esac
		sleep 0.25
	done
	return 1
}

node a 5611
A=$SYS_LAST_PID
WA=$(two 5611)
check "a serves two worker IDs ($WA)" test -n "$WA"
node b 5612
WB=$(two 5612)
check "b serves two others ($WB)" test -n "$WB" -a "$WB" != "$WA"
check "a's cache is beside its state" test -s "$SYS_TMP/a/mark.fleet"
check "b's cache is beside its state" test -s "$SYS_TMP/b/mark.fleet"

# a third process with a's cache file by hand: refused while a runs
node c 5613 --set "fleet.cache_file=$SYS_TMP/a/mark.fleet"
C=$SYS_LAST_PID
refused() { for _ in $(seq 60); do kill -0 "$C" 2>/dev/null || return 0; sleep 0.25; done; return 1; }
check "a process on another state with a's cache file exits" refused
check "and says the cache is locked" grep -q "the cache $SYS_TMP/a/mark.fleet is locked by PID" "$SYS_TMP/c.log"
check "and served nothing" test -z "$(workers 5613)"

kill -KILL "$A"
wait "$A" 2>/dev/null
node a 5611
A=$SYS_LAST_PID
WA2=$(two 5611)
check "a, killed and started again on its own state, takes its worker IDs back ($WA -> $WA2)" \
	test -n "$WA2" -a "$WA2" = "$WA"
check "b still serves its own ($WB)" test "$(workers 5612)" = "$WB"

# the upgrade: a's cache where the old default kept it, none beside its state
kill -KILL "$A"
wait "$A" 2>/dev/null
mv "$SYS_TMP/a/mark.fleet" "$VARLIB/flakewire/fleet"
node a 5611
A=$SYS_LAST_PID
WA3=$(two 5611)
check "upgraded, a takes its worker IDs back from the old default cache ($WA -> $WA3)" \
	test -n "$WA3" -a "$WA3" = "$WA"
check "and says so" grep -q "read the previous default cache" "$SYS_TMP/a.log"
check "its cache is beside its state from now on" test -s "$SYS_TMP/a/mark.fleet"
sys_in_ns "$FLAKECTL" fleet ls "${STORE[@]}" --root /oc | sed 's/^/  /'
sys_done
