#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# kill -9 at random points, ROUNDS times (default 8), while a client collects
# every ID; the responder restarts each time. Every fourth round kills it
# during its start (calibrating, writing the mark, opening the port) instead.
# No ID repeats across all restarts, each round's IDs are all above every
# earlier round's (the persisted reservation), and the mark file is never
# left unreadable nor pushed further ahead than one reservation (1 s).
# CRASH_SEED reproduces a run.
. "$(dirname "$0")/lib.sh"
ROUNDS=${ROUNDS:-8}
RANDOM=${CRASH_SEED:-$$}
echo "seed ${CRASH_SEED:-$$}, $ROUNDS rounds"
faults_setup crash
files=()
for r in $(seq "$ROUNDS"); do
	if [ $((r % 4)) -eq 0 ]; then
		d=$(rand_s 0 600)
		fw_launch --set state.mark_ahead_ms=1000
		sleep "$d"
		kill9
		echo "round $r: killed ${d} s into the start"
	else
		fw_start 0 --set state.mark_ahead_ms=1000
		load_then_kill9 "$r"
	fi
	mark_sane "$TMP/mark" || fail "round $r: the mark file is unreadable after kill -9"
	# a start reserves from the clock, not from the mark: crashes do not add up
	if [ -e "$TMP/mark" ]; then
		ahead=$(($("$FLAKECTL" mark "$TMP/mark" | awk '{print $3}') - $(now_ms)))
		[ "$ahead" -le 1500 ] || fail "round $r: the mark is $ahead ms ahead of the clock"
	fi
	grep -q "mark: cannot read" "$TMP/fw.log" && fail "round $r: mark unreadable at start"
done
[ "${#files[@]}" -ge $((ROUNDS / 2)) ] || fail "only ${#files[@]} rounds got IDs"
total=$($FC rounds "${files[@]}") || fail "a duplicate, or a round's IDs not above an earlier round's"
echo "PASS: $ROUNDS kill -9 rounds, $total IDs, no duplicate, every round above the ones before"
