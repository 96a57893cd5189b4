#!/usr/bin/env bash
# flakesock on the loopback of a namespace of its own: flakectl get (single,
# list, range), info, two concurrent bench clients with no duplicate across
# them, and restarts (SIGTERM, SIGKILL) that only ever give larger IDs.
# usage: test_flakesock.sh FLAKESOCK FLAKECTL CLIENT_EXAMPLE
set -u
FLAKESOCK=$1
FLAKECTL=$2
EXAMPLE=$3
. "$(dirname "$0")/../lib.sh"
sys_init sock

PORT=4242
SERVER=127.0.0.1:$PORT
STATE=$SYS_TMP/mark
start_sock() {
	sys_start "$SYS_TMP/sock.log" "$FLAKESOCK" --listen 127.0.0.1 --threads 2 \
		--set id.workers=1,2 --set "state.file=$STATE" --set stats.interval_s=0 \
		--set state.mark_ahead_ms=1000
	SOCK_PID=$SYS_LAST_PID
	sys_wait_for 10 sys_in_ns "$FLAKECTL" info --server "$SERVER" --timeout 100
}
ctl() { sys_in_ns "$FLAKECTL" "$@" --server "$SERVER"; }

# --check-config (issue 27): OK on the defaults; an error names key, value and range
check "--check-config accepts the defaults" "$FLAKESOCK" --check-config
"$FLAKESOCK" --check-config --set id.worker_bits=99 >/dev/null 2>"$SYS_TMP/cc.err"
check "--check-config refuses a value out of range (exit 2)" test $? -eq 2
check "--check-config names the key, the value and the range" \
	grep -q "worker_bits = 99: out of range (0-16)" "$SYS_TMP/cc.err"

# issue 38: the configuration in effect, loadable back (flakesock had no such option)
"$FLAKESOCK" --set id.worker_base=7 --set net.trusted=10.0.0.0/8 --print-config >"$SYS_TMP/eff.ini"
check "--print-config shows a --set value" grep -qx 'worker_base = 7' "$SYS_TMP/eff.ini"
check "--print-config shows no [port0] (flakewire's)" sh -c "! grep -q '^\[port' '$SYS_TMP/eff.ini'"
"$FLAKESOCK" --config "$SYS_TMP/eff.ini" --print-config >"$SYS_TMP/eff2.ini"
check "--print-config output loads back the same" cmp -s "$SYS_TMP/eff.ini" "$SYS_TMP/eff2.ini"

check "flakesock starts and answers info" start_sock
ctl info >"$SYS_TMP/info" 2>&1
check "info reports the layout" grep -q "41/0/10/12\|41 *0 *10 *12\|time_bits.*41" "$SYS_TMP/info"

ctl get >"$SYS_TMP/one"
check "get prints one ID" test "$(wc -l <"$SYS_TMP/one")" -eq 1
now_ms=$(date +%s%3N)
id_ms=$(( ($(cat "$SYS_TMP/one") >> 22) + 1767225600000 ))
check "the ID decodes to within 2 s of the system clock" \
	test $((now_ms - id_ms)) -lt 2000 -a $((id_ms - now_ms)) -lt 2000

ctl get -n 500 >"$SYS_TMP/list"
check "get -n 500 gives 500 IDs" test "$(wc -l <"$SYS_TMP/list")" -eq 500
check "a list from one worker increases" ids_increasing "$SYS_TMP/list"

ctl get -n 10000 --range >"$SYS_TMP/range" 2>"$SYS_TMP/range.err" || cat "$SYS_TMP/range.err"
check "get --range -n 10000 gives 10000 unique IDs" \
	test "$(sort -u "$SYS_TMP/range" | wc -l)" -eq 10000

sys_in_ns "$EXAMPLE" "$SERVER" >"$SYS_TMP/example"
three_increasing() { [ "$(wc -l <"$1")" -eq 3 ] && ids_increasing "$1"; }
check "the README's client example prints 3 increasing IDs" three_increasing "$SYS_TMP/example"
cat "$SYS_TMP/example" >>"$SYS_TMP/range"

# Source policy: a request from a reflector's source port (DNS, 53) gets no
# answer; the same request from an ordinary port does.
from_port() {
	sys_in_ns /usr/bin/python3 - "$1" <<'PY'
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.settimeout(0.5)
s.sendto(struct.pack(">HBBBBHQHHI", 0x464B, 1, 1, 0, 0, 1, 7, 0, 0, 0), ("127.0.0.1", 4242))
try:
    s.recvfrom(2048)
    print("answered")
except socket.timeout:
    print("silent")
PY
}
check "a request from source port 53 (a reflector) is not answered" test "$(from_port 53)" = silent
check "the same request from port 40053 is answered" test "$(from_port 40053)" = answered

# Two clients at once, every ID kept: none may repeat across them.
sys_in_ns "$FLAKECTL" bench --server "$SERVER" --duration 5 --requests 40000 --concurrency 2 --out "$SYS_TMP/b1" >"$SYS_TMP/bench1" 2>&1 &
b1=$!
sys_in_ns "$FLAKECTL" bench --server "$SERVER" --duration 5 --requests 2000 --count 50 --out "$SYS_TMP/b2" >"$SYS_TMP/bench2" 2>&1 &
b2=$!
wait $b1; rc1=$?
wait $b2; rc2=$?
check "bench client 1 saw no duplicate or order violation" test $rc1 -eq 0
check "bench client 2 saw no duplicate or order violation" test $rc2 -eq 0
cat "$SYS_TMP/b1" "$SYS_TMP/b2" "$SYS_TMP/one" "$SYS_TMP/list" "$SYS_TMP/range" >"$SYS_TMP/all"
check "no duplicate across both bench clients and earlier gets" ids_unique "$SYS_TMP/all"
# SO_REUSEPORT hashes each client's 4-tuple to one worker: 24 clients with
# their own source ports all landing on one of two workers has odds 2^-23.
for _ in $(seq 24); do ctl get; done >"$SYS_TMP/spread"
check "both workers answer (SO_REUSEPORT spreads clients)" \
	test "$(/usr/bin/python3 -c 'import sys; print(len({(int(l)>>12)&1023 for l in open(sys.argv[1])}))' "$SYS_TMP/spread")" -eq 2
cat "$SYS_TMP/spread" >>"$SYS_TMP/all"
check "still no duplicate" ids_unique "$SYS_TMP/all"

# Restart after SIGTERM: everything after is above everything before.
sys_stop "$SOCK_PID" TERM
check "SIGTERM exits 0" test $? -eq 0
check "the mark file exists after a clean stop" test -s "$STATE"
check "restart after SIGTERM" start_sock
ctl get -n 100 >"$SYS_TMP/after_term"
check "IDs after a SIGTERM restart are all larger" ids_all_above "$SYS_TMP/all" "$SYS_TMP/after_term"

# Restart after SIGKILL: the reserved mark (1 s ahead) keeps IDs above.
ctl get -n 100 >"$SYS_TMP/before_kill"
sys_stop "$SOCK_PID" KILL
check "restart after SIGKILL" start_sock
got=""
for _ in $(seq 40); do
	if ctl get -n 100 >"$SYS_TMP/after_kill" 2>/dev/null && [ -s "$SYS_TMP/after_kill" ]; then got=1; break; fi
	sleep 0.1
done
check "IDs are issued again after a SIGKILL restart" test -n "$got"
cat "$SYS_TMP/all" "$SYS_TMP/after_term" "$SYS_TMP/before_kill" >"$SYS_TMP/all2"
check "IDs after a SIGKILL restart are all larger" ids_all_above "$SYS_TMP/all2" "$SYS_TMP/after_kill"

# A corrupt state file: refuse to start, naming the file.
sys_stop "$SOCK_PID" TERM
echo garbage >"$STATE"
sys_in_ns "$FLAKESOCK" --listen 127.0.0.1 --set "state.file=$STATE" >"$SYS_TMP/corrupt.log" 2>&1
rc=$?
check "a corrupt state file stops the start" test $rc -ne 0
check "the error names the state file" grep -q "$STATE" "$SYS_TMP/corrupt.log"

sys_done
