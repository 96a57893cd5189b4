#!/usr/bin/env bash
# A release waits for the cache (issue 48, case 5): flakesock-testclock with
# [clock] backstep = new_worker in a fleet of two worker IDs (1 worker bit),
# its cache unwritable (a directory where its temp file goes). Its clock
# steps back 1 h: it swaps to the other worker ID and retires the old one,
# whose release must wait, since the cache on disk still names the old ID
# for a start from the cache while the store is down. So the old ID stays
# this node's in the store, and a second node finds no worker ID free (on
# the old code the release went out at once and the second node served the
# retired ID, which a restart of the first from its stale cache with the
# store unreachable serves again). Once the cache can be written, the
# release goes out, the old ID is free and the second node gets it.
# usage: test_fleet_release_cache.sh FLAKESOCK_TESTCLOCK FLAKECTL
set -u
FLAKESOCK=$1
FLAKECTL=$2
HERE=$(dirname "$0")
. "$HERE/../lib.sh"
. "$HERE/registry.sh"
PROBE="/usr/bin/python3 $HERE/fleetprobe.py"

reg_test fleetrc
# the root, made by an operator (issue 48): nodes never create one
reg_init "$FLAKECTL" /rc --set id.worker_bits=1 >/dev/null || { echo "FAIL: fleet init /rc"; exit 1; }

FAULT=$SYS_TMP/clock
CACHE=$SYS_TMP/a.cache
COMMON=(--listen 127.0.0.1 --threads 1 --set id.worker_bits=1 --set fleet.root=/rc
	--set clock.calibrate_ms=200 --set stats.interval_s=0 --set "$REG_SET"
	--set fleet.lease_ms=20000 --set fleet.renew_ms=500 --set fleet.session_timeout_ms=4000)
probe() { sys_in_ns $PROBE --server "127.0.0.1:$1" --sockets 8 --worker-bits 1; }
workers() { probe "$1" | sed -n 's/.*workers=\([0-9,]*\).*/\1/p'; }
owner() { # WORKER: its owner in the store ("" when free)
	sys_in_ns "$FLAKECTL" fleet ls "${STORE[@]}" --root /rc --timeout 15000 |
		awk -v w="$1" '$1 == w && $NF != "free" {print $2}'
}
echo "offset_ms=0" >"$FAULT"
sys_start "$SYS_TMP/a.log" env FLAKEWIRE_TEST_CLOCK="$FAULT" "$FLAKESOCK" "${COMMON[@]}" \
	--set net.udp_port=5601 --set "state.file=$SYS_TMP/a.mark" --set fleet.identity=a \
	--set clock.backstep=new_worker --set "fleet.cache_file=$CACHE"
A=$SYS_LAST_PID
# OLD: the worker ID a first served (a probe that loses its replies to a
# loaded machine prints none: keep the first that named one)
up() { for _ in $(seq 60); do OLD=$(workers 5601); [ -n "$OLD" ] && return 0; sleep 0.25; done; return 1; }
OLD=""
check "a answers" up
check "a wrote its cache, naming worker $OLD" grep -q "^slot=0 worker=$OLD " "$CACHE"
mkdir "$CACHE.tmp" # every cache write fails from now on

echo "offset_ms=-3600000" >"$FAULT"
switched() { for _ in $(seq 60); do w=$(workers 5601); [ -n "$w" ] && [ "$w" != "$OLD" ] && return 0; sleep 0.25; done; return 1; }
check "after a 1 h backward step a swaps to the other worker ID" switched
waits() { for _ in $(seq 40); do grep -q "worker $OLD: its release waits until the cache" "$SYS_TMP/a.log" && return 0; sleep 0.25; done; return 1; }
check "a says the release of worker $OLD waits for the cache" waits
sleep 2 # four renew_ms: rounds that would have released it
check "worker $OLD is still a's in $REG_NAME (owner: '$(owner "$OLD")')" test "$(owner "$OLD")" = a
check "the cache on disk still names worker $OLD" grep -q "^slot=0 worker=$OLD " "$CACHE"

# a second node: no worker ID is free while a keeps the old one
# (on the real clock: a's retirement point is real time, so on the old code
# it served worker 0 at once)
# (sys_start: the PID is timeout's itself, which passes the SIGTERM below on;
# a function run with & would leave b running and claiming after it)
sys_start "$SYS_TMP/b.log" timeout 20 "$FLAKESOCK" "${COMMON[@]}" \
	--set net.udp_port=5602 --set "state.file=$SYS_TMP/b.mark" --set fleet.identity=b \
	--set fleet.cache_file=
B=$SYS_LAST_PID
served=""
for _ in $(seq 20); do
	kill -0 "$B" 2>/dev/null || break
	served=$(workers 5602)
	[ -n "$served" ] && break
	sleep 0.25
done
got=$(owner "$OLD")
check "a second node neither claims nor serves worker $OLD while a's cache names it (served: '$served', owner '$got')" \
	test "$served" != "$OLD" -a "$got" = a
kill -TERM "$B" 2>/dev/null
wait "$B" 2>/dev/null

# the cache writable again: written, then released
rmdir "$CACHE.tmp"
released() { for _ in $(seq 40); do [ -z "$(owner "$OLD")" ] && return 0; sleep 0.25; done; return 1; }
check "once the cache is written, worker $OLD is released" released
check "and the cache no longer names it" test -z "$(grep "^slot=0 worker=$OLD " "$CACHE")"
sys_in_ns "$FLAKECTL" fleet ls "${STORE[@]}" --root /rc | sed 's/^/  /'
kill -TERM "$A"
sys_done
