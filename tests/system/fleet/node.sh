#!/usr/bin/env bash
# Probing a fleet test's nodes (flakesock on 127.0.0.1 in $SYS_NS) with
# fleetprobe.py, one set of verbs for every fleet test:
#
#   . node.sh
#   FP_ARGS=(...)              the probe's own arguments for this test (--sockets,
#                              --worker-bits); a call's later arguments override them
#   probe PORT [ARGS...]       one probe's summary line (ok=, workers=, ...)
#   field NAME                 a summary field, from stdin
#   workers PORT [ARGS...]     the worker IDs PORT served, comma-separated
#   until_ok SECS PORT [N]     waits until all N (8) sockets of a probe answered OK;
#                              prints the last summary when they did not
#   serves PORT N              waits (30 s) until PORT serves N worker IDs; SERVED: which
#   metric PORT NAME           NAME's value on 127.0.0.1:PORT/metrics
FP_PROBE="/usr/bin/python3 $(dirname "${BASH_SOURCE[0]}")/fleetprobe.py"
FP_ARGS=()
probe() { sys_in_ns $FP_PROBE --server "127.0.0.1:$1" "${FP_ARGS[@]}" "${@:2}"; }
field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p"; }
workers() { probe "$@" | field workers; }
until_ok() {
	local i out n=${3:-8}
	for ((i = 0; i < $1 * 4; i++)); do
		out=$(probe "$2" --sockets "$n")
		[ "$(echo "$out" | field ok)" = "$n" ] && return 0
		sleep 0.25
	done
	echo "  last: $out"
	return 1
}
serves() {
	SERVED=""
	for _ in $(seq 120); do
		SERVED=$(workers "$1")
		[ -n "$SERVED" ] && [ "$(echo "$SERVED" | tr ',' '\n' | wc -l)" = "$2" ] && return 0
		sleep 0.25
	done
	return 1
}
metric() { sys_in_ns curl -s "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n {print $2}'; }
