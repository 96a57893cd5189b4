#!/usr/bin/env bash
# flakectl bench learns the layout with one INFO before the load starts.
# That set-up request must not be bound by --timeout, which is the wait for
# each request of the load: on a busy machine the first reply of a fresh
# client can take longer than a short --timeout (the soak and the fault
# tests run bench with --timeout 200), and bench gave up before it started.
# Here a UDP relay in front of flakesock holds the first datagram 600 ms.
# usage: test_bench_probe.sh PATH/TO/flakectl PATH/TO/flakesock
set -u
fc=${1:?usage: test_bench_probe.sh FLAKECTL FLAKESOCK}
fsock=${2:?usage: test_bench_probe.sh FLAKECTL FLAKESOCK}
. "$(dirname "$0")/lib.sh"
pids=()
cleanup() {
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

port_busy() { ss -Hunl "sport = :$1" 2>/dev/null | grep -q .; }
free_port() {
	local p i
	for ((i = 0; i < 50; i++)); do
		p=$((20000 + RANDOM % 30000))
		port_busy "$p" || port_busy $((p + 1)) || { echo "$p"; return 0; }
	done
	return 1
}

port=$(free_port) || { fail "a free UDP port" "none found"; finish; }
relay=$((port + 1))
timeout 60 "$fsock" --listen 127.0.0.1 --set "net.udp_port=$port" --set stats.interval_s=0 \
	--set "state.file=$tmp/mark" --set "state.lock_dir=$tmp/locks" --set clock.calibrate_ms=200 \
	>"$tmp/sock.log" 2>&1 &
pids+=($!)
# the relay: every datagram to $relay goes to flakesock and back; the first is held 600 ms
timeout 60 /usr/bin/python3 - "$relay" "$port" >"$tmp/relay.log" 2>&1 <<'PY' &
import select, socket, sys, time
relay, port = int(sys.argv[1]), int(sys.argv[2])
front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
front.bind(("127.0.0.1", relay))
back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
back.connect(("127.0.0.1", port))
client, first = None, True
print("ready", flush=True)
while True:
    r, _, _ = select.select([front, back], [], [])
    if front in r:
        data, client = front.recvfrom(2048)
        if first:
            first = False
            time.sleep(0.6)
        back.send(data)
    if back in r:
        data = back.recv(2048)
        if client:
            front.sendto(data, client)
PY
pids+=($!)
for _ in $(seq 100); do
	timeout 5 "$fc" info --server "127.0.0.1:$port" --timeout 200 >/dev/null 2>&1 &&
		grep -q ready "$tmp/relay.log" && break
	sleep 0.1
done

out=$(timeout 30 "$fc" bench --server "127.0.0.1:$relay" --timeout 200 --duration 1 --json 2>"$tmp/err")
rc=$?
if [ "$rc" -eq 0 ] && grep -q '"answered"' <<<"$out"; then
	pass "bench --timeout 200 starts although its first reply takes 600 ms"
else
	fail "bench --timeout 200 starts although its first reply takes 600 ms" \
		"rc=$rc stderr: $(cat "$tmp/err")"
fi
finish
