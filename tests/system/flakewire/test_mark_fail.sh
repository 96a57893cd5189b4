#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# When the mark cannot be persisted (state file system read-only), the
# responder does not extend it: once the clock reaches it, requests are
# answered RETRY_AFTER, nothing is issued; when the disk is back it resumes.
. "$(dirname "$0")/lib.sh"
fw_setup markfail
ST="$TMP/state"
mkdir -p "$ST"
mount -t tmpfs -o size=1m tmpfs "$ST" || skip "cannot mount a tmpfs"
fw_cleanup_mount() { umount -l "$ST" 2>/dev/null; fw_cleanup; }
trap fw_cleanup_mount EXIT

fw_start 0 --set state.file="$ST/mark" --set state.mark_ahead_ms=1000
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
fw_stop TERM || fail "exit status $?"
echo PASS
