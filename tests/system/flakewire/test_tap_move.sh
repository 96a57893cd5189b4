#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A TAP interface moved into another network namespace after flakewire
# started (issue 29, defect 3): flakewire keeps polling it, and a client in
# the new namespace gets IDs. The link watch reads net_tap's link by name in
# flakewire's own namespace, where the interface is gone once moved: that
# unreadable link must not be taken for a link that is down.
. "$(dirname "$0")/lib.sh"
fw_setup tapmove
NS2="fw-tapmove2-$$"
cleanup() {
	fw_cleanup
	ip netns del "$NS2" 2>/dev/null
	return 0
}
trap cleanup EXIT

fw_start 0
fw_client get --op list --count 10 >"$TMP/before" || fail "IDs before the move"
ip netns add "$NS2" || fail "cannot create netns $NS2"
ip -n "$NS2" link set lo up
ip -n "$NS" link set fw0 netns "$NS2" || fail "cannot move fw0 into $NS2"
ip -n "$NS2" addr add 10.77.0.1/24 dev fw0
ip -n "$NS2" link set fw0 up
ip -n "$NS2" neigh replace 10.77.0.2 lladdr "$FW_MAC" dev fw0 nud permanent
sleep 0.5 # fifty link checks (one every 10 ms)
ok=""
for _ in $(seq 20); do
	ip netns exec "$NS2" "$PY" "$WIRE_CLIENT" --server 10.77.0.2:4242 get --op list \
		--count 10 >"$TMP/after" 2>/dev/null && ok=1 && break
	sleep 0.2
done
[ -n "$ok" ] || fail "no IDs from the namespace fw0 was moved into"
[ "$(sort -n "$TMP/after" | head -n 1)" -gt "$(sort -n "$TMP/before" | tail -n 1)" ] ||
	fail "IDs after the move are not above those before"
if grep -q "port0: link down" "$TMP/fw.log"; then
	fail "the moved interface was taken for a link that is down"
fi
grep -q "port0: interface .* is not in this network namespace" "$TMP/fw.log" ||
	fail "the move was not logged"
kill -0 "$FW_PID" 2>/dev/null || fail "flakewire died"
fw_stop TERM || fail "exit status $? after SIGTERM"
echo "PASS: fw0 moved into another namespace after start is still polled and answers IDs"
