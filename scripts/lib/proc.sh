# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# The processes a test or a script starts, handled one way (sourced, never
# run; by scripts/lib/servers.sh, tests/system/lib.sh and the benchmarks):
# stopped by PID with every wait bounded, polled until ready within a bound,
# given a free loopback port.
#
#   proc_stop PID [SIGNAL] [SECONDS]
#       signals PID (TERM), waits for it at most SECONDS (10), then SIGKILLs
#       it; reaps it when it is our child. Returns its exit status (137 when
#       it needed the KILL; 127 for a process that is not our child, such as
#       a postmaster pg_ctl started). PROC_KILLED is 1 when it needed the KILL.
#   proc_stop_all SECONDS PID...
#       the same for several at once: all signalled first (TERM), so they
#       stop side by side, then each waited for as proc_stop does. Returns 0.
#   proc_wait_for SECONDS CMD...
#       runs CMD (output discarded) every 0.1 s until it succeeds; 1 when
#       SECONDS pass first.
#   proc_free_port [tcp|udp]
#       prints a port on 127.0.0.1 nothing uses (the kernel's pick; tcp by
#       default). Another process may take it before the caller binds it: a
#       test that fails to bind should say so.
#   proc_lcores LIST
#       EAL's --lcores value for an -l LIST ("0", "0,1", "0-1") with each
#       lcore free to run on any CPU: what tests and the nemesis give
#       flakewire. Tests run side by side, and two of them with lcores pinned
#       to the same CPU 0 shared it: the scheduler left one runnable lcore
#       off the CPU for up to 1.25 s (perf sched timehist, faults-clock-back-1h
#       beside faults-crash-loop), a stall no responder on a core of its own
#       sees. Production pins lcores (-l); benchmarks pin them with taskset.
#
# Safe under `set -e`: nothing here fails but the status a function returns
# (a caller with set -e writes `proc_stop PID || true` where it does not care).

PROC_KILLED=0

proc_stop() {
	local pid=$1 sig=${2:-TERM} secs=${3:-10} i
	PROC_KILLED=0
	kill -"$sig" "$pid" 2>/dev/null || true
	for ((i = 0; i < secs * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid" 2>/dev/null || true
		PROC_KILLED=1
	fi
	wait "$pid" 2>/dev/null
}

proc_stop_all() {
	local secs=$1 p
	shift
	for p in "$@"; do
		[ -z "$p" ] || kill -TERM "$p" 2>/dev/null || true
	done
	for p in "$@"; do
		[ -z "$p" ] || proc_stop "$p" TERM "$secs" || true
	done
}

proc_wait_for() {
	local secs=$1 i
	shift
	for ((i = 0; i < secs * 10; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

proc_free_port() {
	local type=STREAM
	[ "${1:-tcp}" = udp ] && type=DGRAM
	/usr/bin/python3 -c "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_$type)
s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"
}

proc_lcores() {
	local cpus="0-$(($(nproc) - 1))" out="" l x
	for l in $(tr ',' ' ' <<<"$1"); do
		[[ "$l" == *-* ]] && l=$(seq -s' ' "${l%-*}" "${l#*-}")
		for x in $l; do out="$out${out:+,}$x@($cpus)"; done
	done
	echo "$out"
}
