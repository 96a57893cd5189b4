#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# flakesock (kernel sockets, 2 worker threads): kill -9 at random points,
# ROUNDS times (default 8), while a client collects every ID, restarting
# each time; every fourth round kills it during its start. No duplicate
# across restarts, each round above every earlier one, mark file never
# unreadable. CRASH_SEED reproduces a run.
. "$(dirname "$0")/lib.sh"
[ -x "$FLAKESOCK" ] || fail "FLAKESOCK=$FLAKESOCK is not executable"
ROUNDS=${ROUNDS:-8}
RANDOM=${CRASH_SEED:-$$}
echo "seed ${CRASH_SEED:-$$}, $ROUNDS rounds"
faults_setup crashsock
SERVER=127.0.0.1:4242

sock_launch() {
	ip netns exec "$NS" "$FLAKESOCK" --listen 127.0.0.1 --threads 2 --set id.workers=1,2 \
		--set state.file="$TMP/mark" --set state.lock_dir="$TMP/locks" --set stats.interval_s=0 \
		--set state.mark_ahead_ms=1000 >>"$TMP/sock.log" 2>&1 &
	FW_PID=$!
	FAULT_PIDS+=("$FW_PID")
}
sock_up() { ip netns exec "$NS" "$FLAKECTL" info --server "$SERVER" --timeout 100 >/dev/null 2>&1; }

files=()
for r in $(seq "$ROUNDS"); do
	if [ $((r % 4)) -eq 0 ]; then
		d=$(rand_s 0 150)
		sock_launch
		sleep "$d"
		kill9
		echo "round $r: killed ${d} s into the start"
	else
		sock_launch
		ok=""
		for _ in $(seq 100); do
			sock_up && ok=1 && break
			sleep 0.1
		done
		[ -n "$ok" ] || fail "round $r: flakesock did not answer: $(tail -n 5 "$TMP/sock.log")"
		load_then_kill9 "$r"
	fi
	mark_sane "$TMP/mark" || fail "round $r: the mark file is unreadable after kill -9"
done
[ "${#files[@]}" -ge $((ROUNDS / 2)) ] || fail "only ${#files[@]} rounds got IDs"
total=$($FC rounds "${files[@]}") || fail "a duplicate, or a round's IDs not above an earlier round's"
echo "PASS: flakesock, $ROUNDS kill -9 rounds, $total IDs, no duplicate, every round above the ones before"
