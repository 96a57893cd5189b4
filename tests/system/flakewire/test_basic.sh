#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# flakewire on TAP answers ARP, ping, single/list/range/info requests, and
# its IDs decode to a time within a few ms of the system clock.
. "$(dirname "$0")/lib.sh"
fw_setup basic
fw_start 0

ip netns exec "$NS" ping -c 3 -i 0.2 -W 1 10.77.0.2 >/dev/null || fail "ping"
lladdr=$(ip -n "$NS" neigh show 10.77.0.2 | sed -n 's/.*lladdr \([0-9a-f:]*\).*/\1/p')
[ -n "$lladdr" ] || fail "no ARP entry for 10.77.0.2"
[ "${lladdr,,}" = "${FW_MAC,,}" ] || fail "ARP says $lladdr, port MAC is $FW_MAC"

out=$(fw_client info) || fail "info"
echo "$out"
grep -qx 'epoch_ms=1767225600000' <<<"$out" || fail "info: epoch"
grep -qx 'worker_bits=10' <<<"$out" || fail "info: worker_bits"
grep -qx 'seq_bits=12' <<<"$out" || fail "info: seq_bits"
grep -qx 'worker=0' <<<"$out" || fail "info: worker"

fw_client get --op id --repeat 20 --check-time 10 >"$TMP/single" || fail "single IDs"
fw_client get --op list --count 100 --repeat 5 --check-time 10 >"$TMP/list" || fail "list"
fw_client get --op range --count 5000 --repeat 2 --check-time 10 >"$TMP/range" || fail "range"
[ "$(wc -l <"$TMP/single")" -eq 20 ] || fail "expected 20 single IDs"
[ "$(wc -l <"$TMP/list")" -eq 500 ] || fail "expected 500 listed IDs"
n=$(wc -l <"$TMP/range")
[ "$n" -ge 2 ] && [ "$n" -le 10000 ] || fail "range gave $n IDs"
cat "$TMP/single" "$TMP/list" "$TMP/range" >"$TMP/all"
sort -n -c "$TMP/all" 2>/dev/null || fail "IDs of one worker are not increasing in issue order"
[ -z "$(sort -n "$TMP/all" | uniq -d)" ] || fail "duplicate IDs"

fw_stop TERM || fail "flakewire exited with $? on SIGTERM"
grep -q "mark: persisted" "$TMP/fw.log" || fail "mark not persisted at exit"
echo "PASS: $(wc -l <"$TMP/all") IDs, ARP $lladdr, ping ok"
