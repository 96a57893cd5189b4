#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# What [power] idle costs and saves: flakewire on one lcore (core 1) on a TAP
# device in a namespace, per mode: CPU used by the process at idle (5 s) and
# at 1,000 requests/s (5 s, one request in flight, a paced Python client on
# core 0), and the client's round-trip p50/p99 at that load. Modes the
# platform or the driver refuses are listed with flakewire's reason. Also
# probes which modes net_af_xdp (on a veth) accepts.
# usage: scripts/bench/power.sh [BUILD_DIR]   (root; prints a table)
set -u
BUILD=${1:-build}
FW=$(realpath "$BUILD/app/flakewire/flakewire")
PY=/usr/bin/python3
SECS=${SECS:-5}
RATE=${RATE:-1000}
NS="fwpow-$$"
TMP=$(mktemp -d /tmp/fwpow.XXXXXX)
PID=""
. "$(dirname "$(realpath "$0")")/../lib/bench.sh" # stop_pid
stop() {
	[ -n "$PID" ] || return 0
	stop_pid "$PID"
	PID=""
}
cleanup() {
	stop
	ip netns del "$NS" 2>/dev/null
	ip link del "fwpv$$" 2>/dev/null
	rm -rf "$TMP" "/var/run/dpdk/$NS"
}
trap cleanup EXIT
[ "$(id -u)" -eq 0 ] || { echo "bench/power.sh: needs root" >&2; exit 1; }
ip netns add "$NS"
ip -n "$NS" link set lo up

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)

start() { # mode; returns 1 (reason in $TMP/fw.log) if flakewire refuses it
	: >"$TMP/fw.log"
	ip netns exec "$NS" "$FW" -l 1 --no-huge --no-pci -m 256 --file-prefix "$NS" -- \
		--set state.file="$TMP/mark" --set state.lock_dir="$TMP/locks" --set stats.interval_s=0 --set power.idle="$1" \
		>>"$TMP/fw.log" 2>&1 &
	PID=$!
	for _ in $(seq 100); do
		grep -q "running on" "$TMP/fw.log" && break
		kill -0 "$PID" 2>/dev/null || { PID=""; return 1; }
		sleep 0.1
	done
	ip -n "$NS" addr add 10.77.0.1/24 dev fw0 2>/dev/null
	ip -n "$NS" link set fw0 up
	for _ in $(seq 30); do
		ip netns exec "$NS" ping -c 1 -W 1 10.77.0.2 >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	return 1
}

paced() { # rate seconds -> "p50_us p99_us answered sent"
	ip netns exec "$NS" taskset -c 0 "$PY" - "$1" "$2" <<'PYEOF'
import socket, struct, sys, time
rate, secs = int(sys.argv[1]), float(sys.argv[2])
HDR = struct.Struct(">HBBBBHQHHI")
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(0.2)
rtt, sent, tag = [], 0, 1
t0 = time.perf_counter()
nxt = t0
while time.perf_counter() - t0 < secs:
    now = time.perf_counter()
    if now < nxt:
        time.sleep(nxt - now)
    nxt += 1.0 / rate
    tag += 1
    req = HDR.pack(0x464B, 1, 1, 0, 0, 1, tag, 0, 0, 0) + bytes(8)
    a = time.perf_counter()
    s.sendto(req, ("10.77.0.2", 4242))
    sent += 1
    try:
        while True:
            d = s.recv(2048)
            if HDR.unpack_from(d)[6] == tag:
                rtt.append(time.perf_counter() - a)
                break
    except socket.timeout:
        pass
rtt.sort()
q = lambda p: rtt[min(len(rtt) - 1, int(p * len(rtt)))] * 1e6 if rtt else float("nan")
print("%.0f %.0f %d %d" % (q(0.5), q(0.99), len(rtt), sent))
PYEOF
}

echo "# $(date -u +%FT%TZ), $(nproc) cores, load average $(cut -d" " -f1-3 /proc/loadavg), flakewire -l 1, sleep_us default"
printf '%-10s %-14s %-16s %-14s %-14s %s\n' mode "idle CPU %" "1k req/s CPU %" "p50 us" "p99 us" "answered"
for mode in busy pause interrupt sleep monitor scale; do
	if ! start "$mode"; then
		why=$(grep -m1 -E "power|\[power\]" "$TMP/fw.log" | sed 's/^.*flakewire: //')
		printf '%-10s refused: %s\n' "$mode" "${why:-did not start}"
		stop
		continue
	fi
	sleep 1
	a=$(cpu_ticks "$PID"); sleep "$SECS"; b=$(cpu_ticks "$PID")
	idle=$(awk -v d=$((b - a)) -v hz="$HZ" -v s="$SECS" 'BEGIN { printf "%.1f", 100 * d / hz / s }')
	a=$(cpu_ticks "$PID")
	read -r p50 p99 got sent < <(paced "$RATE" "$SECS")
	b=$(cpu_ticks "$PID")
	load=$(awk -v d=$((b - a)) -v hz="$HZ" -v s="$SECS" 'BEGIN { printf "%.1f", 100 * d / hz / s }')
	printf '%-10s %-14s %-16s %-14s %-14s %s/%s\n' "$mode" "$idle" "$load" "$p50" "$p99" "$got" "$sent"
	stop
done

# which modes net_af_xdp accepts (veth, copy mode): start, then stop at once
if ip link add "fwpv$$" type veth peer name "fwpw$$" 2>/dev/null; then
	ip link set "fwpw$$" netns "$NS"
	ip -n "$NS" link set "fwpw$$" up
	ip -n "$NS" addr add 10.78.0.2/24 dev "fwpw$$"
	ip link set "fwpv$$" netns "$NS" 2>/dev/null
	ip -n "$NS" link set "fwpv$$" up
	ip -n "$NS" addr add 10.78.0.1/24 dev "fwpv$$"
	for mode in busy pause interrupt sleep monitor; do
		: >"$TMP/fw.log"
		ip netns exec "$NS" timeout 20 "$FW" -l 1 --no-huge --no-pci -m 256 \
			--file-prefix "$NS" -- --set state.file="$TMP/mark" --set state.lock_dir="$TMP/locks" --set stats.interval_s=0 \
			--set port0.mode=af_xdp --set port0.iface="fwpw$$" --set power.idle="$mode" \
			>>"$TMP/fw.log" 2>&1 &
		PID=$!
		res="refused"
		for _ in $(seq 100); do
			if grep -q "running on" "$TMP/fw.log"; then res=accepted; break; fi
			kill -0 "$PID" 2>/dev/null || break
			sleep 0.1
		done
		why=$(grep -m1 "\[power\]" "$TMP/fw.log" | sed 's/^.*flakewire: //')
		[ "$res" = accepted ] && why=""
		echo "af_xdp    $mode: $res${why:+: $why}"
		stop
	done
fi
