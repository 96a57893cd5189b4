#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# flakectl status against flakesock's /metrics in a namespace: OK (exit 0)
# with the worker IDs and rates of traffic sent meanwhile; WARNING (1) when
# over 10 % of replies are RETRY_AFTER (a 1-bit sequence, no borrowing);
# CRITICAL (2) once the mark can no longer be persisted (its directory
# removed); UNKNOWN (3) with no endpoint.
# sys_kill_wait (sourced for its helpers only: no sys_init, this test keeps its own trap)
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
PY=/usr/bin/python3
NS="" TMP="" PID=""
fail() {
	echo "FAIL: $*" >&2
	[ -n "$TMP" ] && [ -f "$TMP/sock.log" ] && tail -n 20 "$TMP/sock.log" >&2
	exit 1
}
stop() {
	[ -n "$PID" ] || return 0
	sys_kill_wait "$PID" TERM 5
	PID=""
}
cleanup() {
	stop
	[ -n "$NS" ] && ip netns del "$NS" 2>/dev/null
	[ -n "$TMP" ] && rm -rf "$TMP"
	return 0
}
[ "$(id -u)" -eq 0 ] || fail "needs root (network namespace)"
NS="fwm-status-$$"
TMP=$(mktemp -d /tmp/fwm-status.XXXXXX)
trap cleanup EXIT
ip netns add "$NS" || fail "cannot create netns $NS"
ip -n "$NS" link set lo up
in_ns() { ip netns exec "$NS" "$@"; }
start() { # extra flakesock options
	mkdir -p "$TMP/state"
	: >"$TMP/sock.log" # now: the background job's own truncation may come after the grep below
	ip netns exec "$NS" "$FLAKESOCK" --listen 127.0.0.1 --threads 2 --set id.workers=7,8 \
		--set "state.file=$TMP/state/mark" --set stats.interval_s=0 \
		--set metrics.listen=127.0.0.1:9842 "$@" >"$TMP/sock.log" 2>&1 &
	PID=$!
	for _ in $(seq 50); do
		grep -q "listening on" "$TMP/sock.log" && return 0
		kill -0 "$PID" 2>/dev/null || fail "flakesock exited"
		sleep 0.1
	done
	fail "flakesock did not start"
}
load() { # wire_client get args, in the background for 1.5 s
	ip netns exec "$NS" timeout 1.5 "$PY" "$WIRE_CLIENT" --server 127.0.0.1:4242 get "$@" --repeat 100000 \
		>/dev/null 2>&1 &
	LOAD=$!
}
status() { # expected exit, then status options
	local want=$1 rc
	shift
	in_ns "$FLAKECTL" status "$@" >"$TMP/out" 2>&1
	rc=$?
	cat "$TMP/out"
	[ "$rc" -eq "$want" ] || fail "flakectl status exited $rc, expected $want"
}

status 3 --metrics 127.0.0.1:9842 --interval 0
grep -q '^UNKNOWN' "$TMP/out" || fail "no UNKNOWN line"

start
load --op id
status 0 --interval 1
wait "$LOAD"
grep -q '^workers *2: 7 (thread 0) 8 (thread 1)$' "$TMP/out" || fail "worker line"
grep -q '^status *OK$' "$TMP/out" || fail "status line"
rate=$(sed -n 's/^rates *\([0-9]*\) requests\/s.*/\1/p' "$TMP/out")
[ "${rate:-0}" -gt 0 ] || fail "no request rate while the load ran"
# issue 38: drops since start beside the interval's rate, so a flood that ended before the
# interval still shows (garbage datagrams: reason wire_magic)
in_ns "$PY" -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); [s.sendto(b"garbage-garbage-garbage!", ("127.0.0.1", 4242)) for _ in range(25)]'
sleep 1.2
status 0 --interval 1
grep -q '^drops *none (over 1\.[0-9] s); 25 since start$' "$TMP/out" || fail "drops since start not shown"
stop

# another layout: a state of its own (the mark fences the layout it was written in, issue 48)
rm -rf "$TMP/state"
start --set id.sequence_bits=1 --set id.max_borrow_ms=0
load --op list --count 50
status 1 --interval 1
wait "$LOAD"
grep -q '^status *WARNING: over 10 % RETRY_AFTER' "$TMP/out" || fail "no RETRY_AFTER warning"
stop

rm -rf "$TMP/state" # back to the default layout: a fresh state again
start --set state.mark_ahead_ms=200
# the keeper writes mark.tmp every ~100 ms: an rm racing it finds the
# directory not empty (CI), so retry until the directory is gone
for _ in $(seq 50); do
	rm -rf "$TMP/state" 2>/dev/null
	[ -e "$TMP/state" ] || break
	sleep 0.02
done
[ ! -e "$TMP/state" ] || fail "cannot remove $TMP/state"
sleep 0.5
status 2 --interval 0
grep -q '^status *CRITICAL: the mark cannot be persisted' "$TMP/out" || fail "no mark critical"
grep -q 'NOT PERSISTING' "$TMP/out" || fail "mark line does not say NOT PERSISTING"
grep -q '^states *7 waiting 8 waiting' "$TMP/out" || fail "the worker's state is not waiting"
stop

# issue 38: a node that can issue nothing is not OK, with or without traffic:
# restarted with the mark 120 s ahead (RETRY_AFTER to everything), no traffic
mkdir -p "$TMP/state"
"$FLAKECTL" mark "$TMP/state/mark" --set "$(($(date +%s%3N) + 120000))" --force >/dev/null
start
status 2 --interval 0
grep -q '^states *7 waiting 8 waiting' "$TMP/out" || fail "the worker's state is not waiting"
grep -q '^status *CRITICAL: no worker can issue' "$TMP/out" || fail "a node behind its mark is not CRITICAL"
echo PASS
