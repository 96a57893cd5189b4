#!/usr/bin/env bash
# [clock] backstep = new_worker: flakesock-testclock (2 threads, then 4),
# then flakewire-testclock (TAP, 2 lcores), in a fleet; the system clock they
# read is stepped back 1 h (fault file). Replies switch to fresh worker IDs,
# whose IDs follow the (stepped) system clock at once; not one reply is
# CLOCK_UNSAFE or RETRY_AFTER across the switch (every slot's fresh ID is
# claimed first, then all swap and the time steps together); the old worker
# IDs are released with their floor at the last ms they issued; no ID is
# issued twice across the switch. Then a full fleet under new_worker: nothing
# swaps and the registry backs off (normal ZooKeeper write rate, logged once).
# usage: test_fleet_backstep.sh FLAKESOCK_TESTCLOCK FLAKECTL [FLAKEWIRE_TESTCLOCK]
set -u
FLAKESOCK=$1
FLAKECTL=$2
FLAKEWIRE=${3:-}
HERE=$(dirname "$0")
. "$HERE/../lib.sh"
. "$HERE/registry.sh"
PROBE="/usr/bin/python3 $HERE/fleetprobe.py"

sys_init fleetbs
bs_cleanup() {
	local pid
	for pid in "${SYS_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
	sleep 0.3
	reg_stop_all
	sys_cleanup
	rm -rf "/var/run/dpdk/fbs$$"
}
trap bs_cleanup EXIT
reg_start "$SYS_TMP" 1 "ip netns exec $SYS_NS" || { echo "FAIL: ZooKeeper did not start"; exit 1; }
# one layout per store (issue 48): /bs, /bs4, /bsfull, /bsw take datacenter values 0-3;
# /bsfull's fleet may claim 4 worker IDs (the rest reserved)
for r in /bs:0 /bs4:1 /bsfull:2:4-1023 /bsw:3; do
	IFS=: read -r root dc res <<<"$r"
	reg_init "$FLAKECTL" "$root" --set id.datacenter_bits=2 --set "id.datacenter=$dc" \
		${res:+--reserve "$res"} >/dev/null || { echo "FAIL: fleet init $root"; exit 1; }
done

FAULT=$SYS_TMP/clock
COMMON=(--set id.datacenter_bits=2 --set clock.backstep=new_worker --set clock.calibrate_ms=200 --set stats.interval_s=0
	--set "$REG_SET" --set fleet.lease_ms=20000 --set fleet.renew_ms=1000
	--set fleet.session_timeout_ms=4000)

# backstep_case WHO ROOT SERVER: the responder is running with the fault file at 0
backstep_case() {
WHO=$1 ROOT=$2 SERVER=$3 LOG=$SYS_TMP/$1.log
TALLY=$SYS_TMP/$WHO.tally
# every probe's summary line is kept: the refusals are counted over all of them
probe() { sys_in_ns $PROBE --server "$SERVER" --sockets 16 "$@" | tee -a "$TALLY"; }
owned() { sys_in_ns "$FLAKECTL" fleet ls --zk "$REG_CONNECT" --root "$ROOT" --timeout 15000 | awk -v s="$1" '$NF == s {print $1}' | sort -n | paste -sd, -; }
up() { for _ in $(seq 60); do [ "$(probe | sed -n 's/.*ok=\([0-9]*\).*/\1/p')" = 16 ] && return 0; sleep 0.25; done; return 1; }
check "$WHO answers" up
OLD=$(owned owned)
: >"$TALLY" # counted from here: the last replies before the step, and all after
echo "  worker IDs before the step: $OLD"
for _ in 1 2 3; do probe --ids "$SYS_TMP/$WHO.all.ids" >/dev/null; done

echo "offset_ms=-3600000" >"$FAULT"
switched() {
	local i w out
	for i in $(seq 60); do
		out=$(probe --ids "$SYS_TMP/$WHO.all.ids")
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
T0=$(date +%s%N)
check "$WHO: after a 1 h backward step, replies come from fresh worker IDs" switched
echo "  switched $(( ($(date +%s%N) - T0) / 1000000 )) ms after the step"
for _ in 1 2 3; do probe --ids "$SYS_TMP/$WHO.after.ids" >/dev/null; done
cat "$SYS_TMP/$WHO.after.ids" >>"$SYS_TMP/$WHO.all.ids"
follow() {
	/usr/bin/python3 - "$SYS_TMP/$WHO.after.ids" "$OLD" <<'PY'
import sys, time
old = set(int(x) for x in sys.argv[2].split(","))
ids = [tuple(map(int, l.split())) for l in open(sys.argv[1])]
target = time.time() * 1000 - 3600000  # the system clock as flakesock reads it
ms = [(i >> 24) + 1767225600000 for w, i in ids]
lag = [target - m for m in ms]
print("  %d IDs after the switch: %.0f to %.0f ms behind the real clock minus 1 h" % (
    len(ids), min(lag), max(lag)))
sys.exit(0 if ids and all(w not in old for w, _ in ids) and max(abs(l) for l in lag) < 5000 else 1)
PY
}
check "$WHO: their IDs follow the stepped system clock (within 5 s), not an hour ahead of it" follow
refused() {
	local r u
	r=$(sed -n 's/.*retry=\([0-9]*\).*/\1/p' "$TALLY" | awk '{s += $1} END {print s + 0}')
	u=$(sed -n 's/.*unsafe=\([0-9]*\).*/\1/p' "$TALLY" | awk '{s += $1} END {print s + 0}')
	echo "  $(wc -l <"$TALLY") probes of 16 requests: $r RETRY_AFTER, $u CLOCK_UNSAFE"
	[ "$r" = 0 ] && [ "$u" = 0 ]
}
check "$WHO: no reply was CLOCK_UNSAFE or RETRY_AFTER across the step" refused
nodup() { [ -z "$(awk '{print $2}' "$SYS_TMP/$WHO.all.ids" | sort | uniq -d | head -1)" ]; }
check "$WHO: no ID issued twice across the switch ($(wc -l <"$SYS_TMP/$WHO.all.ids") IDs)" nodup
released() {
	local i
	for i in $(seq 20); do
		[ "$(owned free)" = "$OLD" ] && return 0
		sleep 0.25
	done
	return 1
}
check "$WHO: the old worker IDs are released (free)" released
sys_in_ns "$FLAKECTL" fleet ls --zk "$REG_CONNECT" --root "$ROOT" | sed 's/^/  /'
floor_ok() {
	sys_in_ns "$FLAKECTL" fleet ls --zk "$REG_CONNECT" --root "$ROOT" --timeout 15000 >"$SYS_TMP/ls"
	/usr/bin/python3 - "$SYS_TMP/ls" "$SYS_TMP/$WHO.all.ids" "$OLD" <<'PY'
import sys, datetime
old = set(int(x) for x in sys.argv[3].split(","))
floors = {}
for l in open(sys.argv[1]):
    f = l.split()
    if f and f[0].isdigit() and int(f[0]) in old:
        t = datetime.datetime.strptime(f[4], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
        floors[int(f[0])] = int(t.timestamp() * 1000 + 0.5)
for w, i in (tuple(map(int, l.split())) for l in open(sys.argv[2])):
    if w in old and (i >> 24) + 1767225600000 > floors.get(w, 0):
        sys.exit(1)
sys.exit(0 if len(floors) == len(old) else 1)
PY
}
check "$WHO: each old worker ID's floor is at or above every ID it issued" floor_ok
grep -q "stepped .* to the system clock" "$LOG"
check "$WHO: the step back was logged" test $? -eq 0
}

echo "offset_ms=0" >"$FAULT"
sys_start "$SYS_TMP/flakesock.log" env FLAKEWIRE_TEST_CLOCK="$FAULT" "$FLAKESOCK" \
	--listen 127.0.0.1 --threads 2 --set net.udp_port=5501 --set "state.file=$SYS_TMP/s.mark" \
	--set fleet.root=/bs --set fleet.identity=bs "${COMMON[@]}"
backstep_case flakesock /bs 127.0.0.1:5501
kill -TERM "$SYS_LAST_PID"

echo "offset_ms=0" >"$FAULT"
sys_start "$SYS_TMP/flakesock4.log" env FLAKEWIRE_TEST_CLOCK="$FAULT" "$FLAKESOCK" \
	--listen 127.0.0.1 --threads 4 --set net.udp_port=5502 --set "state.file=$SYS_TMP/s4.mark" \
	--set fleet.root=/bs4 --set fleet.identity=bs4 --set id.datacenter=1 "${COMMON[@]}"
backstep_case flakesock4 /bs4 127.0.0.1:5502
kill -TERM "$SYS_LAST_PID"

# A full fleet (4 IDs to claim, the rest reserved; all held) under backstep = new_worker:
# node fa's clock steps back 1 h and no fresh worker ID exists. Nothing
# swaps, fa keeps answering from its own IDs, its registry backs off and
# says so once: the ensemble sees about its normal write rate, not a claim
# round after another (each one rewrites ROOT/clock and renews every lease).
echo "offset_ms=0" >"$FAULT"
FULL=(--threads 2 --set id.datacenter=2 --set fleet.root=/bsfull "${COMMON[@]}")
sys_start "$SYS_TMP/fullb.log" "$FLAKESOCK" --listen 127.0.0.1 --set net.udp_port=5504 \
	--set "state.file=$SYS_TMP/fb.mark" --set fleet.identity=fullb "${FULL[@]}"
FB=$SYS_LAST_PID
sys_start "$SYS_TMP/fulla.log" env FLAKEWIRE_TEST_CLOCK="$FAULT" "$FLAKESOCK" --listen 127.0.0.1 \
	--set net.udp_port=5503 --set "state.file=$SYS_TMP/fa.mark" --set fleet.identity=fulla \
	"${FULL[@]}"
FA=$SYS_LAST_PID
fprobe() { sys_in_ns $PROBE --server "127.0.0.1:$1" --sockets 16 | sed -n 's/.*ok=\([0-9]*\).*/\1/p'; }
full_up() { for _ in $(seq 60); do [ "$(fprobe 5503)" = 16 ] && [ "$(fprobe 5504)" = 16 ] && return 0; sleep 0.25; done; return 1; }
check "full fleet: both nodes answer (4 of 4 worker IDs held)" full_up
Z0=$(reg_writes); sleep 4; Z1=$(reg_writes)
echo "offset_ms=-3600000" >"$FAULT"
asked() { for _ in $(seq 40); do grep -q "claiming a fresh worker ID" "$SYS_TMP/fulla.log" && return 0; sleep 0.25; done; return 1; }
check "full fleet: fa saw the step and asked for fresh worker IDs" asked
Z2=$(reg_writes); sleep 4; Z3=$(reg_writes)
echo "  $REG_NAME writes in 4 s: $((Z1 - Z0)) before the step, $((Z3 - Z2)) with the replacement pending"
check "full fleet: the write rate stays normal (at most twice, plus 4)" test $((Z3 - Z2)) -le $((2 * (Z1 - Z0) + 4))
check "full fleet: fa keeps answering from its own worker IDs" test "$(fprobe 5503)" = 16
N=$(grep -c "can be claimed that can issue now" "$SYS_TMP/fulla.log")
check "full fleet: the refusal is logged once ($N)" test "$N" = 1
kill -TERM "$FA" "$FB"

if [ -n "$FLAKEWIRE" ]; then
	echo "offset_ms=0" >"$FAULT"
	sys_start "$SYS_TMP/flakewire.log" env FLAKEWIRE_TEST_CLOCK="$FAULT" "$FLAKEWIRE" \
		-l 0,1 --no-huge --no-pci -m 256 --file-prefix "fbs$$" -- \
		--set "port0.device=net_tap0,iface=fbs$$" --set "state.file=$SYS_TMP/w.mark" \
		--set fleet.root=/bsw --set fleet.identity=bsw --set id.datacenter=3 --set power.idle=sleep \
		"${COMMON[@]}"
	for _ in $(seq 100); do ip -n "$SYS_NS" link show "fbs$$" >/dev/null 2>&1 && break; sleep 0.1; done
	ip -n "$SYS_NS" addr add 10.77.0.1/24 dev "fbs$$"
	ip -n "$SYS_NS" link set "fbs$$" up
	backstep_case flakewire /bsw 10.77.0.2:4242
fi
sys_done
