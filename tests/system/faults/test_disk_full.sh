#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The state directory (a 64 KiB tmpfs) fills up while a client collects every
# ID. Policy (lib/keeper, run by lib/responder): the mark is published only once it is
# on disk, so lcores stop at the last persisted mark and answer RETRY_AFTER;
# the control thread logs the failure once, retries every 100 ms, and when
# space returns the mark moves again and issuing resumes, with no duplicate.
# (A read-only state directory: tests/system/flakewire/test_mark_fail.sh.)
. "$(dirname "$0")/lib.sh"
faults_setup diskfull
ST=$TMP/state
mkdir -p "$ST"
mount -t tmpfs -o size=64k tmpfs "$ST" || skip "cannot mount a tmpfs"
FAULT_MOUNTS+=("$ST")

wait_log() { # SECONDS PATTERN
	local i
	for ((i = 0; i < $1 * 10; i++)); do
		grep -q "$2" "$TMP/fw.log" && return 0
		sleep 0.1
	done
	return 1
}

fw_start 0 --set state.file="$ST/mark" --set state.mark_ahead_ms=1000
bench_start full --duration 4 --concurrency 2 --timeout 200
sleep 1
dd if=/dev/zero of="$ST/fill" bs=4k 2>/dev/null
df -k "$ST" | tail -n 1
wait_log 3 "mark: cannot persist [0-9]* to $ST/mark: .*; workers answer RETRY_AFTER" ||
	fail "no log line for the failing mark"
grep "mark: cannot persist" "$TMP/fw.log"
M=$("$FLAKECTL" mark "$ST/mark" | awk '{print $3}')
echo "persisted mark while full: $M"
# the reservation (1 s) runs out: RETRY_AFTER, nothing issued
got=""
for _ in $(seq 30); do
	out=$(fw_client raw 464b0101000000010000000000000007000000000000000000000000000000000000000000000000) || true
	if [[ "$out" == reply\ 464b018103* ]]; then
		got=1
		break
	fi
	sleep 0.1
done
[ -n "$got" ] || fail "no RETRY_AFTER while the disk is full (last: $out)"
c=$(clock_get) || fail "telemetry"
[ "$(cj "$c" mark_failing)" -eq 1 ] || fail "mark_failing not reported"
[ "$(cj "$c" mark_unix_ms)" -eq "$M" ] || fail "published mark $(cj "$c" mark_unix_ms) is not the persisted $M"
bench_wait full || fail "bench reported a problem: $(cat "$TMP/full.err")"
bench_clean full || fail "duplicates or order violations"
$FC none-at-or-below "$M" "$TMP/full.ids" >/dev/null 2>&1 && fail "no ID before the disk filled?"
above=$($FC count-above "$M" "$TMP/full.ids")
[ "$above" -eq 0 ] || fail "$above ID(s) issued beyond the persisted mark $M"
[ "$(bj full '["status"]["retry-after"]')" -gt 0 ] || fail "bench saw no RETRY_AFTER"

rm -f "$ST/fill"
wait_log 3 "mark: persisting works again" || fail "issuing did not resume when space returned"
bench_start after --duration 1
bench_wait after || fail "bench after: $(cat "$TMP/after.err")"
bench_clean after || fail "no IDs after space returned"
total=$($FC rounds "$TMP/full.ids" "$TMP/after.ids") || fail "a duplicate or an ID not above the earlier ones"
c=$(clock_get) || fail "telemetry"
[ "$(cj "$c" mark_failing)" -eq 0 ] || fail "mark_failing still set"
echo "mark failures counted: $(cj "$c" mark_failures)"
fw_stop TERM || fail "exit status $?"
echo "PASS: disk full: stopped at the persisted mark $M (RETRY_AFTER $(bj full '["status"]["retry-after"]') times), resumed after, $total IDs, no duplicate"
