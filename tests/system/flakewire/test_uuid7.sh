#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# UUID7 (op 5, issue 12) end to end, over both responders in one namespace:
# flakewire on TAP (10.77.0.2) and flakesock on the kernel side (10.77.0.1,
# port 4343). The client, flakectl, sends from 10.77.0.1: an untrusted source
# for both (only loopback is trusted). Checks: INFO advertises UUID7;
# flakectl get --uuid7 returns RFC 9562 UUIDv7 that strictly increase, carry
# the worker and the current time; UUIDs and IDs of one worker never share a
# (ms, sequence); an untrusted source never gets a reply larger than its
# request (unpadded: REFUSED; short padding: fewer UUIDs, PARTIAL).
. "$(dirname "$0")/lib.sh"
[ -x "$FLAKESOCK" ] || fail "FLAKESOCK=$FLAKESOCK is not executable"
fw_setup uuid7
fw_start 0 --set id.worker_base=5
SOCK_PID=""
sock_cleanup() {
	if [ -n "$SOCK_PID" ]; then
		kill -TERM "$SOCK_PID" 2>/dev/null
		wait "$SOCK_PID" 2>/dev/null
	fi
	fw_cleanup
}
trap sock_cleanup EXIT
ip netns exec "$NS" "$FLAKESOCK" --listen 10.77.0.1 --set net.udp_port=4343 \
	--set id.workers=9 --set "state.file=$TMP/sock-mark" --set "state.lock_dir=$TMP/locks" \
	--set stats.interval_s=0 \
	>"$TMP/sock.log" 2>&1 &
SOCK_PID=$!

fc() { ip netns exec "$NS" "$FLAKECTL" "$@"; }

for _ in $(seq 50); do
	fc info --server 10.77.0.1:4343 >/dev/null 2>&1 && break
	kill -0 "$SOCK_PID" 2>/dev/null || { cat "$TMP/sock.log" >&2; fail "flakesock exited"; }
	sleep 0.1
done

check_responder() {
	local name=$1 server=$2 worker=$3
	local out now_ms
	out=$(fc info --server "$server") || fail "$name: info"
	grep -qx 'features        0x1 (uuid7)' <<<"$out" || fail "$name: INFO features lacks UUID7: $out"

	# 500 UUIDs (6 UUID7 requests, padded), in issue order.
	fc get --uuid7 -n 500 --server "$server" >"$TMP/$name.uuids" || fail "$name: get --uuid7"
	[ "$(wc -l <"$TMP/$name.uuids")" -eq 500 ] || fail "$name: expected 500 UUIDs"
	grep -Evq '^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$' \
		"$TMP/$name.uuids" && fail "$name: a UUID is not canonical v7/variant 10 text"
	LC_ALL=C sort -c -u "$TMP/$name.uuids" 2>/dev/null ||
		fail "$name: UUIDs of one worker do not strictly increase in issue order"
	fc decode --json $(head -n 1 "$TMP/$name.uuids") $(tail -n 1 "$TMP/$name.uuids") \
		>"$TMP/$name.dec" || fail "$name: decode"
	grep -c "\"flakewire\":true,\"datacenter\":0,\"worker\":$worker," "$TMP/$name.dec" |
		grep -qx 2 || fail "$name: UUIDs do not carry worker $worker: $(cat "$TMP/$name.dec")"
	now_ms=$(($(date +%s%N) / 1000000))
	"$PY" - "$now_ms" "$TMP/$name.dec" <<'PYEOF' || fail "$name: UUID time is off"
import json, sys
now = int(sys.argv[1])
for line in open(sys.argv[2]):
    ms = json.loads(line)["unix_ms"]
    if abs(ms - now) > 5000:
        sys.exit(f"unix_ms {ms} is {ms - now} ms from the system clock")
PYEOF

	out=$(fc get --uuid7 -n 2 --json --server "$server") || fail "$name: get --uuid7 --json"
	[ "$(grep -c "^{\"uuid\":\"[0-9a-f-]\{36\}\",\"worker\":$worker,\"datacenter\":0,\"counter\":[0-9]*,\"time\":\"20" <<<"$out")" -eq 2 ] ||
		fail "$name: get --uuid7 --json: $out"

	# IDs and UUIDs of one worker, interleaved: no (ms, sequence) twice.
	{
		fc get -n 300 --server "$server" | fc decode --json
		fc get --uuid7 -n 300 --server "$server" | fc decode --json
		fc get -n 300 --server "$server" | fc decode --json
	} >"$TMP/$name.mix" || fail "$name: mixed IDs and UUIDs"
	"$PY" - "$TMP/$name.mix" <<'PYEOF' || fail "$name: an ID and a UUID share a (ms, sequence)"
import json, sys
keys = []
for line in open(sys.argv[1]):
    o = json.loads(line)
    keys.append((o["unix_ms"], o.get("sequence", o.get("counter"))))
if len(keys) != 900:
    sys.exit(f"{len(keys)} decoded, want 900")
if len(set(keys)) != len(keys):
    sys.exit("duplicate (ms, sequence)")
if keys != sorted(keys):
    sys.exit("(ms, sequence) not increasing in issue order")
PYEOF

	# Anti-amplification from an untrusted source: raw requests of every size.
	ip netns exec "$NS" "$PY" - "${server%:*}" "${server#*:}" <<'PYEOF' || fail "$name: amplification"
import socket, struct, sys
host, port = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("10.77.0.1", 0))
s.settimeout(2)
def ask(count, length, tag):
    req = struct.pack(">HBBBBHQHHI", 0x464B, 1, 5, 0, 0, count, tag, 0, 0, 0)
    s.sendto(req + bytes(length - 24), (host, port))
    while True:
        rep, _ = s.recvfrom(2048)
        if struct.unpack(">Q", rep[8:16])[0] == tag:
            return rep
tag = 1000
for length in list(range(24, 120, 3)) + [1464, 1472]:
    for count in (1, 2, 90):
        tag += 1
        rep = ask(count, length, tag)
        if len(rep) > length:
            sys.exit(f"UUID7 count {count}: {len(rep)}-byte reply to a {length}-byte request")
        status, flags, n = rep[4], rep[5], struct.unpack(">H", rep[6:8])[0]
        fit = min(count, (length - 24) // 16)
        if fit == 0:
            if status != 4 or len(rep) != 24:
                sys.exit(f"count {count}, {length} bytes: status {status}, want REFUSED")
        elif status != 0 or n != fit or len(rep) != 24 + 16 * fit:
            sys.exit(f"count {count}, {length} bytes: status {status} n {n}, want {fit} UUIDs")
        elif (fit < count) != bool(flags & 0x08):
            sys.exit(f"count {count}, {length} bytes: PARTIAL flag wrong ({flags:#x})")
for u in range(n):
    b = rep[24 + 16 * u: 40 + 16 * u]
    if b[6] >> 4 != 7 or b[8] >> 6 != 2:
        sys.exit("not version 7 / variant 10")
# count 0 and 91 are BAD_REQUEST, 24 bytes
for count in (0, 91):
    tag += 1
    rep = ask(count, 1464, tag)
    if rep[4] != 1 or len(rep) != 24:
        sys.exit(f"count {count}: status {rep[4]}, want BAD_REQUEST")
PYEOF
	echo "ok   $name: 500 UUIDs, 900 mixed, amplification bound held"
}

fc get --uuid7 --range --server 10.77.0.2:4242 >/dev/null 2>"$TMP/usage.err"
[ $? -eq 2 ] && grep -q -- "--range and --uuid7" "$TMP/usage.err" || fail "get --uuid7 --range is not a usage error"

check_responder flakewire 10.77.0.2:4242 5
check_responder flakesock 10.77.0.1:4343 9

fw_stop TERM || fail "flakewire exited with $? on SIGTERM"
echo "PASS: UUID7 over flakewire (TAP) and flakesock"
