#!/usr/bin/env bash
# Packet-path benchmark of the DPDK responder (issue 4 "Benchmark", issue 6 item 3).
#
# On this 2-core machine: the system under test on core 0 (-l 0), the load
# generator app/flakeload on core 1 (-l 1), one net_memif pair between them
# (flakeload is the memif server, the system under test the client; one socket
# file per run in a temp dir). Every process runs with
# --no-huge --no-pci --no-shconf -m 512 and its own --file-prefix.
#
# Rows:
#   testpmd    dpdk-testpmd --forward-mode=macswap: the least work any responder
#              can do on this device (flakeload counts its own requests coming back)
#   flakewire  app/flakewire, one lcore, layout 41/0/0/22 so the sequence space
#              (4.19 G IDs/s) is not the limit: the packet path is
# Each row is the median of --runs runs; the table shows replies/s, IDs/s,
# p50/p99 round trip and the exact commands. Round r runs testpmd then
# flakewire, round r+1 the reverse: the ratio flakewire/testpmd is taken per
# round (a pair of neighbouring runs) and given as the median of the pairs
# with its IQR and min/max, `noisy` when the IQR is wider than 10 % of the
# median (scripts/bench_table.py's rule; doc/performance.md).
#
# Then, in the same run, AF_XDP on a veth against flakesock on the same veth
# (scripts/bench-afxdp.sh; skipped with --only).
# scripts/bench.sh runs the memif comparison too, with every other benchmark, in one table.
#
# Usage: scripts/bench-responder.sh [--runs N] [--duration S] [--quick]
#                                   [--window N] [--build-dir DIR] [--no-build]
#                                   [--only testpmd|flakewire] [--keep-logs]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build"
RUNS=3
DURATION=5
WINDOW=1024
DO_BUILD=1
ONLY=""
KEEP_LOGS=0
INVOCATION="$0 $*"

usage() {
	sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'
}

while [ $# -gt 0 ]; do
	case "$1" in
	--runs) RUNS="$2"; shift 2 ;;
	--duration) DURATION="$2"; shift 2 ;;
	--quick) RUNS=1; DURATION=2; shift ;;
	--window) WINDOW="$2"; shift 2 ;;
	--build-dir) BUILD="$(realpath -m "$2")"; shift 2 ;;
	--no-build) DO_BUILD=0; shift ;;
	--only) ONLY="$2"; shift 2 ;;
	--keep-logs) KEEP_LOGS=1; shift ;;
	-h|--help) usage; exit 0 ;;
	*) echo "bench-responder: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
case "$RUNS" in ''|*[!0-9]*|0) echo "bench-responder: --runs wants a positive integer" >&2; exit 2 ;; esac
case "$DURATION" in ''|*[!0-9.]*) echo "bench-responder: --duration wants seconds" >&2; exit 2 ;; esac

if [ "$(nproc)" -lt 2 ]; then
	echo "bench-responder: needs 2 cores (one for the system under test, one for the load)" >&2
	exit 2
fi

FLAKELOAD="$BUILD/app/flakeload/flakeload"
FLAKEWIRE="$BUILD/app/flakewire/flakewire"
TESTPMD="$(command -v dpdk-testpmd || true)"
PY="$(command -v python3 || echo /usr/bin/python3)"

# ---- build ----
HAVE_FLAKEWIRE=1
if [ "$DO_BUILD" = 1 ]; then
	"$ROOT/scripts/install-deps.sh"
	if [ ! -f "$BUILD/build.ninja" ]; then
		meson setup "$BUILD" "$ROOT" >/dev/null
	fi
	ninja -C "$BUILD" app/flakeload/flakeload >/dev/null
	if ! ninja -C "$BUILD" app/flakewire/flakewire >/dev/null 2>&1; then
		HAVE_FLAKEWIRE=0
	fi
fi
[ -x "$FLAKELOAD" ] || { echo "bench-responder: $FLAKELOAD missing (build failed?)" >&2; exit 2; }
[ -n "$TESTPMD" ] || { echo "bench-responder: dpdk-testpmd not found (package dpdk)" >&2; exit 2; }
[ -x "$FLAKEWIRE" ] || HAVE_FLAKEWIRE=0

# ---- processes: every one is started here, tracked by PID and killed in the trap ----
TMP="$(mktemp -d /tmp/fw-bench.XXXXXX)"
PIDS=()

BENCH_NAME=bench-responder
SUT_CORE=0
LOAD_CORE=1
. "$ROOT/scripts/bench-lib.sh"
cleanup() { bench_cleanup; }
trap cleanup EXIT
trap 'exit 130' INT TERM

EAL="--no-huge --no-pci --no-shconf -m 512"
LOAD_ARGS="--window $WINDOW --duration $DURATION"

# run_one NAME RUN: one measured run; leaves $TMP/NAME-RUN.json. Returns flakeload's status.
run_one() {
	local name="$1" run="$2"
	local sock="$TMP/$name-$run.sock" json="$TMP/$name-$run.json"
	local lcmd scmd rc
	lcmd="$(load_cmd "$name" "$sock" "$name-$run" "$json" "$LOAD_ARGS")"
	scmd="$(sut_cmd "$name" "$sock" "$run" "--set id.worker_bits=0 --set id.sequence_bits=22")"
	LAST_LOAD_CMD="$lcmd"
	LAST_SUT_CMD="$scmd"
	run_pair "$lcmd" "$scmd" "$TMP/$name-$run" "$sock"
	rc=$PAIR_RC
	# 0 or 143 (our SIGTERM): a clean stop
	if [ "$STOP_KILLED" = 1 ]; then
		echo "bench-responder: WARNING: $name run $run: the system under test did not stop" \
			"within 10 s of SIGTERM and was killed" >&2
	elif [ "$STOP_RC" != 0 ] && [ "$STOP_RC" != 143 ]; then
		echo "bench-responder: CRASH: $name run $run: the system under test exited with" \
			"status $STOP_RC (its log: $TMP/$name-$run.sut.log, kept)" >&2
		tail -n 8 "$TMP/$name-$run.sut.log" >&2 || true
		KEEP_LOGS=1
		FAILED[$name]=1
		return 1
	fi
	if [ "$rc" != 0 ] || [ ! -s "$json" ]; then
		# the exit status is the LOAD GENERATOR's (flakeload), not $name's
		echo "bench-responder: $name run $run failed: the load generator flakeload exited" \
			"with status $rc; last lines:" >&2
		tail -n 15 "$TMP/$name-$run.load.log" >&2 || true
		echo "--- $name:" >&2
		tail -n 10 "$TMP/$name-$run.sut.log" >&2 || true
		return 1
	fi
	return 0
}

declare -A CMD_LOAD CMD_SUT FAILED OKRUNS
ROWS=()
NAMES=()
if [ -z "$ONLY" ] || [ "$ONLY" = testpmd ]; then
	NAMES+=(testpmd)
fi
if [ -z "$ONLY" ] || [ "$ONLY" = flakewire ]; then
	if [ "$HAVE_FLAKEWIRE" = 1 ]; then
		NAMES+=(flakewire)
	else
		echo "bench-responder: (b) flakewire SKIPPED: app/flakewire does not build yet ($FLAKEWIRE missing)"
	fi
fi

echo "bench-responder: $RUNS round(s) of ${DURATION} s per row, window $WINDOW, memif, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
# rows alternate within each round, so a slow patch of a shared machine hits
# both, and who goes first alternates from round to round
for r in $(seq 1 "$RUNS"); do
	order=("${NAMES[@]}")
	[ $((r % 2)) = 0 ] && [ "${#NAMES[@]}" = 2 ] && order=("${NAMES[1]}" "${NAMES[0]}")
	for name in "${order[@]}"; do
		echo "bench-responder: round $r/$RUNS: $name ..."
		if run_one "$name" "$r"; then
			OKRUNS[$name]=$((${OKRUNS[$name]:-0} + 1))
		else
			FAILED[$name]=1
		fi
		CMD_LOAD[$name]="$LAST_LOAD_CMD"
		CMD_SUT[$name]="$LAST_SUT_CMD"
	done
done
for name in "${NAMES[@]}"; do
	if [ "${OKRUNS[$name]:-0}" -gt 0 ]; then
		ROWS+=("$name")
	fi
done

# ---- the table: medians over the runs ----
CPU="$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
"$PY" - "$TMP" "$RUNS" "$(nproc)" "$CPU" "$ROOT/scripts" "${ROWS[@]:-}" <<'EOF'
import json, os, statistics, sys
tmp, runs, ncpu, cpu = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
sys.path.insert(0, sys.argv[5])
from bench_table import fmt_pair, pair_ratios, pair_stats
rows = [r for r in sys.argv[6:] if r]
by_round = {}
med = {}
for name in rows:
    js = []
    for r in range(1, runs + 1):
        p = os.path.join(tmp, f"{name}-{r}.json")
        if os.path.exists(p) and os.path.getsize(p):
            js.append(json.load(open(p)))
            by_round.setdefault(name, {})[r] = js[-1]
    if not js:
        continue
    m = lambda f: statistics.median(f(j) for j in js)
    med[name] = dict(n=len(js),
        rps=m(lambda j: j["replies_per_s"]), ids=m(lambda j: j["ids_per_s"]),
        best=max(j["replies_per_s"] for j in js),
        p50=m(lambda j: j["latency_ns"]["p50"]) / 1000, p99=m(lambda j: j["latency_ns"]["p99"]) / 1000,
        lost=m(lambda j: j["timeouts"]), idle=m(lambda j: j.get("generator_idle_pct", 0)),
        viol=sum(j["violations"] for j in js),
        all_rps=[round(j["replies_per_s"] / 1e6, 3) for j in js])
print()
print(f"machine: {ncpu} cores, {cpu}")
hdr = f"{'row':<10} {'runs':>4} {'replies/s':>12} {'best':>12} {'IDs/s':>12} {'p50 us':>8} {'p99 us':>9} {'lost':>6} {'load idle':>9} {'violations':>10}  each run (M replies/s)"
print(hdr)
print("-" * len(hdr))
for name, v in med.items():
    print(f"{name:<10} {v['n']:>4} {v['rps']:>12,.0f} {v['best']:>12,.0f} {v['ids']:>12,.0f} {v['p50']:>8.1f} {v['p99']:>9.1f} {v['lost']:>6.0f} {v['idle']:>8.1f}% {v['viol']:>10}  {v['all_rps']}")
st = pair_stats(pair_ratios(by_round.get("flakewire", {}), by_round.get("testpmd", {}),
                            lambda j: j["replies_per_s"]))
if st:
    print(f"ratio flakewire/testpmd per round (neighbouring runs): {fmt_pair(st)}"
          + (": noisy, too spread to judge" if st["noisy"] else ""))
else:
    print("ratio flakewire/testpmd: n/a (a row is missing)")
print("'load idle': share of the send phase in which flakeload had nothing to send or receive;")
print("near 0 % means the load generator, not the system under test, set the pace.")
print("replies/s, IDs/s, p50, p99, lost, idle: medians over the runs; 'best': the fastest run")
print("(on a shared machine the one least disturbed by other processes).")
EOF

echo
echo "commands (the last run of each row; RUN/\$\$ differ per run):"
for name in "${ROWS[@]:-}"; do
	[ -n "$name" ] || continue
	echo "[$name] system under test: ${CMD_SUT[$name]}"
	echo "[$name] load:              ${CMD_LOAD[$name]}"
done
echo "[table] $INVOCATION"

# The same responder on a plain kernel interface: AF_XDP on a veth beside
# flakesock on the same veth (root, XDP on veth), in this run.
if [ -z "$ONLY" ]; then
	echo
	echo "== AF_XDP on veth vs flakesock on the same veth (scripts/bench-afxdp.sh)"
	"$ROOT/scripts/bench-afxdp.sh" --no-build --build-dir "$BUILD" --runs "$RUNS" \
		--duration "$DURATION" || echo "bench-responder: the AF_XDP comparison failed" >&2
fi

status=0
for name in "${!FAILED[@]}"; do
	echo "bench-responder: some $name runs failed" >&2
	status=1
done
exit $status
