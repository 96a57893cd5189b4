#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A restart after a crash answers within a few hundred ms (issue 49), with
# the defaults of lib/conf ([clock] calibrate_ms, [state] mark_ahead_ms): the
# responder serves IDs under load, is killed with SIGKILL and started again
# at once; a probe sending a GET every 2 ms from before the exec times the
# first OK reply. That ID is above every ID issued before the kill (the mark
# read); the responder answered RETRY_AFTER (waiting for the clock to pass
# the mark) for at most WAIT_MS (default 300, [state] mark_ahead_ms: the
# mark was at most that far ahead when it was killed); and for flakesock
# the time from exec to the first OK is under LIMIT_MS (default 600).
# flakewire's is printed, not asserted (LIMIT_MS_FLAKEWIRE=N asserts it):
# its EAL start alone takes 300-400 ms on an idle 2-core VM and seconds on
# a loaded one (316-515 ms in all idle; 0.9-3.7 s at a load average of 20,
# with no RETRY_AFTER either way), which is the machine, not the restart;
# its calibration (100 ms) is in its log. The old
# defaults (a 3 s reservation, a 500 ms calibration) took 1.2-2.2 s and
# answered RETRY_AFTER for up to 1.4 s. ROUNDS restarts (default 3); the
# log prints each. flakewire: on TAP; its fw0 is configured as soon as it
# appears (that wait counts). Against either responder (RESPONDER).
. "$(dirname "$0")/lib.sh"
ROUNDS=${ROUNDS:-3}
LIMIT_MS=${LIMIT_MS:-600}
[ "$RESPONDER" = flakewire ] && LIMIT_MS=${LIMIT_MS_FLAKEWIRE:-0}
WAIT_MS=${WAIT_MS:-300}
PROBE="$PY $(dirname "$0")/firstok.py"
RESP_DEFAULTS=1
faults_setup rfast

# tap_up: flakewire's fw0, configured once it exists (bounded: 10 s)
tap_up() {
	[ "$RESPONDER" = flakesock ] && return 0
	local i
	for ((i = 0; i < 1000; i++)); do
		if ip -n "$NS" link show fw0 >/dev/null 2>&1; then
			ip -n "$NS" addr add 10.77.0.1/24 dev fw0 2>/dev/null
			ip -n "$NS" link set fw0 up && return 0
		fi
		kill -0 "$FW_PID" 2>/dev/null || return 1
		sleep 0.01
	done
	return 1
}

fw_start 0
worst=0
all=()
for r in $(seq "$ROUNDS"); do
	rm -f "$TMP/go"
	ip netns exec "$NS" $PROBE --server "$SERVER" --max-s 10 --go "$TMP/go" >"$TMP/probe$r.json" &
	probe=$!
	FAULT_PIDS+=("$probe")
	bench_start "pre$r" --duration 1 --concurrency 1 --timeout 200
	bench_wait "pre$r" >/dev/null
	bench_clean "pre$r" || fail "round $r: before the kill: $(cat "$TMP/pre$r.json")"
	: >"$TMP/fw.log"
	resp_cmd 0
	# the restart follows the crash at once, as a supervisor's would: the mark
	# on disk is 150-300 ms ahead (extended when half of mark_ahead_ms is used)
	kill9
	t0=$(date +%s%N)
	"${RESP_CMD[@]}" >>"$TMP/fw.log" 2>&1 &
	FW_PID=$!
	touch "$TMP/go"
	tap_up || fail "round $r: fw0 never came up"
	wait "$probe" || fail "round $r: no OK reply within 10 s of the restart: $(cat "$TMP/probe$r.json")"
	pj() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$TMP/probe$r.json" "$1"; }
	ok=$(pj ok_ns)
	id=$(pj id)
	first=$(pj first_ns)
	ms=$(((ok - t0) / 1000000))
	waited=$(((ok - first) / 1000000))
	[ "$waited" -le "$WAIT_MS" ] || fail "round $r: answered RETRY_AFTER for ${waited} ms after the restart (limit $WAIT_MS): $(cat "$TMP/probe$r.json")"
	max=$(sort -n "$TMP/pre$r.ids" | tail -n 1)
	[ "$id" -gt "$max" ] || fail "round $r: the first ID after the restart, $id, is not above $max issued before"
	echo "round $r: exec to first OK ${ms} ms, refusing ${waited} ms of it; $(cat "$TMP/probe$r.json")"
	all+=("$ms")
	[ "$ms" -gt "$worst" ] && worst=$ms
done
[ "$LIMIT_MS" = 0 ] || [ "$worst" -le "$LIMIT_MS" ] || fail "a restart after kill -9 took ${worst} ms to its first OK (limit $LIMIT_MS): ${all[*]}"
fw_stop TERM || fail "exit status $?"
echo "PASS: $RESPONDER, $ROUNDS restarts after kill -9: exec to first OK ${all[*]} ms (limit ${LIMIT_MS/#0/none}), RETRY_AFTER at most $WAIT_MS ms"
