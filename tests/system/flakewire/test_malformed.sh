#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Malformed traffic (bad magic, truncated, wrong version, IP options,
# fragments, wrong port, bad checksums, broadcast junk...) keeps the responder
# up, it answers what it should (BAD_VERSION), and the telemetry drop
# counters move by exactly what was sent.
. "$(dirname "$0")/lib.sh"
fw_setup malformed
fw_start 0
N=3
# a permanent neighbour entry: no kernel ARP traffic while counting
ip -n "$NS" neigh replace 10.77.0.2 lladdr "$FW_MAC" dev fw0 nud permanent

before=$(fw_tel /flakewire/stats) || fail "telemetry before"
res=$(ip netns exec "$NS" "$PY" "$(dirname "$0")/craft.py" fw0 "$FW_MAC" $N) || fail "craft.py"
echo "$res"
sleep 0.2
after=$(fw_tel /flakewire/stats) || fail "telemetry after"
kill -0 "$FW_PID" || fail "responder died"

[ "$(fw_json "$res" '["bad_version_replies"]')" -eq $N ] || fail "expected $N BAD_VERSION replies"
for c in $("$PY" -c 'import json,sys; print(" ".join(json.loads(sys.argv[1])["expect"]))' "$res"); do
	want=$(fw_json "$res" "[\"expect\"][\"$c\"]")
	b=$(fw_json "$before" "[\"/flakewire/stats\"][\"$c\"]")
	a=$(fw_json "$after" "[\"/flakewire/stats\"][\"$c\"]")
	echo "$c: sent $want, counted $((a - b))"
	[ $((a - b)) -eq "$want" ] || fail "$c moved by $((a - b)), expected $want"
done
fw_client get --op list --count 10 >/dev/null || fail "no valid answer after malformed traffic"
fw_stop TERM || fail "exit status $?"
echo "PASS"
