#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The tick source goes back (a TSC reset by a resume from suspend, or a
# hypervisor that does not restore it) while a client collects every ID:
# the test clock's tick_back_ms=BACK (default an hour; flakesock-testclock,
# whose keeper and workers read the ticks through the test clock: the
# flakewire build refuses the key) from 2 s into the load. Policy
# (lib/keeper, issue 49): at its next tick the keeper re-anchors the ticks
# on the time reached (or above every ID issued), so the workers issue
# again within a second, above everything issued before, and on real time:
# no ID repeats, none goes back, none is an hour off, the largest gap in
# the issued times stays under a second. (Before: every worker answered
# CLOCK_UNSAFE until the ticks came back where they were, that is an hour,
# or until the process was restarted.)
RESPONDER=flakesock
. "$(dirname "$0")/lib.sh"
BACK=${1:-3600000}
faults_setup tback
tc_use
fw_start 0
t0=$(now_ms)
bench_start ids --duration 6 --concurrency 2
clock_until 5 'c["generation"] >= 1' >/dev/null
sleep 1
tf=$(now_ms)
tc_set "tick_back_ms=$BACK"
bench_wait ids || fail "bench reported a problem: $(cat "$TMP/ids.err")"
end=$(now_ms)
bench_clean ids || fail "duplicates or order violations: $(cat "$TMP/ids.json")"
read -r lo hi n < <($FC span "$TMP/ids.ids")
after=$($FC count-above $((tf + 1000)) "$TMP/ids.ids")
unsafe=$(bj ids '["status"]["clock-unsafe"]')
gap=$($FC maxgap "$TMP/ids.ids")
echo "IDs: $n, times $lo..$hi ($((end - tf)) ms after the fault: $after IDs more than 1 s after it); clock-unsafe $unsafe, retry-after $(bj ids '["status"]["retry-after"]'), largest gap ${gap} ms"
[ "$lo" -ge "$t0" ] || fail "IDs before the start ($lo)"
[ "$hi" -le $((end + 1000)) ] || fail "IDs ahead of real time ($hi, now $end)"
[ "$after" -gt 0 ] || fail "no ID more than 1 s after the ticks went back (CLOCK_UNSAFE $unsafe)"
[ "$gap" -le 1000 ] || fail "a ${gap} ms gap in issued times: the workers did not issue again within a second"
grep -q "clock: the tick source went back [0-9.]* ms: re-anchored" "$TMP/fw.log" ||
	fail "no log line for the tick source going back"
echo "after: $(clock_get)"
fw_stop TERM || fail "exit status $?"
echo "PASS: ticks back $BACK ms: re-anchored, issuing again within ${gap} ms, $n IDs, no duplicate, none back, $unsafe CLOCK_UNSAFE replies"
