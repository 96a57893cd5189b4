#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# dpdk-telemetry.py returns the /flakewire/ counters and they match what the
# test sent: requests by op, IDs, echo replies; /flakewire/clock and
# /flakewire/lcores answer.
. "$(dirname "$0")/lib.sh"
[ -x /usr/bin/dpdk-telemetry.py ] || skip "dpdk-telemetry.py missing (dpdk package)"
fw_setup telemetry
fw_start 0 --set id.worker_base=5
ip -n "$NS" neigh replace 10.77.0.2 lladdr "$FW_MAC" dev fw0 nud permanent

stat() { fw_json "$1" "[\"/flakewire/stats\"][\"$2\"]"; }
b=$(fw_tel /flakewire/stats) || fail "telemetry"
[ -n "$b" ] || fail "no answer from dpdk-telemetry.py -f $NS"

fw_client get --op id --repeat 25 --sent 2>"$TMP/s1" >/dev/null || fail "get id"
fw_client get --op list --count 7 --repeat 10 --sent 2>"$TMP/s2" >/dev/null || fail "get list"
ip netns exec "$NS" ping -c 4 -i 0.2 -W 1 10.77.0.2 >/dev/null || fail "ping"
s1=$(sed -n 's/^sent=//p' "$TMP/s1")
s2=$(sed -n 's/^sent=//p' "$TMP/s2")
a=$(fw_tel /flakewire/stats) || fail "telemetry"
echo "$a"

check() { # name expected
	local d=$(($(stat "$a" "$1") - $(stat "$b" "$1")))
	echo "$1: expected $2, counted $d"
	[ "$d" -eq "$2" ] || fail "$1 moved by $d, expected $2"
}
check op_id "$s1"
check op_list "$s2"
check requests $((s1 + s2))
check st_ok $((s1 + s2))
check ids $((s1 + 7 * s2))
check icmp 4
check rx $((s1 + s2 + 4))
check tx $((s1 + s2 + 4))

l=$(fw_tel /flakewire/lcores) || fail "lcores"
[ "$(fw_json "$l" '["/flakewire/lcores"]["lcore0"]["worker"]')" -eq 5 ] || fail "lcore0 worker"
c=$(fw_tel /flakewire/clock) || fail "clock"
echo "$c"
hz=$(fw_json "$c" '["/flakewire/clock"]["hz"]')
[ "$hz" -gt 100000000 ] || fail "clock hz $hz"
mark=$(fw_json "$c" '["/flakewire/clock"]["mark_unix_ms"]')
now=$(date +%s%3N)
[ "$mark" -gt "$now" ] || fail "mark $mark is not ahead of now $now"
fw_stop TERM || fail "exit status $?"

# A stop while telemetry is read (an exporter polling): DPDK 22.11's
# telemetry threads outlive rte_eal_cleanup(), so a command answered during
# the stop read freed lcores and flakewire died of SIGSEGV at exit. Each
# round: a client sends commands back to back through the stop; flakewire
# must exit 0, and the client must have been answered up to the stop.
hammer() { # OUT: answers counted (written atomically); ends when the socket goes, or after 20 s
	"$PY" - "/var/run/dpdk/$NS/dpdk_telemetry.v2" "$1" 2>"$1.err" <<'PY' &
import os, socket, sys, time
path, out = sys.argv[1], sys.argv[2]
n, end = 0, time.monotonic() + 20
def put():
    with open(out + ".tmp", "w") as f:
        f.write("%d\n" % n)
    os.replace(out + ".tmp", out)
cmds = [b"/flakewire/lcores", b"/flakewire/stats", b"/flakewire/clock"]
s = None
while time.monotonic() < end:
    try:
        if s is None:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.connect(path)
            s.recv(4096)
        s.send(cmds[n % 3])
        if not s.recv(65536):
            raise OSError("closed")
        n += 1
        if n % 50 == 0:
            put()
    except OSError as e:
        # before 200 answers flakewire is up (a refused first connect is a
        # socket not listening yet): connect again; after, this is the stop
        if n >= 200:
            break
        print("telemetry: %s (after %d answers)" % (e, n), file=sys.stderr)
        s = None
        time.sleep(0.05)
put()
PY
	HAMMER_PID=$!
}
answers() { cat "$TMP/hammer" 2>/dev/null || echo 0; }
for round in 1 2 3 4 5 6; do
	fw_start 0 --set id.worker_base=5
	echo 0 >"$TMP/hammer"
	hammer "$TMP/hammer"
	for _ in $(seq 200); do
		[ "$(answers)" -ge 200 ] && break
		sleep 0.05
	done
	[ "$(answers)" -ge 200 ] ||
		fail "round $round: telemetry did not answer 200 commands in 10 s: $(tail -n 3 "$TMP/hammer.err")"
	fw_stop TERM
	rc=$?
	wait "$HAMMER_PID"
	echo "round $round: $(answers) telemetry answers up to the stop ($(wc -l <"$TMP/hammer.err") connects retried), exit status $rc"
	[ "$rc" -eq 0 ] || fail "round $round: flakewire exited $rc when stopped while telemetry was read"
done
echo PASS
