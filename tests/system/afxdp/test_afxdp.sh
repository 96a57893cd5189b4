#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# flakewire in AF_XDP mode on a veth pair between two network namespaces:
# the client namespace (10.233.0.1) asks, flakewire runs in the other one on
# an interface that keeps its kernel address (10.233.0.2):
#   - flakectl get/info/bench get IDs while a kernel UDP echo on another port
#     and ping of the kernel address keep working (only the ID port is
#     stolen; ARP and ICMP are the kernel's);
#   - SIGTERM leaves no XDP program; SIGKILL leaves ours, the next start
#     removes it and serves again, every ID after above every ID before;
#   - start-up refusals: interface down, queues that do not fit (with the
#     ethtool command), a foreign program (left alone), a second instance;
#   - flakectl xdp status/detach;
#   - IPv6: flakectl get/info/bench to [SRV_IP6]:port through AF_XDP, ping -6
#     and neighbour discovery answered by the kernel meanwhile;
#   - what flakewire would not answer reaches a kernel socket on the ID port
#     (issue 11, fix 2): IPv4 with options, fragments (IPv4 and IPv6),
#     datagrams to a secondary address;
#   - martian sources (issue 33: loopback, unspecified, multicast, broadcast,
#     the interface's own addresses, IPv4-mapped, group source MACs) are
#     dropped by the XDP program, counted by reason, never answered, with
#     [net] allow = 0.0.0.0/0,::/0.
# Skips (77) only when the kernel refuses XDP or AF_XDP on veth.
# Usage: test_afxdp.sh FLAKEWIRE FLAKECTL FOREIGN_BPF_O XDP_TRAFFIC_PY FLAKEWIRE_BPF_O
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$HERE/../lib.sh"

FLAKEWIRE=$(realpath "$1")
FLAKECTL=$(realpath "$2")
FOREIGN=$(realpath "$3")
TRAFFIC=$(realpath "$4")
OWN=$(realpath "$5")
MARTIANS=$(realpath "$HERE/../flakewire/martians.py")
PY=/usr/bin/python3

SRV=fwa-s
CLI=fwa-c
SRV_IP=10.233.0.2
SRV_IP2=10.233.0.9
CLI_IP=10.233.0.1
SRV_IP6=fd00:a1::2
CLI_IP6=fd00:a1::1
PORT=4242
ECHO_PORT=4243

sys_init afxdp
NSC="fwt-afxdpc-$$"
PREFIX="fwt-afxdp-$$"
FW_PID=""
NETNS_INO=""

afxdp_cleanup() {
	local pid=$FW_PID
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	fi
	ip -n "$SYS_NS" link set dev "$SRV" xdpgeneric off 2>/dev/null
	ip -n "$SYS_NS" link set dev "$SRV" xdpdrv off 2>/dev/null
	ip -n "$NSC" link set dev "$CLI" xdpdrv off 2>/dev/null
	sys_cleanup
	ip netns del "$NSC" 2>/dev/null
	rm -rf "/var/run/dpdk/$PREFIX" "/var/run/dpdk/$PREFIX-x"
	[ -n "$NETNS_INO" ] && rm -f /run/flakewire/xdp-"$NETNS_INO"-*.lock
	return 0
}
trap afxdp_cleanup EXIT

[ -x "$PY" ] || sys_skip "$PY missing (Debian python for the traffic helper)"
command -v ping >/dev/null || sys_skip "ping missing (iputils-ping)"
command -v ethtool >/dev/null || sys_skip "ethtool missing"

ip netns add "$NSC" || sys_skip "cannot create a second network namespace"
ip -n "$NSC" link set lo up
ip -n "$SYS_NS" link add "$SRV" type veth peer name "$CLI" netns "$NSC" ||
	sys_skip "cannot create veth"
ip -n "$SYS_NS" addr add "$SRV_IP/24" dev "$SRV"
ip -n "$NSC" addr add "$CLI_IP/24" dev "$CLI"
ip -n "$SYS_NS" addr add "$SRV_IP2/24" dev "$SRV" # secondary: flakewire answers the primary only
ip -n "$SYS_NS" addr add "$SRV_IP6/64" dev "$SRV" nodad
ip -n "$NSC" addr add "$CLI_IP6/64" dev "$CLI" nodad
ip -n "$SYS_NS" link set "$SRV" up
ip -n "$NSC" link set "$CLI" up
# A veth sends locally generated UDP with the checksum left to "hardware"
# (CHECKSUM_PARTIAL); AF_XDP hands the raw frame to flakewire, which checks
# it. A real NIC always delivers finished checksums.
ip netns exec "$NSC" ethtool -K "$CLI" tx off >/dev/null || sys_skip "cannot turn off veth tx csum"
NETNS_INO=$(ip netns exec "$SYS_NS" stat -L -c %i /proc/self/ns/net)
SRV_MAC=$(ip -n "$SYS_NS" -br link show dev "$SRV" | awk '{print $3}')

in_cli() { ip netns exec "$NSC" "$@"; }
ctl() { in_cli "$FLAKECTL" "$@" --server "$SRV_IP:$PORT"; }
attached_name() { ip -n "$SYS_NS" -d link show dev "$SRV" | sed -n 's/.*prog\/xdp id [0-9]* name \([^ ]*\).*/\1/p'; }
log() { cat "$SYS_TMP/fw.log"; }

# fw_run LOG LCORES [options]: runs flakewire in the foreground (start-up refusals).
fw_run() {
	local out=$1 lcores=$2
	shift 2
	timeout 60 ip netns exec "$SYS_NS" "$FLAKEWIRE" --lcores "$(proc_lcores "$lcores")" --no-huge --no-pci -m 256 \
		--file-prefix "$PREFIX-x" -- \
		--set port0.mode=af_xdp --set port0.iface="$SRV" \
		--set state.file="$SYS_TMP/mark-x" --set clock.calibrate_ms=200 \
		--set stats.interval_s=0 "$@" >"$out" 2>&1
}

# fw_start [PORT OPTIONS]: starts flakewire in the background (default:
# mode = af_xdp on $SRV) and waits until it runs.
fw_start() {
	local port_args=("$@")
	[ $# -gt 0 ] || port_args=(--set port0.mode=af_xdp --set port0.iface="$SRV")
	: >"$SYS_TMP/fw.log"
	ip netns exec "$SYS_NS" "$FLAKEWIRE" --lcores "$(proc_lcores 0)" --no-huge --no-pci -m 256 \
		--file-prefix "$PREFIX" -- "${port_args[@]}" \
		--set state.file="$SYS_TMP/mark" --set state.mark_ahead_ms=2000 \
		--set clock.calibrate_ms=200 --set stats.interval_s=0 >>"$SYS_TMP/fw.log" 2>&1 &
	FW_PID=$!
	for _ in $(seq 150); do
		grep -q "running on" "$SYS_TMP/fw.log" && return 0
		kill -0 "$FW_PID" 2>/dev/null || break
		sleep 0.1
	done
	log
	if ! kill -0 "$FW_PID" 2>/dev/null &&
		grep -qiE "xsk|Failed to (load|attach|create|configure)|Operation not supported" \
			"$SYS_TMP/fw.log"; then
		FW_PID=""
		sys_skip "the kernel refuses AF_XDP/XDP on veth (log above)"
	fi
	return 1
}

# fw_stop SIGNAL: stops flakewire; returns its exit status.
fw_stop() {
	local rc
	sys_stop "$FW_PID" "${1:-TERM}"
	rc=$?
	FW_PID=""
	return $rc
}

# get FILE N: N IDs into FILE; retried while a restarted responder waits for its mark.
get() {
	local i
	for i in $(seq 30); do
		ctl get -n "$2" >"$1" 2>"$SYS_TMP/get.err" && [ "$(wc -l <"$1")" -eq "$2" ] && return 0
		sleep 0.2
	done
	cat "$SYS_TMP/get.err"
	return 1
}

# ---------------------------------------------------------------------------
# The kernel must accept XDP on veth at all.
if ! ip -n "$SYS_NS" link set dev "$SRV" xdp obj "$FOREIGN" sec xdp 2>"$SYS_TMP/load.err"; then
	cat "$SYS_TMP/load.err"
	sys_skip "the kernel refuses XDP on veth"
fi
ip -n "$SYS_NS" link set dev "$SRV" xdp off

# Kernel services on the flakewire side that must keep working.
sys_start "$SYS_TMP/echo.log" "$PY" "$TRAFFIC" udp-echo "$ECHO_PORT"
# a kernel socket on the ID port: gets only what the XDP program passes
sys_start "$SYS_TMP/sink.log" "$PY" "$TRAFFIC" udp-sink "$PORT" "$SYS_TMP/sink"
sys_wait_for 5 sys_in_ns sh -c "ss -lun | grep -q :$ECHO_PORT && ss -lun | grep -q :$PORT"

check "start (run 1)" fw_start
if ! get "$SYS_TMP/run1" 100; then
	# Some kernels deliver redirected veth frames only when the peer runs XDP too.
	echo "note: no answer; attaching an XDP_PASS program to the client-side veth"
	ip -n "$NSC" link set dev "$CLI" xdpdrv obj "$FOREIGN" sec xdp
	get "$SYS_TMP/run1" 100
fi
check "get: 100 IDs" [ "$(wc -l <"$SYS_TMP/run1")" -eq 100 ]
check "get: IDs unique and increasing" ids_increasing "$SYS_TMP/run1"
check "log: devargs built by flakewire" \
	grep -q "net_af_xdp0,iface=$SRV,start_queue=0,queue_count=1,xdp_prog=/.*flakewire.bpf.o" \
	"$SYS_TMP/fw.log"
check "log: answers with the kernel's MAC and address" \
	grep -qi "MAC $SRV_MAC address $SRV_IP" "$SYS_TMP/fw.log"
check "info" sh -c "ip netns exec '$NSC' '$FLAKECTL' info --server $SRV_IP:$PORT | grep -q 'answered by'"
in_cli "$FLAKECTL" bench --duration 2 --server "$SRV_IP:$PORT" --out "$SYS_TMP/bench.ids" \
	>"$SYS_TMP/bench.out" 2>&1
check "bench --duration 2: exit 0" [ $? -eq 0 ]
cat "$SYS_TMP/bench.out"
check "bench: no duplicate" grep -q " 0 duplicate(s)" "$SYS_TMP/bench.out"
check "bench: no timeout" grep -qE "^timeouts +0$" "$SYS_TMP/bench.out"
check "kernel UDP echo on port $ECHO_PORT works meanwhile" \
	in_cli "$PY" "$TRAFFIC" udp-rpc "$SRV_IP" "$ECHO_PORT"
ip -n "$NSC" neigh flush dev "$CLI"
check "ping of the kernel address works meanwhile (ARP + ICMP)" \
	in_cli ping -c 3 -i 0.2 -W 2 "$SRV_IP"
check "flakectl xdp status: ours, steering port $PORT" \
	sh -c "ip netns exec '$SYS_NS' '$FLAKECTL' xdp status $SRV | tee '$SYS_TMP/st' | grep -q \"flakewire's  yes .*UDP port $PORT\""
cat "$SYS_TMP/st"
check "flakectl xdp status: packets redirected" \
	sh -c "awk '\$1 == \"redirect\" && \$2 > 0' '$SYS_TMP/st' | grep -q ."

# IPv6 through AF_XDP; neighbour discovery and ping -6 stay with the kernel.
check "log: the interface's IPv6 address taken" grep -q "IPv6 $SRV_IP6" "$SYS_TMP/fw.log"
ip -n "$NSC" -6 neigh flush dev "$CLI"
check "ping -6 of the kernel address (neighbour discovery by the kernel)" \
	in_cli ping -6 -c 2 -i 0.2 -W 2 "$SRV_IP6"
c6() { in_cli "$FLAKECTL" "$@" --server "[$SRV_IP6]:$PORT"; }
check "IPv6: get 50" sh -c "ip netns exec '$NSC' '$FLAKECTL' get -n 50 --server '[$SRV_IP6]:$PORT' | wc -l | grep -qx 50"
check "IPv6: info" sh -c "ip netns exec '$NSC' '$FLAKECTL' info --server '[$SRV_IP6]:$PORT' | grep -q 'answered by'"
c6 bench --duration 1 --out "$SYS_TMP/bench6.ids" >"$SYS_TMP/bench6.out" 2>&1
check "IPv6: bench exit 0, no duplicate" grep -q " 0 duplicate(s)" "$SYS_TMP/bench6.out"
cat "$SYS_TMP/bench6.out"
check "IPv6: mixed server list fails over from IPv4 to IPv6" sh -c \
	"ip netns exec '$NSC' '$FLAKECTL' get --timeout 1500 --server 10.233.0.99:$PORT --server '[$SRV_IP6]:$PORT' | grep -q ."

# Frames flakewire would not answer go to the kernel, not into the socket.
sink_count() { grep -c "$1" "$SYS_TMP/sink" 2>/dev/null || true; }
export XDP_SRC=$CLI_IP XDP_DST=$SRV_IP XDP_SRC6=$CLI_IP6 XDP_DST6=$SRV_IP6
in_cli "$PY" "$TRAFFIC" udp-send "$SRV_IP2" "$PORT" 2 40
sys_wait_for 3 test "$(sink_count '^40 udp')" -ge 2
check "kernel gets the ID port on a secondary IPv4 address" [ "$(sink_count '^40 udp')" -eq 2 ]
in_cli "$PY" "$TRAFFIC" udp-send "$SRV_IP" "$PORT" 1 3000
in_cli "$PY" "$TRAFFIC" udp-send "$SRV_IP6" "$PORT" 1 3000
sys_wait_for 3 test "$(sink_count '^3000 udp')" -ge 2
check "kernel gets IPv4 and IPv6 fragments to the ID port, reassembled" \
	[ "$(sink_count '^3000 udp')" -eq 2 ]
in_cli "$PY" "$TRAFFIC" raw "$CLI" "$SRV_MAC" ipopt-port "$PORT"
sys_wait_for 3 grep -q " ipopt" "$SYS_TMP/sink"
check "kernel gets IPv4 with options to the ID port" grep -q " ipopt" "$SYS_TMP/sink"
in_cli "$PY" "$TRAFFIC" raw "$CLI" "$SRV_MAC" v6-port "$PORT"
check "flakewire answers a raw IPv6 request frame's port, not the kernel" \
	[ "$(sink_count v6port)" -eq 0 ]
ip netns exec "$SYS_NS" "$FLAKECTL" xdp status "$SRV" >"$SYS_TMP/st2"
cat "$SYS_TMP/st2"
check "xdp status: steers only to the interface's primary IPv4 and its IPv6 addresses" \
	grep -q "UDP port $PORT, to $SRV_IP $SRV_IP6 fe80::" "$SYS_TMP/st2"
check "xdp status: not_ours, fragment and ip_options counted" sh -c \
	"awk '(\$1 == \"not_ours\" || \$1 == \"fragment\" || \$1 == \"ip_options\") && \$2 > 0' '$SYS_TMP/st2' | wc -l | grep -qx 3"
unset XDP_SRC XDP_DST XDP_SRC6 XDP_DST6

# A second instance on the same interface is refused, and the first one keeps serving
# (its own state and worker ID, so that the interface is what refuses it, not the locks).
fw_run "$SYS_TMP/second.log" 0 --set id.worker_base=1
check "second instance: refused" [ $? -ne 0 ]
check "second instance: says why" grep -q "another flakewire (pid $FW_PID" "$SYS_TMP/second.log"
check "first instance still serves" get "$SYS_TMP/run1b" 10
cat "$SYS_TMP/run1b" "$SYS_TMP/bench.ids" >>"$SYS_TMP/run1"

check "SIGTERM: exit 0" fw_stop TERM
check "SIGTERM: DPDK answered no ARP and no ICMP" grep -q "arp 0 icmp 0" "$SYS_TMP/fw.log"
check "SIGTERM: no XDP program left" [ -z "$(attached_name)" ]
check "after SIGTERM: kernel UDP echo still works" in_cli "$PY" "$TRAFFIC" udp-rpc "$SRV_IP" "$ECHO_PORT"

# SIGKILL leaves our program; the next start removes it and serves again.
check "start (run 2)" fw_start
check "run 2: get" get "$SYS_TMP/run2" 100
fw_stop KILL
check "SIGKILL: our program stays attached" [ "$(attached_name)" = fw_xdp_redirect ]
check "start after SIGKILL (run 3)" fw_start
check "run 3: stale program removed and logged" grep -q "removed flakewire's XDP program" "$SYS_TMP/fw.log"
check "run 3: get" get "$SYS_TMP/run3" 100
check "run 2 IDs above run 1" ids_all_above "$SYS_TMP/run1" "$SYS_TMP/run2"
check "run 3 IDs above run 2 (across SIGKILL)" ids_all_above "$SYS_TMP/run2" "$SYS_TMP/run3"
cat "$SYS_TMP/run1" "$SYS_TMP/run2" "$SYS_TMP/run3" >"$SYS_TMP/all"
check "no duplicate across the restarts" ids_unique "$SYS_TMP/all"
check "run 3: SIGTERM exit 0" fw_stop TERM
check "run 3: no XDP program left" [ -z "$(attached_name)" ]

# A net_af_xdp device string without xdp_prog= gets flakewire's program, not the PMD's.
check "device string: start" fw_start --set port0.device="net_af_xdp0,iface=$SRV"
check "device string: flakewire's program added" \
	grep -q "net_af_xdp0,iface=$SRV,.*xdp_prog=/.*flakewire.bpf.o" "$SYS_TMP/fw.log"
check "device string: serves" get "$SYS_TMP/run4" 10
check "device string: ping still works" in_cli ping -c 1 -W 2 "$SRV_IP"
check "device string: SIGTERM exit 0" fw_stop TERM
check "device string: no XDP program left" [ -z "$(attached_name)" ]

# Martian sources (issue 33), with [net] allow = 0.0.0.0/0,::/0 so that the
# allow list proves nothing: the XDP program drops every kind, counted by
# reason (the kernel would take several itself: lib/xdp/flakewire.bpf.c);
# none is answered, none reaches the kernel's socket on the port, and the
# controls from the client's real addresses are answered.
check "martians: start with allow = 0.0.0.0/0,::/0" fw_start --set port0.mode=af_xdp \
	--set port0.iface="$SRV" --set net.allow=0.0.0.0/0,::/0
ip netns exec "$SYS_NS" "$FLAKECTL" xdp status "$SRV" >"$SYS_TMP/mst0"
sunk=$(wc -l <"$SYS_TMP/sink")
in_cli "$PY" "$MARTIANS" "$CLI" "$SRV_MAC" "$CLI_IP" "$SRV_IP" "$CLI_IP6" "$SRV_IP6" 3 \
	--no-echo >"$SYS_TMP/martians.json"
check "martians: traffic sent" [ -s "$SYS_TMP/martians.json" ]
ip netns exec "$SYS_NS" "$FLAKECTL" xdp status "$SRV" >"$SYS_TMP/mst1"
cat "$SYS_TMP/mst1"
check "martians: none answered, each counted by its reason in the XDP program" \
	"$PY" - "$SYS_TMP/martians.json" "$SYS_TMP/mst0" "$SYS_TMP/mst1" <<'PY'
import json, re, sys
r = json.load(open(sys.argv[1]))
def counters(path):
    return {m.group(1): int(m.group(2)) for m in
            re.finditer(r"^  (\w+) +(\d+)$", open(path).read(), re.M)}
a, b = counters(sys.argv[2]), counters(sys.argv[3])
bad = []
for kind, k in r["kinds"].items():
    print("  %-22s %-12s sent %d replies %d" % (kind, k["reason"], k["sent"], k["replies"]))
    if k["replies"]:
        bad.append("%s answered %d times" % (kind, k["replies"]))
for c, n in r["controls"].items():
    print("  %-22s answered %d" % (c, n))
    if n < 1:
        bad.append("%s not answered: the capture proves nothing" % c)
for c, want in sorted(r["xdp_expect"].items()):
    d = b.get(c, 0) - a.get(c, 0)
    print("  xdp %s: +%d (want %d)" % (c, d, want))
    if d != want:
        bad.append("xdp %s moved by %d, expected %d" % (c, d, want))
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
sleep 0.2
check "martians: dropped, not passed (the kernel's socket on the port got none)" \
	[ "$(wc -l <"$SYS_TMP/sink")" -eq "$sunk" ]
check "martians: SIGTERM exit 0" fw_stop TERM

# An IPv6-only interface: flakewire starts and serves over IPv6.
ip -n "$SYS_NS" addr del "$SRV_IP/24" dev "$SRV"
ip -n "$SYS_NS" addr del "$SRV_IP2/24" dev "$SRV"
check "IPv6-only interface: start" fw_start
check "IPv6-only interface: get over IPv6" sh -c \
	"ip netns exec '$NSC' '$FLAKECTL' get -n 10 --server '[$SRV_IP6]:$PORT' | wc -l | grep -qx 10"
check "IPv6-only interface: SIGTERM exit 0" fw_stop TERM
ip -n "$SYS_NS" addr add "$SRV_IP/24" dev "$SRV"
ip -n "$SYS_NS" addr add "$SRV_IP2/24" dev "$SRV"

# Configuration errors name the key.
cfg_err() { # message args...
	local msg=$1
	shift
	"$FLAKEWIRE" -- "$@" --check-config 2>&1 | grep -qF -- "$msg"
}
check "config: af_xdp without iface" cfg_err "[port0] mode = af_xdp needs iface" --set port0.mode=af_xdp
check "config: bad mode" cfg_err "[port0] mode = xdp: not one of (dpdk, af_xdp)" --set port0.mode=xdp
check "config: iface too long" cfg_err "[port0] iface = abcdefghijklmnopq: length out of range" \
	--set port0.iface=abcdefghijklmnopq

# ---------------------------------------------------------------------------
# Start-up refusals, each with its message; nothing attached afterwards.
ip -n "$SYS_NS" link set "$SRV" down
fw_run "$SYS_TMP/down.log" 0
check "down: refused" [ $? -ne 0 ]
check "down: says how to fix" grep -q "$SRV is down: .ip link set dev $SRV up" "$SYS_TMP/down.log"
ip -n "$SYS_NS" link set "$SRV" up

fw_run "$SYS_TMP/queues.log" 0,1
check "2 lcores, 1 queue: refused" [ $? -ne 0 ]
check "2 lcores, 1 queue: prints the ethtool command" grep -q "ethtool -L $SRV" "$SYS_TMP/queues.log"

fw_run "$SYS_TMP/noif.log" 0 --set port0.iface=fwa-none
check "no such interface: refused with its name" grep -q "interface fwa-none does not exist" "$SYS_TMP/noif.log"

ip -n "$SYS_NS" link set dev "$SRV" xdpgeneric obj "$FOREIGN" sec xdp
fw_run "$SYS_TMP/foreign.log" 0
check "foreign program: refused" [ $? -ne 0 ]
check "foreign program: named, with the command" \
	grep -q "runs XDP program 'foreign_pass'.*ip link set dev $SRV xdpgeneric off" "$SYS_TMP/foreign.log"
check "foreign program: left attached" [ "$(attached_name)" = foreign_pass ]
ip netns exec "$SYS_NS" "$FLAKECTL" xdp detach "$SRV"
check "flakectl xdp detach: refuses the foreign one (exit 4)" [ $? -eq 4 ]
check "foreign program: still attached" [ "$(attached_name)" = foreign_pass ]
ip -n "$SYS_NS" link set dev "$SRV" xdpgeneric off

# flakectl xdp detach on our program as a crash leaves it.
ip -n "$SYS_NS" link set dev "$SRV" xdp obj "$OWN" sec xdp
check "flakectl xdp detach: removes ours" ip netns exec "$SYS_NS" "$FLAKECTL" xdp detach "$SRV"
ip netns exec "$SYS_NS" "$FLAKECTL" xdp detach "$SRV"
check "flakectl xdp detach: nothing attached (exit 3)" [ $? -eq 3 ]
check "nothing attached at the end" [ -z "$(attached_name)" ]

sys_done
