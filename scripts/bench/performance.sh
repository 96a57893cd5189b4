#!/usr/bin/env bash
# The benchmarks of doc/performance.md in one command (issue 6): the ID core,
# the packet path (flakewire vs dpdk-testpmd over memif), the kernel path
# (flakesock, Redis), latency under load and cycles per request. Builds, runs,
# prints ONE table (date, machine, the command behind each row, medians of the
# runs) and writes it with a JSON and a PNG plot under build/bench/ (or --out
# DIR). One section alone: --only core (the ID core, `flakectl bench-core`),
# --only path (flakewire vs testpmd). The other benchmarks (AF_XDP, power,
# clients, keys, postgres, mariadb, shards) are their own scripts beside this
# one (scripts/README.md).
#
# Ratio rows (3c, 3d, 4b, 4f-4h, C, Crx, Crxtx) are measured in pairs: the two
# sides run back to back in short runs (--pair-duration), --pairs times,
# interleaved A B, B A, A B, ... so that neither always goes first; the ratio
# is taken per pair and the row gives the median of the per-pair ratios with
# its IQR and min/max, `noisy` instead of yes/no when the IQR is wider than
# --noisy-iqr of the median (see doc/performance.md). Absolute rows keep
# the median of their runs.
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
#              the same memif set-up, and flakewire over IPv6: rounds of
#              testpmd, flakewire, flakewire6 and the reverse, so 3c and 3d
#              are each a pair of neighbouring runs
#   4 kernel   flakesock (1 thread = 1 core) on the loopback of a namespace made
#              here, loaded by flakectl bench (kernel UDP); ratio to row 3's
#              flakewire per core (flakeload over memif; see the notes). Beside
#              it the usual alternative to an ID service, a Redis counter:
#              redis-server on the same loopback and core, redis-benchmark INCR
#              and INCRBY 100 at the same concurrency (32), as ratios. Rounds
#              of flakewire (memif), flakesock, INCR, INCRBY, flakesock LIST
#              100 and the reverse: each ratio's sides are neighbours
#   5 latency  flakeload --rate at 10/25/50/75/90 % of row 3's flakewire median:
#              p50/p99/p99.9 and timeouts (10/50/90 % with --quick), and
#              dpdk-testpmd macswap driven by the same flakeload at the same
#              rates, next to it (who goes first alternating)
#   C cycles   flakeload-pktbench --cycles: cycles per request of flakewire's
#              serve path beside a macswap loop over the same mbufs (no NIC),
#              alternating in slice pairs within one process, a ratio per
#              pair; rows C, Crx, Crxtx: checksums in software, verified by
#              the device (RX offload), verified and written by it (RX + TX);
#              each process times the loop after 500 ms of it (200 with --quick)
#   6 plot     latency vs throughput, gnuplot PNG next to the table
#   profile    (full run, or --profile) instructions per request of flakewire's
#              per-packet work: flakeload-pktbench under valgrind callgrind
#
# Two cores: the system under test on --sut-core (0), the load on --load-core
# (1). Every process is started here, tracked by PID and stopped in the trap;
# every wait is bounded. Traffic only over memif sockets in a temp dir and the
# loopback of a namespace created (and deleted) here.
#
# Usage: scripts/bench/performance.sh [--quick] [--runs N] [--duration S] [--out DIR]
#                         [--pairs N] [--pair-duration S] [--noisy-iqr F]
#                         [--build-dir DIR] [--no-build] [--profile]
#                         [--sut-core C] [--load-core C] [--only LIST] [--keep-logs]
#                         [--lock FILE]
#   --runs, --duration  the absolute rows (idspace, latency): 3 runs of 3 s
#   --pairs, --pair-duration  the ratio rows: 9 pairs of runs of 2 s
#   --noisy-iqr  a ratio row whose IQR is wider than this share of its
#                median is `noisy` (0.10)
#   --quick      3 pairs of 1 s, one run of 2 s per absolute row, 3 latency
#                points, small profile: about two minutes, for before/after checks
#   --only LIST  comma-separated sections: core,idspace,path,kernel,latency,cycles,profile
#   --lock FILE  hold FILE's flock(1) from the first section that starts
#                responders or a namespace (idspace) to the end of the last
#                (latency), not over the build, core, cycles and profile
#                sections: a shared machine's other root tests wait only then
# The system under test is stopped before its load generator; a system under
# test that crashes fails the run: exit status 3 after the table.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="$ROOT/build"
OUT=""
RUNS=3
DURATION=3
PAIRS=9
PAIR_DURATION=2
NOISY_IQR=0.10
QUICK=0
DO_BUILD=1
PROFILE=""
SUT_CORE=0
LOAD_CORE=1
ONLY="core,idspace,path,kernel,latency,cycles,profile"
KEEP_LOGS=0
LOCK=""
INVOCATION="$0 $*"

usage() { sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
	case "$1" in
	--quick) QUICK=1; shift ;;
	--runs) RUNS="$2"; shift 2 ;;
	--duration) DURATION="$2"; shift 2 ;;
	--pairs) PAIRS="$2"; PAIRS_SET=1; shift 2 ;;
	--pair-duration) PAIR_DURATION="$2"; PDUR_SET=1; shift 2 ;;
	--noisy-iqr) NOISY_IQR="$2"; shift 2 ;;
	--out) OUT="$(realpath -m "$2")"; shift 2 ;;
	--build-dir) BUILD="$(realpath -m "$2")"; shift 2 ;;
	--no-build) DO_BUILD=0; shift ;;
	--profile) PROFILE=1; shift ;;
	--sut-core) SUT_CORE="$2"; shift 2 ;;
	--load-core) LOAD_CORE="$2"; shift 2 ;;
	--only) ONLY="$2"; shift 2 ;;
	--keep-logs) KEEP_LOGS=1; shift ;;
	--lock) LOCK="$2"; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	*) echo "bench: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
if [ "$QUICK" = 1 ]; then
	RUNS=1
	DURATION=2
	[ -n "${PAIRS_SET:-}" ] || PAIRS=3
	[ -n "${PDUR_SET:-}" ] || PAIR_DURATION=1
	LAT_PCTS="10 50 90"
	CORE_ARGS="--runs 3 --iterations 300000"
	PB_FRAMES=20000
	CYCLE_BURSTS=10000
	CYCLE_SLICES=20
	CYCLE_ROUNDS=1
	CYCLE_WARMUP=200
	[ -n "$PROFILE" ] || ONLY="${ONLY//,profile/}"
else
	LAT_PCTS="10 25 50 75 90"
	CORE_ARGS="--runs 7"
	PB_FRAMES=100000
	CYCLE_BURSTS=40000
	CYCLE_SLICES=40
	CYCLE_ROUNDS=3
	CYCLE_WARMUP=500
fi
[ "$PROFILE" = 1 ] && case ",$ONLY," in *,profile,*) ;; *) ONLY="$ONLY,profile" ;; esac
case "$RUNS" in ''|*[!0-9]*|0) echo "bench: --runs wants a positive integer" >&2; exit 2 ;; esac
case "$DURATION" in ''|*[!0-9.]*) echo "bench: --duration wants seconds" >&2; exit 2 ;; esac
case "$PAIRS" in ''|*[!0-9]*|0) echo "bench: --pairs wants a positive integer" >&2; exit 2 ;; esac
case "$PAIR_DURATION" in ''|*[!0-9]*|0) echo "bench: --pair-duration wants whole seconds" >&2; exit 2 ;; esac
want() { case ",$ONLY," in *,"$1",*) return 0 ;; esac; return 1; }
[ "$(nproc)" -ge 2 ] || { echo "bench: needs 2 cores (system under test + load)" >&2; exit 2; }
[ "$SUT_CORE" != "$LOAD_CORE" ] || { echo "bench: --sut-core and --load-core must differ" >&2; exit 2; }
[ -n "$OUT" ] || OUT="$BUILD/bench"
case "$OUT" in "$ROOT/bench"|"$ROOT/bench/") echo "bench: no bench/ at the top of the tree; use build/bench" >&2; exit 2 ;; esac

PY=/usr/bin/python3
[ -x "$PY" ] || PY="$(command -v python3)"
"$PY" -c "import sys; f = float(sys.argv[1]); sys.exit(not 0 < f < 10)" "$NOISY_IQR" 2>/dev/null ||
	{ echo "bench: --noisy-iqr $NOISY_IQR: a share of the median, above 0 (0.10 = 10 %)" >&2; exit 2; }
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
. "$ROOT/scripts/lib/bench.sh"
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

# run_memif ROW ROUND KIND SUT_EXTRA LOAD_ARGS: one flakeload run against KIND
# over memif; leaves $RUNDIR/ROW-ROUND.json (the table pairs rows by ROUND).
# Returns non-zero when the run failed.
run_memif() {
	local row="$1" round="$2" kind="$3" sextra="$4" largs="$5"
	RUNSEQ=$((RUNSEQ + 1))
	local n=$RUNSEQ sock="$TMP/r$RUNSEQ.sock"
	local json="$RUNDIR/$row-$round.json" rc lcmd scmd
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
log "$DATE: $PAIRS pairs x ${PAIR_DURATION} s (ratio rows), $RUNS runs x ${DURATION} s (absolute rows), sections $ONLY, output $OUT"

# ---- 1: ID core ----
if want core; then
	log "core: flakectl bench-core"
	cmd="taskset -c $LOAD_CORE $FLAKECTL bench-core $CORE_ARGS"
	$cmd >"$RUNDIR/core.txt"
	meta core cmd "$cmd"
fi

# ---- --lock: held over the sections that start responders or a namespace ----
LOCK_FD=""
if [ -n "$LOCK" ] && { want idspace || want path || want kernel || want latency; }; then
	exec {LOCK_FD}>>"$LOCK"
	log "waiting for the lock $LOCK"
	flock "$LOCK_FD"
	log "lock $LOCK held ($(date -u +%H:%M:%SZ))"
fi

# ---- 2: ID-space saturation ----
if want idspace; then
	for r in $(seq 1 "$RUNS"); do
		log "idspace: round $r/$RUNS"
		run_memif idspace12 "$r" flakewire "" \
			"--rate 5000000 --window 4096 --duration $DURATION" || true
		run_memif idspace8 "$r" flakewire "--set id.worker_bits=14 --set id.sequence_bits=8" \
			"--rate 5000000 --window 4096 --duration $DURATION" || true
	done
fi

# ---- 3: packet path, in pairs ----
# Round r runs testpmd, flakewire, flakewire6 (IPv6), round r+1 the reverse:
# 3c (flakewire / testpmd) and 3d (IPv6 / IPv4) are each two neighbouring
# runs, and each side goes first in every other pair.
FW_SET="--set id.worker_bits=0 --set id.sequence_bits=22"
path_run() { # path_run NAME ROUND
	case "$1" in
	testpmd) run_memif testpmd "$2" testpmd "" "--window 1024 --duration $PAIR_DURATION" ;;
	flakewire) run_memif flakewire "$2" flakewire "$FW_SET" "--window 1024 --duration $PAIR_DURATION" ;;
	flakewire6)
		run_memif flakewire6 "$2" flakewire "$FW_SET --set port0.address6=fd00::2" \
			"--window 1024 --duration $PAIR_DURATION --dst-ip6 fd00::2"
		;;
	esac
}
if want path; then
	for r in $(seq 1 "$PAIRS"); do
		order="testpmd flakewire flakewire6"
		[ $((r % 2)) = 0 ] && order="flakewire6 flakewire testpmd"
		log "path: pair $r/$PAIRS: $order"
		for k in $order; do path_run "$k" "$r" || true; done
	done
fi

# ---- 4: kernel baseline, and the usual alternative: a Redis counter ----
# flakesock (1 thread) and redis-server (single-threaded) on the loopback of
# a namespace made here, on the SUT core, each driven at concurrency 32 from
# the load core: flakectl bench (single IDs; LIST of 100) and redis-benchmark
# (INCR; INCRBY 100), one request in flight per connection.
flakesock_bench() { # ROUND NAME EXTRA: one flakectl bench run against flakesock -> RUNDIR/NAME-ROUND.json
	local r="$1" name="$2" extra="$3" scmd lcmd spid up i
	scmd="taskset -c $SUT_CORE $FLAKESOCK --threads 1 --listen 127.0.0.1 --set state.file=$TMP/sock.mark --set state.lock_dir=$TMP/locks"
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
	lcmd="taskset -c $LOAD_CORE $FLAKECTL bench --server 127.0.0.1:4242 --duration $PAIR_DURATION --concurrency 32 --timeout 200 --json $extra"
	if [ "$up" = 1 ]; then
		timeout $((PAIR_DURATION + 30)) ip netns exec "$NS" $lcmd >"$RUNDIR/$name-$r.raw" 2>"$TMP/sock-bench-$name-$r.err" || true
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
REDIS_N=""
redis_bench() { # ROUND ORDER: redis-benchmark INCR and INCRBY 100 (ORDER "incr incrby" or the reverse) -> RUNDIR/redis-ROUND.csv
	local r="$1" order="$2" rcmd bcmd rpid i up t
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
		# (the first round's) sizes each run to about PAIR_DURATION seconds
		[ -n "$REDIS_N" ] || REDIS_N=$(ip netns exec "$NS" $bcmd -n 5000 -t incr 2>/dev/null |
			"$PY" -c "import sys; r=[l.split(',') for l in sys.stdin if l.startswith('\"INCR')]; print(max(5000, int(float(r[0][1].strip('\"')) * $PAIR_DURATION)) if r else 5000)")
		: >"$RUNDIR/redis-$r.csv"
		for t in $order; do
			case "$t" in
			incr) timeout $((PAIR_DURATION * 3 + 30)) ip netns exec "$NS" $bcmd -n "$REDIS_N" -t incr ;;
			incrby) timeout $((PAIR_DURATION * 3 + 30)) ip netns exec "$NS" $bcmd -n "$REDIS_N" INCRBY fwbench 100 ;;
			esac >>"$RUNDIR/redis-$r.csv" 2>>"$TMP/redis-bench-$r.err" || true
		done
	else
		log "kernel: redis-server did not answer (log $TMP/redis-$r.log)"
	fi
	stop_pid "$rpid"
	PIDS=()
	meta redis sut "ip netns exec NS $rcmd"
	meta redis load "ip netns exec NS $bcmd -n N -t incr; ... $bcmd -n N INCRBY fwbench 100 (N: a 5,000-request probe's rate x PAIR_DURATION)"
}
# Round r: flakewire (memif, row kfw), flakesock, INCR, INCRBY, flakesock
# LIST 100; round r+1 the reverse. So 4b (kfw / flakesock), 4f (flakesock /
# INCR) and 4h (LIST 100 / INCRBY) are neighbours, 4g (kfw / INCR) one apart,
# and each side goes first in every other pair.
if want kernel; then
	NS="fwbench-$$"
	ip netns add "$NS"
	ip netns exec "$NS" ip link set lo up
	HAVE_REDIS=1
	if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
		HAVE_REDIS=0
		log "kernel: redis-server / redis-benchmark missing (Debian redis-server, redis-tools): no Redis rows"
	fi
	for r in $(seq 1 "$PAIRS"); do
		order="kfw kernel redis kernel100"
		ro="incr incrby"
		[ $((r % 2)) = 0 ] && order="kernel100 redis kernel kfw" && ro="incrby incr"
		log "kernel: pair $r/$PAIRS: $order"
		for k in $order; do
			case "$k" in
			kfw) run_memif kfw "$r" flakewire "$FW_SET" "--window 1024 --duration $PAIR_DURATION" || true ;;
			kernel) flakesock_bench "$r" kernel "" ;;
			kernel100) flakesock_bench "$r" kernel100 "--count 100" ;;
			redis) [ "$HAVE_REDIS" = 0 ] || redis_bench "$r" "$ro" ;;
			esac
		done
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
		run_memif flakewire 1 flakewire "$FW_SET" "--window 1024 --duration $DURATION" || true
		MAX="$(median_of flakewire replies_per_s)"
	fi
	echo "$MAX" >"$RUNDIR/latency-max.txt"
	LATSEQ=0
	for r in $(seq 1 "$RUNS"); do
		for p in $LAT_PCTS; do
			rate=$("$PY" -c "print(max(1000, int($MAX * $p / 100)))")
			log "latency: round $r/$RUNS, $p % of ${MAX%.*}/s = $rate/s"
			# the same flakeload at the same rate against testpmd macswap: the
			# machine's own tails and timeouts, beside flakewire's; who goes
			# first alternates from one rate to the next
			LATSEQ=$((LATSEQ + 1))
			order="lat tplat"
			[ $((LATSEQ % 2)) = 0 ] && order="tplat lat"
			for k in $order; do
				case "$k" in
				lat) run_memif "lat$p" "$r" flakewire "$FW_SET" \
					"--rate $rate --window 4096 --duration $DURATION" || true ;;
				tplat) run_memif "tplat$p" "$r" testpmd "" \
					"--rate $rate --window 4096 --duration $DURATION" || true ;;
				esac
			done
		done
	done
fi

if [ -n "$LOCK_FD" ]; then
	flock -u "$LOCK_FD"
	exec {LOCK_FD}>&-
	LOCK_FD=""
	log "lock $LOCK released ($(date -u +%H:%M:%SZ))"
fi

# ---- cycles: the serve path in cycles per request beside macswap (no NIC) ----
if want cycles && [ -x "$PKTBENCH" ]; then
	# checksums in software (virtio, memif, AF_XDP), verified by the device
	# (RX offload), verified and written by it (RX + TX: a 10 GbE NIC's).
	# Each process alternates the serve path and macswap over the same mbufs
	# in CYCLE_SLICES slice pairs (who goes first alternating) and prints
	# each pair; the table pools the pairs of the CYCLE_ROUNDS processes of a
	# mode, run in turn with the other modes'. Each process first runs the
	# loop untimed (--warmup): an lcore polls without a pause, while a
	# process just started runs on a core the host has just woken, which
	# here can take 1.5x the cycles for a while.
	for r in $(seq 1 "$CYCLE_ROUNDS"); do
		order="none rx rxtx"
		[ $((r % 2)) = 0 ] && order="rxtx rx none"
		for off in $order; do
			log "cycles: process $r/$CYCLE_ROUNDS, --offload $off"
			cmd="taskset -c $SUT_CORE $PKTBENCH --cycles $CYCLE_BURSTS --slices $CYCLE_SLICES --warmup $CYCLE_WARMUP --offload $off"
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
"$PY" "$ROOT/scripts/bench/performance_table.py" --rundir "$RUNDIR" --out "$OUT" --date "$DATE" \
	--machine "$(nproc) cores, $CPU, $(uname -sr)" --load "$LOADAVG; busy at the end: ${OTHERS:-none}" \
	--runs "$RUNS" --duration "$DURATION" --cores "$SUT_CORE/$LOAD_CORE" --quick "$QUICK" \
	--pairs "$PAIRS" --pair-duration "$PAIR_DURATION" --noisy-iqr "$NOISY_IQR" \
	--invocation "$INVOCATION" --elapsed "$(($(date +%s) - START))"
if command -v gnuplot >/dev/null && [ -s "$OUT/latency.dat" ]; then
	gnuplot "$OUT/latency.gp" 2>"$TMP/gnuplot.err" || log "gnuplot failed: $(cat "$TMP/gnuplot.err")"
	[ -s "$OUT/latency.png" ] && echo "plot: $OUT/latency.png"
fi
if [ "$CRASHES" != 0 ]; then
	log "FAILED: $CRASHES system-under-test crash(es) in this run (see CRASH above; logs kept in $TMP)"
	exit 3
fi
