#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A corrupt state (mark) file: garbage, truncated, a bad check. flakewire
# refuses to start, with a message naming the file and the fix (flakectl mark
# FILE --set UNIX_MS --force), and leaves the file as it was. After that fix
# it starts and issues above the mark written.
. "$(dirname "$0")/lib.sh"
faults_setup corrupt
MARK=$TMP/mark

refuses() { # variant
	cp "$MARK" "$TMP/before"
	fw_launch
	local i rc=""
	for ((i = 0; i < 200; i++)); do
		kill -0 "$FW_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$FW_PID" 2>/dev/null && fail "$1: flakewire is still running with a corrupt mark"
	wait "$FW_PID"
	rc=$?
	FW_PID=""
	[ "$rc" -ne 0 ] || fail "$1: exit status 0"
	grep -q "mark: cannot read $MARK: state file is corrupt or truncated; refusing to start" "$TMP/fw.log" ||
		fail "$1: no message naming the file"
	grep -q "'flakectl mark $MARK --set UNIX_MS --force'" "$TMP/fw.log" || fail "$1: no fix in the message"
	cmp -s "$MARK" "$TMP/before" || fail "$1: the corrupt file was changed"
	echo "$1: exit status $rc"
}

"$FLAKECTL" mark "$MARK" --set now --force >/dev/null || fail "flakectl mark"
sed -i 's/^check .*/check 0123456789abcdef/' "$MARK"
refuses "bad check"
grep "refusing to start" "$TMP/fw.log"
head -c 20 "$MARK" >"$TMP/t" && mv "$TMP/t" "$MARK"
refuses truncated
printf 'garbage\n\0\1\2' >"$MARK"
refuses garbage
: >"$MARK"
refuses empty

m=$(($(now_ms) + 500))
"$FLAKECTL" mark "$MARK" --set "$m" --force || fail "the fix (flakectl mark --set) failed"
fw_start 0
fw_client get --op list --count 20 >"$TMP/ids" || fail "no IDs after the fix"
$FC none-at-or-below "$m" "$TMP/ids" || fail "an ID at or below the mark written by the fix"
fw_stop TERM || fail "exit status $?"
echo "PASS: 4 corrupt variants refused with the file and the fix named; after the fix IDs above $m"
