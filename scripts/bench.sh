#!/usr/bin/env bash
# Every flakewire benchmark in one command (issue 6): builds, runs, prints ONE
# table (date, machine, the command behind each row, medians of the runs) and
# writes it with a JSON and a PNG plot under build/bench/ (or --out DIR).
#
#   1 core     ns per single ID, per LIST of 100, per RANGE (flakectl bench-core)
#   2 idspace  flakewire, one worker, default layout (12 sequence bits), single-ID
#              load offered above 4.096 M/s when the load path can (flakeload over
#              memif, --rate 5000000): IDs issued as a fraction of 4,096 per ms,
#              RETRY_AFTER replies, timeouts, longest pause. A second row shrinks
#              the sequence to 8 bits (256 IDs/ms) so the offered load surely
#              exceeds the ID space on any machine: same mechanism, reachable.
#   3 path     replies/s of one flakewire lcore (layout 41/0/0/22: the sequence
#              space is not the limit) vs dpdk-testpmd --forward-mode=macswap on
#              the same memif set-up, interleaved testpmd, flakewire, testpmd, ...
#   4 kernel   flakesock (1 thread = 1 core) on the loopback of a namespace made
#              here, loaded by flakectl bench (kernel UDP); ratio to row 3's
#              flakewire per core (flakeload over memif; see the notes). Beside
#              it the usual alternative to an ID service, a Redis counter:
#              redis-server on the same loopback and core, redis-benchmark INCR
#              and INCRBY 100 at the same concurrency (32), as ratios
#   5 latency  flakeload --rate at 10/25/50/75/90 % of row 3's flakewire median:
#              p50/p99/p99.9 (10/50/90 % with --quick), and dpdk-testpmd
#              macswap driven by the same flakeload at the same rates
#   C cycles   flakeload-pktbench --cycles: cycles per request of flakewire's
#              serve path beside a macswap loop over the same mbufs (no NIC);
#              rows C, Crx, Crxtx: checksums in software, verified by the
#              device (RX offload), verified and written by it (RX + TX);
#              each round times the loop after 500 ms of it (200 with --quick)
#   6 plot     latency vs throughput, gnuplot PNG next to the table
#   profile    (full run, or --profile) instructions per request of flakewire's
#              per-packet work: flakeload-pktbench under valgrind callgrind
#
# Two cores: the system under test on --sut-core (0), the load on --load-core
# (1). Every process is started here, tracked by PID and stopped in the trap;
# every wait is bounded. Traffic only over memif sockets in a temp dir and the
# loopback of a namespace created (and deleted) here.
#
# Usage: scripts/bench.sh [--quick] [--runs N] [--duration S] [--out DIR]
#                         [--build-dir DIR] [--no-build] [--profile]
#                         [--sut-core C] [--load-core C] [--only LIST] [--keep-logs]
#   --quick      one run of 2 s per row, 3 latency points, small profile:
#                under two minutes, for before/after checks
#   --only LIST  comma-separated sections: core,idspace,path,kernel,latency,cycles,profile
# The system under test is stopped before its load generator; a system under
# test that crashes fails the run: exit status 3 after the table.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build"
OUT=""
RUNS=3
DURATION=5
QUICK=0
DO_BUILD=1
PROFILE=""
SUT_CORE=0
LOAD_CORE=1
ONLY="core,idspace,path,kernel,latency,cycles,profile"
KEEP_LOGS=0
INVOCATION="$0 $*"

usage() { sed -n '2,46p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
	case "$1" in
	--quick) QUICK=1; shift ;;
	--runs) RUNS="$2"; shift 2 ;;
	--duration) DURATION="$2"; shift 2 ;;
	--out) OUT="$(realpath -m "$2")"; shift 2 ;;
	--build-dir) BUILD="$(realpath -m "$2")"; shift 2 ;;
	--no-build) DO_BUILD=0; shift ;;
	--profile) PROFILE=1; shift ;;
	--sut-core) SUT_CORE="$2"; shift 2 ;;
	--load-core) LOAD_CORE="$2"; shift 2 ;;
	--only) ONLY="$2"; shift 2 ;;
	--keep-logs) KEEP_LOGS=1; shift ;;
	-h|--help) usage; exit 0 ;;
	*) echo "bench: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
if [ "$QUICK" = 1 ]; then
	RUNS=1
	DURATION=2
	LAT_PCTS="10 50 90"
	CORE_ARGS="--runs 3 --iterations 300000"
	PB_FRAMES=20000
	CYCLE_BURSTS=5000
	CYCLE_ROUNDS=5
	CYCLE_WARMUP=200
	[ -n "$PROFILE" ] || ONLY="${ONLY//,profile/}"
else
	LAT_PCTS="10 25 50 75 90"
	CORE_ARGS="--runs 7"
	PB_FRAMES=100000
	CYCLE_BURSTS=20000
	CYCLE_ROUNDS=11
	CYCLE_WARMUP=500
fi
[ "$PROFILE" = 1 ] && case ",$ONLY," in *,profile,*) ;; *) ONLY="$ONLY,profile" ;; esac
case "$RUNS" in ''|*[!0-9]*|0) echo "bench: --runs wants a positive integer" >&2; exit 2 ;; esac
case "$DURATION" in ''|*[!0-9.]*) echo "bench: --duration wants seconds" >&2; exit 2 ;; esac
want() { case ",$ONLY," in *,"$1",*) return 0 ;; esac; return 1; }
[ "$(nproc)" -ge 2 ] || { echo "bench: needs 2 cores (system under test + load)" >&2; exit 2; }
[ "$SUT_CORE" != "$LOAD_CORE" ] || { echo "bench: --sut-core and --load-core must differ" >&2; exit 2; }
[ -n "$OUT" ] || OUT="$BUILD/bench"
case "$OUT" in "$ROOT/bench"|"$ROOT/bench/") echo "bench: no bench/ at the top of the tree; use build/bench" >&2; exit 2 ;; esac

PY=/usr/bin/python3
[ -x "$PY" ] || PY="$(command -v python3)"
FLAKELOAD="$BUILD/app/flakeload/flakeload"
PKTBENCH="$BUILD/app/flakeload/flakeload-pktbench"
FLAKEWIRE="$BUILD/app/flakewire/flakewire"
FLAKESOCK="$BUILD/app/flakesock/flakesock"
FLAKECTL="$BUILD/app/flakectl/flakectl"
TESTPMD="$(command -v dpdk-testpmd || true)"

# ---- build ----
if [ "$DO_BUILD" = 1 ]; then
	"$ROOT/scripts/install-deps.sh" >/dev/null
	[ -f "$BUILD/build.ninja" ] || meson setup "$BUILD" "$ROOT" >/dev/null
	ninja -C "$BUILD" app/flakeload/flakeload app/flakewire/flakewire \
		app/flakeload/flakeload-pktbench app/flakesock/flakesock app/flakectl/flakectl >/dev/null
fi
for b in "$FLAKELOAD" "$FLAKEWIRE" "$FLAKESOCK" "$FLAKECTL"; do
	[ -x "$b" ] || { echo "bench: $b missing (build failed?)" >&2; exit 2; }
done
[ -n "$TESTPMD" ] || { echo "bench: dpdk-testpmd not found (Debian package dpdk)" >&2; exit 2; }

mkdir -p "$OUT"
RUNDIR="$OUT/runs"
rm -rf "$RUNDIR"
mkdir -p "$RUNDIR"
TMP="$(mktemp -d /tmp/fw-bench.XXXXXX)"
PIDS=()
NS=""

BENCH_NAME=bench
. "$ROOT/scripts/bench-lib.sh"
cleanup() {
	[ -n "$NS" ] && ip netns del "$NS" 2>/dev/null || true
	bench_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "bench: $*" >&2; }
# meta ROW KEY VALUE: one line of the row's description (commands, settings)
meta() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$RUNDIR/meta.tsv"; }

EAL="--no-huge --no-pci --no-shconf -m 512"
RUNSEQ=0
CRASHES=0

# run_memif ROW KIND SUT_EXTRA LOAD_ARGS: one flakeload run against KIND over
# memif; leaves $RUNDIR/ROW-N.json. Returns non-zero when the run failed.
run_memif() {
	local row="$1" kind="$2" sextra="$3" largs="$4"
	RUNSEQ=$((RUNSEQ + 1))
	local n=$RUNSEQ sock="$TMP/r$RUNSEQ.sock"
	local i=1
	while [ -e "$RUNDIR/$row-$i.json" ]; do i=$((i + 1)); done
	local json="$RUNDIR/$row-$i.json" rc lcmd scmd
	lcmd="$(load_cmd "$kind" "$sock" "$n" "$json" "$largs")"
	scmd="$(sut_cmd "$kind" "$sock" "$RUNSEQ" "$sextra")"
	run_pair "$lcmd" "$scmd" "$TMP/$n" "$sock"
	rc=$PAIR_RC
	meta "$row" load "$lcmd"
	meta "$row" sut "$scmd"
	if [ "$STOP_KILLED" = 1 ]; then
		log "WARNING: $row: $kind did not stop within 10 s of SIGTERM and was killed (log $TMP/$n.sut.log)"
		meta "$row" warning "$kind did not stop within 10 s of SIGTERM: killed"
	elif [ "$STOP_RC" != 0 ] && [ "$STOP_RC" != 143 ]; then
		# a crash fails the whole run (exit status 3 at the end), loudly
		CRASHES=$((CRASHES + 1))
		log "CRASH: $row: $kind exited with status $STOP_RC$([ "$SUT_DIED" = 1 ] && echo ' on its own, before it was stopped' || echo ' when stopped'); last lines of $TMP/$n.sut.log:"
		tail -n 8 "$TMP/$n.sut.log" >&2 || true
		meta "$row" warning "CRASH: $kind exit status $STOP_RC (the run fails)"
		KEEP_LOGS=1
	fi
	if [ "$rc" != 0 ] || [ ! -s "$json" ]; then
		log "$row: run failed (flakeload exit $rc); last lines:"
		tail -n 8 "$TMP/$n.load.log" >&2 || true
		tail -n 5 "$TMP/$n.sut.log" >&2 || true
		meta "$row" warning "a run failed (flakeload exit $rc)"
		# a run whose summary was written is kept only when flakeload finished
		[ "$rc" = 0 ] || rm -f "$json"
		return 1
	fi
	return 0
}

median_of() { # median_of ROW FIELD: median of a numeric JSON field over ROW's runs
	"$PY" - "$RUNDIR" "$1" "$2" <<'EOF'
import glob, json, statistics, sys
d, row, field = sys.argv[1:]
v = [json.load(open(p))[field] for p in glob.glob(f"{d}/{row}-*.json")]
print(statistics.median(v) if v else 0)
EOF
}

START=$(date +%s)
DATE="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
log "$DATE: runs $RUNS x ${DURATION} s, sections $ONLY, output $OUT"

# ---- 1: ID core ----
if want core; then
	log "core: flakectl bench-core"
	cmd="taskset -c $LOAD_CORE $FLAKECTL bench-core $CORE_ARGS"
	$cmd >"$RUNDIR/core.txt"
	meta core cmd "$cmd"
fi

# ---- 2: ID-space saturation ----
if want idspace; then
	for r in $(seq 1 "$RUNS"); do
		log "idspace: round $r/$RUNS"
		run_memif idspace12 flakewire "" \
			"--rate 5000000 --window 4096 --duration $DURATION" || true
		run_memif idspace8 flakewire "--set id.worker_bits=14 --set id.sequence_bits=8" \
			"--rate 5000000 --window 4096 --duration $DURATION" || true
	done
fi

# ---- 3: packet path, interleaved ----
if want path; then
	for r in $(seq 1 "$RUNS"); do
		log "path: round $r/$RUNS"
		run_memif testpmd testpmd "" "--window 1024 --duration $DURATION" || true
		run_memif flakewire flakewire "--set id.worker_bits=0 --set id.sequence_bits=22" \
			"--window 1024 --duration $DURATION" || true
		# the same over IPv6 (issue 13): row 3d beside 3b
		run_memif flakewire6 flakewire "--set id.worker_bits=0 --set id.sequence_bits=22 --set port0.address6=fd00::2" \
			"--window 1024 --duration $DURATION --dst-ip6 fd00::2" || true
	done
fi

# ---- 4: kernel baseline, and the usual alternative: a Redis counter ----
# flakesock (1 thread) and redis-server (single-threaded) on the loopback of
# a namespace made here, on the SUT core, each driven at concurrency 32 from
# the load core: flakectl bench (single IDs; LIST of 100) and redis-benchmark
# (INCR; INCRBY 100), one request in flight per connection.
flakesock_bench() { # ROUND NAME EXTRA: one flakectl bench run against flakesock -> RUNDIR/NAME-ROUND.json
	local r="$1" name="$2" extra="$3" scmd lcmd spid up i
	scmd="taskset -c $SUT_CORE $FLAKESOCK --threads 1 --listen 127.0.0.1 --set state.file=$TMP/sock.mark"
	ip netns exec "$NS" $scmd >"$TMP/sock-$name-$r.log" 2>&1 </dev/null &
	spid=$!
	PIDS+=("$spid")
	up=0
	for i in $(seq 1 50); do
		if ip netns exec "$NS" "$FLAKECTL" info --server 127.0.0.1:4242 >/dev/null 2>&1; then
			up=1
			break
		fi
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	lcmd="taskset -c $LOAD_CORE $FLAKECTL bench --server 127.0.0.1:4242 --duration $DURATION --concurrency 32 --timeout 200 --json $extra"
	if [ "$up" = 1 ]; then
		timeout $(("${DURATION%.*}" + 30)) ip netns exec "$NS" $lcmd >"$RUNDIR/$name-$r.raw" 2>"$TMP/sock-bench-$name-$r.err" || true
		"$PY" - "$RUNDIR/$name-$r.raw" "$RUNDIR/$name-$r.json" <<'EOF2' || true
import json, sys
j = json.load(open(sys.argv[1]))
lat = j["latency_us"]
out = {"replies_per_s": j["requests_per_s"], "ids_per_s": j["ids_per_s"], "sent_per_s": j["sent"] / j["elapsed_s"],
       "latency_ns": {"p50": lat["p50"] * 1000, "p99": lat["p99"] * 1000, "p99_9": lat["p99.9"] * 1000},
       "timeouts": j["timeouts"], "violations": j["duplicates"] + j["order_violations"] + j["invalid"],
       "status": j["status"]}
json.dump(out, open(sys.argv[2], "w"))
EOF2
	else
		log "kernel: flakesock did not answer (log $TMP/sock-$name-$r.log)"
	fi
	stop_pid "$spid"
	if [ "$STOP_KILLED" = 0 ] && [ "$STOP_RC" != 0 ] && [ "$STOP_RC" != 143 ]; then
		CRASHES=$((CRASHES + 1))
		log "CRASH: $name: flakesock exited with status $STOP_RC (log $TMP/sock-$name-$r.log)"
		KEEP_LOGS=1
	fi
	PIDS=()
	meta "$name" sut "ip netns exec NS $scmd"
	meta "$name" load "ip netns exec NS $lcmd"
}
redis_bench() { # ROUND: redis-benchmark INCR and INCRBY 100 against redis-server -> RUNDIR/redis-ROUND.csv
	local r="$1" rcmd bcmd rpid i up n
	mkdir -p "$TMP/redis"
	rcmd="taskset -c $SUT_CORE redis-server --port 6379 --bind 127.0.0.1 --save '' --appendonly no --dir $TMP/redis --daemonize no"
	ip netns exec "$NS" bash -c "exec $rcmd" >"$TMP/redis-$r.log" 2>&1 </dev/null &
	rpid=$!
	PIDS+=("$rpid")
	up=0
	for i in $(seq 1 50); do
		if [ "$(ip netns exec "$NS" redis-cli -p 6379 ping 2>/dev/null)" = PONG ]; then
			up=1
			break
		fi
		kill -0 "$rpid" 2>/dev/null || break
		sleep 0.1
	done
	bcmd="taskset -c $LOAD_CORE redis-benchmark -h 127.0.0.1 -p 6379 -c 32 --csv"
	if [ "$up" = 1 ]; then
		# redis-benchmark counts requests, not seconds: a 5,000-request probe
		# sizes each run to about DURATION seconds at the rate it saw
		n=$(ip netns exec "$NS" $bcmd -n 5000 -t incr 2>/dev/null |
			"$PY" -c "import sys; r=[l.split(',') for l in sys.stdin if l.startswith('\"INCR')]; print(max(5000, int(float(r[0][1].strip('\"')) * $DURATION)) if r else 5000)")
		: >"$RUNDIR/redis-$r.csv"
		timeout $(("${DURATION%.*}" * 3 + 30)) ip netns exec "$NS" $bcmd -n "$n" -t incr >>"$RUNDIR/redis-$r.csv" 2>"$TMP/redis-bench-$r.err" || true
		timeout $(("${DURATION%.*}" * 3 + 30)) ip netns exec "$NS" $bcmd -n "$n" INCRBY fwbench 100 >>"$RUNDIR/redis-$r.csv" 2>>"$TMP/redis-bench-$r.err" || true
	else
		log "kernel: redis-server did not answer (log $TMP/redis-$r.log)"
	fi
	stop_pid "$rpid"
	PIDS=()
	meta redis sut "ip netns exec NS $rcmd"
	meta redis load "ip netns exec NS $bcmd -n N -t incr; ... $bcmd -n N INCRBY fwbench 100 (N: a 5,000-request probe's rate x DURATION)"
}
if want kernel; then
	NS="fwbench-$$"
	ip netns add "$NS"
	ip netns exec "$NS" ip link set lo up
	for r in $(seq 1 "$RUNS"); do
		log "kernel: round $r/$RUNS"
		flakesock_bench "$r" kernel ""
		flakesock_bench "$r" kernel100 "--count 100"
		if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
			redis_bench "$r"
		else
			log "kernel: redis-server / redis-benchmark missing (Debian redis-server, redis-tools): no Redis rows"
		fi
	done
	ip netns del "$NS" 2>/dev/null || true
	NS=""
fi

# ---- 5: latency at fractions of the measured maximum ----
if want latency; then
	MAX=0
	[ -n "$(ls "$RUNDIR"/flakewire-*.json 2>/dev/null)" ] && MAX="$(median_of flakewire replies_per_s)"
	if [ "${MAX%.*}" = 0 ]; then
		log "latency: no flakewire maximum from the path rows; measuring one"
		run_memif flakewire flakewire "--set id.worker_bits=0 --set id.sequence_bits=22" \
			"--window 1024 --duration $DURATION" || true
		MAX="$(median_of flakewire replies_per_s)"
	fi
	echo "$MAX" >"$RUNDIR/latency-max.txt"
	for r in $(seq 1 "$RUNS"); do
		for p in $LAT_PCTS; do
			rate=$("$PY" -c "print(max(1000, int($MAX * $p / 100)))")
			log "latency: round $r/$RUNS, $p % of ${MAX%.*}/s = $rate/s"
			run_memif "lat$p" flakewire "--set id.worker_bits=0 --set id.sequence_bits=22" \
				"--rate $rate --window 4096 --duration $DURATION" || true
			# the same flakeload at the same rate against testpmd macswap: the
			# machine's own tails, beside flakewire's
			log "latency: round $r/$RUNS, testpmd macswap at $rate/s"
			run_memif "tplat$p" testpmd "" \
				"--rate $rate --window 4096 --duration $DURATION" || true
		done
	done
fi

# ---- cycles: the serve path in cycles per request beside macswap (no NIC) ----
if want cycles && [ -x "$PKTBENCH" ]; then
	# checksums in software (virtio, memif, AF_XDP), verified by the device
	# (RX offload), verified and written by it (RX + TX: a 10 GbE NIC's).
	# Many short rounds, interleaved: on a shared host the core's speed
	# changes from one second to the next (see the README), each round's
	# serve and macswap are timed side by side, and the row is the median.
	# Each round first runs the loop untimed (--warmup): an lcore polls
	# without a pause, while a process just started runs on a core the host
	# has just woken, which here can take 1.5x the cycles for a while.
	for r in $(seq 1 "$CYCLE_ROUNDS"); do
		for off in none rx rxtx; do
			log "cycles: round $r/$CYCLE_ROUNDS, --offload $off"
			cmd="taskset -c $SUT_CORE $PKTBENCH --cycles $CYCLE_BURSTS --warmup $CYCLE_WARMUP --offload $off"
			(cd "$TMP" && $cmd >"$RUNDIR/cycles-$off-$r.txt" 2>&1) ||
				log "cycles: flakeload-pktbench failed"
			meta "cycles-$off" cmd "$cmd"
		done
	done
fi

# ---- profile: instructions per request (callgrind), stable on a noisy machine ----
if want profile; then
	if command -v valgrind >/dev/null && [ -x "$PKTBENCH" ]; then
		log "profile: callgrind on flakeload-pktbench ($PB_FRAMES frames)"
		# op id in the three checksum modes of row C: rows P, Prx, Prxtx
		for off in none rx rxtx; do
			op=id
			tag="$op-$off"
			cmd="valgrind --tool=callgrind --toggle-collect=pb_serve_burst --callgrind-out-file=$OUT/callgrind.$tag.out $PKTBENCH --frames $PB_FRAMES --op $op --offload $off"
			(cd "$TMP" && taskset -c "$LOAD_CORE" $cmd >"$RUNDIR/profile-$tag.txt" 2>&1) || true
			echo "frames $PB_FRAMES" >>"$RUNDIR/profile-$tag.txt"
			callgrind_annotate "$OUT/callgrind.$tag.out" 2>/dev/null | head -40 >"$OUT/callgrind.$tag.top.txt" || true
			meta "profile-$off" cmd "$cmd"
		done
		for off in none rxtx; do
			cmd="$PKTBENCH --frames 100000 --check --offload $off"
			(cd "$TMP" && taskset -c "$LOAD_CORE" $cmd 2>&1 | grep 'checksums verified' |
				sed "s/^/--offload $off: /" >>"$RUNDIR/check.txt") || true
			meta profile-none check "$cmd"
		done
		if command -v perf >/dev/null; then
			cmd="perf stat -x, -e instructions taskset -c $LOAD_CORE $PKTBENCH --frames 1000000"
			(cd "$TMP" && $cmd >"$RUNDIR/perf.txt" 2>&1) || true
			meta profile-none perf "$cmd"
		fi
	else
		log "profile: valgrind or flakeload-pktbench missing: skipped"
	fi
fi

# ---- the table ----
CPU="$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
LOADAVG="$(cut -d' ' -f1-3 /proc/loadavg)"
# other busy processes: on a shared machine they are part of the result
OTHERS="$(ps -eo pcpu=,pid=,comm= --sort=-pcpu | awk -v me=$$ '$1 > 20 && $2 != me { printf "%s(%s%%) ", $3, $1 }' | head -c 200)"
"$PY" "$ROOT/scripts/bench_table.py" --rundir "$RUNDIR" --out "$OUT" --date "$DATE" \
	--machine "$(nproc) cores, $CPU, $(uname -sr)" --load "$LOADAVG; busy at the end: ${OTHERS:-none}" \
	--runs "$RUNS" --duration "$DURATION" --cores "$SUT_CORE/$LOAD_CORE" --quick "$QUICK" \
	--invocation "$INVOCATION" --elapsed "$(($(date +%s) - START))"
if command -v gnuplot >/dev/null && [ -s "$OUT/latency.dat" ]; then
	gnuplot "$OUT/latency.gp" 2>"$TMP/gnuplot.err" || log "gnuplot failed: $(cat "$TMP/gnuplot.err")"
	[ -s "$OUT/latency.png" ] && echo "plot: $OUT/latency.png"
fi
if [ "$CRASHES" != 0 ]; then
	log "FAILED: $CRASHES system-under-test crash(es) in this run (see CRASH above; logs kept in $TMP)"
	exit 3
fi
