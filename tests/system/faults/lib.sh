# SPDX-License-Identifier: BSD-3-Clause
# Helpers for the fault tests: the flakewire helpers (fw_setup, fw_start,
# fw_stop, fw_tel, fw_json, fw_client; every process, namespace and temp dir
# removed on exit) plus the test clock, background bench clients and checks
# over the IDs they collected (faultcheck.py).
#
# Environment (set by meson): FLAKEWIRE, FLAKEWIRE_TESTCLOCK, FLAKECTL,
# FLAKESOCK, FLAKESOCK_TESTCLOCK, WIRE_CLIENT, FW_SRC, and RESPONDER:
# flakewire (default) or flakesock. Every test runs against either: with
# RESPONDER=flakesock, fw_start/fw_launch/resp_exec run flakesock (its
# threads stand for the lcores) listening on 10.77.0.2 in the namespace,
# and clock_get/stats_get read the status file flakesock-testclock writes
# (the keys of /flakewire/clock) instead of DPDK telemetry.
. "$(dirname "${BASH_SOURCE[0]}")/../flakewire/lib.sh"
RESPONDER=${RESPONDER:-flakewire}
case "$RESPONDER" in
flakewire | flakesock) ;;
*) fail "RESPONDER=$RESPONDER: flakewire or flakesock" ;;
esac

FC="$PY $(dirname "${BASH_SOURCE[0]}")/faultcheck.py"
SERVER=10.77.0.2:4242
FAULT_PIDS=()
FAULT_MOUNTS=()

faults_cleanup() {
	local p m
	for p in "${FAULT_PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	for m in "${FAULT_MOUNTS[@]}"; do
		umount -l "$m" 2>/dev/null
	done
	fw_cleanup
	return 0
}

# faults_setup NAME: fw_setup plus the cleanup of bench clients and mounts.
faults_setup() {
	[ -x "$FLAKECTL" ] || fail "FLAKECTL=$FLAKECTL is not executable"
	if [ "$RESPONDER" = flakesock ]; then
		[ -x "$FLAKESOCK" ] || fail "FLAKESOCK=$FLAKESOCK is not executable"
		# the test-clock build always: it writes the status file the tests
		# read (no fault without tc_use); the same objects as flakesock
		[ -x "${FLAKESOCK_TESTCLOCK:-}" ] || fail "flakesock-testclock not built (FLAKESOCK_TESTCLOCK=${FLAKESOCK_TESTCLOCK:-})"
		FLAKESOCK=$FLAKESOCK_TESTCLOCK
		FLAKEWIRE=$FLAKESOCK # fw_setup checks it is executable
		fw_setup "s$1"
		# the responder's address on the namespace's loopback
		ip -n "$NS" addr add 10.77.0.2/32 dev lo || fail "cannot add 10.77.0.2 in $NS"
	else
		fw_setup "$1"
	fi
	trap faults_cleanup EXIT
	trap 'exit 1' INT TERM
}

# tc_use: the next fw_start runs the test-clock build of the responder
# (flakewire-testclock, flakesock-testclock) with the fault file $TMP/clock
# (empty: no fault).
tc_use() {
	if [ "$RESPONDER" = flakesock ]; then
		: # faults_setup chose flakesock-testclock already
	else
		[ -x "${FLAKEWIRE_TESTCLOCK:-}" ] || fail "flakewire-testclock not built (FLAKEWIRE_TESTCLOCK=${FLAKEWIRE_TESTCLOCK:-})"
		FLAKEWIRE=$FLAKEWIRE_TESTCLOCK
	fi
	export FLAKEWIRE_TEST_CLOCK="$TMP/clock"
	: >"$TMP/clock"
}

# resp_cmd LCORES [options...]: sets the array RESP_CMD to the responder's
# command line in $NS with the tests' settings (state in $TMP/mark, worker-ID
# locks in $TMP/locks as fw_start's, 200 ms calibration (RESP_DEFAULTS=1:
# the defaults of lib/conf instead), no stats line, and
# flakewire's lcores asleep when idle as tests/system/flakewire/lib.sh's,
# FW_TEST_IDLE=busy for the production default); run it as "${RESP_CMD[@]}" >>"$TMP/fw.log"
# 2>&1 (in the background, $! is the responder's PID). LCORES: an EAL lcore
# list for flakewire; for flakesock "0" is one worker thread, "0-1" two.
resp_cmd() {
	local lcores=$1 cal=(--set clock.calibrate_ms=200)
	shift
	[ -n "${RESP_DEFAULTS:-}" ] && cal=()
	if [ "$RESPONDER" = flakesock ]; then
		local threads=1
		[[ "$lcores" == *-* ]] && threads=$((${lcores#*-} - ${lcores%-*} + 1))
		[[ "$lcores" == *,* ]] && threads=$(($(tr -cd , <<<"$lcores" | wc -c) + 1))
		RESP_CMD=(ip netns exec "$NS" env FLAKESOCK_TEST_STATUS="$TMP/status" "$FLAKESOCK"
			--listen 10.77.0.2 --threads "$threads"
			--set state.file="$TMP/mark" --set state.lock_dir="$TMP/locks"
			"${cal[@]}" --set stats.interval_s=0 "$@")
	else
		RESP_CMD=(ip netns exec "$NS" "$FLAKEWIRE" --lcores "$(proc_lcores "$lcores")" --no-huge --no-pci -m 256
			--file-prefix "$NS" --
			--set state.file="$TMP/mark" --set state.lock_dir="$TMP/locks"
			"${cal[@]}" --set stats.interval_s=0 \
			--set "power.idle=${FW_TEST_IDLE:-sleep}" "$@")
	fi
}

if [ "$RESPONDER" = flakesock ]; then
	# fw_start LCORES [options...]: flakesock in $NS; returns once it answers.
	fw_start() {
		: >"$TMP/fw.log"
		rm -f "$TMP/status"
		resp_cmd "$@"
		"${RESP_CMD[@]}" >>"$TMP/fw.log" 2>&1 &
		FW_PID=$!
		local i
		for ((i = 0; i < 100; i++)); do
			ip netns exec "$NS" "$FLAKECTL" info --server "$SERVER" --timeout 100 \
				>/dev/null 2>&1 && return 0
			kill -0 "$FW_PID" 2>/dev/null || fail "flakesock exited during start"
			sleep 0.1
		done
		fail "flakesock did not answer within 10 s"
	}
	# The test clock's status file (written every 100 ms) for /flakewire/clock.
	fw_tel() {
		local i
		for ((i = 0; i < 20; i++)); do
			[ -s "$TMP/status" ] && break
			sleep 0.1
		done
		[ -s "$TMP/status" ] || return 1
		$PY -c 'import json,sys; c=json.load(open(sys.argv[2])); print(json.dumps({sys.argv[1]: c}))' \
			"$1" "$TMP/status"
	}
fi

# tc_set LINE...: replaces the fault file in one rename (read every 10 ms).
tc_set() {
	printf '%s\n' "$@" >"$TMP/clock.new" && mv "$TMP/clock.new" "$TMP/clock"
	echo "fault: $*"
}

now_ms() { date +%s%3N; }

# bench_start NAME ARGS...: flakectl bench in the background; every ID to
# $TMP/NAME.ids (sorted), the JSON summary to $TMP/NAME.json. Sets BENCH_PID.
# Paced at BENCH_RATE requests a second in all (default 4000; 0: as fast as
# the replies come, the soak's load): a fault test needs IDs every
# millisecond or so around its fault, not a responder and a client each
# busy on a core. Unpaced, the fault tests but the soak took about 236
# CPU-seconds of the test command's 2 cores, paced 139 (issue 34).
BENCH_RATE=${BENCH_RATE:-4000}
bench_start() {
	local n=$1 pace=()
	shift
	[ "$BENCH_RATE" = 0 ] || pace=(--rate "$BENCH_RATE")
	ip netns exec "$NS" "$FLAKECTL" bench --server "$SERVER" --json --out "$TMP/$n.ids" \
		"${pace[@]}" "$@" >"$TMP/$n.json" 2>"$TMP/$n.err" &
	BENCH_PID=$!
	FAULT_PIDS+=("$BENCH_PID")
	# The machine's own pauses while bench runs (a shared VM's stolen time, a
	# loaded 2-core box): a process that sleeps 5 ms at a time writes the
	# longest it overslept, in ms, to $TMP/NAME.pause (see gap_limit).
	# (bounded: it ends with its parent, or after 15 minutes)
	$PY -c '
import os, sys, time
worst, path, parent = 0.0, sys.argv[1], os.getppid()
end = time.monotonic() + 900
while os.getppid() == parent and time.monotonic() < end:
    t = time.monotonic(); time.sleep(0.005); late = (time.monotonic() - t - 0.005) * 1000
    if late > worst:
        worst = late
        with open(path, "w") as f: f.write("%d\n" % worst)
' "$TMP/$n.pause" &
	PAUSE_PID=$!
	FAULT_PIDS+=("$PAUSE_PID")
}

# gap_limit NAME: the largest gap in bench NAME's IDs' times that is not a
# stall of the responder: 700 ms, plus the 1 s client timeout when bench
# counted one (a lost datagram's wait is the network's), plus the longest
# pause the machine itself took meanwhile (bench_start's probe: a responder
# that was not run cannot issue, whatever its clock policy).
gap_limit() {
	local limit=700 pause=0
	[ "$(bj "$1" '["timeouts"]')" -gt 0 ] && limit=1700
	[ -s "$TMP/$1.pause" ] && pause=$(cat "$TMP/$1.pause")
	echo $((limit + pause))
}

# bench_wait NAME: waits for the last bench_start; fails unless it wrote its
# summary. Returns bench's exit status (1 on a duplicate or order violation).
bench_wait() {
	wait "$BENCH_PID"
	local rc=$?
	kill "$PAUSE_PID" 2>/dev/null
	wait "$PAUSE_PID" 2>/dev/null
	[ -s "$TMP/$1.pause" ] && echo "bench $1: the machine paused up to $(cat "$TMP/$1.pause") ms meanwhile"
	[ -s "$TMP/$1.json" ] || fail "bench $1 wrote no summary: $(cat "$TMP/$1.err")"
	echo "bench $1: $(cat "$TMP/$1.json")"
	return $rc
}

# bench_clean NAME [--may-be-empty]: bench NAME saw no duplicate, order
# violation or invalid reply, and (unless told otherwise) got IDs.
bench_clean() {
	[ "$(bj "$1" '["duplicates"]')" -eq 0 ] && [ "$(bj "$1" '["order_violations"]')" -eq 0 ] &&
		[ "$(bj "$1" '["invalid"]')" -eq 0 ] && { [ -s "$TMP/$1.ids" ] || [ "${2:-}" = --may-be-empty ]; }
}

# bj NAME EXPR: a value from bench NAME's JSON, EXPR like '["status"]["ok"]'.
bj() { fw_json "$(cat "$TMP/$1.json")" "$2"; }

# clock_get: /flakewire/clock as one JSON object (offset_ns as a number).
clock_get() {
	local j
	j=$(fw_tel /flakewire/clock)
	[ -n "$j" ] || return 1
	$PY -c 'import json,sys; c=json.loads(sys.argv[1])["/flakewire/clock"]; c["offset_ns"]=int(c["offset_ns"]); print(json.dumps(c))' "$j"
}

# clock_until SECS PYEXPR: polls /flakewire/clock (as c) until PYEXPR holds;
# prints that sample, or fails the test after SECS with the last one.
clock_until() {
	local secs=$1 expr=$2 c="" i
	for ((i = 0; i < secs * 4; i++)); do
		c=$(clock_get) || { sleep 0.25; continue; }
		if $PY -c "import json,sys; c=json.loads(sys.argv[1]); sys.exit(0 if ($expr) else 1)" "$c"; then
			echo "$c"
			return 0
		fi
		sleep 0.25
	done
	fail "/flakewire/clock never satisfied: $expr (last: $c)"
}

# cj JSON KEY: one key of a clock_get object.
cj() { $PY -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

# stats_get KEY: one counter of /flakewire/stats (flakesock: gen_unsafe only).
stats_get() { fw_json "$(fw_tel /flakewire/stats)" "[\"/flakewire/stats\"][\"$1\"]"; }

# RESP: the responder's name as its log lines say it ("behind flakewire").
RESP=$RESPONDER

# reply_flags: the flags of an INFO reply (FW_WIRE_F_*).
reply_flags() { fw_client info | sed -n 's/^flags=//p'; }

# fw_launch [flakewire options...]: starts the responder as fw_start does but
# returns at once (to kill it at a random point of its start). Sets FW_PID.
fw_launch() {
	: >"$TMP/fw.log"
	resp_cmd 0 "$@"
	"${RESP_CMD[@]}" >>"$TMP/fw.log" 2>&1 &
	FW_PID=$!
}

# kill9: SIGKILL to the responder, reaped.
kill9() {
	kill -KILL "$FW_PID" 2>/dev/null
	wait "$FW_PID" 2>/dev/null
	FW_PID=""
}

# rand_ms LO HI: a random whole number of ms in [LO, HI], as seconds for sleep.
rand_s() {
	local ms=$(($1 + RANDOM % ($2 - $1 + 1)))
	printf '%d.%03d' $((ms / 1000)) $((ms % 1000))
}

# mark_sane FILE: the mark file is absent or reads back (never corrupt).
mark_sane() {
	[ ! -e "$1" ] || "$FLAKECTL" mark "$1" >/dev/null
}

# load_then_kill9 ROUND: a crash-loop round: bench under load, SIGKILL to
# the responder at a random point, checks what bench collected and appends
# its ID file (if any) to the caller's files array.
load_then_kill9() {
	local r=$1 d lo hi n i
	bench_start "r$r" --duration 2 --concurrency 2 --timeout 200
	# The random point is in the load, not in bench's set-up (its INFO for
	# the layout): a kill before that reply made bench exit with no summary
	# and failed the round (seen under load). Bench starts its load threads
	# once it has the layout: wait for them (bounded) before the delay.
	for ((i = 0; i < 100; i++)); do
		[ "$(ls "/proc/$BENCH_PID/task" 2>/dev/null | wc -l)" -gt 1 ] && break
		kill -0 "$BENCH_PID" 2>/dev/null || break
		sleep 0.05
	done
	d=$(rand_s 150 1600)
	sleep "$d"
	kill9
	bench_wait "r$r" >/dev/null
	# a round may end before the clock passed the last reservation: no IDs
	bench_clean "r$r" --may-be-empty || fail "round $r: $(cat "$TMP/r$r.json")"
	if [ -s "$TMP/r$r.ids" ]; then
		read -r lo hi n < <($FC span "$TMP/r$r.ids")
		echo "round $r: killed after ${d} s of load; $n IDs, times $lo..$hi"
		files+=("$TMP/r$r.ids")
	else
		echo "round $r: killed after ${d} s of load, still waiting for the clock to pass the mark ($(bj "r$r" '["status"]["retry-after"]') RETRY_AFTER)"
	fi
}
