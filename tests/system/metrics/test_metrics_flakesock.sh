#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# flakesock's /metrics: promtool-clean, the same family names as flakewire's
# with thread/worker labels, and counters that match what the test sent
# (requests by op, replies by status, IDs, a drop from a source outside
# [net] allow). A bad [metrics] listen is refused with the key named. The
# timekeeper's clock families (lib/keeper, as flakewire's) and mark writes are
# exported with sane values.
PY=/usr/bin/python3
NS="" TMP="" PID=""
fail() {
	echo "FAIL: $*" >&2
	[ -n "$TMP" ] && [ -f "$TMP/sock.log" ] && tail -n 20 "$TMP/sock.log" >&2
	exit 1
}
cleanup() {
	if [ -n "$PID" ]; then
		kill -TERM "$PID" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$PID" 2>/dev/null
		wait "$PID" 2>/dev/null
	fi
	[ -n "$NS" ] && ip netns del "$NS" 2>/dev/null
	[ -n "$TMP" ] && rm -rf "$TMP"
	return 0
}
[ "$(id -u)" -eq 0 ] || fail "needs root (network namespace)"
command -v promtool >/dev/null || fail "promtool missing (Debian package prometheus)"
NS="fwm-sock-$$"
TMP=$(mktemp -d /tmp/fwm-sock.XXXXXX)
trap cleanup EXIT
ip netns add "$NS" || fail "cannot create netns $NS"
ip -n "$NS" link set lo up
ip -n "$NS" addr add 192.0.2.1/32 dev lo
. "$FW_SRC/tests/system/metrics/lib.sh"
URL=http://127.0.0.1:9842/metrics

out=$("$FLAKESOCK" --set "state.file=$TMP/bad" --set metrics.listen=localhost:9842 2>&1) && fail "bad listen accepted"
grep -q "\[metrics\] listen = localhost:9842" <<<"$out" || fail "error does not name the key: $out"

ip netns exec "$NS" "$FLAKESOCK" --listen 0.0.0.0 --threads 2 --set id.workers=3,4 \
	--set "state.file=$TMP/mark" --set stats.interval_s=0 --set net.allow=127.0.0.0/8 \
	--set metrics.listen=127.0.0.1:9842 >"$TMP/sock.log" 2>&1 &
PID=$!
for _ in $(seq 50); do
	grep -q "listening on" "$TMP/sock.log" && break
	kill -0 "$PID" 2>/dev/null || fail "flakesock exited"
	sleep 0.1
done
m_scrape "$TMP/m0"
m_promtool "$TMP/m0"
ip netns exec "$NS" "$PY" "$WIRE_CLIENT" --server 127.0.0.1:4242 get --op id --repeat 20 \
	--sent 2>"$TMP/s1" >/dev/null || fail "get id"
ip netns exec "$NS" "$PY" "$WIRE_CLIENT" --server 127.0.0.1:4242 get --op range --count 100 \
	--repeat 5 --sent 2>"$TMP/s2" >/dev/null || fail "get range"
ip netns exec "$NS" "$PY" -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("192.0.2.1", 0))
s.sendto(b"x" * 24, ("127.0.0.1", 4242))'
s1=$(sed -n 's/^sent=//p' "$TMP/s1")
s2=$(sed -n 's/^sent=//p' "$TMP/s2")
sleep 0.2
m_scrape "$TMP/m1"
m_promtool "$TMP/m1"
sum() { # NAME LABEL-SUBSTRING FILE: sum over the threads
	awk -v n="$1" -v s="$2" 'index($1, n "{") == 1 && index($1, s) { t += $2 } END { print t + 0 }' "$3"
}
for f in "requests_total op=\"id\" $s1" "requests_total op=\"range\" $s2" \
	"replies_total status=\"ok\" $((s1 + s2))" "ids_total worker $((s1 + 100 * s2))" \
	"drops_total reason=\"source\" 1"; do
	set -- $f
	d=$(($(sum "flakewire_$1" "$2" "$TMP/m1") - $(sum "flakewire_$1" "$2" "$TMP/m0")))
	echo "flakewire_$1 $2: +$d, expected +$3"
	[ "$d" -eq "$3" ] || fail "flakewire_$1 $2 moved by $d, expected $3"
done
m_value flakewire_workers "" 2
m_value flakewire_mark_failing "" 0
m_value flakewire_build_info '{version="'"$FW_VERSION"'",responder="flakesock"}' 1
grep -q '^flakewire_ids_total{thread="1",worker="4"} ' "$TMP/m1" || fail "thread/worker labels"
m_check "$TMP/m1" 'flakewire_mark_ahead_seconds > 0 and flakewire_mark_ahead_seconds <= 3.1' \
	"mark ahead of the clock"
# the timekeeper's families, as in flakewire (issue 17)
for f in flakewire_clock_offset_seconds flakewire_clock_slew_ratio flakewire_clock_tsc_hertz \
	'flakewire_clock_flag{flag="back_step"}' 'flakewire_clock_flag{flag="slewing"}' \
	'flakewire_clock_flag{flag="fwd_step"}' flakewire_clock_events_total \
	flakewire_mark_writes_total; do
	grep -q "^$f " "$TMP/m1" || fail "$f missing"
done
m_value flakewire_clock_flag '{flag="back_step"}' 0
m_value flakewire_clock_events_total "" 0
m_check "$TMP/m1" 'abs(flakewire_clock_offset_seconds) < 0.1 and abs(flakewire_clock_slew_ratio) <= 0.0005 and 0.99e9 < flakewire_clock_tsc_hertz < 1.01e9' \
	"clock offset, slew and tick rate (CLOCK_MONOTONIC_RAW ns)"
m_check "$TMP/m1" 'flakewire_mark_writes_total >= 1' "the start reserved a mark"
# issue 38: the slewing flag is what the replies carry (an offset of 1 ms or more being
# slewed), not the calibration's bit, set for any offset
m_check "$TMP/m1" 'flakewire_clock_flag{flag="slewing"} == 0 or abs(flakewire_clock_offset_seconds) >= 0.001' \
	"no slewing flag below a 1 ms offset (the wire's rule)"
kill -TERM "$PID"
wait "$PID" || fail "flakesock exit status $? after SIGTERM"
PID=""
grep -q "mark: persisted" "$TMP/sock.log" || fail "no mark persisted at SIGTERM"
echo PASS
