#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# flakesock dual-stack: one `--listen ::` serves IPv4 and IPv6; IPv6 sources
# get the same policy as IPv4 ones ([net] allow and trusted prefixes of
# either family); replies over IPv6 fit 1452 payload bytes (a trusted LIST
# of 181 gets 178 IDs); flakectl with [v6]:port and mixed server lists.
# usage: test_flakesock_ipv6.sh FLAKESOCK FLAKECTL
set -u
FLAKESOCK=$1
FLAKECTL=$2
. "$(dirname "$0")/../lib.sh"
sys_init sock6

sys_in_ns sysctl -qw net.ipv6.conf.all.disable_ipv6=0 net.ipv6.conf.lo.disable_ipv6=0
# local addresses of both families on a veth whose both ends are in the namespace
ip -n "$SYS_NS" link add fs6a type veth peer name fs6b || { echo "FAIL: cannot create veth"; exit 1; }
ip -n "$SYS_NS" link set fs6a up
ip -n "$SYS_NS" link set fs6b up
for a in 10.5.0.1/24 fd00:5::1/64 2001:db8:5::1/64; do
	ip -n "$SYS_NS" addr add $a dev fs6a nodad || { echo "FAIL: cannot add $a"; exit 1; }
done
sys_start "$SYS_TMP/sock.log" "$FLAKESOCK" --listen "[::]" --threads 1 \
	--set "state.file=$SYS_TMP/mark" --set stats.interval_s=0 \
	--set net.allow=127.0.0.0/8,10.0.0.0/8,::1/128,fd00::/8 \
	--set net.trusted=127.0.0.0/8,::1/128
ctl() { sys_in_ns "$FLAKECTL" "$@"; }
check "flakesock on [::] answers IPv6 (::1)" sys_wait_for 10 ctl info --server "[::1]:4242" --timeout 100
check "and IPv4 on the same sockets (127.0.0.1)" ctl get --server 127.0.0.1:4242
check "and IPv4 on another address (10.5.0.1)" ctl get --server 10.5.0.1:4242
check "an allowed IPv6 source (fd00:5::1)" ctl get --server "[fd00:5::1]:4242"
check "a trusted IPv6 source (::1) gets unpadded lists" \
	sh -c "ip netns exec $SYS_NS '$FLAKECTL' get -n 300 --trusted --server '[::1]:4242' | wc -l | grep -qx 300"
ctl get -n 10 --trusted --server "[fd00:5::1]:4242" --timeout 300 >/dev/null 2>&1
check "an untrusted IPv6 source does not (refused)" [ $? -ne 0 ]
ctl get --server "[2001:db8:5::1]:4242" --timeout 300 >/dev/null 2>&1
check "an IPv6 source outside [net] allow gets no answer" [ $? -ne 0 ]
check "a mixed list fails over from IPv4 to IPv6" \
	ctl get --timeout 1500 --server 127.0.0.1:4299 --server "[::1]:4242"
check "and from IPv6 to IPv4" ctl get --timeout 1500 --server "[::1]:4299" --server 127.0.0.1:4242
sizes=$(sys_in_ns /usr/bin/python3 - <<'PY'
import socket, struct
out = []
for fam, host in ((socket.AF_INET6, "::1"), (socket.AF_INET, "127.0.0.1")):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.settimeout(1)
    s.sendto(struct.pack(">HBBBBHQHHI", 0x464B, 1, 2, 0, 0, 181, 9, 0, 0, 0), (host, 4242))
    out.append(str(len(s.recv(4096))))
print(" ".join(out))
PY
)
echo "LIST 181 reply sizes (IPv6 IPv4): $sizes"
check "LIST 181 over IPv6: 178 IDs (1448 bytes); over IPv4: 181 (1472)" [ "$sizes" = "1448 1472" ]
sys_stop "$SYS_LAST_PID" TERM
check "flakesock exits 0" [ $? -eq 0 ]
sys_done
