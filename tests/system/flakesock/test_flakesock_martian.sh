#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# flakesock and martian sources (issue 33): the kernel delivers to a
# dual-stack socket ([::]) an IPv6 datagram from ::ffff:127.0.0.1, which the
# old code judged as IPv4 loopback (trusted by default: unpadded replies), and
# one from ::. With net.allow = 0.0.0.0/0,::/0 (the allow list proves
# nothing), both are dropped and counted (flakewire_drops_total
# {reason="martian"}), and a real IPv6 peer and a real IPv4 peer are still
# answered. Frames are crafted on the peer's side of a veth
# (tests/system/flakewire/martians.py builds them).
# usage: test_flakesock_martian.sh FLAKESOCK
set -u
FLAKESOCK=$1
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
sys_init smart
PEER="fwt-smartp-$$"
trap 'ip netns del "$PEER" 2>/dev/null; sys_cleanup' EXIT
ip netns add "$PEER" && ip -n "$PEER" link set lo up &&
	ip link add fsm0 netns "$SYS_NS" type veth peer name fsm1 netns "$PEER" &&
	ip -n "$SYS_NS" addr add 10.78.0.2/24 dev fsm0 && ip -n "$PEER" addr add 10.78.0.1/24 dev fsm1 &&
	ip -n "$SYS_NS" addr add fd00:78::2/64 dev fsm0 nodad &&
	ip -n "$PEER" addr add fd00:78::1/64 dev fsm1 nodad &&
	ip -n "$SYS_NS" link set fsm0 up && ip -n "$PEER" link set fsm1 up ||
	{ echo "FAIL: cannot set up the veth pair"; exit 1; }
MAC=$(ip -n "$SYS_NS" -br link show fsm0 | awk '{print $3}')
sys_start "$SYS_TMP/sock.log" "$FLAKESOCK" --listen "::" --threads 1 \
	--set "state.file=$SYS_TMP/mark" --set "state.lock_dir=$SYS_TMP/locks" \
	--set stats.interval_s=0 --set metrics.listen=127.0.0.1:9861 \
	--set net.allow=0.0.0.0/0,::/0
check "flakesock on [::] starts" sys_wait_for 10 grep -q "listening on" "$SYS_TMP/sock.log"

out=$(ip netns exec "$PEER" /usr/bin/python3 - "$HERE/../flakewire" "$MAC" <<'PY'
import socket, struct, sys, time, json
sys.path.insert(0, sys.argv[1])
import martians as m
mac = bytes.fromhex(sys.argv[2].replace(":", ""))
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("fsm1", 0))
src_mac = s.getsockname()[4]
def send(ip6):
    s.send(mac + src_mac + struct.pack("!H", 0x86DD) + ip6)
for tag, src in ((1, "::ffff:127.0.0.1"), (2, "::"), (3, "::ffff:10.78.0.1")):
    for _ in range(5):
        send(m.udp6(src, "fd00:78::2", tag))
# controls: a real IPv6 peer and a real IPv4 peer, through the kernel
got = {}
for fam, addr in ((socket.AF_INET6, "fd00:78::2"), (socket.AF_INET, "10.78.0.2")):
    u = socket.socket(fam, socket.SOCK_DGRAM)
    u.settimeout(1)
    u.sendto(m.request(9), (addr, 4242))
    try:
        got[str(fam)] = len(u.recv(2048))
    except OSError:
        got[str(fam)] = 0
print(json.dumps(got))
PY
)
echo "controls: $out"
check "a real IPv6 peer is answered" grep -q "\"$(/usr/bin/python3 -c 'import socket;print(int(socket.AF_INET6))')\": [1-9]" <<<"$out"
check "a real IPv4 peer on the same socket is answered" grep -q '"2": [1-9]' <<<"$out"
# the worker publishes its counters a moment after the datagrams: read until they show
martian_counted() {
	sys_in_ns curl -s -m 3 http://127.0.0.1:9861/metrics >"$SYS_TMP/m" &&
		grep -q 'reason="martian"} 15$' "$SYS_TMP/m"
}
sys_wait_for 10 martian_counted
grep 'reason="martian"\|flakewire_requests_total' "$SYS_TMP/m"
check "the 15 forged v4-mapped and unspecified IPv6 datagrams: dropped, counted as martian" \
	grep -q 'flakewire_drops_total{thread="0",worker="0",reason="martian"} 15' "$SYS_TMP/m"
check "and none reached the server (2 requests: the controls)" sh -c \
	"awk '/^flakewire_requests_total/ {s += \$2} END {exit !(s == 2)}' '$SYS_TMP/m'"
sys_done
