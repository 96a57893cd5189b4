#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# When the mark cannot be persisted (state file system read-only), the
# responder does not extend it: once the clock reaches it, requests are
# answered RETRY_AFTER, nothing is issued; when the disk is back it resumes.
# A final mark that cannot be written makes the exit status 1; a start that
# fails after the keeper started writes the final mark all the same.
. "$(dirname "$0")/lib.sh"
fw_setup markfail
ST="$TMP/state"
mkdir -p "$ST"
mount -t tmpfs -o size=1m tmpfs "$ST" || skip "cannot mount a tmpfs"
fw_cleanup_mount() { umount -l "$ST" 2>/dev/null; fw_cleanup; }
trap fw_cleanup_mount EXIT

# its own lock dir: other tests on this host may hold worker 0
fw_start 0 --set state.file="$ST/mark" --set state.mark_ahead_ms=1000 --set state.lock_dir="$TMP/lock"
fw_client get --op id >/dev/null || fail "get before"
mount -o remount,ro "$ST" || fail "remount ro"
# bounded wait: the reservation (1 s) runs out; expect RETRY_AFTER then
got=""
for _ in $(seq 40); do
	out=$(fw_client raw 464b01010000000100000000000000070000000000000000$(printf '0%.0s' $(seq 16))) || true
	if [[ "$out" == reply\ 464b018103* ]]; then
		got=1
		break
	fi
	sleep 0.1
done
[ -n "$got" ] || fail "no RETRY_AFTER while the mark cannot be persisted (last: $out)"
tel=$(fw_tel /flakewire/clock)
[ "$(fw_json "$tel" '["/flakewire/clock"]["mark_failing"]')" -eq 1 ] || fail "mark_failing not reported"
mount -o remount,rw "$ST" || fail "remount rw"
fw_client get --op list --count 5 >/dev/null || fail "no IDs after the disk came back"

# The final mark cannot be written: the exit status says so (it was 0), and
# the line names the mark file and the error.
mount -o remount,ro "$ST" || fail "remount ro before the stop"
rc=0
fw_stop TERM || rc=$?
[ "$rc" -ne 0 ] || fail "exit status 0 although the final mark was not written"
grep -q "mark: cannot persist [0-9]* to $ST/mark at exit: Read-only file system" "$TMP/fw.log" ||
	fail "no line naming the mark file and the error of the final mark"
mount -o remount,rw "$ST" || fail "remount rw after the stop"

# A start that fails after the keeper reserved 10 min ahead (no such device)
# still writes the final mark: the next start is not held back 10 min.
: >"$TMP/fw.log"
rc=0
ip netns exec "$NS" "$FLAKEWIRE" --lcores "$(proc_lcores 0)" --no-huge --no-pci -m 256 --file-prefix "$NS" -- \
	--set state.file="$ST/mark" --set clock.calibrate_ms=200 --set stats.interval_s=0 \
	--set state.mark_ahead_ms=600000 --set state.lock_dir="$TMP/lock" \
	--set port0.device=net_nosuchdriver0 \
	>>"$TMP/fw.log" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "a start without its port exited $rc, not 1"
grep -q "mark: reserved up to" "$TMP/fw.log" || fail "the failed start did not reserve"
grep -q "port0: cannot attach" "$TMP/fw.log" || fail "the start failed before the port"
grep -q "mark: persisted" "$TMP/fw.log" || fail "no final mark after the failed start"
mark=$("$FLAKECTL" mark "$ST/mark" | awk '{print $3}')
[ "$mark" -lt "$(($(date +%s%3N) + 60000))" ] ||
	fail "the mark stays 10 min ahead ($mark) after a failed start"

# ... but never below what an earlier run persisted: with the mark 2 min ahead
# (a run before issued up to it), a failed start leaves it there.
ahead=$(($(date +%s%3N) + 120000))
"$FLAKECTL" mark "$ST/mark" --set "$ahead" >/dev/null || fail "flakectl mark --set $ahead"
rc=0
ip netns exec "$NS" "$FLAKEWIRE" --lcores "$(proc_lcores 0)" --no-huge --no-pci -m 256 --file-prefix "$NS" -- \
	--set state.file="$ST/mark" --set clock.calibrate_ms=200 --set stats.interval_s=0 \
	--set state.lock_dir="$TMP/lock" --set port0.device=net_nosuchdriver0 \
	>>"$TMP/fw.log" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "the second start without its port exited $rc, not 1"
mark=$("$FLAKECTL" mark "$ST/mark" | awk '{print $3}')
[ "$mark" -ge "$ahead" ] || fail "a failed start lowered the mark below an earlier run's ($mark < $ahead)"
echo PASS
