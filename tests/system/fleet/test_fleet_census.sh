#!/usr/bin/env bash
# The root's census (issue 50, part 4): free and stranded worker IDs on
# /metrics from a node's first claim, in `flakectl fleet ls` with the time
# the next stranded one comes back, and in the refusal of a node that finds
# too few. A root of 8 worker IDs: a and b take 2 each; b is SIGKILLed (a
# crash nothing releases; b does not come back): once its session is gone
# its 2 IDs are stranded until their lease ends. c (1 thread) then claims
# one and reports free 3, stranded 2; d (4 threads) finds 3 free and
# starts without worker IDs (not ready: test_fleet_full.sh), saying 2 are
# stranded and when the first comes back.
# Stranded means leased to an owner with no live session: an owner that
# came back under the same identity counts as alive (its old records are
# not told from its new ones), so the count is a lower bound.
# usage: test_fleet_census.sh FLAKESOCK FLAKECTL
set -u
FLAKESOCK=$1
FLAKECTL=$2
HERE=$(dirname "$0")
. "$HERE/../lib.sh"
. "$HERE/registry.sh"
. "$HERE/node.sh"
FP_ARGS=(--sockets 16 --worker-bits 3)

reg_test fleetcen KILL
# the root, made by an operator (issue 48): nodes never create one
reg_init "$FLAKECTL" /cen --set id.worker_bits=3 >/dev/null || { echo "FAIL: fleet init /cen"; exit 1; }

COMMON=(--listen 127.0.0.1 --set id.worker_bits=3 --set fleet.root=/cen
	--set clock.calibrate_ms=200 --set stats.interval_s=0 --set "$REG_SET"
	--set fleet.lease_ms=600000 --set fleet.renew_ms=1000 --set fleet.session_timeout_ms=4000
	--set fleet.start_wait_ms=20000)
node() { # NAME STATE PORT THREADS [--set ...]
	local name=$1 state=$2 port=$3 threads=$4
	shift 4
	sys_start "$SYS_TMP/$name.log" "$FLAKESOCK" "${COMMON[@]}" --threads "$threads" \
		--set net.udp_port="$port" --set "state.file=$SYS_TMP/$state/mark" \
		--set fleet.identity="$name" "$@"
}

node a a 5641 2 --set metrics.listen=127.0.0.1:9861
check "a serves 2 worker IDs" serves 5641 2
check "a's /metrics: 6 free after its first claim" test "$(metric 9861 flakewire_fleet_free_worker_ids)" = 6
check "a's /metrics: none stranded" test "$(metric 9861 flakewire_fleet_stranded_worker_ids)" = 0
node b b1 5642 2
B=$SYS_LAST_PID
check "b serves 2 worker IDs" serves 5642 2
kill -KILL "$B"
wait "$B" 2>/dev/null
gone() {
	for _ in $(seq 60); do
		sys_in_ns "$FLAKECTL" fleet ls "${STORE[@]}" --root /cen --timeout 15000 |
			awk '$2 == "b" && $(NF-1) == "alive" {a++} END {exit a > 0}' && return 0
		sleep 0.5
	done
	return 1
}
check "b's session ended" gone
node c c 5643 1 --set metrics.listen=127.0.0.1:9863
check "c serves 1 worker ID" serves 5643 1
check "c's /metrics: 3 free" test "$(metric 9863 flakewire_fleet_free_worker_ids)" = 3
check "c's /metrics: 2 stranded" test "$(metric 9863 flakewire_fleet_stranded_worker_ids)" = 2
back=$(metric 9863 flakewire_fleet_next_stranded_return_timestamp_seconds)
check "c's /metrics: the first stranded one is back in 550-600 s ($back)" \
	awk -v b="$back" -v now="$(date +%s)" 'BEGIN { exit !(b - now > 550 && b - now <= 600) }'
at=$(metric 9863 flakewire_fleet_census_timestamp_seconds)
check "c's /metrics: the census its claim counted, taken at its start ($at), counted by c itself" \
	awk -v t="$at" -v n="$(metric 9863 flakewire_fleet_censuses_total)" -v now="$(date +%s)" \
	'BEGIN { exit !(now + 1 - t >= 0 && now - t < 60 && n >= 1) }'
ls=$(sys_in_ns "$FLAKECTL" fleet ls "${STORE[@]}" --root /cen --timeout 15000)
echo "$ls" | sed 's/^/  /'
check "fleet ls: 3 free, 2 stranded, and when the next is back" \
	grep -Eq '^free: 3 .*; stranded: 2 .*, the next back at 20[0-9-]+T' <<<"$ls"
node d d 5644 4
D=$SYS_LAST_PID
check "d, needing 4 with 3 free, starts without worker IDs (not ready)" \
	sys_wait_for 30 grep -q "starting without worker IDs" "$SYS_TMP/d.log"
check "d says 3 are free and 2 stranded, and when the first is back" \
	grep -Eq '3 free, 2 stranded \(leased to owners with no live session\), the first back at 20' "$SYS_TMP/d.log"
check "  d runs, holding none of the 3 free ones (all or none)" \
	bash -c 'kill -0 "$1" && ! grep -q "claimed (" "$2"' _ "$D" "$SYS_TMP/d.log"
sys_done
