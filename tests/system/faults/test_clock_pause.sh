#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A VM-style pause of 2 s, twice, while a client collects every ID: first the
# test clock's pause (lcores, telemetry and the control thread stop while the
# TSC and the system clock go on), then SIGSTOP/SIGCONT of the whole process.
# Policy: time continues (the TSC counted through the pause, nothing to
# correct, no clock step); the first bursts after it may find the mark behind
# and answer RETRY_AFTER until it is extended; no ID repeats.
. "$(dirname "$0")/lib.sh"
faults_setup cpause
tc_use
fw_start 0
bench_start ids --duration 9 --concurrency 2 --timeout 200

c0=$(clock_until 5 'c["generation"] >= 1')
ev0=$(cj "$c0" clock_events)
tc_set "pause_ms=2000"
sys_wait_for() { local i; for ((i = 0; i < $1 * 10; i++)); do grep -q "$2" "$TMP/fw.log" && return 0; sleep 0.1; done; return 1; }
sys_wait_for 6 "test clock: pause 1 over" || fail "the test-clock pause did not end"
sleep 1
kill -STOP "$FW_PID"
sleep 2
kill -CONT "$FW_PID"

bench_wait ids || fail "bench reported a problem: $(cat "$TMP/ids.err")"
end=$(now_ms)
c1=$(clock_get) || fail "telemetry"
echo "after: $c1"
bench_clean ids || fail "duplicates or order violations: $(cat "$TMP/ids.json")"
[ "$(bj ids '["status"]["clock-unsafe"]')" -eq 0 ] || fail "CLOCK_UNSAFE answered"
read -r lo hi n < <($FC span "$TMP/ids.ids")
gaps=$($PY -c '
import sys
t = sorted({(int(l) >> 22) + 1767225600000 for l in open(sys.argv[1])})
print(" ".join(str(b - a) for a, b in zip(t, t[1:]) if b - a >= 1000))' "$TMP/ids.ids")
echo "IDs: $n, times $lo..$hi; gaps of 1 s or more: $gaps; timeouts $(bj ids '["timeouts"]'), retry-after $(bj ids '["status"]["retry-after"]')"
[ "$(echo "$gaps" | wc -w)" -eq 2 ] || fail "expected two pauses in the IDs' times, got: $gaps"
for g in $gaps; do
	[ "$g" -ge 1800 ] && [ "$g" -le 2600 ] || fail "a pause of $g ms in the IDs' times (expected ~2000)"
done
[ "$hi" -le "$end" ] && [ $((end - hi)) -le 600 ] || fail "after the pauses IDs are not on real time ($hi vs $end)"
[ "$(cj "$c1" clock_events)" -eq "$ev0" ] || fail "a pause was handled as a clock step"
off=$(cj "$c1" offset_ns)
[ "${off#-}" -lt 5000000 ] || fail "offset $off ns after the pauses"
fw_stop TERM || fail "exit status $?"
echo "PASS: two 2 s pauses: gaps $gaps ms in the IDs' times, no duplicate, offset $off ns"
