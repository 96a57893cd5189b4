#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Restart with the system clock behind the persisted mark (written with
# flakectl mark, as a run whose clock was ahead would have left it), by a
# little (2.5 s, under mark_ahead_ms, set to 3000 here) and by hours. Policy ([state]
# start_policy, lib/keeper, driven by lib/responder): "wait" starts and answers
# RETRY_AFTER until the clock passes the mark; "fail" exits at start when
# the clock is behind by more than mark_ahead_ms, and otherwise waits too.
# Either way no ID at or below the mark is ever issued, and the start
# reserves mark_ahead_ms from the clock, not from the mark.
. "$(dirname "$0")/lib.sh"
faults_setup behind
MARK=$TMP/mark
HOURS3=$((3 * 3600 * 1000))

set_mark() { "$FLAKECTL" mark "$MARK" --set "$1" --force >/dev/null || fail "flakectl mark --set $1"; }

# $1 policy, $2 how far ahead of the clock the mark is (ms): starts, collects
# IDs for 3 s, checks every one is above the mark and that it waited.
small() {
	local m=$(($(now_ms) + $2))
	set_mark "$m"
	fw_start 0 --set state.start_policy="$1" --set state.mark_ahead_ms=3000
	# the clock at the start: the reservation less mark_ahead_ms (a loaded
	# machine can take longer than the 2.5 s to start, and then it is not behind)
	local r clk
	r=$(sed -n 's/.*mark: reserved up to \([0-9]*\) (\([0-9]*\) ms ahead of the clock).*/\1 \2/p' "$TMP/fw.log" | head -n 1)
	[ -n "$r" ] || fail "$1: no reservation in the log"
	clk=$((${r% *} - ${r#* }))
	grep -q "behind the persisted mark $m (start_policy = $1): answering RETRY_AFTER" "$TMP/fw.log" ||
		[ "$clk" -ge "$m" ] || fail "$1: no log line for the clock behind the mark (clock $clk at the start)"
	# reserved from the clock (3000 ms), not from the mark (it would be 5500)
	res=$(sed -n 's/.*mark: reserved up to [0-9]* (\([0-9]*\) ms ahead of the clock).*/\1/p' "$TMP/fw.log")
	[ -n "$res" ] && [ "$res" -le 3100 ] || fail "$1: reserved ${res} ms ahead of the clock"
	local tb
	tb=$(now_ms)
	bench_start "small_$1" --duration 3
	bench_wait "small_$1" || fail "$1: bench reported a problem: $(cat "$TMP/small_$1.err")"
	bench_clean "small_$1" || fail "$1: duplicates or order violations"
	$FC none-at-or-below "$m" "$TMP/small_$1.ids" || fail "$1: an ID at or below the mark $m"
	read -r lo hi n < <($FC span "$TMP/small_$1.ids")
	# (unless the start took so long that the clock had already passed it)
	[ "$tb" -ge $((m - 50)) ] || [ "$(bj "small_$1" '["status"]["retry-after"]')" -gt 0 ] ||
		fail "$1: no RETRY_AFTER while the clock was behind the mark"
	echo "policy $1, mark $m ($2 ms ahead): $n IDs from $lo (first ms above the mark: $((lo - m)) ms later), retry-after $(bj "small_$1" '["status"]["retry-after"]')"
	fw_stop TERM || fail "$1: exit status $?"
}

small fail 2500
small wait 2500
cat "$TMP"/small_*.ids >"$TMP/before.ids"

# hours behind, start_policy = fail: refuses to start, mark untouched
m=$(($(now_ms) + HOURS3))
set_mark "$m"
: >"$TMP/fw.log"
resp_cmd 0 --set state.file="$MARK" --set state.start_policy=fail --set state.mark_ahead_ms=3000
timeout 30 "${RESP_CMD[@]}" >>"$TMP/fw.log" 2>&1
rc=$?
echo "start_policy = fail, mark 3 h ahead: exit status $rc"
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "expected a refusal to start, got exit status $rc"
grep -q "mark: system clock is [0-9]* ms behind the persisted mark $m (start_policy = fail)" "$TMP/fw.log" ||
	fail "no log line naming the policy"
grep "start_policy = fail" "$TMP/fw.log"
[ "$("$FLAKECTL" mark "$MARK" | awk '{print $3}')" = "$m" ] || fail "the mark changed"

# hours behind, start_policy = wait: starts, issues nothing, says when to retry
fw_start 0 --set state.start_policy=wait --set state.mark_ahead_ms=3000
grep -q "mark: reserved up to $m " "$TMP/fw.log" || fail "the start reserved past the mark"
bench_start wait_hours --duration 2
out=$(fw_client raw "464b0101000000010000000000000007000000000000000000000000000000000000000000000000")
bench_wait wait_hours
echo "reply: $out"
hex=${out#reply }
st=${hex:8:2}
retry=$((16#${hex:40:8}))
[ "$st" = "03" ] || fail "expected RETRY_AFTER (03), got status $st"
[ "$retry" -ge 1000000 ] || fail "retry_after_us $retry: expected a long wait"
[ "$(bj wait_hours '["status"]["ok"]')" -eq 0 ] || fail "IDs issued 3 h before the mark"
[ ! -s "$TMP/wait_hours.ids" ] || fail "IDs issued while the clock is hours behind the mark"
c=$(clock_get) || fail "telemetry"
[ "$(cj "$c" floor_unix_ms)" = "$m" ] || fail "floor_unix_ms is not the mark"
fw_stop TERM || fail "exit status $?"
[ "$("$FLAKECTL" mark "$MARK" | awk '{print $3}')" -ge "$m" ] || fail "the mark went down at exit"
echo "PASS: small (fail, wait): waited and issued above the mark; 3 h (fail) refused to start; 3 h (wait) answered RETRY_AFTER ${retry} us, no ID"
