#!/usr/bin/env bash
# A graceful stop returns its worker IDs (issue 50, part 3). flakesock a (2
# threads) holds workers 0 and 1; after its SIGTERM (within 10 s) both are
# free in the registry and flakesock b, another identity, gets 0 and 1 (on
# 1e8cbc3 the leases stayed and b got 2 and 3). Then with the registry down
# at the stop: a's SIGTERM still ends within 10 s, its IDs stay leased to it
# (nothing could be confirmed), a third node c gets other IDs, and a,
# started again on its state, takes its own back: no ID served twice.
# usage: test_fleet_stop_release.sh FLAKESOCK FLAKECTL
set -u
FLAKESOCK=$1
FLAKECTL=$2
HERE=$(dirname "$0")
. "$HERE/../lib.sh"
. "$HERE/registry.sh"
. "$HERE/node.sh"
FP_ARGS=(--sockets 16 --worker-bits 4)

reg_test fleetsr KILL
# the root, made by an operator (issue 48): nodes never create one
reg_init "$FLAKECTL" /sr --set id.worker_bits=4 >/dev/null || { echo "FAIL: fleet init /sr"; exit 1; }

COMMON=(--listen 127.0.0.1 --threads 2 --set id.worker_bits=4 --set fleet.root=/sr
	--set clock.calibrate_ms=200 --set stats.interval_s=0 --set "$REG_SET"
	--set fleet.lease_ms=600000 --set fleet.renew_ms=1000 --set fleet.session_timeout_ms=4000)
node() { # NAME PORT
	sys_start "$SYS_TMP/$1.log" "$FLAKESOCK" "${COMMON[@]}" --set net.udp_port="$2" \
		--set "state.file=$SYS_TMP/$1/mark" --set fleet.identity="$1"
}
two() {
	local w
	for _ in $(seq 80); do
		w=$(workers "$1")
		case "$w" in *,*) echo "$w"; return 0 ;; esac
		sleep 0.25
	done
	return 1
}
owner() { # WORKER: its owner in the store ("" when free)
	sys_in_ns "$FLAKECTL" fleet ls "${STORE[@]}" --root /sr --timeout 15000 |
		awk -v w="$1" '$1 == w && $2 != "of" && $NF != "free" {print $2}'
}
STOP_S=0
term() { # PID: SIGTERM, then the seconds until it exited (STOP_S); 1 if not within 15 s
	local t0 t1
	t0=$(date +%s%N)
	kill -TERM "$1"
	for _ in $(seq 150); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
	t1=$(date +%s%N)
	STOP_S=$(((t1 - t0) / 1000000))
	STOP_S=$((STOP_S / 1000)).$(printf %03d $((STOP_S % 1000)))
	! kill -0 "$1" 2>/dev/null
}

node a 5631
A=$SYS_LAST_PID
WA=$(two 5631)
check "a serves two worker IDs ($WA)" test "$WA" = "0,1"
term "$A"
check "a's SIGTERM ends within 10 s ($STOP_S s)" awk -v s="$STOP_S" 'BEGIN { exit !(s < 10) }'
check "a released both at the stop" test "$(grep -c 'released at the stop' "$SYS_TMP/a.log")" = 2
o0=$(owner 0) o1=$(owner 1)
check "worker 0 is free in $REG_NAME (owner '$o0')" test -z "$o0"
check "worker 1 is free in $REG_NAME (owner '$o1')" test -z "$o1"
node b 5632
B=$SYS_LAST_PID
WB=$(two 5632)
check "b, another identity, gets a's worker IDs at once ($WB)" test "$WB" = "0,1"
term "$B"

# the registry down at the stop: the IDs stay a's, never served twice
node a 5631
A=$SYS_LAST_PID
WA=$(two 5631)
check "a serves 0 and 1 again (released, used before: first in line) ($WA)" test "$WA" = "0,1"
reg_stop_all
sleep 1
term "$A"
check "with $REG_NAME down, a's SIGTERM ends within 10 s ($STOP_S s)" \
	awk -v s="$STOP_S" 'BEGIN { exit !(s < 10) }'
check "a says its IDs stay leased" grep -q "is not reachable at the stop" "$SYS_TMP/a.log"
reg_start_one 1
reg_wait_ready 60 || { echo "FAIL: $REG_NAME did not come back"; exit 1; }
check "worker 0 is still a's" test "$(owner 0)" = a
check "worker 1 is still a's" test "$(owner 1)" = a
node c 5633
WC=$(two 5633)
check "c, another identity, gets other worker IDs ($WC)" test -n "$WC" -a "$WC" != "0,1"
node a 5631
WA2=$(two 5631)
check "a, started again, takes its own back ($WA2)" test "$WA2" = "0,1"
check "no worker ID served by two ($WA2 / $WC)" test -z "$(printf '%s\n' ${WA2//,/ } ${WC//,/ } | sort | uniq -d)"
sys_in_ns "$FLAKECTL" fleet ls "${STORE[@]}" --root /sr | sed 's/^/  /'
sys_done
