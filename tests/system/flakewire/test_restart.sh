#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Restart safety: after a SIGTERM and after a SIGKILL, every ID issued by the
# next run is larger than every ID issued before (the persisted mark).
. "$(dirname "$0")/lib.sh"
fw_setup restart

max_of() { sort -n "$1" | tail -n 1; }
min_of() { sort -n "$1" | head -n 1; }

fw_start 0 --set state.mark_ahead_ms=2000
fw_client get --op list --count 50 --repeat 4 >"$TMP/run1" || fail "run 1: get"
fw_stop TERM || fail "run 1: exit status $? after SIGTERM"
grep -q "mark: persisted" "$TMP/fw.log" || fail "run 1: no mark persisted at exit"
cp "$TMP/fw.log" "$TMP/fw1.log"

fw_start 0 --set state.mark_ahead_ms=2000
grep -q "mark: read" "$TMP/fw.log" || fail "run 2 did not read the mark"
fw_client get --op list --count 50 --repeat 4 >"$TMP/run2" || fail "run 2: get"
[ "$(min_of "$TMP/run2")" -gt "$(max_of "$TMP/run1")" ] ||
	fail "after SIGTERM: $(min_of "$TMP/run2") <= $(max_of "$TMP/run1")"
fw_client get --op range --count 3000 >>"$TMP/run2" || fail "run 2: range"
fw_stop KILL
cp "$TMP/fw.log" "$TMP/fw2.log"

# after SIGKILL the mark on disk is the reservation ahead of the clock:
# run 3 refuses (CLOCK_UNSAFE / RETRY_AFTER) until the clock passes it
fw_start 0 --set state.mark_ahead_ms=2000
fw_client get --op list --count 50 --repeat 4 >"$TMP/run3" || fail "run 3: get"
[ "$(min_of "$TMP/run3")" -gt "$(max_of "$TMP/run2")" ] ||
	fail "after SIGKILL: $(min_of "$TMP/run3") <= $(max_of "$TMP/run2")"
fw_stop TERM || fail "run 3: exit status $? after SIGTERM"
cat "$TMP/run1" "$TMP/run2" "$TMP/run3" | sort -n | uniq -d | grep -q . && fail "duplicates"
echo "PASS: run1 max $(max_of "$TMP/run1") < run2 min $(min_of "$TMP/run2");" \
	"run2 max $(max_of "$TMP/run2") < run3 min $(min_of "$TMP/run3")"
