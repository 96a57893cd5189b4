# SPDX-License-Identifier: BSD-3-Clause
# Helpers for the flakewire system tests: each test sources this, calls
# fw_setup NAME, starts the responder in its own network namespace with
# fw_start, and everything (responder, namespace, temp dir) is removed by the
# EXIT trap, also on failure. Every wait is bounded in count and time.
#
# Environment (set by meson): FLAKEWIRE (binary), WIRE_CLIENT (python client),
# FW_SRC (source root).

# shellcheck source=../../../scripts/lib/proc.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../../scripts/lib/proc.sh" # proc_lcores

PY=/usr/bin/python3
FW_PID=""
NS=""
TMP=""
FW_MAC=""

fail() {
	echo "FAIL: $*" >&2
	if [ -n "$TMP" ] && [ -f "$TMP/fw.log" ]; then
		echo "---- responder log (tail) ----" >&2
		tail -n 40 "$TMP/fw.log" >&2
	fi
	exit 1
}

# skip REASON: exit 77 (skipped); under CI=true a failure naming the reason.
skip() {
	if [ "${CI:-}" = true ]; then
		echo "FAIL: cannot run under CI=true: $*" >&2
		exit 1
	fi
	echo "SKIP: $*" >&2
	exit 77
}

fw_cleanup() {
	if [ -n "$FW_PID" ] && kill -0 "$FW_PID" 2>/dev/null; then
		kill -TERM "$FW_PID" 2>/dev/null
		for _ in $(seq 50); do
			kill -0 "$FW_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$FW_PID" 2>/dev/null
		wait "$FW_PID" 2>/dev/null
	fi
	if [ -n "$NS" ]; then
		ip netns del "$NS" 2>/dev/null
		rm -rf "/var/run/dpdk/$NS" # the EAL runtime dir of --file-prefix $NS
	fi
	[ -n "$TMP" ] && rm -rf "$TMP"
	return 0
}

# fw_setup NAME: checks the prerequisites, creates the namespace and temp dir.
fw_setup() {
	[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, TAP)"
	[ -c /dev/net/tun ] || skip "/dev/net/tun missing"
	[ -x "$FLAKEWIRE" ] || fail "FLAKEWIRE=$FLAKEWIRE is not executable"
	[ -x "$PY" ] || skip "$PY missing"
	NS="fw-$1-$$"
	TMP=$(mktemp -d "/tmp/fw-$1.XXXXXX")
	trap fw_cleanup EXIT
	ip netns add "$NS" || fail "cannot create netns $NS"
	ip -n "$NS" link set lo up
	# no IPv6 chatter on fw0: the drop counters must match what the test sends
	ip netns exec "$NS" sysctl -qw net.ipv6.conf.default.disable_ipv6=1 \
		net.ipv6.conf.all.disable_ipv6=1 >/dev/null 2>&1
}

# fw_start LCORES [flakewire options...]: starts the responder in $NS with its
# state in $TMP/mark and its worker-ID locks in $TMP/locks (not the host-wide
# /run/lock/flakewire: tests run side by side, each with worker ID 0), gives
# fw0 10.77.0.1/24 and waits until it answers ping. Its lcores sleep when
# idle ([power] idle = $FW_TEST_IDLE, default sleep: a test that waits holds
# no core, so tests run side by side); the tests of the datapath itself set
# FW_TEST_IDLE=busy, the production default. Its lcores may run on any CPU
# (proc_lcores: tests run side by side); FW_TEST_PIN=1 pins them as
# production does (-l), for a test of what pinning implies.
fw_start() {
	local lcores=$1 eal
	shift
	: >"$TMP/fw.log"
	if [ -n "${FW_TEST_PIN:-}" ]; then
		eal=(-l "$lcores")
	else
		eal=(--lcores "$(proc_lcores "$lcores")")
	fi
	ip netns exec "$NS" "$FLAKEWIRE" "${eal[@]}" --no-huge --no-pci -m 256 \
		--file-prefix "$NS" -- \
		--set state.file="$TMP/mark" --set state.lock_dir="$TMP/locks" \
		--set clock.calibrate_ms=200 --set stats.interval_s=0 \
		--set "power.idle=${FW_TEST_IDLE:-sleep}" "$@" >>"$TMP/fw.log" 2>&1 &
	FW_PID=$!
	local ok=""
	for _ in $(seq 100); do
		if ip -n "$NS" link show fw0 >/dev/null 2>&1 && grep -q "running on" "$TMP/fw.log"; then
			ok=1
			break
		fi
		kill -0 "$FW_PID" 2>/dev/null || fail "flakewire exited during start"
		sleep 0.1
	done
	[ -n "$ok" ] || fail "flakewire did not come up within 10 s"
	ip -n "$NS" addr add 10.77.0.1/24 dev fw0 2>/dev/null
	ip -n "$NS" link set fw0 up
	ok=""
	for _ in $(seq 20); do
		if ip netns exec "$NS" ping -c 1 -W 1 10.77.0.2 >/dev/null 2>&1; then
			ok=1
			break
		fi
		sleep 0.2
	done
	[ -n "$ok" ] || fail "no ping reply from 10.77.0.2"
	FW_MAC=$(sed -n 's/.*port0: .* MAC \([0-9A-Fa-f:]*\) .*/\1/p' "$TMP/fw.log" | tail -n 1)
}

# fw_stop SIGNAL: stops the responder, returns its exit status.
fw_stop() {
	local sig=${1:-TERM} rc
	kill -"$sig" "$FW_PID" 2>/dev/null
	for _ in $(seq 100); do
		kill -0 "$FW_PID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$FW_PID" 2>/dev/null; then
		kill -KILL "$FW_PID"
		wait "$FW_PID" 2>/dev/null
		FW_PID=""
		fail "flakewire did not stop within 10 s of SIG$sig"
	fi
	wait "$FW_PID"
	rc=$?
	FW_PID=""
	return $rc
}

# fw_client ARGS...: the python protocol client, from inside the namespace.
fw_client() {
	ip netns exec "$NS" "$PY" "$WIRE_CLIENT" --server 10.77.0.2:4242 "$@"
}

# fw_tel COMMAND: one telemetry command, JSON on stdout.
fw_tel() {
	echo "$1" | "$PY" /usr/bin/dpdk-telemetry.py -f "$NS" 2>/dev/null | grep '^{' | tail -n 1
}

# fw_json JSON PATH: a value from JSON, PATH like '["/flakewire/stats"]["rx"]'.
fw_json() {
	"$PY" -c 'import json,sys; print(eval("json.loads(sys.argv[1])" + sys.argv[2]))' "$1" "$2"
}
