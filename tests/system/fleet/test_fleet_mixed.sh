#!/usr/bin/env bash
# Two flakewire processes (TAP, 2 lcores each) and two flakesock processes
# (2 threads each) start at once against one 3-server ZooKeeper ensemble:
# 8 distinct worker IDs, each process issuing only under its own; a restart
# of one of each kind keeps its IDs. /flakewire/fleet telemetry agrees, and
# so does fa's /metrics (promtool-clean; 0 < lease remaining <= 30 s).
# usage: test_fleet_mixed.sh FLAKEWIRE FLAKESOCK FLAKECTL
set -u
FLAKEWIRE=$1
FLAKESOCK=$2
FLAKECTL=$3
HERE=$(dirname "$0")
. "$HERE/../lib.sh"
. "$HERE/registry.sh"
PROBE="/usr/bin/python3 $HERE/fleetprobe.py"

sys_init fleetmix
[ -c /dev/net/tun ] || { echo "FAIL: /dev/net/tun missing (TAP)"; exit 1; }
mix_cleanup() {
	local pid
	for pid in "${SYS_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
	sleep 0.5
	reg_stop_all
	sys_cleanup
	rm -rf "/var/run/dpdk/fa$$" "/var/run/dpdk/fb$$" # the EAL runtime dirs (--file-prefix)
}
trap mix_cleanup EXIT
reg_start "$SYS_TMP" 3 "ip netns exec $SYS_NS" || { echo "FAIL: ensemble did not start"; exit 1; }
reg_init "$FLAKECTL" /mix || { echo "FAIL: fleet init /mix"; exit 1; }

FLEET=(--set "$REG_SET" --set fleet.root=/mix
	--set fleet.session_timeout_ms=4000 --set fleet.start_wait_ms=15000
	--set fleet.lease_ms=30000 --set fleet.renew_ms=1000 --set stats.interval_s=0)
declare -A PID
# wire NAME TAPINDEX NET: flakewire NAME on net_tapN (iface NAME$$), address 10.NET.0.2
wire() {
	sys_start "$SYS_TMP/$1.log" "$FLAKEWIRE" --lcores "$(proc_lcores 0,1)" --no-huge --no-pci -m 256 \
		--file-prefix "$1$$" -- --set "port0.device=net_tap$2,iface=$1$$" \
		--set "port0.address=10.$3.0.2" --set "state.file=$SYS_TMP/$1.mark" \
		--set clock.calibrate_ms=200 --set fleet.identity="$1" \
		--set "fleet.cache_file=$SYS_TMP/$1.cache" --set power.idle=sleep "${FLEET[@]}" "${@:4}"
	PID[$1]=$SYS_LAST_PID
}
sock() {
	sys_start "$SYS_TMP/$1.log" "$FLAKESOCK" --listen 127.0.0.1 --threads 2 \
		--set "net.udp_port=$2" --set "state.file=$SYS_TMP/$1.mark" \
		--set fleet.identity="$1" --set "fleet.cache_file=$SYS_TMP/$1.cache" "${FLEET[@]}"
	PID[$1]=$SYS_LAST_PID
}
tap_up() { # tap_up IFACE NET: the kernel side of a TAP, once flakewire created it
	local i
	for i in $(seq 100); do ip -n "$SYS_NS" link show "$1" >/dev/null 2>&1 && break; sleep 0.1; done
	ip -n "$SYS_NS" addr add "10.$2.0.1/24" dev "$1" 2>/dev/null
	ip -n "$SYS_NS" link set "$1" up
}
answers() { # answers SERVER: 8 OK replies from 8 source ports, within 20 s
	local i
	for i in $(seq 80); do
		[ "$(sys_in_ns $PROBE --server "$1" --sockets 8 | sed -n 's/.*ok=\([0-9]*\).*/\1/p')" = 8 ] && return 0
		sleep 0.25
	done
	return 1
}
# fleet_ls: the registry, retried (a loaded machine may miss one connection)
fleet_ls() {
	local i
	for i in 1 2 3; do
		sys_in_ns "$FLAKECTL" fleet ls --zk "$REG_CONNECT" --root /mix --timeout 15000 \
			>"$SYS_TMP/ls.out" 2>&1 && { cat "$SYS_TMP/ls.out"; return 0; }
		sleep 0.5
	done
	cat "$SYS_TMP/ls.out" >&2
	return 1
}
owned_by() { fleet_ls | awk -v o="$1" '$2 == o {print $1}' | sort -n | paste -sd, -; }

# all four at once
wire fa 0 77 --set metrics.listen=127.0.0.1:9853
wire fb 1 78
sock sc 5401
sock sd 5402
tap_up "fa$$" 77
tap_up "fb$$" 78
check "flakewire fa answers" answers 10.77.0.2:4242
check "flakewire fb answers" answers 10.78.0.2:4242
check "flakesock sc answers" answers 127.0.0.1:5401
check "flakesock sd answers" answers 127.0.0.1:5402
fleet_ls >"$SYS_TMP/ls"
sed 's/^/  /' "$SYS_TMP/ls"
declare -A OWN
for n in fa fb sc sd; do OWN[$n]=$(owned_by $n); echo "  $n owns ${OWN[$n]}"; done
eight() {
	[ "$(echo "${OWN[fa]},${OWN[fb]},${OWN[sc]},${OWN[sd]}" | tr , '\n' | grep -c .)" -eq 8 ] &&
		[ "$(echo "${OWN[fa]},${OWN[fb]},${OWN[sc]},${OWN[sd]}" | tr , '\n' | sort -u | grep -c .)" -eq 8 ]
}
check "8 distinct worker IDs, 2 per process" eight
# every ID a process hands out carries one of its own worker IDs
only_own() { # only_own NAME SERVER
	local seen w
	seen=$(sys_in_ns $PROBE --server "$2" --sockets 32 --rounds 2 | sed -n 's/.*workers=\([0-9,]*\).*/\1/p')
	echo "  $1 answered with workers $seen"
	[ -n "$seen" ] || return 1
	for w in ${seen//,/ }; do [[ ",${OWN[$1]}," == *",$w,"* ]] || return 1; done
}
check "fa issues only under its worker IDs" only_own fa 10.77.0.2:4242
check "fb issues only under its worker IDs" only_own fb 10.78.0.2:4242
check "sc issues only under its worker IDs" only_own sc 127.0.0.1:5401
check "sd issues only under its worker IDs" only_own sd 127.0.0.1:5402
tel_read() { tel=$(echo /flakewire/fleet | ip netns exec "$SYS_NS" /usr/bin/python3 /usr/bin/dpdk-telemetry.py -f "fa$$" 2>/dev/null | grep '^{' | tail -n 1); }
tel_once() {
	/usr/bin/python3 - "$tel" "${OWN[fa]}" <<'PY'
import json, sys
t = json.loads(sys.argv[1])["/flakewire/fleet"]
own = sorted(int(x) for x in sys.argv[2].split(","))
sys.exit(0 if t["enabled"] == 1 and t["connected"] == 1 and t["renewals"] >= 1
         and sorted([t["w0"], t["w1"]]) == own else 1)
PY
}
# the first renewal comes renew_ms (1 s) after the claims: asked until it has (at most 10 s)
tel_ok() {
	local i
	for ((i = 0; i < 20; i++)); do
		tel_read
		tel_once 2>/dev/null && break
		sleep 0.5
	done
	echo "  /flakewire/fleet: $tel"
	tel_once
}
check "telemetry /flakewire/fleet: connected, renewing, the owned worker IDs" tel_ok
command -v promtool >/dev/null || { echo "FAIL: promtool missing (Debian package prometheus)"; exit 1; }
metrics_ok() { # fa's /metrics: promtool-clean, a lease per owned worker ID within (0, 30] s
	sys_in_ns curl -sSf --max-time 5 -o "$SYS_TMP/fa.prom" http://127.0.0.1:9853/metrics || return 1
	local out
	out=$(promtool check metrics <"$SYS_TMP/fa.prom" 2>&1) && [ -z "$out" ] || { echo "  $out"; return 1; }
	/usr/bin/python3 - "$SYS_TMP/fa.prom" "${OWN[fa]}" <<'PY'
import sys
v = dict(l.rsplit(" ", 1) for l in open(sys.argv[1]) if l[0] != "#" and l.strip())
ok = v.get("flakewire_fleet_connected", "").strip() == "1"
for w in sys.argv[2].split(","):
    r = float(v.get('flakewire_fleet_lease_remaining_seconds{worker="%s"}' % w, "nan"))
    print("  fa /metrics: worker %s lease remaining %.3f s" % (w, r))
    ok = ok and 0 < r <= 30
sys.exit(0 if ok else 1)
PY
}
check "flakewire /metrics: promtool-clean, connected, 0 < lease remaining <= 30 s per worker" metrics_ok
# A session that expired on a loaded machine is back within a few seconds.
check_ok() {
	local i
	for i in $(seq 20); do
		sys_in_ns "$FLAKECTL" fleet check --zk "$REG_CONNECT" --root /mix --warn-ms 1000 --timeout 15000 \
			>"$SYS_TMP/check" 2>&1 && return 0
		[ "$i" = 1 ] && sed 's/^/  (retrying) /' "$SYS_TMP/check"
		sleep 0.5
	done
	sed 's/^/  /' "$SYS_TMP/check"
	return 1
}
check "fleet check: OK" check_ok

# restart one of each, one after the other: a graceful stop releases its
# worker IDs (issue 50) and the restart claims them again at once (released
# ones come first, lowest worker ID first), the same ones
sys_stop "${PID[fa]}"
check "fa released its worker IDs at the stop" grep -q "released at the stop" "$SYS_TMP/fa.log"
wire fa 0 77
tap_up "fa$$" 77
check "flakewire fa answers after a restart" answers 10.77.0.2:4242
check "fa got its worker IDs again" test "$(owned_by fa)" = "${OWN[fa]}"
grep -q "claimed (free) for slot" "$SYS_TMP/fa.log"
check "fa claimed them as released ones" test $? -eq 0
sys_stop "${PID[sc]}"
sock sc 5401
check "flakesock sc answers after a restart" answers 127.0.0.1:5401
check "sc got its worker IDs again" test "$(owned_by sc)" = "${OWN[sc]}"
sys_done
