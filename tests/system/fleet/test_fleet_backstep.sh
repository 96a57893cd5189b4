#!/usr/bin/env bash
# [clock] backstep = new_worker: flakesock-testclock (2 threads) in a fleet;
# the system clock it reads is stepped back 1 h (fault file). Replies switch
# to fresh worker IDs, whose IDs follow the (stepped) system clock at once;
# the old worker IDs are released with their floor at the last ms they
# issued; no ID is issued twice across the switch.
# usage: test_fleet_backstep.sh FLAKESOCK_TESTCLOCK FLAKECTL
set -u
FLAKESOCK=$1
FLAKECTL=$2
HERE=$(dirname "$0")
. "$HERE/../lib.sh"
. "$HERE/zk.sh"
PROBE="/usr/bin/python3 $HERE/fleetprobe.py"

sys_init fleetbs
bs_cleanup() {
	local pid
	for pid in "${SYS_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
	sleep 0.3
	zk_stop_all
	sys_cleanup
}
trap bs_cleanup EXIT
zk_start "$SYS_TMP" 1 "ip netns exec $SYS_NS" || { echo "FAIL: ZooKeeper did not start"; exit 1; }

FAULT=$SYS_TMP/clock
echo "offset_ms=0" >"$FAULT"
sys_start "$SYS_TMP/bs.log" env FLAKEWIRE_TEST_CLOCK="$FAULT" "$FLAKESOCK" --listen 127.0.0.1 \
	--threads 2 --set net.udp_port=5501 --set "state.file=$SYS_TMP/mark" \
	--set clock.backstep=new_worker --set clock.calibrate_ms=200 --set stats.interval_s=0 \
	--set "fleet.zookeeper=$ZK_CONNECT" --set fleet.root=/bs --set fleet.identity=bs \
	--set fleet.lease_ms=20000 --set fleet.renew_ms=1000 --set fleet.session_timeout_ms=4000
PID=$SYS_LAST_PID
probe() { sys_in_ns $PROBE --server 127.0.0.1:5501 --sockets 16 "$@"; }
owned() { sys_in_ns "$FLAKECTL" fleet ls --zk "$ZK_CONNECT" --root /bs | awk -v s="$1" '$NF == s {print $1}' | sort -n | paste -sd, -; }
up() { for _ in $(seq 60); do [ "$(probe | sed -n 's/.*ok=\([0-9]*\).*/\1/p')" = 16 ] && return 0; sleep 0.25; done; return 1; }
check "flakesock-testclock answers" up
OLD=$(owned owned)
echo "  worker IDs before the step: $OLD"
for _ in 1 2 3; do probe --ids "$SYS_TMP/all.ids" >/dev/null; done

echo "offset_ms=-3600000" >"$FAULT"
switched() {
	local i w out
	for i in $(seq 60); do
		out=$(probe --ids "$SYS_TMP/all.ids")
		w=$(echo "$out" | sed -n 's/.*workers=\([0-9,]*\).*/\1/p')
		if [ -n "$w" ] && [ "$(echo "$out" | sed -n 's/.*ok=\([0-9]*\).*/\1/p')" = 16 ]; then
			local fresh=1 x
			for x in ${w//,/ }; do [[ ",$OLD," == *",$x,"* ]] && fresh=0; done
			[ "$fresh" = 1 ] && { echo "  replies now from workers $w"; return 0; }
		fi
		sleep 0.25
	done
	echo "  last: $out"
	return 1
}
check "after a 1 h backward step, replies come from fresh worker IDs" switched
for _ in 1 2 3; do probe --ids "$SYS_TMP/after.ids" >/dev/null; done
cat "$SYS_TMP/after.ids" >>"$SYS_TMP/all.ids"
follow() {
	/usr/bin/python3 - "$SYS_TMP/after.ids" "$OLD" <<'PY'
import sys, time
old = set(int(x) for x in sys.argv[2].split(","))
ids = [tuple(map(int, l.split())) for l in open(sys.argv[1])]
target = time.time() * 1000 - 3600000  # the system clock as flakesock reads it
ms = [(i >> 22) + 1767225600000 for w, i in ids]
lag = [target - m for m in ms]
print("  %d IDs after the switch: %.0f to %.0f ms behind the real clock minus 1 h" % (
    len(ids), min(lag), max(lag)))
sys.exit(0 if ids and all(w not in old for w, _ in ids) and max(abs(l) for l in lag) < 5000 else 1)
PY
}
check "their IDs follow the stepped system clock (within 5 s), not an hour ahead of it" follow
nodup() { [ -z "$(awk '{print $2}' "$SYS_TMP/all.ids" | sort | uniq -d | head -1)" ]; }
check "no ID issued twice across the switch ($(wc -l <"$SYS_TMP/all.ids") IDs)" nodup
released() {
	local i
	for i in $(seq 20); do
		[ "$(owned free)" = "$OLD" ] && return 0
		sleep 0.25
	done
	return 1
}
check "the old worker IDs are released (free)" released
sys_in_ns "$FLAKECTL" fleet ls --zk "$ZK_CONNECT" --root /bs | sed 's/^/  /'
floor_ok() {
	sys_in_ns "$FLAKECTL" fleet ls --zk "$ZK_CONNECT" --root /bs >"$SYS_TMP/ls"
	/usr/bin/python3 - "$SYS_TMP/ls" "$SYS_TMP/all.ids" "$OLD" <<'PY'
import sys, datetime
old = set(int(x) for x in sys.argv[3].split(","))
floors = {}
for l in open(sys.argv[1]):
    f = l.split()
    if f and f[0].isdigit() and int(f[0]) in old:
        t = datetime.datetime.strptime(f[4], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
        floors[int(f[0])] = int(t.timestamp() * 1000 + 0.5)
for w, i in (tuple(map(int, l.split())) for l in open(sys.argv[2])):
    if w in old and (i >> 22) + 1767225600000 > floors.get(w, 0):
        sys.exit(1)
sys.exit(0 if len(floors) == len(old) else 1)
PY
}
check "each old worker ID's floor is at or above every ID it issued" floor_ok
grep -q "stepped .* to the system clock" "$SYS_TMP/bs.log"
check "the step back was logged" test $? -eq 0
sys_done
