# SPDX-License-Identifier: BSD-3-Clause
# Helpers sourced by the ops tests (tests/ops/test_*.sh). The sourcing script
# defines fail MESSAGE (prints it, exits 1) before calling them.

# need TOOL PACKAGE: returns when TOOL is on PATH. Otherwise a failure naming
# the package under CI=true, a skip (exit 77) elsewhere.
need() {
	command -v "$1" >/dev/null && return 0
	[ "${CI:-}" = true ] && fail "$1 missing (apt-get install $2; scripts/install-deps.sh)"
	echo "SKIP: $1 missing (apt-get install $2)"
	exit 77
}

# ops_sweep_stale PREFIX: a run that meson killed (SIGKILL at its timeout)
# cannot clean up; its podman containers and network namespaces carry its PID
# (PREFIX<PID>-...). Removes those whose PID no longer runs, the processes
# left inside such a namespace (an etcd the run started) killed first, by PID.
# What belongs to a run still going is left alone. Prints what it removed.
ops_sweep_stale() {
	local prefix=$1 name pid p
	for name in $(podman ps -a --format '{{.Names}}' 2>/dev/null | grep -E "^$prefix[0-9]+-"); do
		pid=${name#"$prefix"}
		pid=${pid%%-*}
		[ -d "/proc/$pid" ] && continue
		echo "removing container $name (its run, PID $pid, is gone)"
		podman rm --force --time 0 "$name" >/dev/null 2>&1
	done
	for name in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$prefix[0-9]+-"); do
		pid=${name#"$prefix"}
		pid=${pid%%-*}
		[ -d "/proc/$pid" ] && continue
		echo "removing network namespace $name (its run, PID $pid, is gone)"
		for p in $(ip netns pids "$name" 2>/dev/null); do
			kill -KILL "$p" 2>/dev/null
		done
		ip netns del "$name" 2>/dev/null
	done
	return 0
}
