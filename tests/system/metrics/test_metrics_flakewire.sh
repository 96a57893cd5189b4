#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# flakewire's /metrics ([metrics] listen, inside the test's namespace): the
# exposition passes `promtool check metrics` (format and naming lint), and the
# counters match what the test sent: requests by op, replies by status, IDs,
# drops by reason (a request to another UDP port), per lcore/worker; the clock
# and mark gauges are there and sane. Off by default: nothing listens without
# the key.
. "$FW_SRC/tests/system/flakewire/lib.sh"
. "$FW_SRC/tests/system/metrics/lib.sh"
fw_setup metrics
out=$("$FLAKEWIRE" -- --set metrics.listen=localhost:80 --check-config 2>&1) &&
	fail "--check-config accepts [metrics] listen = localhost:80"
grep -q "\[metrics\] listen = localhost:80: not ADDR:PORT" <<<"$out" || fail "bad listen: $out"
# pinned as in production: the test checks the metrics thread keeps off the lcore's CPU
FW_TEST_PIN=1 fw_start 0 --set id.worker_base=5 --set metrics.listen=127.0.0.1:9842
ip -n "$NS" neigh replace 10.77.0.2 lladdr "$FW_MAC" dev fw0 nud permanent
URL=http://127.0.0.1:9842/metrics

m_scrape "$TMP/m0"
m_promtool "$TMP/m0"
fw_client get --op id --repeat 25 --sent 2>"$TMP/s1" >/dev/null || fail "get id"
fw_client get --op list --count 7 --repeat 10 --sent 2>"$TMP/s2" >/dev/null || fail "get list"
# one datagram to a port nobody serves: drops_total{reason="udp_port"}
ip netns exec "$NS" "$PY" -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"x"*24, ("10.77.0.2", 4243))'
s1=$(sed -n 's/^sent=//p' "$TMP/s1")
s2=$(sed -n 's/^sent=//p' "$TMP/s2")
sleep 0.2
m_scrape "$TMP/m1"
m_promtool "$TMP/m1"

L='lcore="0",worker="5"'
m_delta flakewire_requests_total "{$L,op=\"id\"}" "$s1"
m_delta flakewire_requests_total "{$L,op=\"list\"}" "$s2"
m_delta flakewire_replies_total "{$L,status=\"ok\"}" $((s1 + s2))
m_delta flakewire_ids_total "{$L}" $((s1 + 7 * s2))
m_delta flakewire_drops_total "{$L,reason=\"udp_port\"}" 1
m_delta flakewire_rx_frames_total "{$L}" $((s1 + s2 + 1))
m_value flakewire_workers "" 1
m_value flakewire_mark_failing "" 0
m_value flakewire_worker_state "{$L,state=\"issuing\"}" 1
m_value flakewire_ready "" 1
# the probes on the same listener (issue 35)
probe=$(ip netns exec "$NS" curl -s -m 3 -w ' %{http_code}' http://127.0.0.1:9842/healthz)
[ "$probe" = "ok
 200" ] || fail "/healthz: '$probe'"
probe=$(ip netns exec "$NS" curl -s -m 3 -w ' %{http_code}' http://127.0.0.1:9842/readyz)
[ "$probe" = "ready: 1 of 1 workers issuing
 200" ] || fail "/readyz: '$probe'"
echo "ok   /healthz and /readyz answer 200 (1 lcore issuing)"
m_value flakewire_clock_flag '{flag="back_step"}' 0
m_value flakewire_build_info '{version="'"$FW_VERSION"'",responder="flakewire"}' 1
m_check "$TMP/m1" 'flakewire_mark_ahead_seconds > 0 and flakewire_mark_ahead_seconds <= 3.1' \
	"mark ahead of the clock by at most mark_ahead_ms"
m_check "$TMP/m1" 'flakewire_clock_tsc_hertz > 1e8' "TSC rate"
m_check "$TMP/m1" "flakewire_last_issued_timestamp_seconds{$L} > $(date +%s) - 60" \
	"last issued is recent"
# the HTTP thread is libmicrohttpd's, started from a control thread: never on
# the worker lcore's CPU (0) when there is another CPU
mhd=$(grep -l '^MHD' /proc/"$FW_PID"/task/*/comm | head -n 1)
[ -n "$mhd" ] || fail "no libmicrohttpd thread in flakewire"
cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "${mhd%/comm}/status")
echo "metrics thread $(cat "$mhd") runs on CPUs $cpus"
if [ "$(nproc)" -gt 1 ]; then
	"$PY" -c 'import sys,os; c=set(); [c.update(range(int(a), int(b or a) + 1)) for a, _, b in (x.partition("-") for x in sys.argv[1].split(","))]; sys.exit(0 in c)' "$cpus" ||
		fail "the metrics thread may run on the worker lcore's CPU 0 ($cpus)"
fi

# flakectl status reads the same endpoint: flakewire's clock line, OK
st=$(ip netns exec "$NS" "$FLAKECTL" status --interval 0) || fail "flakectl status exited $?: $st"
echo "$st"
grep -q '^clock *offset [-+]' <<<"$st" || fail "flakectl status shows no clock offset"
grep -q '^workers *1: 5 (lcore 0)$' <<<"$st" || fail "flakectl status worker line"
fw_stop TERM || fail "exit status $?"

# the mark cannot be persisted (state on a tmpfs remounted read-only): the
# gauge the FlakewireMarkFailing alert reads goes to 1, failures count, and
# flakectl status says CRITICAL (exit 2); back to 0 once it is writable
ST="$TMP/state"
mkdir -p "$ST"
mount -t tmpfs -o size=1m tmpfs "$ST" || fail "cannot mount a tmpfs"
trap 'umount -l "$ST" 2>/dev/null; fw_cleanup' EXIT
fw_start 0 --set state.file="$ST/mark" --set state.mark_ahead_ms=500 \
	--set metrics.listen=127.0.0.1:9842
mount -o remount,ro "$ST" || fail "remount ro"
sleep 1
m_scrape "$TMP/m1"
m_value flakewire_mark_failing "" 1
m_check "$TMP/m1" 'flakewire_mark_failures_total > 0 and flakewire_mark_ahead_seconds < 0.5' \
	"failures counted, the mark not extended"
ip netns exec "$NS" "$FLAKECTL" status --interval 0 >"$TMP/st"
rc=$?
cat "$TMP/st"
[ "$rc" -eq 2 ] && grep -q '^status *CRITICAL: the mark cannot be persisted' "$TMP/st" ||
	fail "flakectl status exit $rc while the mark cannot be persisted"
mount -o remount,rw "$ST" || fail "remount rw"
sleep 0.5
m_scrape "$TMP/m1"
m_value flakewire_mark_failing "" 0
fw_stop TERM || fail "exit status $?"

# off by default: nothing listens on 9842
fw_start 0
ip netns exec "$NS" curl -s -o /dev/null --max-time 2 "$URL" &&
	fail "something answers on 9842 with [metrics] listen unset"
fw_stop TERM || fail "exit status $?"
echo PASS
