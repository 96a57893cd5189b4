#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Link watch (issue 16): a port whose link goes down is no longer polled, and
# is polled again once it is up: flakewire on TAP, fw0 set down and up from
# the kernel side. Each change is logged once, within the 10 ms check period
# (waited for at most 5 s), and IDs come back after the link is up again.
. "$(dirname "$0")/lib.sh"
fw_setup link

# waits (at most 5 s) for a line matching PATTERN in the responder's log
wait_log() {
	for _ in $(seq 50); do
		grep -q "$1" "$TMP/fw.log" && return 0
		sleep 0.1
	done
	return 1
}

fw_start 0
fw_client get --op list --count 10 >"$TMP/before" || fail "IDs before the link change"
ip -n "$NS" link set fw0 down
wait_log "port0: link down: lcore 0 stops polling it" || fail "no 'link down' within 5 s"
ip -n "$NS" link set fw0 up
wait_log "port0: link up: lcore 0 resumes polling it" || fail "no 'link up' within 5 s"
[ "$(grep -c 'port0: link down' "$TMP/fw.log")" -eq 1 ] || fail "'link down' logged more than once"
ok=""
for _ in $(seq 20); do # the connected route comes back with the link
	fw_client get --op list --count 10 >"$TMP/after" 2>/dev/null && ok=1 && break
	sleep 0.2
done
[ -n "$ok" ] || fail "no IDs after the link came back up"
[ "$(sort -n "$TMP/after" | head -n 1)" -gt "$(sort -n "$TMP/before" | tail -n 1)" ] ||
	fail "IDs after the link change are not above those before"
kill -0 "$FW_PID" 2>/dev/null || fail "flakewire died"
fw_stop TERM || fail "exit status $? after SIGTERM"
echo "PASS: link down stops polling port0, link up resumes it, IDs answered after"
