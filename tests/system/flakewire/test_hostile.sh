#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Hostile traffic (DESIGN.md section 7): with the default [net] allow and
# reflector_ports, and a rate limit, flakewire
#  - drops and counts requests (and pings) from sources outside allow,
#  - drops and counts requests from reflector source ports (0, 53, 123...),
#  - answers every operation from an untrusted source with a reply no larger
#    than the request, and cuts RANGE counts to max_ids_per_request,
#  - rate limits a flooding source (drops, every 2nd answered with a 24-byte
#    RETRY_AFTER) while another source is served and a trusted one is exempt,
#  - keeps its counters consistent: rx = replies + drops by reason;
#  - with [net] allow = 0.0.0.0/0,::/0, answers no martian source (loopback,
#    unspecified, multicast, broadcast, its own addresses, IPv4-mapped, a
#    group source MAC; IPv4 and IPv6) and counts each by its reason.
# The extra source addresses live on the kernel side of the TAP (fw0).
. "$(dirname "$0")/lib.sh"
HOSTILE="$PY $(dirname "$0")/hostile.py"
RATE=5 BURST=40 FLOOD=300
fw_setup hostile
fw_start 0 --set net.rate=$RATE --set net.rate_burst=$BURST --set net.rate_slip=2 \
	--set net.max_ids_per_request=1000 --set net.trusted=127.0.0.0/8,10.77.0.12/32
ip -n "$NS" neigh replace 10.77.0.2 lladdr "$FW_MAC" dev fw0 nud permanent
for a in 10.77.0.10 10.77.0.11 10.77.0.12 100.64.0.1 192.0.2.1 198.51.100.7 203.0.113.9; do
	ip -n "$NS" addr add "$a/32" dev fw0 || fail "cannot add $a"
done
grep -q "policy: 5 + [0-9]* allowed prefixes (IPv4 + IPv6), 2 + 0 trusted, 13 reflector ports" \
	"$TMP/fw.log" || fail "no policy line in the log"
grep -q "policy: rate $RATE/s burst $BURST" "$TMP/fw.log" || fail "no rate line in the log"

tel() { fw_tel /flakewire/stats || fail "telemetry"; }
# delta NAME: how much counter NAME moved between $before and $after
delta() {
	echo $(($(fw_json "$after" "[\"/flakewire/stats\"][\"$1\"]") - \
		$(fw_json "$before" "[\"/flakewire/stats\"][\"$1\"]")))
}
expect() { # NAME WANT
	local d
	d=$(delta "$1")
	echo "  $1: +$d (want $2)"
	[ "$d" -eq "$2" ] || fail "$1 moved by $d, expected $2"
}
start=$(tel)

echo "== source policy and reflector ports"
N=4
before=$(tel)
res=$(ip netns exec "$NS" $HOSTILE policy fw0 "$FW_MAC" $N) || fail "hostile.py policy"
echo "$res"
# pings from a denied source are dropped too (replies are never sent)
ip netns exec "$NS" ping -I 192.0.2.1 -c 2 -i 0.2 -W 1 10.77.0.2 >/dev/null 2>&1 &&
	fail "ping from a denied source answered"
sleep 0.2
after=$(tel)
[ "$(fw_json "$res" '["denied_replies"]')" -eq 0 ] || fail "a denied source got a reply"
[ "$(fw_json "$res" '["reflector_replies"]')" -eq 0 ] || fail "a reflector port got a reply"
[ "$(fw_json "$res" '["allowed_ok"]')" -eq $N ] || fail "100.64.0.1 (allowed) not served"
expect drop_source $(($(fw_json "$res" '["denied_sent"]') + 2))
expect drop_reflector_port "$(fw_json "$res" '["reflector_sent"]')"

echo "== every operation from an untrusted source: reply <= request"
before=$(tel)
res=$(ip netns exec "$NS" $HOSTILE sizes 10.77.0.1) || fail "hostile.py sizes"
after=$(tel)
"$PY" -c 'import json,sys
for c in json.loads(sys.argv[1])["cases"]: print("  %-18s request %4d reply %4d status %d" % tuple(c))' "$res"
[ "$(fw_json "$res" '["violations"]')" = "[]" ] ||
	fail "$(fw_json "$res" '["violations"]'); counters: $(tel)"
[ "$(fw_json "$res" '["cases"].__len__()')" -ge 27 ] || fail "not every case answered"
[ "$(fw_json "$res" '["capped"]["status"]')" -eq 0 ] || fail "RANGE 5000 not answered OK"
ids=$(fw_json "$res" '["capped"]["ids"]')
[ "$ids" -ge 1 ] && [ "$ids" -le 1000 ] || fail "RANGE 5000 gave $ids IDs (cap 1000)"
[ "$(fw_json "$res" '["capped"]["partial"]')" = True ] || fail "capped RANGE lacks PARTIAL"
[ "$(delta ids_capped)" -ge 1 ] || fail "ids_capped did not move"
[ "$(delta rate_limited)" -eq 0 ] || fail "the size checks were rate limited"

echo "== rate limit: $FLOOD requests back to back from 10.77.0.10 (rate $RATE/s, burst $BURST)"
before=$(tel)
res=$(ip netns exec "$NS" $HOSTILE flood 10.77.0.10 $FLOOD) || fail "hostile.py flood"
echo "$res"
other=$(ip netns exec "$NS" $HOSTILE flood 10.77.0.11 10) || fail "hostile.py flood (other)"
echo "$other"
sleep 0.2
after=$(tel)
# answered within the rate: OK, or RETRY_AFTER of the generator on a busy machine
ok=$(($(fw_json "$res" '["ok"]') + $(fw_json "$res" '["mark_retry"]')))
retry=$(fw_json "$res" '["retry"]')
limit=$("$PY" -c "import math,sys; print($BURST + math.ceil($RATE * float(sys.argv[1])) + 1)" \
	"$(fw_json "$res" '["window"]')")
[ "$ok" -ge $BURST ] || fail "only $ok of the first $BURST requests answered"
[ "$ok" -le "$limit" ] || fail "$ok answered, more than burst + rate x time ($limit)"
[ "$(fw_json "$res" '["other"]')" -eq 0 ] || fail "unexpected replies to the flood"
[ "$(fw_json "$res" '["max_reply_len"]')" -le 32 ] || fail "a reply larger than the request"
expect requests $((ok + $(fw_json "$other" '["ok"]') + $(fw_json "$other" '["mark_retry"]')))
over=$((FLOOD - ok))
expect rate_limited $over
expect slipped $((over / 2))
expect drop_rate_limited $((over - over / 2))
[ "$retry" -eq $((over / 2)) ] || fail "client saw $retry RETRY_AFTER, expected $((over / 2))"
rmin=$(fw_json "$res" '["retry_us_min"]')
rmax=$(fw_json "$res" '["retry_us_max"]')
[ "$rmin" -ge 1 ] && [ "$rmax" -le $((1000000 / RATE + 1000)) ] ||
	fail "retry_after_us $rmin..$rmax outside 1..$((1000000 / RATE))"
[ "$(fw_json "$other" '["ok"]')" -eq 10 ] || [ "$(fw_json "$other" '["mark_retry"]')" -gt 0 ] ||
	fail "another source not served during the flood"

echo "== a trusted source is exempt (the responder paused for 1.5 s, as load may pause it)"
before=$(tel)
# The flood waits in the TAP's queue while the responder is stopped: its
# replies must still all be counted (hostile.py collects up to a sentinel,
# never until a quiet timeout that a pause outlasts).
kill -STOP "$FW_PID"
(sleep 1.5; kill -CONT "$FW_PID") &
pauser=$!
res=$(ip netns exec "$NS" $HOSTILE flood 10.77.0.12 $FLOOD)
rc=$?
wait "$pauser"
[ $rc -eq 0 ] || fail "hostile.py flood (trusted)"
echo "$res"
sleep 0.2
after=$(tel)
got=$(($(fw_json "$res" '["ok"]') + $(fw_json "$res" '["mark_retry"]')))
[ "$got" -eq $FLOOD ] || fail "trusted source: $got of $FLOOD answered"
expect rate_limited 0
expect slipped 0

echo "== counters add up"
end=$(tel)
lcores=$(fw_tel /flakewire/lcores) || fail "telemetry lcores"
"$PY" - "$start" "$end" "$lcores" <<'PY' || fail "counters do not add up"
import json, sys
a = json.loads(sys.argv[1])["/flakewire/stats"]
b = json.loads(sys.argv[2])["/flakewire/stats"]
lc = json.loads(sys.argv[3])["/flakewire/lcores"]
bad = []
for name, t in (("since start", b), ("this test", {k: b[k] - a[k] for k in b})):
    drops = sum(v for k, v in t.items() if k.startswith("drop_"))
    built = t["arp"] + t.get("nd", 0) + t["icmp"] + t["udp_replies"]
    print(f"  {name}: rx {t['rx']} = arp {t['arp']} + icmp {t['icmp']} + udp_replies "
          f"{t['udp_replies']} + drops {drops}; udp_replies = requests {t['requests']} + "
          f"slipped {t['slipped']}; rate_limited {t['rate_limited']} = drop_rate_limited "
          f"{t['drop_rate_limited']} + slipped")
    if t["rx"] != built + drops:
        bad.append(f"{name}: rx {t['rx']} != replies {built} + drops {drops}")
    if t["udp_replies"] != t["requests"] + t["slipped"]:
        bad.append(f"{name}: udp_replies != requests + slipped")
    if t["rate_limited"] != t["drop_rate_limited"] + t["slipped"]:
        bad.append(f"{name}: rate_limited != drop_rate_limited + slipped")
    if t["tx"] + t["tx_dropped"] != built:
        bad.append(f"{name}: tx + tx_dropped != replies built")
# one lcore: its counters are the totals
l0 = next(iter(lc.values()))
for k in ("slipped", "rate_limited", "drop_source", "drop_reflector_port", "rate_evictions"):
    if l0.get(k) != b[k]:
        bad.append(f"lcores: {k} {l0.get(k)} != stats {b[k]}")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
kill -0 "$FW_PID" || fail "responder died"
fw_stop TERM || fail "exit status $?"

echo "== martian sources (issue 33): [net] allow = 0.0.0.0/0,::/0, default [net] trusted"
# Every kind a valid request from a source no peer on the wire has (loopback,
# unspecified, multicast, broadcast, our own addresses, IPv4-mapped forms, a
# group source MAC): the allow list proves nothing and the default trusted
# loopback prefixes would answer them unpadded; none may be answered, each
# is counted by its reason. The controls from the real peer are answered.
fw_start 0 --set net.allow=0.0.0.0/0,::/0 --set port0.address6=fd77::2
M=3
before=$(tel)
res=$(ip netns exec "$NS" $PY "$(dirname "$0")/martians.py" fw0 "$FW_MAC" 10.77.0.1 10.77.0.2 \
	fd77::1 fd77::2 $M) || fail "martians.py"
sleep 0.2
after=$(tel)
"$PY" - "$res" "$before" "$after" <<'PY' || fail "martians answered or not counted by reason"
import json, sys
r = json.loads(sys.argv[1])
a = json.loads(sys.argv[2])["/flakewire/stats"]
b = json.loads(sys.argv[3])["/flakewire/stats"]
bad = []
for kind, k in r["kinds"].items():
    print("  %-22s %-12s sent %d replies %d" % (kind, k["reason"], k["sent"], k["replies"]))
    if k["replies"]:
        bad.append("%s (%s) answered %d times" % (kind, k["reason"], k["replies"]))
for c, n in r["controls"].items():
    print("  %-22s %-12s answered %d" % (c, "control", n))
    if n < 1:
        bad.append("%s not answered: the capture proves nothing" % c)
for c, want in sorted(r["expect"].items()):
    d = b.get(c, 0) - a.get(c, 0)
    print("  %s: +%d (want %d)" % (c, d, want))
    if d != want:
        bad.append("%s moved by %d, expected %d" % (c, d, want))
if b["drop_source"] != a["drop_source"]:
    bad.append("drop_source moved: martians must be counted as martians")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
kill -0 "$FW_PID" || fail "responder died"
fw_stop TERM || fail "exit status $?"
echo "PASS"
