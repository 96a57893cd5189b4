#!/usr/bin/env bash
# Shared helpers for system tests. Source it, then call sys_init NAME.
# Every test gets its own network namespace and temp dir; sys_cleanup (on
# EXIT) stops the processes it started (by PID) and removes both, also when
# the test fails. Processes are stopped and waited for by
# scripts/lib/proc.sh, as in every script.

# shellcheck source=../../scripts/lib/proc.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/proc.sh"

SYS_PIDS=()
SYS_NS=""
SYS_TMP=""
SYS_FAILS=0
SYS_CHECKS=0

# sys_skip REASON: the test cannot run here (exit 77, counted as skipped);
# under CI=true a missing capability is a failure naming it (exit 1).
sys_skip() {
	if [ "${CI:-}" = true ]; then
		echo "FAIL: cannot run under CI=true: $*"
		exit 1
	fi
	echo "SKIP: $*"
	exit 77
}

# sys_kill_wait PID [SIGNAL] [SECONDS]: signals PID (TERM), waits for it at
# most SECONDS (10), then SIGKILLs it; reaps it and returns its exit status
# (137 when it needed the KILL). Never waits unbounded. (proc_stop)
sys_kill_wait() { proc_stop "$@"; }

sys_cleanup() {
	local pid
	for pid in "${SYS_PIDS[@]}"; do
		kill -0 "$pid" 2>/dev/null && sys_kill_wait "$pid" TERM 5
	done
	[ -n "$SYS_NS" ] && ip netns del "$SYS_NS" 2>/dev/null
	if [ -n "$SYS_TMP" ]; then
		# what a test mounted under its directory (a store's tmpfs), deepest first
		findmnt -rn -o TARGET | grep -F "$SYS_TMP/" | sort -r | while read -r m; do
			umount -l "$m" 2>/dev/null
		done
		rm -rf "$SYS_TMP"
	fi
	return 0
}

# sys_init NAME: checks root, creates namespace "fwt-NAME-$$" with lo up and a temp dir.
sys_init() {
	[ "$(id -u)" -eq 0 ] || sys_skip "needs root (network namespaces)"
	command -v ip >/dev/null || sys_skip "iproute2 missing"
	SYS_NS="fwt-$1-$$"
	SYS_TMP=$(mktemp -d "/tmp/fwt-$1.XXXXXX")
	trap sys_cleanup EXIT
	trap 'exit 1' INT TERM
	ip netns add "$SYS_NS" || sys_skip "cannot create a network namespace"
	ip -n "$SYS_NS" link set lo up
}

# sys_own_ns NAME SCRIPT [ARGS...]: runs the calling script (SCRIPT, its
# "$0") again inside a namespace of its own, made by sys_init NAME, and exits
# with its status; in that second run it returns at once. For a test that
# starts servers on loopback and talks to them from the same shell: its
# ports and the servers' are its own, whatever runs beside it (issue 34).
sys_own_ns() {
	[ -n "${SYS_OWN_NS:-}" ] && return 0
	local name=$1 rc
	shift
	sys_init "$name"
	SYS_OWN_NS=$SYS_NS ip netns exec "$SYS_NS" "$BASH" "$@"
	rc=$?
	exit "$rc"
}

# sys_in_ns CMD...: runs a command inside the test namespace.
sys_in_ns() {
	ip netns exec "$SYS_NS" "$@"
}

# sys_start LOG CMD...: starts CMD in the namespace in the background; sets SYS_LAST_PID.
sys_start() {
	local log=$1
	shift
	ip netns exec "$SYS_NS" "$@" >"$log" 2>&1 &
	SYS_LAST_PID=$!
	SYS_PIDS+=("$SYS_LAST_PID")
}

# sys_stop PID [SIGNAL]: signals PID and waits for it to exit (SIGKILL after
# 10 s); returns its status.
sys_stop() {
	sys_kill_wait "$1" "${2:-TERM}" 10
}

# sys_wait_for SECONDS CMD...: retries CMD every 0.1 s until it succeeds or
# time runs out. (proc_wait_for)
sys_wait_for() { proc_wait_for "$@"; }

# check NAME CMD...: runs one assertion, prints ok/FAIL.
check() {
	local name=$1
	shift
	SYS_CHECKS=$((SYS_CHECKS + 1))
	if "$@"; then
		echo "ok   $name"
	else
		echo "FAIL $name"
		SYS_FAILS=$((SYS_FAILS + 1))
	fi
}

# sys_done: exit status of the test from the checks made.
sys_done() {
	echo "$((SYS_CHECKS - SYS_FAILS))/$SYS_CHECKS checks passed"
	[ "$SYS_FAILS" -eq 0 ]
}

# Assertions over files of decimal IDs, one per line.
ids_unique() { [ -s "$1" ] && [ -z "$(sort "$1" | uniq -d | head -1)" ]; }
ids_increasing() { /usr/bin/python3 -c 'import sys; v=[int(l) for l in open(sys.argv[1])]; sys.exit(0 if v and all(a<b for a,b in zip(v,v[1:])) else 1)' "$1"; }
ids_all_above() { /usr/bin/python3 -c 'import sys; a=[int(l) for l in open(sys.argv[1])]; b=[int(l) for l in open(sys.argv[2])]; sys.exit(0 if a and b and min(b)>max(a) else 1)' "$1" "$2"; }
