#!/usr/bin/env bash
# AF_XDP benchmark (issue 5 "Benchmark"): flakewire in AF_XDP mode on a veth
# versus the kernel-socket responder flakesock on the same veth pair, side by
# side in one run. Needs root (network namespaces, XDP) and 2 cores.
#
# Setup: a veth pair between two network namespaces; the responder side has
# the kernel address 10.234.0.2, the client side 10.234.0.1 (tx checksum
# offload off on the client veth, as AF_XDP receives raw frames).
# Rows, the responder pinned to core 0 and the load to core 1 with taskset:
#   flakewire-afxdp  flakewire -l 0, [port0] mode = af_xdp on the veth
#   flakesock        flakesock --threads 1 --listen 10.234.0.2
# Load: flakectl bench --concurrency K (kernel UDP sockets, one request in
# flight per thread) from the client namespace, for each K of --concurrency.
# Each row is the median over --runs runs of each column separately.
# The veth's kernel work (softirq) runs on the core of the sending process,
# so both rows include some kernel time on both cores.
#
# Usage: scripts/bench/afxdp.sh [--runs N] [--duration S] [--concurrency "1 2"]
#                               [--build-dir DIR] [--no-build] [--keep-logs]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="$ROOT/build"
RUNS=3
DURATION=5
CONC="1 2"
DO_BUILD=1
KEEP_LOGS=0

usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
	case "$1" in
	--runs) RUNS="$2"; shift 2 ;;
	--duration) DURATION="$2"; shift 2 ;;
	--concurrency) CONC="$2"; shift 2 ;;
	--build-dir) BUILD="$(realpath -m "$2")"; shift 2 ;;
	--no-build) DO_BUILD=0; shift ;;
	--keep-logs) KEEP_LOGS=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) echo "bench-afxdp: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
case "$RUNS" in '' | *[!0-9]* | 0) echo "bench-afxdp: --runs wants a positive integer" >&2; exit 2 ;; esac
case "$DURATION" in '' | *[!0-9]* | 0) echo "bench-afxdp: --duration wants whole seconds (1-600)" >&2; exit 2 ;; esac
for k in $CONC; do
	case "$k" in '' | *[!0-9]* | 0) echo "bench-afxdp: --concurrency wants positive integers" >&2; exit 2 ;; esac
done
[ "$(id -u)" -eq 0 ] || { echo "bench-afxdp: needs root (namespaces, XDP)" >&2; exit 2; }
[ "$(nproc)" -ge 2 ] || { echo "bench-afxdp: needs 2 cores" >&2; exit 2; }

FLAKEWIRE="$BUILD/app/flakewire/flakewire"
FLAKESOCK="$BUILD/app/flakesock/flakesock"
FLAKECTL="$BUILD/app/flakectl/flakectl"
if [ "$DO_BUILD" = 1 ]; then
	[ -d "$BUILD" ] || meson setup "$BUILD" "$ROOT" >/dev/null
	ninja -C "$BUILD" app/flakewire/flakewire app/flakesock/flakesock app/flakectl/flakectl \
		lib/xdp/flakewire.bpf.o >/dev/null
fi
for b in "$FLAKEWIRE" "$FLAKESOCK" "$FLAKECTL"; do
	[ -x "$b" ] || { echo "bench-afxdp: $b missing (build first)" >&2; exit 2; }
done

NS="fwb-afxdp-$$"
NSC="fwb-afxdpc-$$"
SRV=fwb-s
CLI=fwb-c
SRV_IP=10.234.0.2
CLI_IP=10.234.0.1
PORT=4242
TMP=$(mktemp -d /tmp/bench-afxdp.XXXXXX)
PID=""

cleanup() {
	if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
		kill -TERM "$PID" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$PID" 2>/dev/null || true
		wait "$PID" 2>/dev/null || true
	fi
	ip -n "$NS" link set dev "$SRV" xdp off 2>/dev/null || true
	[ -n "${NETNS_INO:-}" ] && rm -f /run/flakewire/xdp-"$NETNS_INO"-*.lock
	ip netns del "$NS" 2>/dev/null || true
	ip netns del "$NSC" 2>/dev/null || true
	rm -rf "/var/run/dpdk/$NS"
	if [ "$KEEP_LOGS" = 1 ]; then echo "logs kept in $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$NS"
ip netns add "$NSC"
ip -n "$NS" link set lo up
ip -n "$NSC" link set lo up
ip -n "$NS" link add "$SRV" type veth peer name "$CLI" netns "$NSC"
ip -n "$NS" addr add "$SRV_IP/24" dev "$SRV"
ip -n "$NSC" addr add "$CLI_IP/24" dev "$CLI"
ip -n "$NS" link set "$SRV" up
ip -n "$NSC" link set "$CLI" up
ip netns exec "$NSC" ethtool -K "$CLI" tx off >/dev/null
NETNS_INO=$(ip netns exec "$NS" stat -L -c %i /proc/self/ns/net)

CMD_FW="taskset -c 0 $FLAKEWIRE -l 0 --no-huge --no-pci -m 256 --file-prefix $NS -- --set port0.mode=af_xdp --set port0.iface=$SRV --set id.worker_bits=0 --set id.sequence_bits=22 --set stats.interval_s=0 --set state.file=$TMP/fw.mark --set state.lock_dir=$TMP/locks"
CMD_SOCK="taskset -c 0 $FLAKESOCK --threads 1 --listen $SRV_IP --set id.worker_bits=0 --set id.sequence_bits=22 --set stats.interval_s=0 --set state.file=$TMP/sock.mark --set state.lock_dir=$TMP/locks"
cmd_load() { echo "taskset -c 1 $FLAKECTL bench --server $SRV_IP:$PORT --duration $DURATION --concurrency $1 --json"; }

# start NAME CMD: starts a responder in $NS, waits until it answers.
start() {
	local name=$1 cmd=$2
	# shellcheck disable=SC2086
	ip netns exec "$NS" $cmd >"$TMP/$name.log" 2>&1 &
	PID=$!
	for _ in $(seq 100); do
		if ip netns exec "$NSC" "$FLAKECTL" get --server "$SRV_IP:$PORT" --timeout 100 >/dev/null 2>&1; then
			return 0
		fi
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "bench-afxdp: $name did not come up; log:" >&2
	cat "$TMP/$name.log" >&2
	exit 1
}

stop() {
	kill -TERM "$PID" 2>/dev/null || true
	for _ in $(seq 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$PID" 2>/dev/null || true
	wait "$PID" 2>/dev/null || true
	PID=""
}

# median of the numbers on stdin
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
field() { /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval("d"+sys.argv[2]))' "$1" "$2"; }

ROWS=()
row() { # name conc cmd_responder
	local name=$1 k=$2 rcmd=$3 i f
	for i in $(seq "$RUNS"); do
		f="$TMP/$name-c$k-$i.json"
		# A run that got no reply at all (a starved core) is retried twice, and said so.
		for try in 1 2 3; do
			# shellcheck disable=SC2046
			ip netns exec "$NSC" $(cmd_load "$k") >"$f" 2>"$TMP/$name-c$k-$i.err" && break
			echo "bench-afxdp: $name, concurrency $k, run $i, try $try failed:" \
				"$(cat "$TMP/$name-c$k-$i.err")" >&2
			[ "$try" = 3 ] && exit 1
			sleep 1
		done
		[ "$(field "$f" '["duplicates"]')" = 0 ] || { echo "bench-afxdp: duplicates in $f" >&2; exit 1; }
	done
	local rps p50 p99 p999 to
	rps=$(for f in "$TMP/$name-c$k"-*.json; do field "$f" '["requests_per_s"]'; done | median)
	p50=$(for f in "$TMP/$name-c$k"-*.json; do field "$f" '["latency_us"]["p50"]'; done | median)
	p99=$(for f in "$TMP/$name-c$k"-*.json; do field "$f" '["latency_us"]["p99"]'; done | median)
	p999=$(for f in "$TMP/$name-c$k"-*.json; do field "$f" '["latency_us"]["p99.9"]'; done | median)
	to=$(for f in "$TMP/$name-c$k"-*.json; do field "$f" '["timeouts"]'; done | median)
	ROWS+=("$(printf '%-16s %4s %12.0f %9.1f %9.1f %9.1f %9s' "$name" "$k" "$rps" "$p50" "$p99" "$p999" "$to")")
}

for k in $CONC; do
	start flakewire-afxdp "$CMD_FW"
	row flakewire-afxdp "$k" "$CMD_FW"
	stop
	start flakesock "$CMD_SOCK"
	row flakesock "$k" "$CMD_SOCK"
	stop
done

echo "bench-afxdp $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -r), $(nproc) cores; median of $RUNS run(s) of ${DURATION} s each"
printf '%-16s %4s %12s %9s %9s %9s %9s\n' responder conc "requests/s" "p50 us" "p99 us" "p99.9 us" timeouts
for r in "${ROWS[@]}"; do echo "$r"; done
echo
echo "commands (in namespace $NS / $NSC, veth $SRV $SRV_IP <-> $CLI $CLI_IP):"
echo "  flakewire-afxdp: ip netns exec $NS $CMD_FW"
echo "  flakesock:       ip netns exec $NS $CMD_SOCK"
echo "  load (conc K):   ip netns exec $NSC $(cmd_load K)"
