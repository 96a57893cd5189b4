#!/usr/bin/env bash
# flakewire's XDP program and lib/xdp on a veth pair between two network
# namespaces, without DPDK and without AF_XDP sockets:
#   - with no socket bound, UDP to the configured port is classified
#     "redirect attempted" and falls back to XDP_PASS (counter no_xsk), and
#     reaches a kernel socket;
#   - IPv6 UDP to the port is steered the same way;
#   - everything else (ARP, ping, neighbour discovery, TCP, UDP to another
#     port, fragments, IP options, IPv6 extension headers, VLAN, malformed
#     headers, lengths past the frame, an IPv6 UDP checksum of 0, another
#     destination address once set-addrs restricts it, a group MAC) is passed
#     and counted by reason: what flakewire would not answer reaches the
#     kernel, and kernel services on the interface keep working;
#   - lib/xdp status/detach/set-port tell flakewire's program from a foreign
#     one (never detaching the foreign one), in skb, drv and libxdp
#     dispatcher attachments; interface pre-flight facts are right.
# Usage: test_xdp.sh FLAKEWIRE_BPF_O XDP_PASS_BPF_O XDP_TOOL
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$HERE/../lib.sh"

OBJ=$(realpath "$1")
FOREIGN=$(realpath "$2")
TOOL=$(realpath "$3")
PY=/usr/bin/python3
TRAFFIC="$HERE/xdp_traffic.py"

PORT=47000
SRV=fwx-s
CLI=fwx-c
SRV_IP=10.231.0.1
CLI_IP=10.231.0.2

sys_init xdp
NSC="fwt-xdpc-$$"

xdp_cleanup() {
	ip -n "$SYS_NS" link set dev "$SRV" xdpgeneric off 2>/dev/null
	ip -n "$SYS_NS" link set dev "$SRV" xdpdrv off 2>/dev/null
	sys_cleanup
	ip netns del "$NSC" 2>/dev/null
	return 0
}
trap xdp_cleanup EXIT

[ -x "$PY" ] || sys_skip "$PY missing (Debian python for the traffic helpers)"
command -v ping >/dev/null || sys_skip "ping missing (iputils-ping)"
command -v ethtool >/dev/null || sys_skip "ethtool missing"

ip netns add "$NSC" || sys_skip "cannot create a second network namespace"
ip -n "$NSC" link set lo up
ip -n "$SYS_NS" link add "$SRV" numtxqueues 2 numrxqueues 2 type veth \
	peer name "$CLI" netns "$NSC" numtxqueues 2 numrxqueues 2 || sys_skip "cannot create veth"
# Room for 2 receive queues, 1 in use: the pre-flight checks below grow it.
sys_in_ns ethtool -L "$SRV" rx 1 tx 1 || sys_skip "cannot set veth channels"
ip -n "$SYS_NS" addr add "$SRV_IP/24" dev "$SRV"
ip -n "$NSC" addr add "$CLI_IP/24" dev "$CLI"
ip -n "$SYS_NS" addr add fd00:f1::1/64 dev "$SRV" nodad
ip -n "$NSC" addr add fd00:f1::2/64 dev "$CLI" nodad
ip -n "$SYS_NS" link set "$SRV" up
ip -n "$NSC" link set "$CLI" up
SRV_MAC=$(ip -n "$SYS_NS" -br link show dev "$SRV" | awk '{print $3}')

tool() { sys_in_ns "$TOOL" "$@"; }
# field NAME: value of NAME= in the last status output.
field() { sed -n "s/^$1=//p" "$SYS_TMP/status"; }
status() { tool status "$SRV" >"$SYS_TMP/status"; }
ctr() { status && field "counter.$1"; }
in_cli() { ip netns exec "$NSC" "$@"; }
sink_count() { grep -c "$1" "$SYS_TMP/sink" 2>/dev/null || true; }
attached_name() { ip -n "$SYS_NS" -d link show dev "$SRV" | sed -n 's/.*prog\/xdp id [0-9]* name \([^ ]*\).*/\1/p'; }

# ---------------------------------------------------------------------------
# Probe the kernel with a foreign program (a bare XDP_PASS): only a kernel
# without XDP (generic) on veth skips. Then flakewire's own program must
# load: a verifier rejection of it is a failure, never a skip.
if ! ip -n "$SYS_NS" link set dev "$SRV" xdpgeneric obj "$FOREIGN" sec xdp 2>"$SYS_TMP/probe.err"; then
	cat "$SYS_TMP/probe.err"
	sys_skip "the kernel refuses XDP (generic) on veth, even a bare XDP_PASS program"
fi
ip -n "$SYS_NS" link set dev "$SRV" xdpgeneric off
if ! ip -n "$SYS_NS" link set dev "$SRV" xdpgeneric obj "$OBJ" sec xdp 2>"$SYS_TMP/load.err"; then
	tail -n 30 "$SYS_TMP/load.err"
	echo "FAIL: the kernel runs XDP programs but refuses flakewire's (verifier log above)"
	exit 1
fi

status
check "status: mode skb" [ "$(field mode)" = skb ]
check "status: recognised as flakewire's" [ "$(field ours)" = 1 -a "$(field foreign)" = 0 ]
check "status: program name" [ "$(field prog_name)" = fw_xdp_redirect ]
check "status: no dispatcher, one program" [ "$(field dispatcher)" = 0 -a "$(field n_progs)" = 1 ]
check "status: port 0 until configured" [ "$(field port)" = 0 ]

# Kernel services for the test, on the XDP side.
sys_start "$SYS_TMP/sink.log" "$PY" "$TRAFFIC" udp-sink "$PORT" "$SYS_TMP/sink"
sys_start "$SYS_TMP/echo.log" "$PY" "$TRAFFIC" udp-echo "$((PORT + 1))"
sys_start "$SYS_TMP/tcp.log" "$PY" "$TRAFFIC" tcp-echo "$PORT"
sys_wait_for 5 sys_in_ns sh -c "ss -lun | grep -q :$PORT && ss -lun | grep -q :$((PORT + 1)) && ss -ltn | grep -q :$PORT"

# Unconfigured: UDP to the port is passed as "unconfigured".
u0=$(ctr unconfigured)
in_cli "$PY" "$TRAFFIC" udp-send "$SRV_IP" "$PORT" 3 32
sys_wait_for 3 test "$(sink_count udp)" -ge 3
check "unconfigured: UDP to the port reaches the kernel" [ "$(sink_count udp)" -eq 3 ]
check "unconfigured: counted as unconfigured" [ "$(($(ctr unconfigured) - u0))" -ge 3 ]

check "set-port" tool set-port "$SRV" "$PORT"
status
check "status: port configured" [ "$(field port)" = "$PORT" ]

# ARP and ping pass.
ip -n "$NSC" neigh flush dev "$CLI"
a0=$(ctr not_ip)
n0=$(ctr not_udp)
check "ping through XDP" in_cli ping -c 3 -i 0.2 -W 2 "$SRV_IP"
check "ARP counted as not_ip" [ "$(($(ctr not_ip) - a0))" -ge 1 ]
check "ICMP counted as not_udp" [ "$(($(ctr not_udp) - n0))" -ge 3 ]

n0=$(ctr not_udp)
ip -n "$NSC" -6 neigh flush dev "$CLI"
check "IPv6 ping through XDP (neighbour discovery by the kernel)" \
	in_cli ping -6 -c 2 -i 0.2 -W 2 fd00:f1::1
check "ICMPv6 counted as not_udp" [ "$(($(ctr not_udp) - n0))" -ge 3 ]

# UDP echo on another port and TCP on the ID port number work.
o0=$(ctr other_port)
check "UDP echo on another port works" in_cli "$PY" "$TRAFFIC" udp-rpc "$SRV_IP" "$((PORT + 1))"
check "UDP to another port counted as other_port" [ "$(($(ctr other_port) - o0))" -ge 1 ]
n0=$(ctr not_udp)
check "TCP to the ID port number works" in_cli "$PY" "$TRAFFIC" tcp-rpc "$SRV_IP" "$PORT"
check "TCP counted as not_udp" [ "$(($(ctr not_udp) - n0))" -ge 3 ]
n0=$(ctr not_udp)
check "TCP over IPv6 (as SSH) to the ID port number works" in_cli "$PY" "$TRAFFIC" tcp-rpc fd00:f1::1 "$PORT"
check "TCP over IPv6 counted as not_udp" [ "$(($(ctr not_udp) - n0))" -ge 3 ]

# UDP to the port: redirect attempted, no socket bound, falls back to XDP_PASS.
x0=$(ctr no_xsk)
r0=$(ctr redirect)
before=$(sink_count udp)
in_cli "$PY" "$TRAFFIC" udp-send "$SRV_IP" "$PORT" 5 64
sys_wait_for 3 test "$(sink_count udp)" -ge $((before + 5))
check "port: 5 datagrams classified redirect-attempted (no_xsk)" [ "$(($(ctr no_xsk) - x0))" -eq 5 ]
check "port: none counted as redirected (no socket)" [ "$(($(ctr redirect) - r0))" -eq 0 ]
check "port: fallback XDP_PASS delivers them to the kernel" [ "$(sink_count udp)" -eq $((before + 5)) ]

# A datagram larger than the MTU: fragments are passed, the kernel reassembles.
f0=$(ctr fragment)
x0=$(ctr no_xsk)
in_cli "$PY" "$TRAFFIC" udp-send "$SRV_IP" "$PORT" 1 3000
sys_wait_for 3 grep -q "^3000 udp" "$SYS_TMP/sink"
check "fragments: 3 counted as fragment" [ "$(($(ctr fragment) - f0))" -eq 3 ]
check "fragments: none steered" [ "$(($(ctr no_xsk) - x0))" -eq 0 ]
check "fragments: reassembled datagram reaches the kernel" grep -q "^3000 udp" "$SYS_TMP/sink"

# Hand-made frames: counter that must move by exactly 1, and no_xsk delta.
raw_case() {
	local kind=$1 want=$2 xdelta=$3 c0 x0
	status
	c0=$(field "counter.$want")
	x0=$(field counter.no_xsk)
	in_cli "$PY" "$TRAFFIC" raw "$CLI" "$SRV_MAC" "$kind" "$PORT"
	sleep 0.1
	status
	check "frame $kind: counted as $want" [ "$(($(field "counter.$want") - c0))" -ge 1 ]
	check "frame $kind: no_xsk +$xdelta" [ "$(($(field counter.no_xsk) - x0))" -eq "$xdelta" ]
}
# flakewire drops IPv4 with options: the kernel gets them (issue 11, fix 2)
raw_case ipopt-port ip_options 0
sys_wait_for 3 grep -q " ipopt" "$SYS_TMP/sink"
check "frame ipopt-port: delivered with options" grep -q " ipopt" "$SYS_TMP/sink"
raw_case ipopt-decoy ip_options 0
raw_case vlan not_ip 0
raw_case group-mac not_ours 0
raw_case v6-port no_xsk 1
sys_wait_for 3 grep -q " v6port" "$SYS_TMP/sink"
check "frame v6-port: IPv6 UDP to the port steered, then passed" grep -q " v6port" "$SYS_TMP/sink"
raw_case v6-other-port other_port 0
raw_case v6-hop-by-hop ipv6_ext 0
raw_case v6-dest-opts ipv6_ext 0
raw_case v6-fragment fragment 0
raw_case v6-icmp not_udp 0
raw_case totlen-long malformed 0
raw_case v6-plen-long malformed 0
raw_case v6-udplen malformed 0
raw_case v6-zero-cksum malformed 0
# no address restriction yet: another destination is steered like ours
raw_case dst-other no_xsk 1
raw_case v6-dst-other no_xsk 1
check "set-addrs" tool set-addrs "$SRV" "$SRV_IP" fd00:f1::1 fd00:f1::5
status
check "status: addresses set" [ "$(field addr4)" = "$SRV_IP" -a "$(field flags)" = 1 ] 
check "status: IPv6 addresses set" [ "$(grep -c '^addr6=fd00:f1::[15]$' "$SYS_TMP/status")" = 2 ]
check "status: port kept by set-addrs" [ "$(field port)" = "$PORT" ]
raw_case dst-other not_ours 0
raw_case v6-dst-other not_ours 0
raw_case v6-port no_xsk 1
raw_case ipopt-port ip_options 0
x0=$(ctr no_xsk)
before=$(sink_count udp)
in_cli "$PY" "$TRAFFIC" udp-send "$SRV_IP" "$PORT" 2 40
in_cli "$PY" "$TRAFFIC" udp-send fd00:f1::1 "$PORT" 2 40
sys_wait_for 3 test "$(sink_count udp)" -ge $((before + 4))
check "kernel UDP to our addresses, both families: steered (no_xsk 4)" [ "$(($(ctr no_xsk) - x0))" -eq 4 ]
check "set-addrs with only IPv6: IPv4 no longer steered" tool set-addrs "$SRV" - fd00:f1::1
raw_case dst-other not_ours 0
in_cli "$PY" "$TRAFFIC" udp-send "$SRV_IP" "$PORT" 1 40
sleep 0.2
raw_case v6-port no_xsk 1
check "set-addrs: both families again" tool set-addrs "$SRV" "$SRV_IP" fd00:f1::1
raw_case frag-mf fragment 0
raw_case frag-offset fragment 0
m0=$(ctr malformed)
for kind in short-ip ihl-4 short-udp totlen-short udplen-short version-6; do
	raw_case "$kind" malformed 0
done
check "malformed: exactly 6 counted" [ "$(($(ctr malformed) - m0))" -eq 6 ]
raw_case ihl-past-end ip_options 0
check "status: no packet redirected without a socket" [ "$(ctr redirect)" -eq 0 ]

# ---------------------------------------------------------------------------
# Pre-flight facts of the interface.
tool ifinfo "$SRV" 2 >"$SYS_TMP/ifinfo"
inf() { sed -n "s/^$1=//p" "$SYS_TMP/ifinfo"; }
check "ifinfo: up" [ "$(inf up)" = 1 ]
check "ifinfo: MAC from the kernel" [ "$(inf mac)" = "$SRV_MAC" ]
check "ifinfo: primary IPv4" [ "$(inf ipv4)" = "$SRV_IP" ]
check "ifinfo: IPv6 addresses, global first" [ "$(inf ipv6 | head -n 1)" = fd00:f1::1 ]
check "ifinfo: and the link-local one" [ "$(inf ipv6 | grep -c '^fe80:')" = 1 ]
check "ifinfo: veth channels known, 1 rx queue" [ "$(inf channels_known)" = 1 -a "$(inf rx_queues)" = 1 ]
check "ifinfo: 2 queues do not fit" [ "$(inf fits)" = 0 ]
hint=$(inf hint)
check "ifinfo: hint is an ethtool command" [ "$hint" = "ethtool -L $SRV rx 2" ]
# Channels change only without XDP on veth; apply the hint with the program off.
ip -n "$SYS_NS" link set dev "$SRV" xdpgeneric off
check "ifinfo: the hint works" sys_in_ns $hint
tool ifinfo "$SRV" 2 >"$SYS_TMP/ifinfo"
check "ifinfo: 2 queues fit after the hint" [ "$(inf rx_queues)" = 2 -a "$(inf fits)" = 1 ]
ip -n "$SYS_NS" link set "$SRV" down
tool ifinfo "$SRV" >"$SYS_TMP/ifinfo"
check "ifinfo: down reported" [ "$(inf up)" = 0 ]
ip -n "$SYS_NS" link set "$SRV" up

# ---------------------------------------------------------------------------
# detach: ours (generic), nothing, ours (native), foreign.
ip -n "$SYS_NS" link set dev "$SRV" xdpgeneric obj "$OBJ" sec xdp
check "detach own (skb)" tool detach "$SRV"
check "detach own (skb): nothing left" [ -z "$(attached_name)" ]
tool detach "$SRV" >/dev/null
check "detach with nothing attached: exit 3" [ $? -eq 3 ]
status
check "status: mode none" [ "$(field mode)" = none -a "$(field ours)" = 0 ]

if ip -n "$SYS_NS" link set dev "$SRV" xdpdrv obj "$OBJ" sec xdp 2>/dev/null; then
	status
	check "native: mode drv, ours" [ "$(field mode)" = drv -a "$(field ours)" = 1 ]
	check "native: ping through XDP" in_cli ping -c 2 -i 0.2 -W 2 "$SRV_IP"
	check "native: set-port" tool set-port "$SRV" "$PORT"
	x0=$(ctr no_xsk)
	in_cli "$PY" "$TRAFFIC" udp-send "$SRV_IP" "$PORT" 2 32
	sleep 0.3
	check "native: UDP to the port counted no_xsk" [ "$(($(ctr no_xsk) - x0))" -eq 2 ]
	check "native: detach own" tool detach "$SRV"
	check "native: nothing left" [ -z "$(attached_name)" ]
else
	echo "note: native XDP on veth refused by this kernel; drv case not run"
fi

ip -n "$SYS_NS" link set dev "$SRV" xdpgeneric obj "$FOREIGN" sec xdp
status
check "foreign: reported foreign, not ours" [ "$(field ours)" = 0 -a "$(field foreign)" = 1 ]
check "foreign: named" [ "$(field foreign_name)" = foreign_pass -a "$(field prog_name)" = foreign_pass ]
tool detach "$SRV" >"$SYS_TMP/detach.out"
check "foreign: detach refused (exit 2)" [ $? -eq 2 ]
check "foreign: refusal names the program" grep -q "foreign program foreign_pass" "$SYS_TMP/detach.out"
check "foreign: still attached" [ "$(attached_name)" = foreign_pass ]
tool set-port "$SRV" "$PORT" 2>/dev/null
check "foreign: set-port refused (exit 2)" [ $? -eq 2 ]
ip -n "$SYS_NS" link set dev "$SRV" xdpgeneric off

# ---------------------------------------------------------------------------
# libxdp dispatcher with flakewire's and a foreign program behind it. bpffs
# is mounted inside the private mount namespace of this one `ip netns exec`,
# so the host's mounts are not touched.
sys_in_ns bash -c "
	mount -t bpf bpf /sys/fs/bpf || exit 77
	'$TOOL' attach-libxdp '$SRV' '$OBJ' '$FOREIGN' || exit 78
	echo '## both'; '$TOOL' status '$SRV'
	echo '## detach'; '$TOOL' detach '$SRV'; echo \"rc=\$?\"
	echo '## after'; '$TOOL' status '$SRV'
	echo '## detach2'; '$TOOL' detach '$SRV'; echo \"rc=\$?\"
	ip link set dev '$SRV' xdpgeneric off
" >"$SYS_TMP/disp" 2>&1
rc=$?
section() { sed -n "/^## $1\$/,/^## /p" "$SYS_TMP/disp"; }
if [ $rc -eq 77 ] || [ $rc -eq 78 ]; then
	cat "$SYS_TMP/disp"
	if [ $rc -eq 77 ]; then
		# under CI=true a case not run is a failure naming why
		check "dispatcher case runs (cannot mount bpffs)" [ "${CI:-}" != true ]
	else
		# This kernel rejects libxdp's own dispatcher object (its compatibility
		# check loads xdp-dispatcher.o from the libxdp package, before any
		# program of ours): no multiprog here, so what is tested is the state
		# such a host is left in. The rejection must be libxdp's check, not
		# flakewire's program, and nothing may stay attached.
		check "dispatcher refused by the kernel itself (libxdp's compatibility check)" \
			grep -q "Compatibility check for dispatcher program failed" "$SYS_TMP/disp"
		check "nothing left attached after the refused dispatcher" \
			bash -c "! ip -n '$SYS_NS' link show dev '$SRV' | grep -q 'prog/xdp'"
		echo "note: libxdp cannot build a dispatcher on this kernel; flakewire attaches alone there"
	fi
else
	check "dispatcher: both behind it, ours and foreign" \
		[ "$(section both | grep -cxE 'dispatcher=1|ours=1|foreign=1|n_progs=2|prog_name=xdp_dispatcher')" -eq 5 ]
	check "dispatcher: detach removes ours" [ "$(section detach | grep -c '^rc=0')" -eq 1 ]
	check "dispatcher: foreign one stays" \
		[ "$(section after | grep -cxE 'ours=0|foreign=1|foreign_name=foreign_pass')" -eq 3 ]
	check "dispatcher: second detach refused" [ "$(section detach2 | grep -c '^rc=2')" -eq 1 ]
fi
check "nothing attached at the end" [ -z "$(attached_name)" ]

sys_done
