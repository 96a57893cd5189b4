#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The system clock steps forward an hour while a client collects every ID.
# Policy (lib/clock): a forward offset above step_ms is applied as a step at
# the next re-anchor (forward cannot repeat an ID); the mark is extended past
# the new time before lcores issue there (a few RETRY_AFTER at most), and the
# IDs jump an hour ahead, still unique and increasing.
. "$(dirname "$0")/lib.sh"
HOUR=3600000
faults_setup cfwd
tc_use
fw_start 0
t0=$(now_ms)
bench_start ids --duration 6 --concurrency 2

c0=$(clock_until 5 'c["generation"] >= 1')
ev0=$(cj "$c0" clock_events)
tf=$(now_ms)
tc_set "offset_ms=$HOUR"
c1=$(clock_until 4 "c['clock_events'] > $ev0")
echo "stepped: $c1"
grep -q "system clock jumped ahead by 36000[0-9][0-9].[0-9]* ms: stepped forward" "$TMP/fw.log" ||
	fail "no log line for the forward step"
# the re-anchor after the step finds the system clock where flakewire is
c2=$(clock_until 3 "c['generation'] > $(cj "$c1" generation) and abs(c['offset_ns']) < 5e6")
echo "after:   $c2"
mark=$(cj "$c2" mark_unix_ms)
[ "$mark" -gt $((tf + HOUR)) ] || fail "mark $mark not extended past the new time"

bench_wait ids || fail "bench reported a problem: $(cat "$TMP/ids.err")"
end=$(now_ms)
bench_clean ids || fail "duplicates or order violations: $(cat "$TMP/ids.json")"
[ "$(bj ids '["status"]["clock-unsafe"]')" -eq 0 ] || fail "CLOCK_UNSAFE answered"
read -r lo hi n < <($FC span "$TMP/ids.ids")
ahead=$($FC count-above $((end + 1000)) "$TMP/ids.ids")
middle=$(($($FC count-above $((end + 1000)) "$TMP/ids.ids") - $($FC count-above $((tf + HOUR - 1000)) "$TMP/ids.ids")))
echo "IDs: $n, times $lo..$hi; $ahead an hour ahead; retry-after $(bj ids '["status"]["retry-after"]')"
[ "$lo" -ge "$t0" ] && [ "$lo" -le $((tf + 1000)) ] || fail "first IDs not on real time ($lo)"
[ "$ahead" -gt 0 ] || fail "no ID an hour ahead after the step"
[ "$middle" -eq 0 ] || fail "IDs between the old and the new time"
[ "$hi" -ge $((t0 + 6000 + HOUR - 300)) ] && [ "$hi" -le $((end + HOUR)) ] ||
	fail "last ID time $hi is not an hour past the run's end"
fw_stop TERM || fail "exit status $?"
echo "PASS: forward 1 h: stepped (clock_events $(cj "$c2" clock_events)), offset after $(cj "$c2" offset_ns) ns, $ahead of $n IDs an hour ahead"
