#!/usr/bin/env bash
# Sourced (not run) by scripts/bench/performance.sh, and by scripts/bench/power.sh for stop_pid:
# starting, bounding and stopping one memif pair, a system under test (SUT:
# dpdk-testpmd macswap or flakewire, memif client) and flakeload (memif
# server), each pinned to its own core and tracked by PID for the trap.
#
# The caller sets: TMP (scratch dir), PIDS (array), EAL (EAL arguments),
# SUT_CORE, LOAD_CORE, DURATION (s), TESTPMD, FLAKEWIRE, FLAKELOAD, PY,
# KEEP_LOGS and BENCH_NAME (prefix of messages).

# shellcheck source=proc.sh
. "$(dirname "${BASH_SOURCE[0]}")/proc.sh"

# stop_pid PID: SIGTERM, then SIGKILL after 10 s (a loaded machine slows a
# clean stop); STOP_RC gets its exit status, STOP_KILLED 1 when it took the
# KILL (proc_stop).
stop_pid() {
	STOP_RC=0
	proc_stop "$1" TERM 10 || STOP_RC=$?
	STOP_KILLED=$PROC_KILLED
}

# bench_cleanup: the EXIT trap's common part: every tracked process, the
# DPDK runtime directories of this script's file prefixes, the scratch dir.
bench_cleanup() {
	local pid
	for pid in "${PIDS[@]:-}"; do
		[ -n "$pid" ] && stop_pid "$pid"
	done
	PIDS=()
	# DPDK leaves its (empty) runtime directory per file prefix behind.
	rm -rf /var/run/dpdk/fwb-*-"$$"-* /var/run/dpdk/pktbench-* 2>/dev/null || true
	if [ "$KEEP_LOGS" = 1 ]; then
		rm -f "$TMP"/*.sock
		echo "$BENCH_NAME: logs kept in $TMP" >&2
	else
		rm -rf "$TMP"
	fi
}

# sut_cmd KIND SOCK SEQ EXTRA: the command line of the system under test
# (testpmd or flakewire) as memif client on SUT_CORE; EXTRA goes to flakewire.
sut_cmd() {
	local kind="$1" sock="$2" seq="$3" extra="$4"
	local dev="net_memif0,role=client,socket=$sock,socket-abstract=no"
	case "$kind" in
	testpmd)
		# lcore 0 (main, sleeps in the stats loop) and lcore 1 (forwards), one core
		echo "taskset -c $SUT_CORE $TESTPMD --lcores 0@$SUT_CORE,1@$SUT_CORE $EAL" \
			"--file-prefix fwb-tp-$$-$seq --vdev $dev -- --forward-mode=macswap" \
			"--auto-start --stats-period 1 --no-mlockall --nb-cores 1 --rxd 512 --txd 512" \
			"--burst 32 --total-num-mbufs 16384"
		;;
	flakewire)
		echo "taskset -c $SUT_CORE $FLAKEWIRE -l $SUT_CORE $EAL --file-prefix fwb-fw-$$-$seq --" \
			"--set port0.device=$dev --set port0.address=10.0.0.2" \
			"--set state.file=$TMP/mark-$seq --set state.lock_dir=$TMP/locks --set stats.interval_s=0" \
			"--set clock.calibrate_ms=200 $extra"
		;;
	esac
}

# load_cmd KIND SOCK SEQ JSON ARGS: flakeload as memif server on LOAD_CORE,
# single-ID requests from 16 clients; ARGS adds --rate/--window/--duration.
load_cmd() {
	local kind="$1" sock="$2" seq="$3" json="$4" args="$5" echo=""
	[ "$kind" = testpmd ] && echo="--expect-echo"
	echo "taskset -c $LOAD_CORE $FLAKELOAD -l $LOAD_CORE $EAL --file-prefix fwb-fl-$$-$seq --" \
		"--port net_memif0,role=server,socket=$sock,socket-abstract=no --dst-ip 10.0.0.2" \
		"--src-ip-base 10.0.0.10 --clients 16 --mix id:1 --pad --quiet $args $echo" \
		"--linger 30 --json $json"
}

# cpu_ticks PID: CPU_T = utime + stime of PID (all its threads) in clock
# ticks, 0 when it is gone. A builtin read: no process started per sample.
cpu_ticks() {
	local st
	CPU_T=0
	{ read -r -a st <"/proc/$1/stat"; } 2>/dev/null || return 0
	CPU_T=$((st[13] + st[14]))
}

# run_pair LCMD SCMD LOG SOCK: flakeload first (it serves the memif socket),
# then the system under test. flakeload measures for DURATION, writes its
# summary (--json, taken from LCMD) and lingers with its port still up
# (--linger): the system under test is stopped FIRST, while its peer is
# still there (a memif peer that goes away under a polling DPDK 22.11
# process can crash it: issue 16), then flakeload. Every wait is bounded
# (DURATION + 20 s). Logs go to LOG.load.log and LOG.sut.log. Sets PAIR_RC
# (flakeload's status, 124 when it overran the bound), STOP_RC (the SUT's
# status: 0 or 143 is a clean stop), STOP_KILLED (1: the SUT did not stop
# within 10 s of SIGTERM and was killed) and SUT_DIED (1 when the SUT had
# exited on its own before it was stopped). Beside the summary, JSON.cpu
# (the summary's name with .cpu) gets the share of a core each of the two
# processes had over the last --duration seconds before the summary: on a
# shared machine, a system under test that had half its core answers half
# as much, whatever its code.
run_pair() {
	local lcmd="$1" scmd="$2" log="$3" sock="$4" lpid spid i limit json dur
	local -a ts=() su=() lo=()
	json="${lcmd##*--json }"
	json="${json%% *}"
	dur="${lcmd##*--duration }"
	dur="${dur%% *}"
	PAIR_RC=0
	SUT_DIED=0
	$lcmd >"$log.load.log" 2>&1 &
	lpid=$!
	PIDS+=("$lpid")
	for i in $(seq 1 50); do
		[ -S "$sock" ] && break
		kill -0 "$lpid" 2>/dev/null || break
		sleep 0.1
	done
	$scmd >"$log.sut.log" 2>&1 </dev/null &
	spid=$!
	PIDS+=("$spid")
	# bounded: duration + link/probe wait (10 s) + drain + slack
	limit=$("$PY" -c "print(int(($DURATION + 20) * 10))")
	for i in $(seq 1 "$limit"); do
		kill -0 "$lpid" 2>/dev/null || break
		[ -s "$json" ] && break
		cpu_ticks "$spid"
		su+=("$CPU_T")
		cpu_ticks "$lpid"
		lo+=("$CPU_T")
		ts+=("$EPOCHREALTIME")
		sleep 0.1
	done
	if [ "${#ts[@]}" -gt 1 ]; then
		printf '%s %s %s\n' "${ts[@]}" "${su[@]}" "${lo[@]}" | "$PY" -c '
import json, sys
f = sys.stdin.read().split()
n = len(f) // 3
ts, su, lo = [float(x) for x in f[:n]], [int(x) for x in f[n:2 * n]], [int(x) for x in f[2 * n:]]
dur, hz = float(sys.argv[1]), float(sys.argv[2])
k = max([i for i in range(n) if ts[-1] - ts[i] >= dur] or [0])
w = ts[-1] - ts[k]
if w > 0:
    json.dump({"window_s": round(w, 2), "sut_cpu_share": round((su[-1] - su[k]) / hz / w, 3),
               "load_cpu_share": round((lo[-1] - lo[k]) / hz / w, 3)}, open(sys.argv[3], "w"))
' "${dur:-1}" "$(getconf CLK_TCK)" "${json%.json}.cpu" 2>/dev/null || true
	fi
	sleep 0.2 # the summary written in full
	kill -0 "$spid" 2>/dev/null || SUT_DIED=1
	stop_pid "$spid"
	local sut_rc=$STOP_RC sut_killed=$STOP_KILLED
	if kill -0 "$lpid" 2>/dev/null && [ ! -s "$json" ]; then
		echo "$BENCH_NAME: flakeload still running after the time bound" >&2
		stop_pid "$lpid"
		PAIR_RC=124
	else
		stop_pid "$lpid" # lingering: SIGTERM ends it with the run's status
		PAIR_RC=$STOP_RC
	fi
	STOP_RC=$sut_rc
	STOP_KILLED=$sut_killed
	PIDS=()
	rm -f "$sock"
}
