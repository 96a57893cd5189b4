#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# IPv6 to flakewire on a TAP: neighbour discovery from a fresh kernel
# neighbour cache, ping -6, flakectl get/info/bench to [addr]:port, then
# craft6.py's good and hostile frames (NS with hop limit below 255, bad and
# zero checksums, extension headers, fragments, truncated, oversized LIST,
# denied and untrusted sources) move the drop counters by exactly what was
# sent, the replies are right (NA flags and option, hop limits, checksums,
# 1452-byte payload limit, no amplification), and the counters add up.
. "$(dirname "$0")/lib.sh"
[ -x /usr/bin/dpdk-telemetry.py ] || skip "dpdk-telemetry.py missing (dpdk package)"
[ -x "$FLAKECTL" ] || fail "FLAKECTL=$FLAKECTL is not executable"
fw_setup ipv6

echo "== IPv6 settings: bad values name key, value and range"
conf_err() { # message args...
	local msg=$1 out
	shift
	out=$("$FLAKEWIRE" -- "$@" --check-config 2>&1) && fail "accepted: $*"
	grep -qF -- "$msg" <<<"$out" || fail "for '$*' expected '$msg', got '$out'"
}
conf_err "[net] allow = 2001:db8::/129: bad prefix length in '2001:db8::/129' (0-128)" \
	--set net.allow=2001:db8::/129
conf_err "[net] trusted = 2001:zz::/64: '2001:zz::' is not an IPv6 address" \
	--set net.trusted=2001:zz::/64
conf_err "[net] rate_prefix6 = 129: out of range (0-128)" --set net.rate_prefix6=129
conf_err "[port0] address6 = ff02::1: 'ff02::1' is not a unicast address" \
	--set port0.address6=ff02::1
conf_err "[port0] address6 = 2001:db8::2,2001:db8::2: duplicate 2001:db8::2" \
	--set port0.address6=2001:db8::2,2001:db8::2
conf_err "more than 4 addresses" --set port0.address6=fd::1,fd::2,fd::3,fd::4,fd::5
conf_err "[port1] address6: an address of [port0]" --set port0.address6=fd::1 \
	--set port1.device=net_tap1,iface=fw1 --set port1.address=10.78.0.2 \
	--set port1.address6=fd::1
"$FLAKEWIRE" -- --set net.allow=0.0.0.0/0,::/0 --set net.trusted=::1,fd00::/8 \
	--set port0.address6=2001:db8::2,fd00::2 --check-config >/dev/null || fail "valid IPv6 settings"
# lib.sh turns IPv6 off in the namespace; this test wants it on fw0, quiet
ip netns exec "$NS" sysctl -qw net.ipv6.conf.all.disable_ipv6=0 \
	net.ipv6.conf.default.disable_ipv6=0 net.ipv6.conf.default.router_solicitations=0 \
	net.ipv6.conf.default.accept_ra=0 >/dev/null || fail "sysctl"
ME=fd77::2
fw_start 0 --set port0.address6=$ME,fd77:1::2 \
	--set net.allow=10.0.0.0/8,fd77::/16,fe80::/10 --set net.trusted=fd77::1/128
for a in fd77::1/64 fd77:1::1/64 fd99::1/64; do
	ip -n "$NS" addr add $a dev fw0 nodad || fail "addr $a"
done
grep -q "IPv6 fd77::2,fd77:1::2" "$TMP/fw.log" || fail "no IPv6 addresses in the log"

echo "== neighbour discovery from an empty cache, ping -6"
ip -n "$NS" neigh flush dev fw0
ip -n "$NS" -6 neigh show dev fw0 | grep -q "$ME" && fail "neighbour entry left"
ip netns exec "$NS" ping -6 -c 3 -i 0.2 -W 1 $ME >/dev/null || fail "ping -6 $ME"
n=$(ip -n "$NS" -6 neigh show $ME dev fw0)
echo "$n"
echo "$n" | grep -qi "lladdr $FW_MAC" || fail "kernel did not learn $FW_MAC for $ME"
ip netns exec "$NS" ping -6 -c 2 -i 0.2 -W 1 -I fd77:1::1 fd77:1::2 >/dev/null ||
	fail "ping -6 the second address"
if ip netns exec "$NS" ping -6 -c 1 -W 1 -I fd99::1 $ME >/dev/null 2>&1; then
	fail "ping from fd99::1 (outside [net] allow) answered"
fi

echo "== flakectl over IPv6"
FC() { ip netns exec "$NS" "$FLAKECTL" "$@"; }
FC info --server "[$ME]:4242" --timeout 3000 >"$TMP/info" || fail "flakectl info [$ME]:4242"
grep -qi worker "$TMP/info" || fail "info: $(cat "$TMP/info")"
id=$(FC get --server "[$ME]:4242" --timeout 3000) || fail "flakectl get"
[ "$id" -gt 0 ] || fail "get: '$id'"
[ "$(FC get --server "[$ME]:4242" -n 200 --trusted --timeout 3000 | wc -l)" -eq 200 ] ||
	fail "get -n 200 --trusted over IPv6"
# padded LIST requests must fit one IPv6 datagram (178 IDs): no fragments
[ "$(FC get --server "[$ME]:4242" -n 400 --timeout 3000 | wc -l)" -eq 400 ] ||
	fail "get -n 400 (padded) over IPv6"
# a mixed list: the first server (IPv4, nobody there) fails over to IPv6
FC get --server 10.77.0.99:4242 --server "[$ME]:4242" --timeout 1500 >/dev/null ||
	fail "failover from IPv4 to IPv6"
FC bench --server "[$ME]:4242" --duration 1 --concurrency 2 --json >"$TMP/bench" ||
	fail "flakectl bench over IPv6: $(cat "$TMP/bench")"
"$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); print("bench:", j.get("answered"), "answered"); sys.exit(0 if j.get("answered", 0) > 0 else 1)' "$TMP/bench" ||
	fail "bench answered nothing"

echo "== crafted IPv6 frames"
ip -n "$NS" addr add fd77::3/64 dev fw0 nodad || fail "addr fd77::3" # untrusted
ip -n "$NS" neigh replace $ME lladdr "$FW_MAC" dev fw0 nud permanent
N=3
before=$(fw_tel /flakewire/stats) || fail "telemetry"
res=$(ip netns exec "$NS" "$PY" "$(dirname "$0")/craft6.py" fw0 "$FW_MAC" $N fd77::1 $ME \
	fd77::3 fd99::1) || fail "craft6.py"
echo "$res"
sleep 0.2
after=$(fw_tel /flakewire/stats) || fail "telemetry"
kill -0 "$FW_PID" || fail "responder died"
"$PY" - "$res" "$before" "$after" "$N" <<'PY' || fail "IPv6 frames"
import json, sys
r = json.loads(sys.argv[1])
a = json.loads(sys.argv[2])["/flakewire/stats"]
b = json.loads(sys.argv[3])["/flakewire/stats"]
n = int(sys.argv[4])
bad = list(r["bad"])
d = {k: b[k] - a[k] for k in b}
for c, want in r["expect"].items():
    # not_us and rx also see the kernel's own multicast chatter (MLD)
    ok = d[c] >= want if c in ("drop_not_us", "rx", "rx6") else d[c] == want
    print("%-22s sent %3d counted %3d %s" % (c, want, d[c], "" if ok else "MISMATCH"))
    if not ok:
        bad.append(c)
want_got = {"na": 2 * n, "na_dad": n, "echo": n, "udp_32": 3 * n, "udp_1448": n, "udp_24": n}
for k, v in want_got.items():
    if r["got"].get(k, 0) != v:
        bad.append("replies %s: %d, expected %d" % (k, r["got"].get(k, 0), v))
for k in r["got"]:
    if k not in want_got:
        bad.append("unexpected replies %s" % k)
drops = sum(v for k, v in b.items() if k.startswith("drop_"))
built = b["arp"] + b["nd"] + b["icmp"] + b["udp_replies"]
if b["rx"] != built + drops:
    bad.append("rx %d != arp + nd + icmp + udp_replies %d + drops %d" % (b["rx"], built, drops))
if b["tx"] + b["tx_dropped"] != built:
    bad.append("tx + tx_dropped != replies built")
if b["requests"] != sum(v for k, v in b.items() if k.startswith("op_")):
    bad.append("requests != sum of op_*")
if not (b["icmp6"] <= b["icmp"] and b["udp6_replies"] <= b["udp_replies"] and b["rx6"] <= b["rx"]):
    bad.append("an IPv6 part above its total")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
FC get --server "[$ME]:4242" --timeout 5000 >/dev/null || fail "no answer after the crafted frames"
fw_stop TERM || fail "exit status $?"

echo "== rate limit per IPv6 /64"
# 5 back to back per /64, no refill to speak of (1/s), no slip: two addresses
# of one /64 share 5 answers; another /64 has its own 5.
fw_start 0 --set port0.address6=$ME,fd77:1::2 --set net.allow=10.0.0.0/8,fd77::/16 \
	--set net.rate=1 --set net.rate_burst=5 --set net.rate_slip=0 --set net.rate_prefix6=64
for a in fd77::1/64 fd77::3/64 fd77::4/64 fd77:1::1/64; do
	ip -n "$NS" addr add $a dev fw0 nodad 2>/dev/null
done
ip -n "$NS" neigh replace $ME lladdr "$FW_MAC" dev fw0 nud permanent
ip -n "$NS" neigh replace fd77:1::2 lladdr "$FW_MAC" dev fw0 nud permanent
got=$(ip netns exec "$NS" "$PY" - <<'PY'
import socket, struct
def ask(src, dst, n):
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.bind((src, 0))
    s.settimeout(1.0)  # generous: the machine may be loaded
    req = struct.pack(">HBBBBHQHHI", 0x464B, 1, 1, 0, 0, 1, 5, 0, 0, 0) + bytes(8)
    for _ in range(n):
        s.sendto(req, (dst, 4242))
    k = 0
    try:
        while True:
            s.recv(2048)
            k += 1
    except socket.timeout:
        pass
    return k
a = ask("fd77::3", "fd77::2", 20)
b = ask("fd77::4", "fd77::2", 20)
c = ask("fd77:1::1", "fd77:1::2", 20)
print(a + b, c)
PY
)
echo "answered: same /64 (two addresses) and another /64: $got"
set -- $got
[ "$1" -ge 5 ] && [ "$1" -le 6 ] || fail "one /64 got $1 answers from two addresses, expected 5 (burst)"
[ "$2" -ge 5 ] && [ "$2" -le 6 ] || fail "another /64 got $2 answers, expected its own 5"
st=$(fw_tel /flakewire/stats) || fail "telemetry"
[ "$(fw_json "$st" '["/flakewire/stats"]["drop_rate_limited"]')" -ge 28 ] || fail "drops not counted"
fw_stop TERM || fail "exit status $?"
echo "PASS"
